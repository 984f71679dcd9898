/* tiler/pyramid.c: output tile grids per level, owners, piece-to-tile plans (see pyramid.h). */
#include "pyramid.h"

#include <stdlib.h>

int nst_pyramid_make(int W, int H, int tile, int reach, nst_pyramid *p)
{
    if (W < 1 || H < 1 || tile < 16 || tile % 16) return -1;
    p->tile = tile;
    p->nlevels = 0;
    int w = W, h = H;
    for (;;) {
        nst_level *l = &p->lv[p->nlevels++];
        l->w = w;
        l->h = h;
        l->nx = (w + tile - 1) / tile;
        l->ny = (h + tile - 1) / tile;
        if ((int64_t)l->nx * l->ny > (1 << 24)) return -1;
        l->ntiles = l->nx * l->ny;
        if (reach == NST_PYRAMID_ONE_LEVEL || p->nlevels == NST_PYRAMID_MAX_LEVELS) break;
        if (reach == NST_PYRAMID_TO_TILE ? w <= tile && h <= tile : w == 1 && h == 1) break;
        w = (w + 1) / 2;
        h = (h + 1) / 2;
    }
    return 0;
}

int nst_pyramid_tiled_levels(const nst_pyramid *p)
{
    int k = 0;
    while (k + 1 < p->nlevels && p->lv[k].ntiles > 1) k++;
    return k + 1;
}

nst_rect nst_pyramid_tile(const nst_pyramid *p, int level, int t)
{
    const nst_level *l = &p->lv[level];
    int i = t % l->nx, j = t / l->nx, T = p->tile;
    nst_rect r = {i * T, j * T, 0, 0};
    r.w = r.x + T < l->w ? T : l->w - r.x;
    r.h = r.y + T < l->h ? T : l->h - r.y;
    return r;
}

double nst_pyramid_pixels(const nst_pyramid *p)
{
    double sum = 0;
    for (int k = 0; k < p->nlevels; k++) sum += (double)p->lv[k].w * p->lv[k].h;
    return sum;
}

void nst_pyramid_owners0(const nst_pyramid *p, const nst_grid *g, const int *render_owner, int *owner)
{
    for (int t = 0; t < p->lv[0].ntiles; t++) {
        nst_rect r = nst_pyramid_tile(p, 0, t);
        int cx = r.x + r.w / 2, cy = r.y + r.h / 2;
        owner[t] = render_owner[(cy / g->tile_h) * g->nx + cx / g->tile_w];
    }
}

void nst_pyramid_owners_reduced(const nst_pyramid *p, int level, const int *owner_above, int *owner)
{
    const nst_level *l = &p->lv[level], *up = &p->lv[level - 1];
    for (int t = 0; t < l->ntiles; t++) {
        int i = t % l->nx, j = t / l->nx;
        owner[t] = owner_above[(2 * j) * up->nx + 2 * i];
    }
}

nst_transfer *nst_plan_pieces_to_tiles(const nst_pyramid *p, int level, const nst_rect *pieces, int npieces, int *n)
{
    const nst_level *l = &p->lv[level];
    const int T = p->tile;
    size_t cap = (size_t)npieces + 16, count = 0;
    nst_transfer *out = malloc(cap * sizeof *out);
    if (!out) return NULL;
    for (int s = 0; s < npieces; s++) {
        nst_rect r = nst_rect_intersect(pieces[s], nst_rect_make(0, 0, l->w, l->h));
        if (nst_rect_empty(r)) continue;
        for (int j = r.y / T; j <= (r.y + r.h - 1) / T; j++)
            for (int i = r.x / T; i <= (r.x + r.w - 1) / T; i++) {
                int t = j * l->nx + i;
                nst_rect x = nst_rect_intersect(r, nst_pyramid_tile(p, level, t));
                if (nst_rect_empty(x)) continue;
                if (nst_transfers_push(&out, &count, &cap, (nst_transfer){s, t, x}) != 0) return NULL;
            }
    }
    *n = (int)count;
    return out;
}

/* tiler/grid.c: tile grid, rank assignment, transfer plans and blend weights (see grid.h). */
#include "grid.h"

#include <math.h>
#include <stdlib.h>

int nst_grid_make(int width, int height, int tile_w, int tile_h, int halo, int align, nst_grid *g)
{
    if (width < 1 || height < 1 || tile_w < 1 || tile_h < 1 || halo < 0 || align < 1 || tile_w % align || tile_h % align ||
        halo % align)
        return -1;
    g->width = width;
    g->height = height;
    g->tile_w = tile_w;
    g->tile_h = tile_h;
    g->halo = halo;
    g->nx = (width + tile_w - 1) / tile_w;
    g->ny = (height + tile_h - 1) / tile_h;
    if ((int64_t)g->nx * g->ny > (1 << 24)) return -1;
    g->ntiles = g->nx * g->ny;
    return 0;
}

nst_rect nst_grid_core(const nst_grid *g, int t)
{
    int i = t % g->nx, j = t / g->nx;
    nst_rect r = {i * g->tile_w, j * g->tile_h, 0, 0};
    r.w = (i + 1) * g->tile_w < g->width ? g->tile_w : g->width - r.x;
    r.h = (j + 1) * g->tile_h < g->height ? g->tile_h : g->height - r.y;
    return r;
}

nst_rect nst_grid_window(const nst_grid *g, int t)
{
    return nst_rect_intersect(nst_rect_grow(nst_grid_core(g, t), g->halo), nst_rect_make(0, 0, g->width, g->height));
}

double nst_grid_halo_overhead(const nst_grid *g)
{
    double sum = 0;
    for (int t = 0; t < g->ntiles; t++) sum += (double)nst_rect_area(nst_grid_window(g, t));
    return sum / ((double)g->width * g->height) - 1.0;
}

typedef struct {
    int64_t cost;
    int tile;
} by_cost;

static int cmp_cost(const void *a, const void *b)
{
    const by_cost *x = a, *y = b;
    if (x->cost != y->cost) return x->cost > y->cost ? -1 : 1;
    return x->tile - y->tile;
}

int64_t nst_assign_tiles(const nst_grid *g, int nranks, int *owner)
{
    by_cost *order = malloc(sizeof(by_cost) * (size_t)g->ntiles);
    int64_t *load = calloc((size_t)nranks, sizeof(int64_t));
    int64_t worst = 0;
    if (!order || !load) {
        free(order);
        free(load);
        return -1;
    }
    for (int t = 0; t < g->ntiles; t++) order[t] = (by_cost){nst_rect_area(nst_grid_window(g, t)), t};
    qsort(order, (size_t)g->ntiles, sizeof *order, cmp_cost);
    for (int k = 0; k < g->ntiles; k++) {
        int best = 0;
        for (int r = 1; r < nranks; r++)
            if (load[r] < load[best]) best = r;
        owner[order[k].tile] = best;
        load[best] += order[k].cost;
    }
    for (int r = 0; r < nranks; r++)
        if (load[r] > worst) worst = load[r];
    free(order);
    free(load);
    return worst;
}

/* Tiles whose rect (core or window, per `windows`) may meet r: the grid cells r spans, widened by
 * the halo when windows are meant. */
static void candidate_range(const nst_grid *g, nst_rect r, int widen, int *i0, int *i1, int *j0, int *j1)
{
    int x0 = r.x - widen, y0 = r.y - widen, x1 = r.x + r.w + widen, y1 = r.y + r.h + widen;
    *i0 = x0 <= 0 ? 0 : x0 / g->tile_w;
    *j0 = y0 <= 0 ? 0 : y0 / g->tile_h;
    *i1 = (x1 - 1) / g->tile_w;
    *j1 = (y1 - 1) / g->tile_h;
    if (*i1 >= g->nx) *i1 = g->nx - 1;
    if (*j1 >= g->ny) *j1 = g->ny - 1;
}

int nst_transfers_push(nst_transfer **list, size_t *n, size_t *cap, nst_transfer t)
{
    if (*n == *cap) {
        size_t c = *cap ? 2 * *cap : 16;
        nst_transfer *bigger = realloc(*list, c * sizeof **list);
        if (!bigger) {
            free(*list);
            *list = NULL;
            return -1;
        }
        *list = bigger;
        *cap = c;
    }
    (*list)[(*n)++] = t;
    return 0;
}

nst_transfer *nst_plan_rects(const nst_rect *src, int nsrc, const nst_rect *dst, int ndst, int *n)
{
    size_t cap = 16, count = 0;
    nst_transfer *out = malloc(cap * sizeof *out);
    if (!out) return NULL;
    for (int s = 0; s < nsrc; s++)
        for (int d = 0; d < ndst; d++) {
            nst_rect r = nst_rect_intersect(src[s], dst[d]);
            if (nst_rect_empty(r)) continue;
            if (nst_transfers_push(&out, &count, &cap, (nst_transfer){s, d, r}) != 0) return NULL;
        }
    *n = (int)count;
    return out;
}

static nst_transfer *plan(const nst_grid *g, int *n, int overlaps)
{
    size_t cap = 16, count = 0;
    nst_transfer *out = malloc(cap * sizeof *out);
    if (!out) return NULL;
    for (int dst = 0; dst < g->ntiles; dst++) {
        nst_rect win = nst_grid_window(g, dst);
        int i0, i1, j0, j1;
        candidate_range(g, win, overlaps ? g->halo : 0, &i0, &i1, &j0, &j1);
        for (int j = j0; j <= j1; j++)
            for (int i = i0; i <= i1; i++) {
                int src = j * g->nx + i;
                if (overlaps && src == dst) continue;
                nst_rect r = nst_rect_intersect(win, overlaps ? nst_grid_window(g, src) : nst_grid_core(g, src));
                if (nst_rect_empty(r)) continue;
                if (nst_transfers_push(&out, &count, &cap, (nst_transfer){src, dst, r}) != 0) return NULL;
            }
    }
    *n = (int)count;
    return out;
}

nst_transfer *nst_plan_core_to_window(const nst_grid *g, int *n) { return plan(g, n, 0); }
nst_transfer *nst_plan_window_overlaps(const nst_grid *g, int *n) { return plan(g, n, 1); }

static float ramp(float d, int width, int cosine)
{
    if (width <= 0 || d >= (float)width) return 1.f;
    float u = d / (float)width;
    return cosine ? 0.5f - 0.5f * cosf((float)M_PI * u) : u;
}

float nst_blend_weight(const nst_grid *g, int t, int x, int y, int width, int cosine)
{
    nst_rect w = nst_grid_window(g, t);
    float wx = 1.f, wy = 1.f;
    /* distance (pixel centres) to each window edge that lies inside the image */
    if (w.x > 0) wx = fminf(wx, ramp((float)(x - w.x) + 0.5f, width, cosine));
    if (w.x + w.w < g->width) wx = fminf(wx, ramp((float)(w.x + w.w - x) - 0.5f, width, cosine));
    if (w.y > 0) wy = fminf(wy, ramp((float)(y - w.y) + 0.5f, width, cosine));
    if (w.y + w.h < g->height) wy = fminf(wy, ramp((float)(w.y + w.h - y) - 0.5f, width, cosine));
    return wx * wy;
}

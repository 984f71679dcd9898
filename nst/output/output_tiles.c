/* nst/output/output_tiles.c: output tiles assembled on their owners (see output_tiles.h). Both moves are
 * nst/plan/move.h's: pieces (render cores, or halved tiles of the level above) cut by the level's tiles
 * (nst_plan_pieces_to_tiles, grouped by piece), each cut produced by the piece's owner: quantised
 * from floats, or halved. */
#include "output_tiles.h"

#include <stdlib.h>
#include <string.h>

#include "../../io/image/image.h"
#include "../../io/image/resample.h"
#include "../../mpi/comm.h"
#include "../../util/mem.h"
#include "../plan/move.h"

void nst_tileset_free(nst_tileset *ts)
{
    for (int i = 0; ts->px && i < ts->nown; i++) nst_free(ts->px[i]);
    nst_free(ts->px);
    nst_free(ts->own);
    nst_free(ts->owner);
    memset(ts, 0, sizeof *ts);
}

nst_rect nst_tileset_rect(const nst_pyramid *P, const nst_tileset *ts, int i) { return nst_pyramid_tile(P, ts->level, ts->own[i]); }

/* The level's owners are filled in by the caller; allocate this rank's tiles. */
static nst_status tileset_alloc(const nst_pyramid *P, int level, int bits, nst_tileset *ts)
{
    const int rank = nst_comm_rank();
    ts->level = level;
    ts->lv = P->lv[level];
    ts->sample_bytes = bits / 8;
    for (int t = 0; t < ts->lv.ntiles; t++) ts->nown += ts->owner[t] == rank;
    ts->own = nst_alloc_array((size_t)ts->nown + 1, sizeof(int), "output tile list");
    ts->px = nst_calloc(sizeof(unsigned char *) * ((size_t)ts->nown + 1), "output tiles");
    if (!ts->own || !ts->px) return NST_ENOMEM;
    for (int t = 0, i = 0; t < ts->lv.ntiles; t++)
        if (ts->owner[t] == rank) ts->own[i++] = t;
    for (int i = 0; i < ts->nown; i++) {
        size_t n = (size_t)nst_rect_area(nst_tileset_rect(P, ts, i)) * 3 * (size_t)ts->sample_bytes;
        ts->px[i] = nst_alloc(n, "an output tile");
        if (!ts->px[i]) return NST_ENOMEM;
        ts->bytes += n;
    }
    return NST_OK;
}

static int find(const int *sorted, int n, int v)
{
    int lo = 0, hi = n - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (sorted[mid] == v) return mid;
        if (sorted[mid] < v)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

/* Move the plan's pieces into the level's tiles (nst/plan/move.h): destinations indexed by tile. */
static nst_status move_pieces(const nst_pyramid *P, const nst_transfer *tr, int ntr, const int *src_owner, nst_tileset *dst,
                              nst_produce_fn produce, nst_done_fn done, void *ctx, size_t held, size_t *peak)
{
    const int n = dst->lv.ntiles;
    nst_rect *rects = nst_alloc_array((size_t)n, sizeof(nst_rect), "output tile rectangles");
    unsigned char **px = nst_calloc(sizeof(unsigned char *) * (size_t)n, "output tile buffers");
    nst_status s = rects && px ? NST_OK : NST_ENOMEM;
    if (s == NST_OK) {
        for (int t = 0; t < n; t++) rects[t] = nst_pyramid_tile(P, dst->level, t);
        for (int i = 0; i < dst->nown; i++) px[dst->own[i]] = dst->px[i];
        nst_move mv = {tr, ntr, src_owner, dst->owner, rects, px, 3 * (size_t)dst->sample_bytes, produce, done, ctx};
        s = nst_move_run(&mv, held + dst->bytes, peak);
    }
    nst_free(rects);
    nst_free(px);
    return s;
}

/* ---- level 0: quantised render cores -------------------------------------------------------------- */

typedef struct {
    const nst_layout *L;
    float **cores;
    int bits;
} cores_ctx;

static void produce_core(void *c, int src, nst_rect r, unsigned char *dst, size_t stride)
{
    cores_ctx *cc = c;
    int li = find(cc->L->local, cc->L->nlocal, src);
    nst_rect core = nst_grid_core(&cc->L->grid, src);
    for (int y = 0; y < r.h; y++)
        nst_rgb_to_samples(dst + (size_t)y * stride, cc->cores[li] + ((size_t)(r.y - core.y + y) * core.w + (size_t)(r.x - core.x)) * 3, r.w,
                           cc->bits);
}

static void core_done(void *c, int src)
{
    cores_ctx *cc = c;
    int li = find(cc->L->local, cc->L->nlocal, src);
    nst_free(cc->cores[li]);
    cc->cores[li] = NULL;
}

nst_status nst_tiles_level0(const nst_pyramid *P, const nst_layout *L, float **cores, int bits, nst_tileset *out, size_t *peak)
{
    memset(out, 0, sizeof *out);
    const nst_grid *g = &L->grid;
    out->owner = nst_alloc_array((size_t)P->lv[0].ntiles, sizeof(int), "output tile owners");
    nst_rect *pieces = nst_alloc_array((size_t)g->ntiles, sizeof(nst_rect), "render cores");
    nst_status s = out->owner && pieces ? NST_OK : NST_ENOMEM;
    if (s == NST_OK) {
        nst_pyramid_owners0(P, g, L->owner, out->owner);
        for (int t = 0; t < g->ntiles; t++) pieces[t] = nst_grid_core(g, t);
        s = tileset_alloc(P, 0, bits, out);
    }
    size_t held = 0; /* the float cores */
    for (int i = 0; i < L->nlocal; i++) held += (size_t)nst_rect_area(nst_grid_core(g, L->local[i])) * 3 * sizeof(float);
    int ntr = 0;
    nst_transfer *tr = s == NST_OK ? nst_plan_pieces_to_tiles(P, 0, pieces, g->ntiles, &ntr) : NULL;
    if (s == NST_OK && !tr) s = nst_fail(NST_ENOMEM, "out of memory planning the output tiles");
    s = nst_comm_agree(s);
    cores_ctx cc = {L, cores, bits};
    if (s == NST_OK) s = move_pieces(P, tr, ntr, L->owner, out, produce_core, core_done, &cc, held, peak);
    for (int i = 0; i < L->nlocal; i++) { /* whatever a failure left */
        nst_free(cores[i]);
        cores[i] = NULL;
    }
    free(tr);
    nst_free(pieces);
    if (s != NST_OK) nst_tileset_free(out);
    return s;
}

/* ---- level k + 1: halved tiles of level k -------------------------------------------------------- */

typedef struct {
    const nst_pyramid *P;
    const nst_tileset *above;
} halve_ctx;

static void produce_halved(void *c, int src, nst_rect r, unsigned char *dst, size_t stride)
{
    halve_ctx *hc = c;
    const nst_tileset *a = hc->above;
    nst_rect st = nst_pyramid_tile(hc->P, a->level, src); /* the source tile, in level-k coordinates */
    nst_halve_rect(a->px[find(a->own, a->nown, src)], st, a->lv.w, a->lv.h, a->sample_bytes, r, dst, stride);
}

nst_status nst_tiles_reduce(const nst_pyramid *P, const nst_tileset *above, nst_tileset *out, size_t *peak)
{
    memset(out, 0, sizeof *out);
    const int level = above->level + 1;
    const nst_level *up = &above->lv;
    out->owner = nst_alloc_array((size_t)P->lv[level].ntiles, sizeof(int), "output tile owners");
    nst_rect *pieces = nst_alloc_array((size_t)up->ntiles, sizeof(nst_rect), "halved tiles");
    nst_status s = out->owner && pieces ? NST_OK : NST_ENOMEM;
    if (s == NST_OK) {
        nst_pyramid_owners_reduced(P, level, above->owner, out->owner);
        for (int t = 0; t < up->ntiles; t++) pieces[t] = nst_pyramid_halve(nst_pyramid_tile(P, above->level, t));
        s = tileset_alloc(P, level, above->sample_bytes * 8, out);
    }
    int ntr = 0;
    nst_transfer *tr = s == NST_OK ? nst_plan_pieces_to_tiles(P, level, pieces, up->ntiles, &ntr) : NULL;
    if (s == NST_OK && !tr) s = nst_fail(NST_ENOMEM, "out of memory planning the output tiles");
    s = nst_comm_agree(s);
    halve_ctx hc = {P, above};
    if (s == NST_OK) s = move_pieces(P, tr, ntr, above->owner, out, produce_halved, NULL, &hc, above->bytes, peak);
    free(tr);
    nst_free(pieces);
    if (s != NST_OK) nst_tileset_free(out);
    return s;
}

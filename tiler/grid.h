/* tiler/grid.h: the tile grid of an image, the assignment of tiles to ranks, and the plans of
 * which pixels move between tiles. Pure geometry: no I/O, no MPI, no CUDA.
 *
 * Cores partition the image: core (i, j) covers columns [i Tw, min((i+1) Tw, W)) and rows
 * [j Th, min((j+1) Th, H)), Tw and Th multiples of the network's total stride, so every core
 * starts on the pooling grid of the whole image. (Cores need not be square: an image splits
 * evenly over 2 ranks only with cores of half its width.) A window is its core grown by the halo on every side and
 * clipped to the image; with the halo a multiple of the stride, windows start on that grid too.
 * Tiles are numbered row-major: tile = j * nx + i.
 */
#ifndef NST_GRID_H
#define NST_GRID_H

#include <stddef.h>
#include <stdint.h>

#include "rect.h"

typedef struct {
    int width, height; /* the image */
    int tile_w, tile_h; /* core size Tw x Th */
    int halo;          /* window overhang H */
    int nx, ny, ntiles;
} nst_grid;

/* 0 and a grid, or -1 if the arguments are invalid (sizes or halo not multiples of align, a size
 * below 1, more than 2^24 tiles). */
int nst_grid_make(int width, int height, int tile_w, int tile_h, int halo, int align, nst_grid *g);
nst_rect nst_grid_core(const nst_grid *g, int t);
nst_rect nst_grid_window(const nst_grid *g, int t);
/* Sum of window areas divided by the image area, minus 1: the redundant compute of the halos. */
double nst_grid_halo_overhead(const nst_grid *g);

/* Tiles to ranks: longest processing time first on the window area (the cost is the window's,
 * not the core's), each tile to the least loaded rank, ties to the lower rank; deterministic.
 * owner[t] receives the rank. Returns the largest per-rank load (pixels of window area). */
int64_t nst_assign_tiles(const nst_grid *g, int nranks, int *owner);

/* A rectangle of pixels to copy from tile src to tile dst (image coordinates). */
typedef struct {
    int src, dst;
    nst_rect rect;
} nst_transfer;

/* A growing list of transfers: append t to *list (count *n, capacity *cap, doubling). 0, or -1
 * when out of memory (the list is then freed and NULL). */
int nst_transfers_push(nst_transfer **list, size_t *n, size_t *cap, nst_transfer t);

/* Every non-empty intersection of a source rectangle with a destination rectangle, as transfers
 * {src index, dst index, rect} ordered by (src, dst): pixels from one layout to another (a pyramid
 * level's cores to the next level's windows' footprints). NULL when out of memory. */
nst_transfer *nst_plan_rects(const nst_rect *src, int nsrc, const nst_rect *dst, int ndst, int *n);

/* The exact-mode halo exchange: every window is filled from the cores that cover it (its own
 * core included). All transfers of the image, ordered by (dst, src). *n receives the count;
 * returns a malloc'ed array (free()) or NULL when out of memory. */
nst_transfer *nst_plan_core_to_window(const nst_grid *g, int *n);
/* The cheap-mode blend: for every pair of distinct tiles whose windows overlap, the overlap, to be
 * sent from src to dst. Ordered by (dst, src). */
nst_transfer *nst_plan_window_overlaps(const nst_grid *g, int *n);

/* Feather weight of tile t at pixel (x, y) of its window, for blending overlapping windows:
 * 1 on the core and wherever the window meets the image border, falling to ~0 at a window edge
 * inside the image over `ramp` pixels (cosine: raised-cosine; else linear). Always > 0 inside the
 * window, and 1 on the core when ramp <= halo. */
float nst_blend_weight(const nst_grid *g, int t, int x, int y, int ramp, int cosine);

#endif

/* tiler/pyramid.h: the output's tile grids, level by level, who owns each output tile, and which
 * pieces of pixels move to build them. Pure geometry: no I/O, no MPI.
 *
 * Level 0 is the image, cut into T x T output tiles (T = output.tile_size, a multiple of 16)
 * independent of the render tiles. Level k + 1 halves level k (ceil), down to the first level
 * that fits in one tile (TIFF, HDF5), or on to 1 x 1 (Deep Zoom, whose level n - 1 - k is this
 * level k: both halve with the ceiling, so the sizes agree). Because T is even and tiles start at multiples of T, each level-k tile
 * halves into a piece lying inside exactly one level-(k+1) tile: a rank that owns level-k tiles
 * reduces them itself, and only the reduced pieces move.
 *
 * Owners: a level-0 tile belongs to the rank whose render core holds the tile's centre (the
 * render's balance carries over, and most pixels stay where they were computed); a reduced tile
 * belongs to the owner of its top-left child.
 */
#ifndef NST_PYRAMID_H
#define NST_PYRAMID_H

#include "grid.h"
#include "rect.h"

#define NST_PYRAMID_MAX_LEVELS 32

typedef struct {
    int w, h;      /* the level's image */
    int nx, ny, ntiles;
} nst_level;

typedef struct {
    int tile;      /* T */
    int nlevels;   /* 1 + the reduced levels */
    nst_level lv[NST_PYRAMID_MAX_LEVELS];
} nst_pyramid;

/* How far the halving goes. */
enum { NST_PYRAMID_ONE_LEVEL, NST_PYRAMID_TO_TILE, NST_PYRAMID_TO_PIXEL };

/* 0 and the pyramid of a W x H image in T x T tiles, halved as `reach` says, or -1 for invalid
 * arguments (T not a positive multiple of 16, a size below 1, more than 2^24 tiles). */
int nst_pyramid_make(int W, int H, int tile, int reach, nst_pyramid *p);
/* The levels down to the first that fits in one tile (what NST_PYRAMID_TO_TILE makes). */
int nst_pyramid_tiled_levels(const nst_pyramid *p);
nst_rect nst_pyramid_tile(const nst_pyramid *p, int level, int t);
/* Total pixels over all levels. */
double nst_pyramid_pixels(const nst_pyramid *p);

/* owner[t] for the level-0 tiles, from the render grid and its owners. */
void nst_pyramid_owners0(const nst_pyramid *p, const nst_grid *g, const int *render_owner, int *owner);
/* owner[t] for level `level` >= 1 from the owners of level - 1. */
void nst_pyramid_owners_reduced(const nst_pyramid *p, int level, const int *owner_above, int *owner);

/* The piece of a level-(k+1) image that level-k rect r halves into. */
static inline nst_rect nst_pyramid_halve(nst_rect r) { return nst_rect_downscale_cover(r, 2); }

/* Pieces of a level (rects that partition it, in any number) to its tiles: every non-empty
 * intersection, as transfers {src = piece index, dst = tile index, rect}, ordered by (src, dst).
 * Returns a malloc'ed array (free()) and *n, or NULL when out of memory. */
nst_transfer *nst_plan_pieces_to_tiles(const nst_pyramid *p, int level, const nst_rect *pieces, int npieces, int *n);

#endif

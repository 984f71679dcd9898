/* nst/output/output_tiles.h: a level of the output pyramid as whole tiles on their owners, and the
 * moves that build it: from the render's float cores (level 0) or by halving the level above.
 * Internal to the output (nst/output*.c). */
#ifndef NST_OUTPUT_TILES_H
#define NST_OUTPUT_TILES_H

#include "../../tiler/pyramid.h"
#include "../plan/layout.h"

typedef struct {
    int level;
    nst_level lv;
    int *owner;          /* per tile of the level */
    int nown, *own;      /* this rank's tiles, ascending */
    unsigned char **px;  /* px[i]: tile own[i], packed rows of RGB samples */
    int sample_bytes;    /* 1 (8-bit) or 2 (16-bit, native) */
    size_t bytes;        /* sum of this rank's tile buffers */
} nst_tileset;

/* Level 0 from the cores of the layout's local tiles (float RGB; each freed as soon as it is
 * quantised and sent). *peak receives the most bytes this held at one time. Collective. */
nst_status nst_tiles_level0(const nst_pyramid *P, const nst_layout *L, float **cores, int bits, nst_tileset *out, size_t *peak);
/* Level above->level + 1: every owner halves its tiles (2 x 2 rounded means of the samples;
 * fewer at an odd edge), the pieces move to their owners. Collective. */
nst_status nst_tiles_reduce(const nst_pyramid *P, const nst_tileset *above, nst_tileset *out, size_t *peak);
void nst_tileset_free(nst_tileset *ts);
/* Rect of this rank's i-th tile. */
nst_rect nst_tileset_rect(const nst_pyramid *P, const nst_tileset *ts, int i);

#endif

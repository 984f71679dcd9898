/* io/image/tiff_pyramid.h: a tiled TIFF read tile by tile, level by level: the full-resolution
 * image and its reduced levels (SubIFDs, as nstbatch writes them). nstbatch-dzi reads a finished
 * output through it without ever decoding a whole level. */
#ifndef NST_TIFF_PYRAMID_H
#define NST_TIFF_PYRAMID_H

#include "../../util/status.h"

#define NST_TIFF_PYRAMID_MAX_LEVELS 32

typedef struct nst_tiff_pyramid nst_tiff_pyramid;

typedef struct {
    int tile;        /* the tiles' side (square, a multiple of 16) */
    int bits;        /* 8 or 16 */
    int nlevels;     /* level 0 and the reduced levels that halve it, in order */
    int w[NST_TIFF_PYRAMID_MAX_LEVELS], h[NST_TIFF_PYRAMID_MAX_LEVELS];
} nst_tiff_pyramid_info;

/* Open path: a tiled RGB TIFF, 8 or 16 bits, square tiles of a multiple of 16; reduced levels are
 * taken while each halves the one above (ceil), with the same tiles. Errors name the file and
 * what it is instead. */
nst_status nst_tiff_pyramid_open(const char *path, nst_tiff_pyramid **out, nst_tiff_pyramid_info *info);
/* Tile (i, j) of level k, cropped to the level: packed RGB rows (8-bit, or native 16-bit) into
 * buf (tile * tile * 3 samples). */
nst_status nst_tiff_pyramid_tile(nst_tiff_pyramid *p, int k, int i, int j, void *buf);
void nst_tiff_pyramid_close(nst_tiff_pyramid *p);

#endif

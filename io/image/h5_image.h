/* io/image/h5_image.h: the output image as HDF5, written in parallel by the ranks that own its tiles.
 *
 * Layout: dataset /level0 = H x W x 3 (uint8 or uint16), chunked by the output tile, shuffle +
 * deflate by default; the reduced levels as /level1, /level2, ...; each dataset carries the HDF5
 * Image specification attributes (CLASS = IMAGE, IMAGE_VERSION = 1.2, IMAGE_SUBCLASS =
 * IMAGE_TRUECOLOR, INTERLACE_MODE = INTERLACE_PIXEL, IMAGE_MINMAXRANGE; fixed-length strings) and
 * its level; the root carries the resolved config and the nstbatch version. The file is opened
 * over MPI-IO by every rank and every call here is collective; raw data moves in collective
 * transfers (parallel HDF5 compresses filtered chunks only that way), each rank writing whole
 * chunks: the ones it owns.
 */
#ifndef NST_H5_IMAGE_H
#define NST_H5_IMAGE_H

#include "../../util/status.h"

typedef struct nst_h5_image nst_h5_image;

typedef struct {
    int bits;    /* 8 | 16 */
    int deflate; /* 0: no compression; 1..9: shuffle + deflate at that level */
    int tile;    /* chunk = tile x tile x 3 (clipped to the level) */
} nst_h5_params;

/* Create path (the caller's temporary name; the same on every rank) for nlevels levels. */
nst_status nst_h5_image_create(const char *path, const nst_h5_params *p, int nlevels, const char *config, const char *version,
                               nst_h5_image **out);
/* Create dataset /level<level> of w x h, with its attributes. */
nst_status nst_h5_image_level(nst_h5_image *hi, int level, int w, int h);
/* This rank's block of whole chunks: rows [y, y + h) x columns [x, x + w), data h x w x 3
 * samples; w = 0 takes part without data. (One rectangle per call: HDF5 maps a single block to
 * its chunks directly, while a union of blocks is mapped element by element, 50x slower.) */
nst_status nst_h5_image_write_block(nst_h5_image *hi, int x, int y, int w, int h, const void *data);
nst_status nst_h5_image_end_level(nst_h5_image *hi);
/* Close (collective); frees hi whatever happens. */
nst_status nst_h5_image_close(nst_h5_image *hi);

#endif

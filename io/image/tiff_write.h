/* io/image/tiff_write.h: tiled TIFF / BigTIFF pyramids written as compressed tiles.
 *
 * The work is split so that ranks and threads can compress in parallel and one writer keeps the
 * file: an encoder turns one tile of samples into exactly the bytes the file stores for it (libtiff's
 * own codec and predictor, run on a scratch TIFF whose writes are captured in memory), and the
 * writer puts those bytes into the file with raw tile writes. The file: level 0 in the first IFD
 * (NewSubfileType 0, the ImageDescription), the reduced levels as its SubIFDs, largest first,
 * NewSubfileType = REDUCEDIMAGE, all tiled alike. RGB, 8 or 16 bits, chunky, native byte order.
 * Every level carries the sRGB ICC profile and, with a dpi, its resolution (the same print size).
 */
#ifndef NST_TIFF_WRITE_H
#define NST_TIFF_WRITE_H

#include <stddef.h>

#include "pixels.h"

typedef enum { NST_TC_DEFLATE, NST_TC_LZW, NST_TC_JPEG, NST_TC_ZSTD, NST_TC_NONE } nst_tiff_codec;

typedef struct {
    int bits;              /* 8 | 16 */
    nst_tiff_codec codec;
    int level;             /* deflate 1..9, zstd 1..22; 0: the codec's default (deflate 6, zstd 9) */
    int quality;           /* jpeg 1..100 */
    int tile;              /* tile width = height, a multiple of 16 */
    double dpi;            /* level 0's pixels per inch (each reduced level: in proportion); 0: none stored */
} nst_tiff_params;

/* "deflate" -> NST_TC_DEFLATE; -1 if unknown. */
int nst_tiff_codec_parse(const char *name);
const char *nst_tiff_codec_name(nst_tiff_codec c);
/* Whether this libtiff can write p (codec built in, jpeg only at 8 bits, level in range). The
 * message names the problem; the caller prefixes the config key. */
nst_status nst_tiff_params_check(const nst_tiff_params *p);

/* ---- encoding (one per thread) ------------------------------------------------------------- */

typedef struct nst_tiff_encoder nst_tiff_encoder;

nst_status nst_tiff_encoder_new(const nst_tiff_params *p, nst_tiff_encoder **out);
/* Compress a w x h tile (w, h <= tile; RGB samples of p->bits, packed rows): the tile is padded to
 * tile x tile by repeating its last column and row. *bytes stays valid until the next call. */
nst_status nst_tiff_encode(nst_tiff_encoder *e, const void *samples, int w, int h, const unsigned char **bytes, size_t *len);
void nst_tiff_encoder_free(nst_tiff_encoder *e);

/* ---- the file ---------------------------------------------------------------------------------- */

typedef struct nst_tiff_writer nst_tiff_writer;

/* Create the file at path (the caller's temporary name) for a pyramid of nlevels levels, level 0
 * W x H; BigTIFF when bigtiff. description (may be NULL) goes into level 0's ImageDescription. */
nst_status nst_tiff_writer_open(const char *path, const nst_tiff_params *p, int nlevels, int bigtiff, const char *description,
                                nst_tiff_writer **out);
/* Begin level `level` (0, 1, ... in order) of w x h. */
nst_status nst_tiff_writer_level(nst_tiff_writer *tw, int level, int w, int h);
/* Tile t of the current level (row-major), as an encoder made it. */
nst_status nst_tiff_writer_tile(nst_tiff_writer *tw, int t, const unsigned char *bytes, size_t len);
/* Finish the current level: every tile must have been written. */
nst_status nst_tiff_writer_end_level(nst_tiff_writer *tw);
/* Flush and close (the caller syncs and renames). Frees tw whatever happens. */
nst_status nst_tiff_writer_close(nst_tiff_writer *tw);
/* Bytes written so far. */
unsigned long long nst_tiff_writer_bytes(const nst_tiff_writer *tw);

/* A whole image as a TIFF, 8 or 16 bits per sample; description (may be NULL) as its ImageDescription. */
nst_status nst_tiff_write(const char *path, const nst_image *img, int bits, const char *description);

#endif

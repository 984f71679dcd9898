/* io/image/dzi.h: the Deep Zoom format's pieces shared by the renderer's sink and nstbatch-dzi: the
 * descriptor, the tile names, and a tile encoded as the browser will read it.
 *
 * The layout is OpenSeadragon's and `vips dzsave`'s: NAME.dzi, and NAME_files/L/C_R.EXT with
 * level L from 0 (1 x 1) up to ceil(log2(longest side)) (the image), tiles of TileSize with no
 * overlap. */
#ifndef NST_DZI_H
#define NST_DZI_H

#include <stddef.h>

#include "../../util/status.h"

typedef struct {
    int png;         /* PNG tiles (else JPEG) */
    int quality;     /* JPEG quality */
    int png_level;   /* zlib level */
} nst_dzi_codec;

/* "jpg" or "png". */
const char *nst_dzi_ext(const nst_dzi_codec *c);
/* The descriptor's XML for a W x H image in tile x tile tiles; its length, or 0 if cap is short. */
size_t nst_dzi_descriptor(char *buf, size_t cap, const nst_dzi_codec *c, int tile, int W, int H);
/* Encode a w x h tile of packed RGB samples, 8-bit or native 16-bit (sample_bytes 1 or 2; 16-bit
 * is rounded to 8 bits: browsers show 8), into *buf (malloc'ed, free()). scratch: w * h * 3 bytes
 * for the 16-bit case (may be NULL for 8-bit). */
nst_status nst_dzi_encode(const nst_dzi_codec *c, const void *samples, int w, int h, int sample_bytes, unsigned char *scratch,
                          unsigned char **buf, size_t *len);
/* Write a whole small file (a tile, the descriptor's temporary); the caller syncs. */
nst_status nst_write_whole(const char *path, const void *bytes, size_t len);

#endif

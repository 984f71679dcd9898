/* io/image/png_write.h: PNG written as a stream of rows (8 or 16-bit RGB), so that an image of any
 * size passes through one band of rows at a time. */
#ifndef NST_PNG_WRITE_H
#define NST_PNG_WRITE_H

#include <stddef.h>

#include "pixels.h"

typedef struct nst_png_stream nst_png_stream;

/* Create path (the caller's temporary name) for a w x h image; level: zlib 1..9, 0 = 6;
 * description (may be NULL) goes into a compressed iTXt chunk "nstbatch.config"; dpi > 0 into
 * pHYs (in pixels per metre, as PNG stores it). Every PNG is marked sRGB (the sRGB chunk). */
nst_status nst_png_stream_open(const char *path, int w, int h, int bits, int level, const char *description, double dpi,
                               nst_png_stream **out);
/* The next `rows` rows: packed RGB samples, 8-bit or native 16-bit. */
nst_status nst_png_stream_rows(nst_png_stream *ps, const void *samples, int rows);
/* Finish (every row must have been written), flush and close; frees ps whatever happens. */
nst_status nst_png_stream_close(nst_png_stream *ps);

/* A w x h image of packed RGB samples (8 or native 16-bit) as a PNG in memory (*buf: malloc'ed,
 * free()), marked sRGB, without text or pHYs: a Deep Zoom tile. */
nst_status nst_png_encode_mem(const void *samples, int w, int h, int bits, int level, unsigned char **buf, size_t *len);

/* A whole image as PNG, 8 or 16 bits per sample; description (may be NULL) in an iTXt chunk. */
nst_status nst_png_write(const char *path, const nst_image *img, int bits, const char *description);

#endif

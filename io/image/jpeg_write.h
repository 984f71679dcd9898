/* io/image/jpeg_write.h: JPEG written as a stream of rows (8-bit RGB) with libjpeg: progressive where
 * its coefficient buffer is affordable, baseline otherwise; the sRGB ICC profile (APP2) and, with
 * a dpi, the JFIF density. */
#ifndef NST_JPEG_WRITE_H
#define NST_JPEG_WRITE_H

#include <stddef.h>

#include "pixels.h"

/* JPEG's largest side (its header stores 16-bit sizes). */
#define NST_JPEG_MAX_SIDE 65535

typedef struct nst_jpeg_stream nst_jpeg_stream;

/* Bytes libjpeg holds for a progressive w x h image at this quality (every DCT coefficient of the
 * whole image: progressive scans revisit them all); a baseline image holds one band of rows. */
size_t nst_jpeg_progressive_bytes(int w, int h, int quality);

/* Create path (the caller's temporary name) for a w x h image at quality 1..100 (chroma halved
 * below 90, as the TIFF's JPEG tiles); progressive or baseline; dpi > 0 into the JFIF header;
 * comment (may be NULL) into a COM marker. */
nst_status nst_jpeg_stream_open(const char *path, int w, int h, int quality, int progressive, double dpi, const char *comment,
                                nst_jpeg_stream **out);
/* The next `rows` rows of packed 8-bit RGB. */
nst_status nst_jpeg_stream_rows(nst_jpeg_stream *js, const unsigned char *samples, int rows);
/* Finish (every row must have been written), flush and close; frees js whatever happens. */
nst_status nst_jpeg_stream_close(nst_jpeg_stream *js);

/* A w x h image of packed 8-bit RGB as a baseline JPEG in memory (*buf: malloc'ed, free()), with
 * no markers beyond JFIF: a Deep Zoom tile, which browsers show as sRGB. */
nst_status nst_jpeg_encode_mem(const unsigned char *samples, int w, int h, int quality, unsigned char **buf, size_t *len);

/* A whole image as an 8-bit progressive JPEG at quality 1..100. */
nst_status nst_jpeg_write(const char *path, const nst_image *img, int quality, const char *description);

#endif

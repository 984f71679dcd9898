/* io/image/image.h: whole images in memory and the readers/writers that fill and save them.
 *
 * An nst_image is RGB, interleaved, row-major, float in [0, 1]. Readers accept PNG (libpng),
 * JPEG (libjpeg-turbo) and TIFF (libtiff: 8/16-bit; gray, gray+alpha, RGB, RGBA, palette;
 * strips or tiles; chunky or planar). Gray is replicated to RGB and alpha is dropped. The
 * format is recognised from the file's first bytes, never from its name. Input is untrusted:
 * dimensions are checked against the limits before any allocation sized from them.
 * Writers (PNG, TIFF; 8 or 16 bit) write under a temporary name and rename when complete.
 */
#ifndef NST_IMAGE_H
#define NST_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "../../util/status.h"

typedef struct {
    int w, h;
    float *px; /* w * h * 3 */
} nst_image;

typedef enum { NST_FMT_UNKNOWN, NST_FMT_PNG, NST_FMT_JPEG, NST_FMT_TIFF } nst_format;

/* What the file held, for messages ("RGBA, 16-bit, tiled TIFF"). */
typedef struct {
    nst_format format;
    int channels, bits;
    char detail[96];
} nst_image_info;

typedef struct {
    double max_pixels;  /* refuse larger images before allocating */
    int max_side;       /* refuse a longer side (also bounds any header-driven arithmetic) */
    const char *key;    /* the config key behind max_pixels, for messages (NULL: input.max_megapixels) */
    const char *hint;   /* appended to the message when max_pixels refuses an image (may be NULL) */
} nst_read_limits;

#define NST_MAX_SIDE 1000000

nst_read_limits nst_default_limits(double max_megapixels);

nst_status nst_image_alloc(nst_image *img, int w, int h);
void nst_image_free(nst_image *img);

/* Read a whole image file (io/image/source.h reads by region). Errors name the file and what is wrong
 * with it. */
nst_status nst_image_read(const char *path, const nst_read_limits *lim, nst_image *out, nst_image_info *info);
/* Read from memory (the fuzzers' entry point); `name` appears in messages. */
nst_status nst_image_read_memory(const char *name, const unsigned char *buf, size_t len,
                                 const nst_read_limits *lim, nst_image *out, nst_image_info *info);

nst_format nst_format_sniff(const unsigned char *head, size_t n);
/* Output format from a file name's extension, NST_FMT_UNKNOWN if none of .png .tif .tiff. */
nst_format nst_format_from_name(const char *path);
const char *nst_format_name(nst_format f);

/* Write img as PNG or TIFF (chosen by extension), 8 or 16 bits per sample, values clamped to
 * [0,1] and rounded. `description` (may be NULL) is stored in the file (PNG iTXt, TIFF
 * ImageDescription): the resolved config. Written to a temporary name, synced, renamed. */
nst_status nst_image_write(const char *path, const nst_image *img, int bits, int overwrite,
                           const char *description);

/* ---- shared by the format modules ------------------------------------------------------ */

/* Check dimensions against the limits; names `name` in the message. */
nst_status nst_image_check_dims(const char *name, uint64_t w, uint64_t h, const nst_read_limits *lim);
/* Convert n pixels of decoded samples (channels 1..4, bits 8 or 16, native-endian 16-bit) to RGB
 * floats: gray is replicated, alpha dropped. */
void nst_samples_to_rgb(float *dst, int n, const void *samples, int channels, int bits);
/* The same into row y of img from column x0. */
void nst_image_put_row(nst_image *img, int y, int x0, int n, const void *samples, int channels, int bits);
/* The inverse, for the writers: row y of img clamped to [0,1] and rounded to 8-bit or native
 * 16-bit RGB samples (w * 3 of them). */
void nst_image_get_row(const nst_image *img, int y, int bits, void *samples);
/* n RGB pixels of floats, clamped and rounded, to 8-bit or native 16-bit samples. */
void nst_rgb_to_samples(void *samples, const float *src, int n, int bits);

nst_status nst_png_read(const char *name, const unsigned char *buf, size_t len, const nst_read_limits *lim,
                        nst_image *out, nst_image_info *info);
nst_status nst_jpeg_read(const char *name, const unsigned char *buf, size_t len, const nst_read_limits *lim,
                         nst_image *out, nst_image_info *info);
nst_status nst_png_write(const char *path, const nst_image *img, int bits, const char *description);
nst_status nst_tiff_write(const char *path, const nst_image *img, int bits, const char *description);
/* A whole image as an 8-bit progressive JPEG at quality 1..100 (io/image/jpeg_write.c). */
nst_status nst_jpeg_write(const char *path, const nst_image *img, int quality, const char *description);

#endif

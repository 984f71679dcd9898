/* io/image/pixels.h: an image in memory and what every format module shares: the nst_image type
 * (RGB, interleaved, row-major, float in [0, 1]), what a file held (nst_image_info, nst_format),
 * the limits a reader checks before it allocates anything, and the conversions between decoded
 * samples and RGB floats. The readers and writers (png_*, jpeg_*, tiff_*), source.c and image.c
 * all include it, and it includes none of them: the arrows between them point one way.
 */
#ifndef NST_PIXELS_H
#define NST_PIXELS_H

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

nst_format nst_format_sniff(const unsigned char *head, size_t n);
/* Output format from a file name's extension, NST_FMT_UNKNOWN if none of .png .tif .tiff. */
nst_format nst_format_from_name(const char *path);
const char *nst_format_name(nst_format f);

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

#endif

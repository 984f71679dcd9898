/* io/image/image.h: whole images: read from a file or from memory, and written by their name's
 * extension.
 *
 * Readers accept PNG (libpng), JPEG (libjpeg-turbo) and TIFF (libtiff: 8/16-bit; gray,
 * gray+alpha, RGB, RGBA, palette; strips or tiles; chunky or planar), through a source
 * (source.h, which reads by region). Gray is replicated to RGB and alpha is dropped. The format
 * is recognised from the file's first bytes, never from its name. Input is untrusted: dimensions
 * are checked against the limits before any allocation sized from them. Writers (PNG, TIFF; 8 or
 * 16 bit; JPEG) write under a temporary name and rename when complete. The nst_image type and
 * the sample conversions are in pixels.h; each format's own calls in its header (png_read.h,
 * png_write.h, jpeg_read.h, jpeg_write.h, tiff_read.h, tiff_write.h).
 */
#ifndef NST_IMAGE_H
#define NST_IMAGE_H

#include "pixels.h"

/* Read a whole image file (source.h reads by region). Errors name the file and what is wrong with
 * it. */
nst_status nst_image_read(const char *path, const nst_read_limits *lim, nst_image *out, nst_image_info *info);
/* Read from memory (the fuzzers' entry point); `name` appears in messages. */
nst_status nst_image_read_memory(const char *name, const unsigned char *buf, size_t len,
                                 const nst_read_limits *lim, nst_image *out, nst_image_info *info);

/* Write img as PNG or TIFF (chosen by extension), 8 or 16 bits per sample, values clamped to
 * [0,1] and rounded. `description` (may be NULL) is stored in the file (PNG iTXt, TIFF
 * ImageDescription): the resolved config. Written to a temporary name, synced, renamed. */
nst_status nst_image_write(const char *path, const nst_image *img, int bits, int overwrite,
                           const char *description);

#endif

/* io/image/png_read.h: a whole PNG decoded from memory (libpng; PNG cannot be read by region).
 * Input is untrusted: png_read.c checks the dimensions against the limits before it allocates. */
#ifndef NST_PNG_READ_H
#define NST_PNG_READ_H

#include "pixels.h"

nst_status nst_png_read(const char *name, const unsigned char *buf, size_t len, const nst_read_limits *lim,
                        nst_image *out, nst_image_info *info);

#endif

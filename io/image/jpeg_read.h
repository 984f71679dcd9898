/* io/image/jpeg_read.h: a whole JPEG decoded from memory (libjpeg-turbo; a truncated or corrupt
 * file is an error, not a grey-filled image). Input is untrusted: jpeg_read.c checks the
 * dimensions against the limits before it allocates. */
#ifndef NST_JPEG_READ_H
#define NST_JPEG_READ_H

#include "pixels.h"

nst_status nst_jpeg_read(const char *name, const unsigned char *buf, size_t len, const nst_read_limits *lim,
                         nst_image *out, nst_image_info *info);

#endif

/* io/image/tiff_read.h: TIFF and BigTIFF read by region (libtiff): a source (source_type.h) that
 * decodes only the strips or tiles under the rectangles asked for; tiff_read.c says what it
 * accepts and checks. source.c opens one when a file's first bytes say TIFF. */
#ifndef NST_TIFF_READ_H
#define NST_TIFF_READ_H

#include "source_type.h"

/* TIFF from memory (buf != NULL) or an open descriptor (fd >= 0, buf == NULL; closed by the source). */
nst_status nst_tiff_source_open(const char *name, const unsigned char *buf, size_t len, int fd,
                                const nst_read_limits *lim, nst_source **out);

#endif

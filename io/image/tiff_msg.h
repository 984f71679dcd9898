/* io/image/tiff_msg.h: libtiff's errors and warnings routed into our messages instead of stderr. */
#ifndef NST_TIFF_MSG_H
#define NST_TIFF_MSG_H

#include <tiffio.h>

#define NST_TIFF_MSG_MAX 256

/* Open options whose error handler keeps the first libtiff error in msg (NST_TIFF_MSG_MAX bytes,
 * without the file name libtiff sometimes prefixes) and whose warning handler drops warnings
 * (unknown tags and the like). max_alloc > 0 also caps libtiff's single allocations.
 * Free with TIFFOpenOptionsFree after opening. */
TIFFOpenOptions *nst_tiff_options(char *msg, tmsize_t max_alloc);

#endif

/* io/versions.c: versions of HDF5, libtiff, libpng and libjpeg (see versions.h). */
#include "versions.h"

#include <hdf5.h>
#include <png.h>
#include <stdio.h>
#include <string.h>
#include <tiffio.h>

#include <jpeglib.h> /* after stdio.h */

void nst_io_versions(char *out, size_t cap)
{
    unsigned maj = 0, min = 0, rel = 0;
    H5get_libversion(&maj, &min, &rel);
    char tiff[64];
    snprintf(tiff, sizeof tiff, "%s", TIFFGetVersion());
    char *nl = strchr(tiff, '\n');
    if (nl) *nl = 0;
    snprintf(out, cap, "HDF5 %u.%u.%u%s, %s, libpng %s, libjpeg API %d", maj, min, rel,
#ifdef H5_HAVE_PARALLEL
             " (parallel)",
#else
             "",
#endif
             tiff, png_get_libpng_ver(NULL), JPEG_LIB_VERSION);
}

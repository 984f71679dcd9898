/* io/tiff_write.c: TIFF writer (libtiff) for whole images: RGB, 8 or 16 bits per sample, deflate
 * with the horizontal predictor, strips of about 256 KiB, the resolved config in
 * ImageDescription. (Tiled BigTIFF pyramids for gigapixel outputs belong to the streaming
 * writer.) Errors from libtiff go to our error channel. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <tiffio.h>

#include "../util/mem.h"
#include "image.h"
#include "tiff_msg.h"

nst_status nst_tiff_write(const char *path, const nst_image *img, int bits, const char *description)
{
    char msg[NST_TIFF_MSG_MAX];
    TIFFOpenOptions *opts = nst_tiff_options(msg, 0);
    if (!opts) return nst_fail(NST_ENOMEM, "cannot create a TIFF writer");
    /* "w8" = BigTIFF when the raw image could pass 4 GiB, classic TIFF otherwise */
    double raw = (double)img->w * img->h * 3 * (bits / 8);
    TIFF *tif = TIFFOpenExt(path, raw > 3.9e9 ? "w8" : "w", opts);
    TIFFOpenOptionsFree(opts);
    if (!tif) return nst_fail(NST_ERUNTIME, "cannot create TIFF: %s", msg[0] ? msg : strerror(errno));

    size_t rowbytes = (size_t)img->w * 3 * (bits / 8);
    uint32_t rps = (uint32_t)((256u << 10) / (rowbytes ? rowbytes : 1));
    if (rps < 1) rps = 1;
    TIFFSetField(tif, TIFFTAG_IMAGEWIDTH, (uint32_t)img->w);
    TIFFSetField(tif, TIFFTAG_IMAGELENGTH, (uint32_t)img->h);
    TIFFSetField(tif, TIFFTAG_SAMPLESPERPIXEL, 3);
    TIFFSetField(tif, TIFFTAG_BITSPERSAMPLE, bits);
    TIFFSetField(tif, TIFFTAG_SAMPLEFORMAT, SAMPLEFORMAT_UINT);
    TIFFSetField(tif, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_RGB);
    TIFFSetField(tif, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG);
    TIFFSetField(tif, TIFFTAG_ORIENTATION, ORIENTATION_TOPLEFT);
    TIFFSetField(tif, TIFFTAG_COMPRESSION, COMPRESSION_ADOBE_DEFLATE);
    TIFFSetField(tif, TIFFTAG_PREDICTOR, PREDICTOR_HORIZONTAL);
    TIFFSetField(tif, TIFFTAG_ROWSPERSTRIP, rps);
    TIFFSetField(tif, TIFFTAG_SOFTWARE, "nstbatch");
    if (description) TIFFSetField(tif, TIFFTAG_IMAGEDESCRIPTION, description);

    nst_status s = NST_OK;
    unsigned char *row = nst_alloc(rowbytes, "a TIFF row");
    if (!row) s = NST_ENOMEM;
    for (int y = 0; s == NST_OK && y < img->h; y++) {
        nst_image_get_row(img, y, bits, row);
        if (TIFFWriteScanline(tif, row, (uint32_t)y, 0) < 0)
            s = nst_fail(NST_ERUNTIME, "TIFF write failed at row %d: %s", y, msg[0] ? msg : strerror(errno));
    }
    nst_free(row);
    if (s == NST_OK && !TIFFFlush(tif))
        s = nst_fail(NST_ERUNTIME, "TIFF write failed: %s", msg[0] ? msg : strerror(errno));
    TIFFClose(tif);
    return s;
}

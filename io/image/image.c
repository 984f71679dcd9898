/* io/image/image.c: whole images read through a source and written by extension (see image.h). */
#include "image.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../../util/checked.h"
#include "../../util/mem.h"
#include "../atomic_file.h"
#include "jpeg_write.h"
#include "png_write.h"
#include "source.h"
#include "tiff_write.h"

static nst_status read_whole(nst_source *src, nst_image *out, nst_image_info *info)
{
    if (info) *info = src->info;
    nst_status s = nst_image_alloc(out, src->w, src->h);
    if (s == NST_OK) s = nst_source_read(src, nst_rect_make(0, 0, src->w, src->h), out->px);
    nst_source_close(src);
    if (s != NST_OK) nst_image_free(out);
    return s;
}

static nst_source_limits whole_limits(const nst_read_limits *lim)
{
    nst_source_limits l = {lim->max_pixels, lim->max_pixels, lim->max_side, lim->key, lim->key};
    return l;
}

nst_status nst_image_read_memory(const char *name, const unsigned char *buf, size_t len,
                                 const nst_read_limits *lim, nst_image *out, nst_image_info *info)
{
    nst_source *src;
    nst_source_limits l = whole_limits(lim);
    memset(out, 0, sizeof *out);
    NST_TRY(nst_source_open_memory(name, buf, len, &l, &src));
    return read_whole(src, out, info);
}

nst_status nst_image_read(const char *path, const nst_read_limits *lim, nst_image *out, nst_image_info *info)
{
    nst_source *src;
    nst_source_limits l = whole_limits(lim);
    memset(out, 0, sizeof *out);
    NST_TRY(nst_source_open(path, &l, &src));
    return read_whole(src, out, info);
}

nst_status nst_image_write(const char *path, const nst_image *img, int bits, int overwrite,
                           const char *description)
{
    nst_format f = nst_format_from_name(path);
    if (f == NST_FMT_UNKNOWN)
        return nst_fail(NST_EINPUT, "%s: unknown output format: use a .png, .tif, .tiff, .jpg or .jpeg name", path);
    if (bits != 8 && bits != 16) return nst_fail(NST_EINPUT, "%s: bits must be 8 or 16", path);
    nst_atomic_file af;
    NST_TRY(nst_atomic_begin(&af, path, overwrite));
    nst_status s = f == NST_FMT_PNG    ? nst_png_write(af.tmp, img, bits, description)
                   : f == NST_FMT_JPEG ? nst_jpeg_write(af.tmp, img, 90, description)
                                       : nst_tiff_write(af.tmp, img, bits, description);
    if (s != NST_OK) {
        nst_atomic_abort(&af);
        return nst_fail_context(s, "%s", path);
    }
    return nst_atomic_commit(&af);
}

/* io/image/png_read.c: PNG reader (from memory) with libpng; PNG is decoded whole (not random access).
 *
 * libpng reports errors by longjmp; every libpng message is captured into our error channel
 * with the file name, and every buffer allocated after setjmp is released on that path.
 */
#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>

#include "../../util/checked.h"
#include "../../util/mem.h"
#include "png_read.h"

typedef struct {
    const unsigned char *buf;
    size_t len, pos;
    char msg[256];
} png_ctx;

static void pngio_error(png_structp png, png_const_charp m)
{
    png_ctx *ctx = png_get_error_ptr(png);
    snprintf(ctx->msg, sizeof ctx->msg, "%s", m);
    png_longjmp(png, 1);
}

static void pngio_warning(png_structp png, png_const_charp m)
{
    (void)png;
    (void)m; /* benign ancillary-chunk warnings (e.g. iCCP profiles) are not our business */
}

static void pngio_read(png_structp png, png_bytep out, size_t n)
{
    png_ctx *ctx = png_get_io_ptr(png);
    if (n > ctx->len - ctx->pos) png_error(png, "file is truncated");
    memcpy(out, ctx->buf + ctx->pos, n);
    ctx->pos += n;
}

nst_status nst_png_read(const char *name, const unsigned char *buf, size_t len, const nst_read_limits *lim,
                        nst_image *out, nst_image_info *info)
{
    png_ctx ctx = {buf, len, 0, ""};
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &ctx, pngio_error, pngio_warning);
    if (!png) return nst_fail(NST_ENOMEM, "%s: cannot create a PNG reader", name);
    png_infop pinfo = png_create_info_struct(png);
    unsigned char *volatile rows = NULL;
    png_bytep *volatile rowp = NULL;
    volatile nst_status status = NST_OK;
    if (!pinfo) {
        png_destroy_read_struct(&png, NULL, NULL);
        return nst_fail(NST_ENOMEM, "%s: cannot create a PNG reader", name);
    }
    if (setjmp(png_jmpbuf(png))) {
        if (status == NST_OK) status = nst_fail(NST_EINPUT, "%s: corrupt PNG: %s", name, ctx.msg);
        goto done;
    }
    png_set_read_fn(png, &ctx, pngio_read);
    png_set_user_limits(png, (png_uint_32)lim->max_side, (png_uint_32)lim->max_side);
    png_set_chunk_malloc_max(png, 16u << 20);
    png_read_info(png, pinfo);

    png_uint_32 w, h;
    int depth, ctype, interlace;
    png_get_IHDR(png, pinfo, &w, &h, &depth, &ctype, &interlace, NULL, NULL);
    if (nst_image_check_dims(name, w, h, lim) != NST_OK) {
        status = NST_EINPUT;
        goto done;
    }
    info->format = NST_FMT_PNG;
    info->bits = depth == 16 ? 16 : 8;
    info->channels = (ctype & PNG_COLOR_MASK_COLOR) ? 3 : 1;
    if ((ctype & PNG_COLOR_MASK_ALPHA) || png_get_valid(png, pinfo, PNG_INFO_tRNS)) info->channels++;
    snprintf(info->detail, sizeof info->detail, "%s%s, %d-bit PNG%s",
             ctype == PNG_COLOR_TYPE_PALETTE ? "palette " : "",
             info->channels >= 3 ? (info->channels == 4 ? "RGBA" : "RGB") : (info->channels == 2 ? "gray+alpha" : "gray"),
             depth, interlace != PNG_INTERLACE_NONE ? ", interlaced" : "");

    /* Normalise to 8- or 16-bit RGB; alpha stripped. */
    png_set_expand(png);
    png_set_strip_alpha(png);
    png_set_gray_to_rgb(png);
    if (depth == 16) png_set_swap(png); /* PNG is big-endian; we read native uint16 */
    png_set_interlace_handling(png);
    png_read_update_info(png, pinfo);
    size_t rowbytes = png_get_rowbytes(png, pinfo);
    size_t expect;
    if (!nst_mul3_size(w, 3, depth == 16 ? 2 : 1, &expect) || rowbytes != expect) {
        status = nst_fail(NST_EINPUT, "%s: unsupported PNG layout (row of %zu bytes)", name, rowbytes);
        goto done;
    }
    rows = nst_alloc_array(h, rowbytes, "PNG rows");
    rowp = nst_alloc_array(h, sizeof(png_bytep), "PNG row pointers");
    if (!rows || !rowp || nst_image_alloc(out, (int)w, (int)h) != NST_OK) {
        status = NST_ENOMEM;
        goto done;
    }
    for (png_uint_32 y = 0; y < h; y++) rowp[y] = rows + (size_t)y * rowbytes;
    png_read_image(png, rowp);
    png_read_end(png, NULL);
    for (png_uint_32 y = 0; y < h; y++) nst_image_put_row(out, (int)y, 0, (int)w, rowp[y], 3, depth == 16 ? 16 : 8);

done:
    png_destroy_read_struct(&png, &pinfo, NULL);
    nst_free(rows);
    nst_free(rowp);
    if (status != NST_OK) nst_image_free(out);
    return status;
}

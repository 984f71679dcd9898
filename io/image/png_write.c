/* io/image/png_write.c: streaming PNG writer with libpng (see png_write.h); the whole-image writer on
 * top of it. libpng reports errors by longjmp: every entry point sets its own jump buffer. */
#include "png_write.h"

#include <errno.h>
#include <math.h>
#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../util/mem.h"
#include "../../util/version.h"

struct nst_png_stream {
    png_structp png;
    png_infop info;
    FILE *f;
    int w, h, bits, rows_done;
    char path[4096];
    char msg[256];
};

static void on_error(png_structp png, png_const_charp m)
{
    nst_png_stream *ps = png_get_error_ptr(png);
    snprintf(ps->msg, sizeof ps->msg, "%s", m);
    png_longjmp(png, 1);
}

static void on_warning(png_structp png, png_const_charp m)
{
    (void)png;
    (void)m;
}

/* A stream on an open FILE (taken: closed by nst_png_stream_close); path names it in messages;
 * metadata: the text chunks and pHYs (not for a Deep Zoom tile). */
static nst_status stream_on(FILE *f, const char *path, int w, int h, int bits, int level, const char *description, double dpi,
                            int metadata, nst_png_stream **out)
{
    *out = NULL;
    nst_png_stream *ps = nst_calloc(sizeof *ps, "a PNG writer");
    if (!ps) {
        fclose(f);
        return NST_ENOMEM;
    }
    snprintf(ps->path, sizeof ps->path, "%s", path);
    ps->w = w;
    ps->h = h;
    ps->bits = bits;
    ps->f = f;
    ps->png = png_create_write_struct(PNG_LIBPNG_VER_STRING, ps, on_error, on_warning);
    ps->info = ps->png ? png_create_info_struct(ps->png) : NULL;
    if (!ps->info) {
        png_destroy_write_struct(&ps->png, NULL);
        fclose(ps->f);
        nst_free(ps);
        return nst_fail(NST_ENOMEM, "%s: cannot create a PNG writer", path);
    }
    if (setjmp(png_jmpbuf(ps->png))) {
        nst_status s = nst_fail(NST_ERUNTIME, "%s: PNG write failed: %s", path, ps->msg);
        png_destroy_write_struct(&ps->png, &ps->info);
        fclose(ps->f);
        nst_free(ps);
        return s;
    }
    png_init_io(ps->png, ps->f);
    png_set_compression_level(ps->png, level > 0 ? level : 6);
    png_set_IHDR(ps->png, ps->info, (png_uint_32)w, (png_uint_32)h, bits, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_set_sRGB_gAMA_and_cHRM(ps->png, ps->info, PNG_sRGB_INTENT_PERCEPTUAL); /* the renderer's pixels are sRGB */
    if (metadata && dpi > 0) {
        png_uint_32 ppm = (png_uint_32)lround(dpi / 0.0254);
        png_set_pHYs(ps->png, ps->info, ppm, ppm, PNG_RESOLUTION_METER);
    }
    char software[64];
    snprintf(software, sizeof software, "nstbatch %s", NST_VERSION);
    png_text text[2];
    memset(text, 0, sizeof text);
    text[0].compression = PNG_TEXT_COMPRESSION_NONE;
    text[0].key = "Software";
    text[0].text = software;
    int ntext = 1;
    if (description) {
        text[1].compression = PNG_ITXT_COMPRESSION_zTXt;
        text[1].key = "nstbatch.config";
        text[1].text = (char *)description;
        ntext = 2;
    }
    if (metadata) png_set_text(ps->png, ps->info, text, ntext);
    png_write_info(ps->png, ps->info);
    if (bits == 16) png_set_swap(ps->png); /* our samples are native (little-endian) 16-bit */
    *out = ps;
    return NST_OK;
}

nst_status nst_png_stream_open(const char *path, int w, int h, int bits, int level, const char *description, double dpi,
                               nst_png_stream **out)
{
    *out = NULL;
    FILE *f = fopen(path, "wb");
    if (!f) return nst_fail(NST_ERUNTIME, "%s: cannot open for writing: %s", path, strerror(errno));
    return stream_on(f, path, w, h, bits, level, description, dpi, 1, out);
}

nst_status nst_png_stream_rows(nst_png_stream *ps, const void *samples, int rows)
{
    if (rows < 0 || ps->rows_done + rows > ps->h) return nst_fail(NST_ERUNTIME, "%s: PNG rows past the image", ps->path);
    if (setjmp(png_jmpbuf(ps->png))) return nst_fail(NST_ERUNTIME, "%s: PNG write failed: %s", ps->path, ps->msg);
    const size_t row = (size_t)ps->w * 3 * (size_t)(ps->bits / 8);
    for (int y = 0; y < rows; y++) png_write_row(ps->png, (png_const_bytep)samples + (size_t)y * row);
    ps->rows_done += rows;
    return NST_OK;
}

static nst_status finish(nst_png_stream *ps)
{
    if (ps->rows_done != ps->h)
        return nst_fail(NST_ERUNTIME, "%s: PNG closed after %d of its %d rows", ps->path, ps->rows_done, ps->h);
    if (setjmp(png_jmpbuf(ps->png))) return nst_fail(NST_ERUNTIME, "%s: PNG write failed: %s", ps->path, ps->msg);
    png_write_end(ps->png, NULL);
    return NST_OK;
}

nst_status nst_png_stream_close(nst_png_stream *ps)
{
    nst_status s = finish(ps);
    png_destroy_write_struct(&ps->png, &ps->info);
    if ((fflush(ps->f) != 0 || ferror(ps->f)) && s == NST_OK)
        s = nst_fail(NST_ERUNTIME, "%s: write error: %s", ps->path, strerror(errno));
    if (fclose(ps->f) != 0 && s == NST_OK) s = nst_fail(NST_ERUNTIME, "%s: write error: %s", ps->path, strerror(errno));
    nst_free(ps);
    return s;
}

nst_status nst_png_write(const char *path, const nst_image *img, int bits, const char *description)
{
    nst_png_stream *ps;
    NST_TRY(nst_png_stream_open(path, img->w, img->h, bits, 0, description, 0, &ps));
    unsigned char *row = nst_alloc_array((size_t)img->w * 3, (size_t)(bits / 8), "a PNG row");
    nst_status s = row ? NST_OK : NST_ENOMEM;
    for (int y = 0; s == NST_OK && y < img->h; y++) {
        nst_image_get_row(img, y, bits, row);
        s = nst_png_stream_rows(ps, row, 1);
    }
    nst_free(row);
    nst_status c = nst_png_stream_close(ps);
    return s != NST_OK ? s : c;
}

nst_status nst_png_encode_mem(const void *samples, int w, int h, int bits, int level, unsigned char **buf, size_t *len)
{
    *buf = NULL, *len = 0;
    FILE *f = open_memstream((char **)buf, len);
    if (!f) return nst_fail(NST_ENOMEM, "cannot open a memory stream for a PNG tile: %s", strerror(errno));
    nst_png_stream *ps;
    nst_status s = stream_on(f, "a PNG tile", w, h, bits, level, NULL, 0, 0, &ps);
    if (s == NST_OK) {
        s = nst_png_stream_rows(ps, samples, h);
        nst_status c = nst_png_stream_close(ps); /* fclose publishes *buf and *len */
        if (s == NST_OK) s = c;
    }
    if (s != NST_OK) {
        free(*buf);
        *buf = NULL, *len = 0;
    }
    return s;
}

/* io/image/jpeg_write.c: the JPEG output as a stream of rows (see jpeg_write.h).
 *
 * libjpeg reports failures through error_exit, which longjmps back into whichever call failed;
 * each entry point sets its own jump target, and a failure leaves the stream unusable (close
 * still frees it). Warnings while writing are ignored: libjpeg warns only about its input tables.
 */
#include "jpeg_write.h"

#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h> /* after stdio.h: it needs FILE and size_t */

#include "../../util/mem.h"
#include "icc.h"

typedef struct {
    struct jpeg_error_mgr pub;
    jmp_buf jb;
    char msg[JMSG_LENGTH_MAX];
} jpeg_err;

struct nst_jpeg_stream {
    struct jpeg_compress_struct ci;
    jpeg_err err;
    FILE *f;
    int h, rows_done, failed;
    char path[4096];
};

static void on_error(j_common_ptr ci)
{
    jpeg_err *e = (jpeg_err *)ci->err;
    ci->err->format_message(ci, e->msg);
    longjmp(e->jb, 1);
}

static void on_message(j_common_ptr ci, int level) { (void)ci, (void)level; }

size_t nst_jpeg_progressive_bytes(int w, int h, int quality)
{
    double chroma = quality < 90 ? 0.25 : 1.0; /* 4:2:0 below 90, 4:4:4 from 90 */
    return (size_t)((double)w * h * (1.0 + 2.0 * chroma) * sizeof(JCOEF));
}

static nst_status failed(nst_jpeg_stream *js, const char *what)
{
    js->failed = 1;
    return nst_fail(NST_ERUNTIME, "%s: JPEG %s failed: %s", js->path, what, js->err.msg[0] ? js->err.msg : strerror(errno));
}

/* Everything before the first row: parameters, markers; longjmps on failure. */
static void start(nst_jpeg_stream *js, int w, int h, int quality, int progressive, double dpi, const char *comment, int icc_profile)
{
    struct jpeg_compress_struct *ci = &js->ci;
    jpeg_create_compress(ci);
    jpeg_stdio_dest(ci, js->f);
    ci->image_width = (JDIMENSION)w;
    ci->image_height = (JDIMENSION)h;
    ci->input_components = 3;
    ci->in_color_space = JCS_RGB;
    jpeg_set_defaults(ci);
    jpeg_set_quality(ci, quality, TRUE);
    int sub = quality < 90 ? 2 : 1; /* the TIFF's JPEG tiles make the same choice */
    ci->comp_info[0].h_samp_factor = ci->comp_info[0].v_samp_factor = sub;
    ci->comp_info[1].h_samp_factor = ci->comp_info[1].v_samp_factor = 1;
    ci->comp_info[2].h_samp_factor = ci->comp_info[2].v_samp_factor = 1;
    ci->optimize_coding = TRUE;
    if (progressive) jpeg_simple_progression(ci);
    if (dpi > 0) {
        ci->write_JFIF_header = TRUE;
        ci->density_unit = 1; /* dots per inch */
        ci->X_density = ci->Y_density = (UINT16)(dpi > 65535 ? 65535 : lround(dpi));
    }
    jpeg_start_compress(ci, TRUE);
    unsigned char icc[NST_ICC_SRGB_MAX];
    size_t n = icc_profile ? nst_icc_srgb(icc, sizeof icc) : 0;
    if (n) jpeg_write_icc_profile(ci, icc, (unsigned int)n);
    if (comment && *comment) { /* a COM marker holds at most 65533 bytes */
        size_t len = strlen(comment);
        jpeg_write_marker(ci, JPEG_COM, (const JOCTET *)comment, (unsigned int)(len > 65533 ? 65533 : len));
    }
}

/* A stream on an open FILE (taken: closed by nst_jpeg_stream_close); name for messages. */
static nst_status stream_on(FILE *f, const char *name, int w, int h, int quality, int progressive, double dpi, const char *comment,
                            int icc_profile, nst_jpeg_stream **out)
{
    nst_jpeg_stream *js = nst_calloc(sizeof *js, "a JPEG writer");
    if (!js) {
        fclose(f);
        return NST_ENOMEM;
    }
    snprintf(js->path, sizeof js->path, "%s", name);
    js->h = h;
    js->f = f;
    js->ci.err = jpeg_std_error(&js->err.pub);
    js->err.pub.error_exit = on_error;
    js->err.pub.emit_message = on_message;
    if (setjmp(js->err.jb)) {
        nst_status s = failed(js, "header");
        nst_jpeg_stream_close(js);
        return s;
    }
    start(js, w, h, quality, progressive, dpi, comment, icc_profile);
    *out = js;
    return NST_OK;
}

nst_status nst_jpeg_stream_open(const char *path, int w, int h, int quality, int progressive, double dpi, const char *comment,
                                nst_jpeg_stream **out)
{
    *out = NULL;
    if (w < 1 || h < 1 || w > NST_JPEG_MAX_SIDE || h > NST_JPEG_MAX_SIDE)
        return nst_fail(NST_EINPUT, "%s: %dx%d: a JPEG side is at most %d px", path, w, h, NST_JPEG_MAX_SIDE);
    FILE *f = fopen(path, "wb");
    if (!f) return nst_fail(NST_ERUNTIME, "%s: cannot open for writing: %s", path, strerror(errno));
    return stream_on(f, path, w, h, quality, progressive, dpi, comment, 1, out);
}

/* The rows through libjpeg; longjmps to the caller's target on failure. The number taken. */
static int write_rows(nst_jpeg_stream *js, const unsigned char *samples, int rows)
{
    const size_t stride = 3 * (size_t)js->ci.image_width;
    int done = 0;
    while (done < rows) {
        JSAMPROW row[16];
        int n = rows - done < 16 ? rows - done : 16;
        for (int i = 0; i < n; i++) row[i] = (JSAMPROW)(samples + (size_t)(done + i) * stride);
        JDIMENSION wrote = jpeg_write_scanlines(&js->ci, row, (JDIMENSION)n);
        if (wrote == 0) break;
        done += (int)wrote;
    }
    return done;
}

nst_status nst_jpeg_stream_rows(nst_jpeg_stream *js, const unsigned char *samples, int rows)
{
    if (js->failed) return nst_fail(NST_ERUNTIME, "%s: JPEG write after a failure", js->path);
    if (rows < 0 || js->rows_done + rows > js->h) return nst_fail(NST_ERUNTIME, "%s: JPEG rows past the image's end", js->path);
    if (setjmp(js->err.jb)) return failed(js, "write");
    int done = write_rows(js, samples, rows);
    js->rows_done += done;
    return done == rows ? NST_OK : failed(js, "write (rows not taken)");
}

/* jpeg_finish_compress with its own jump target: 1 on success. */
static int finish(nst_jpeg_stream *js)
{
    if (setjmp(js->err.jb)) return 0;
    jpeg_finish_compress(&js->ci);
    return 1;
}

nst_status nst_jpeg_stream_close(nst_jpeg_stream *js)
{
    nst_status s = NST_OK;
    if (!js->failed && js->rows_done != js->h)
        s = nst_fail(NST_ERUNTIME, "%s: JPEG closed after %d of its %d rows", js->path, js->rows_done, js->h);
    if (s == NST_OK && !js->failed && !finish(js)) s = failed(js, "finish");
    jpeg_destroy_compress(&js->ci);
    if (js->f && fclose(js->f) != 0 && s == NST_OK) s = nst_fail(NST_ERUNTIME, "%s: cannot close: %s", js->path, strerror(errno));
    nst_free(js);
    return s;
}

nst_status nst_jpeg_write(const char *path, const nst_image *img, int quality, const char *description)
{
    nst_jpeg_stream *js;
    NST_TRY(nst_jpeg_stream_open(path, img->w, img->h, quality, 1, 0, description, &js));
    unsigned char *row = nst_alloc((size_t)img->w * 3, "a JPEG row");
    nst_status s = row ? NST_OK : NST_ENOMEM;
    for (int y = 0; s == NST_OK && y < img->h; y++) {
        nst_image_get_row(img, y, 8, row);
        s = nst_jpeg_stream_rows(js, row, 1);
    }
    nst_free(row);
    nst_status c = nst_jpeg_stream_close(js);
    return s != NST_OK ? s : c;
}

nst_status nst_jpeg_encode_mem(const unsigned char *samples, int w, int h, int quality, unsigned char **buf, size_t *len)
{
    *buf = NULL, *len = 0;
    FILE *f = open_memstream((char **)buf, len);
    if (!f) return nst_fail(NST_ENOMEM, "cannot open a memory stream for a JPEG tile: %s", strerror(errno));
    nst_jpeg_stream *js;
    nst_status s = stream_on(f, "a JPEG tile", w, h, quality, 0, 0, NULL, 0, &js);
    if (s == NST_OK) {
        s = nst_jpeg_stream_rows(js, samples, h);
        nst_status c = nst_jpeg_stream_close(js); /* fclose publishes *buf and *len */
        if (s == NST_OK) s = c;
    }
    if (s != NST_OK) {
        free(*buf);
        *buf = NULL, *len = 0;
    }
    return s;
}

/* io/image/jpeg_read.c: JPEG reader (from memory) with libjpeg-turbo.
 *
 * libjpeg reports fatal errors through error_exit (we longjmp back) and corrupt data through
 * warnings; a truncated or corrupt file is an error here, not a grey-filled image.
 */
#include <setjmp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <jpeglib.h> /* after stdio.h: it needs FILE and size_t */

#include "../../util/mem.h"
#include "jpeg_read.h"

typedef struct {
    struct jpeg_error_mgr pub;
    jmp_buf jb;
    char msg[JMSG_LENGTH_MAX];
} jpeg_err;

static void jpegio_error_exit(j_common_ptr ci)
{
    jpeg_err *e = (jpeg_err *)ci->err;
    ci->err->format_message(ci, e->msg);
    longjmp(e->jb, 1);
}

static void jpegio_emit(j_common_ptr ci, int level)
{
    if (level < 0) jpegio_error_exit(ci); /* level -1: corrupt data ("premature end", ...) */
}

nst_status nst_jpeg_read(const char *name, const unsigned char *buf, size_t len, const nst_read_limits *lim,
                         nst_image *out, nst_image_info *info)
{
    struct jpeg_decompress_struct ci;
    jpeg_err err;
    unsigned char *volatile row = NULL;
    volatile nst_status status = NST_OK;

    memset(&ci, 0, sizeof ci);
    ci.err = jpeg_std_error(&err.pub);
    err.pub.error_exit = jpegio_error_exit;
    err.pub.emit_message = jpegio_emit;
    err.msg[0] = 0;
    if (setjmp(err.jb)) {
        if (status == NST_OK) status = nst_fail(NST_EINPUT, "%s: corrupt JPEG: %s", name, err.msg);
        goto done;
    }
    jpeg_create_decompress(&ci);
    ci.mem->max_memory_to_use = 512L << 20;
    jpeg_mem_src(&ci, buf, (unsigned long)len);
    jpeg_read_header(&ci, TRUE);
    if (nst_image_check_dims(name, ci.image_width, ci.image_height, lim) != NST_OK) {
        status = NST_EINPUT;
        goto done;
    }
    info->format = NST_FMT_JPEG;
    info->bits = 8;
    info->channels = ci.num_components;
    if (ci.jpeg_color_space == JCS_CMYK || ci.jpeg_color_space == JCS_YCCK) {
        status = nst_fail(NST_EINPUT, "%s: CMYK JPEG is not supported; convert it to RGB", name);
        goto done;
    }
    snprintf(info->detail, sizeof info->detail, "%s JPEG%s", ci.num_components == 1 ? "gray" : "colour",
             ci.progressive_mode ? ", progressive" : "");
    ci.out_color_space = JCS_RGB;
    jpeg_start_decompress(&ci);
    if (ci.output_components != 3) {
        status = nst_fail(NST_EINPUT, "%s: unsupported JPEG colour layout", name);
        goto done;
    }
    row = nst_alloc_array(ci.output_width, 3, "a JPEG row");
    if (!row || nst_image_alloc(out, (int)ci.output_width, (int)ci.output_height) != NST_OK) {
        status = NST_ENOMEM;
        goto done;
    }
    while (ci.output_scanline < ci.output_height) {
        JSAMPROW rp = row;
        int y = (int)ci.output_scanline;
        if (jpeg_read_scanlines(&ci, &rp, 1) != 1) {
            status = nst_fail(NST_EINPUT, "%s: corrupt JPEG: cannot decode row %d", name, y);
            goto done;
        }
        nst_image_put_row(out, y, 0, (int)ci.output_width, row, 3, 8);
    }
    jpeg_finish_decompress(&ci);

done:
    jpeg_destroy_decompress(&ci);
    nst_free(row);
    if (status != NST_OK) nst_image_free(out);
    return status;
}

/* kernels/cpu/copy_cpu.c: rectangle copies between tensors and host staging buffers: the halo
 * exchange, the extraction of a tile's core and the scatter/gather of images move pixels with
 * these. Rows are contiguous runs of w * c floats. */
#include <string.h>

#include "cpu.h"

nst_status cpu_copy_rect(nst_backend *be, const nst_tensor *src, nst_rect r, nst_tensor *dst, int dx, int dy)
{
    (void)be;
    NST_TRY(cpu_check_f32(src, "copy_rect"));
    NST_TRY(cpu_check_f32(dst, "copy_rect"));
    NST_TRY(cpu_check_region(src, r, "copy_rect"));
    NST_TRY(cpu_check_region(dst, nst_rect_make(dx, dy, r.w, r.h), "copy_rect"));
    if (src->c != dst->c) return nst_fail(NST_ERUNTIME, "copy_rect: %d channels into %d", src->c, dst->c);
    const size_t row = (size_t)r.w * src->c * sizeof(float);
    for (int y = 0; y < r.h; y++)
        memmove((float *)dst->data + ((size_t)(dy + y) * dst->w + dx) * dst->c,
                (const float *)src->data + ((size_t)(r.y + y) * src->w + r.x) * src->c, row);
    return NST_OK;
}

nst_status cpu_download_rect(nst_backend *be, const nst_tensor *src, nst_rect r, float *host)
{
    (void)be;
    NST_TRY(cpu_check_f32(src, "download_rect"));
    NST_TRY(cpu_check_region(src, r, "download_rect"));
    const size_t n = (size_t)r.w * src->c;
    for (int y = 0; y < r.h; y++)
        memcpy(host + (size_t)y * n, (const float *)src->data + ((size_t)(r.y + y) * src->w + r.x) * src->c, n * sizeof(float));
    return NST_OK;
}

nst_status cpu_upload_rect(nst_backend *be, const float *host, nst_tensor *dst, nst_rect r)
{
    (void)be;
    NST_TRY(cpu_check_f32(dst, "upload_rect"));
    NST_TRY(cpu_check_region(dst, r, "upload_rect"));
    const size_t n = (size_t)r.w * dst->c;
    for (int y = 0; y < r.h; y++)
        memcpy((float *)dst->data + ((size_t)(r.y + y) * dst->w + r.x) * dst->c, host + (size_t)y * n, n * sizeof(float));
    return NST_OK;
}

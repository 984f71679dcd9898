/* kernels/cpu/copy_cpu.c: rectangle copies between tensors and host staging buffers, and the
 * conversions between fp32 and the activation dtype. The halo exchange, the extraction of a
 * tile's core and the scatter/gather of images move pixels with these; content targets are copies
 * of features. Rows are contiguous runs of w * c elements. */
#include <string.h>

#include "cpu.h"

#define PAR_MIN 65536 /* elements below which a conversion runs on one thread */

void cpu_to_f32(float *dst, const void *src, size_t n, nst_dtype dt)
{
    if (dt != NST_BF16) {
        memcpy(dst, src, n * sizeof(float));
        return;
    }
    const nst_bf16 *s = src;
#pragma omp parallel for simd schedule(static) if (n >= PAR_MIN)
    for (size_t i = 0; i < n; i++) dst[i] = nst_bf16_to_f32(s[i]);
}

void cpu_from_f32(void *dst, const float *src, size_t n, nst_dtype dt)
{
    if (dt != NST_BF16) {
        memcpy(dst, src, n * sizeof(float));
        return;
    }
    nst_bf16 *d = dst;
#pragma omp parallel for simd schedule(static) if (n >= PAR_MIN)
    for (size_t i = 0; i < n; i++) d[i] = nst_f32_to_bf16(src[i]);
}

nst_status cpu_copy_rect(nst_backend *be, const nst_tensor *src, nst_rect r, nst_tensor *dst, int dx, int dy)
{
    (void)be;
    NST_TRY(cpu_check_same_dt(src, dst, "copy_rect"));
    NST_TRY(cpu_check_region(src, r, "copy_rect"));
    NST_TRY(cpu_check_region(dst, nst_rect_make(dx, dy, r.w, r.h), "copy_rect"));
    if (src->c != dst->c) return nst_fail(NST_ERUNTIME, "copy_rect: %d channels into %d", src->c, dst->c);
    const int bf = src->dt == NST_BF16;
    const size_t row = (size_t)r.w * src->c;
    for (int y = 0; y < r.h; y++)
        memmove(cpu_at(dst->data, ((size_t)(dy + y) * dst->w + dx) * dst->c, bf),
                cpu_at(src->data, ((size_t)(r.y + y) * src->w + r.x) * src->c, bf), row * nst_dtype_size(src->dt));
    return NST_OK;
}

nst_status cpu_download_rect(nst_backend *be, const nst_tensor *src, nst_rect r, float *host)
{
    (void)be;
    NST_TRY(cpu_check_act(src, "download_rect"));
    NST_TRY(cpu_check_region(src, r, "download_rect"));
    const size_t n = (size_t)r.w * src->c;
    for (int y = 0; y < r.h; y++)
        cpu_to_f32(host + (size_t)y * n, cpu_at(src->data, ((size_t)(r.y + y) * src->w + r.x) * src->c, src->dt == NST_BF16), n,
                   src->dt);
    return NST_OK;
}

nst_status cpu_upload_rect(nst_backend *be, const float *host, nst_tensor *dst, nst_rect r)
{
    (void)be;
    NST_TRY(cpu_check_act(dst, "upload_rect"));
    NST_TRY(cpu_check_region(dst, r, "upload_rect"));
    const size_t n = (size_t)r.w * dst->c;
    for (int y = 0; y < r.h; y++)
        cpu_from_f32(cpu_at(dst->data, ((size_t)(r.y + y) * dst->w + r.x) * dst->c, dst->dt == NST_BF16), host + (size_t)y * n, n,
                     dst->dt);
    return NST_OK;
}

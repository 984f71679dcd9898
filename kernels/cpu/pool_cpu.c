/* kernels/cpu/pool_cpu.c: 2x2 stride-2 max and average pooling on NHWC fp32, floor semantics
 * (an odd last row or column is dropped, as in PyTorch and Caffe's VGG). Max pooling's backward
 * routes each gradient to the first maximum in scan order (top-left, top-right, bottom-left,
 * bottom-right), the tie rule of PyTorch's CPU kernel. */
#include <string.h>

#include "cpu.h"

static nst_status check(const nst_tensor *x, const nst_tensor *y, const char *op)
{
    NST_TRY(cpu_check_f32(x, op));
    NST_TRY(cpu_check_f32(y, op));
    if (y->h != x->h / 2 || y->w != x->w / 2 || y->c != x->c)
        return nst_fail(NST_ERUNTIME, "%s: %dx%dx%d does not pool to %dx%dx%d", op, x->h, x->w, x->c, y->h, y->w, y->c);
    return NST_OK;
}

nst_status cpu_pool_forward(nst_backend *be, nst_pool_kind kind, const nst_tensor *x, nst_tensor *y)
{
    (void)be;
    NST_TRY(check(x, y, "pool_forward"));
    const int C = x->c, W = x->w;
    const float *in = x->data;
    float *out = y->data;
#pragma omp parallel for schedule(static)
    for (int i = 0; i < y->h; i++)
        for (int j = 0; j < y->w; j++) {
            const float *p00 = in + ((size_t)(2 * i) * W + 2 * j) * C, *p01 = p00 + C;
            const float *p10 = p00 + (size_t)W * C, *p11 = p10 + C;
            float *o = out + ((size_t)i * y->w + j) * C;
            if (kind == NST_POOL_MAX) {
                for (int c = 0; c < C; c++) {
                    float m = p00[c];
                    if (p01[c] > m) m = p01[c];
                    if (p10[c] > m) m = p10[c];
                    if (p11[c] > m) m = p11[c];
                    o[c] = m;
                }
            } else {
                for (int c = 0; c < C; c++) o[c] = 0.25f * ((p00[c] + p01[c]) + (p10[c] + p11[c]));
            }
        }
    return NST_OK;
}

nst_status cpu_pool_backward(nst_backend *be, nst_pool_kind kind, const nst_tensor *x, const nst_tensor *y,
                             const nst_tensor *dy, nst_tensor *dx)
{
    (void)be;
    NST_TRY(check(x, y, "pool_backward"));
    NST_TRY(check(dx, dy, "pool_backward"));
    const int C = x->c, W = x->w;
    const float *in = x->data, *g = dy->data;
    float *out = dx->data;
#pragma omp parallel for schedule(static)
    for (int r = 0; r < x->h; r++) {
        float *row = out + (size_t)r * W * C;
        memset(row, 0, (size_t)W * C * sizeof(float));
        int i = r / 2;
        if (i >= y->h) continue; /* the dropped odd last row */
        for (int j = 0; j < y->w; j++) {
            const float *gy = g + ((size_t)i * y->w + j) * C;
            float *q0 = row + (size_t)(2 * j) * C, *q1 = q0 + C;
            if (kind == NST_POOL_AVG) {
                for (int c = 0; c < C; c++) q0[c] = q1[c] = 0.25f * gy[c];
                continue;
            }
            /* this row holds positions (r, 2j) and (r, 2j+1) of window (i, j) */
            const float *p00 = in + ((size_t)(2 * i) * W + 2 * j) * C, *p01 = p00 + C;
            const float *p10 = p00 + (size_t)W * C, *p11 = p10 + C;
            for (int c = 0; c < C; c++) {
                int arg = 0;
                float m = p00[c];
                if (p01[c] > m) m = p01[c], arg = 1;
                if (p10[c] > m) m = p10[c], arg = 2;
                if (p11[c] > m) m = p11[c], arg = 3;
                int top = (r & 1) == 0;
                if (arg == (top ? 0 : 2)) q0[c] = gy[c];
                if (arg == (top ? 1 : 3)) q1[c] = gy[c];
            }
        }
    }
    return NST_OK;
}

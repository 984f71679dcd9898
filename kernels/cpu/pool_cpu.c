/* kernels/cpu/pool_cpu.c: 2x2 stride-2 max and average pooling on NHWC fp32 or bf16, floor semantics
 * (an odd last row or column is dropped, as in PyTorch and Caffe's VGG). Max pooling's backward
 * routes each gradient to the first maximum in scan order (top-left, top-right, bottom-left,
 * bottom-right), the tie rule of PyTorch's CPU kernel. In bf16 the maximum and the routed
 * gradients are exact; the average rounds once.
 *
 * The parallel loops run over output rows and call a row function per dtype, so each row's
 * channel loops are compiled per dtype, with selects instead of branches, and vectorise (a dtype
 * read inside the loop would be a runtime branch in OpenMP's outlined body). The row functions are
 * compiled for the machine's widest vectors (target_clones) and their channel loops marked simd
 * (x, dy and dx are separate tensors), which the compiler could not prove alone: the bf16
 * backward ran one channel at a time, 4x slower. Maxima, routed bits and one rounded average are
 * the same bits at every vector width, so neither the machine nor ONEDNN_MAX_CPU_ISA changes a
 * result. */
#include <string.h>

#include "cpu.h"

static nst_status check(const nst_tensor *x, const nst_tensor *y, const char *op)
{
    NST_TRY(cpu_check_same_dt(x, y, op));
    if (y->h != x->h / 2 || y->w != x->w / 2 || y->c != x->c)
        return nst_fail(NST_ERUNTIME, "%s: %dx%dx%d does not pool to %dx%dx%d", op, x->h, x->w, x->c, y->h, y->w, y->c);
    return NST_OK;
}

/* output row i of the pooling */
static inline __attribute__((always_inline)) void fwd_row(nst_pool_kind kind, const nst_tensor *x, nst_tensor *y, int i, int bf)
{
    const int C = x->c, W = x->w;
    const void *in = x->data;
    void *out = y->data;
    for (int j = 0; j < y->w; j++) {
        size_t p00 = ((size_t)(2 * i) * W + 2 * j) * C, p01 = p00 + C, p10 = p00 + (size_t)W * C, p11 = p10 + C;
        size_t o = ((size_t)i * y->w + j) * C;
        if (kind == NST_POOL_MAX) {
#pragma omp simd
            for (int c = 0; c < C; c++) {
                float m = cpu_ld(in, p00 + c, bf), v1 = cpu_ld(in, p01 + c, bf), v2 = cpu_ld(in, p10 + c, bf),
                      v3 = cpu_ld(in, p11 + c, bf);
                m = v1 > m ? v1 : m;
                m = v2 > m ? v2 : m;
                m = v3 > m ? v3 : m;
                cpu_st(out, o + c, m, bf);
            }
        } else {
#pragma omp simd
            for (int c = 0; c < C; c++)
                cpu_st(out, o + c,
                       0.25f * ((cpu_ld(in, p00 + c, bf) + cpu_ld(in, p01 + c, bf)) + (cpu_ld(in, p10 + c, bf) + cpu_ld(in, p11 + c, bf))),
                       bf);
        }
    }
}

/* Each dtype's row, compiled for the machine's widest vectors (target_clones): maxima, routed bits
 * and one rounded average are the same bits at any vector width, so the instruction set cannot
 * change a result (no multiply-add to contract either). */
#define POOL_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
POOL_CLONES static void fwd_row_f32(nst_pool_kind kind, const nst_tensor *x, nst_tensor *y, int i) { fwd_row(kind, x, y, i, 0); }
POOL_CLONES static void fwd_row_bf16(nst_pool_kind kind, const nst_tensor *x, nst_tensor *y, int i) { fwd_row(kind, x, y, i, 1); }

nst_status cpu_pool_forward(nst_backend *be, nst_pool_kind kind, const nst_tensor *x, nst_tensor *y)
{
    (void)be;
    NST_TRY(check(x, y, "pool_forward"));
    const int bf = x->dt == NST_BF16;
#pragma omp parallel for schedule(static)
    for (int i = 0; i < y->h; i++) {
        if (bf)
            fwd_row_bf16(kind, x, y, i);
        else
            fwd_row_f32(kind, x, y, i);
    }
    return NST_OK;
}

/* input rows 2i and 2i + 1 of the gradient, from output row i (the dropped odd column gets 0);
 * relu: each position's gradient kept only where its x > 0 (the ReLU below folded in: a select,
 * as relu_backward's, so the same bits as the two passes) */
static inline __attribute__((always_inline)) void bwd_rows(nst_pool_kind kind, const nst_tensor *x, const nst_tensor *y,
                                                           const nst_tensor *dy, nst_tensor *dx, int i, int bf, int relu)
{
    const int C = x->c, W = x->w;
    const void *in = x->data, *g = dy->data;
    void *out = dx->data;
    const size_t rowlen = (size_t)W * C, r0 = (size_t)(2 * i) * rowlen, r1 = r0 + rowlen;
    for (int j = 0; j < y->w; j++) {
        size_t gy = ((size_t)i * y->w + j) * C, p00 = r0 + (size_t)(2 * j) * C, p01 = p00 + C, p10 = r1 + (size_t)(2 * j) * C,
               p11 = p10 + C;
        if (kind == NST_POOL_AVG) {
#pragma omp simd
            for (int c = 0; c < C; c++) {
                float v = 0.25f * cpu_ld(g, gy + c, bf);
                if (relu) {
                    cpu_st(out, p00 + c, cpu_ld(in, p00 + c, bf) > 0.f ? v : 0.f, bf);
                    cpu_st(out, p01 + c, cpu_ld(in, p01 + c, bf) > 0.f ? v : 0.f, bf);
                    cpu_st(out, p10 + c, cpu_ld(in, p10 + c, bf) > 0.f ? v : 0.f, bf);
                    cpu_st(out, p11 + c, cpu_ld(in, p11 + c, bf) > 0.f ? v : 0.f, bf);
                } else {
                    cpu_st(out, p00 + c, v, bf), cpu_st(out, p01 + c, v, bf);
                    cpu_st(out, p10 + c, v, bf), cpu_st(out, p11 + c, v, bf);
                }
            }
            continue;
        }
#pragma omp simd /* (x, dy and dx are separate tensors: no store reaches a later load) */
        for (int c = 0; c < C; c++) { /* the first maximum in scan order takes the gradient */
            float v0 = cpu_ld(in, p00 + c, bf), v1 = cpu_ld(in, p01 + c, bf), v2 = cpu_ld(in, p10 + c, bf), v3 = cpu_ld(in, p11 + c, bf);
            /* the forward's chain of comparisons: the last one that held names the maximum. The
             * gradient's bits are routed with masks (no branches, so the loop vectorises) */
            float m1 = v1 > v0 ? v1 : v0, m2 = v2 > m1 ? v2 : m1, m3 = v3 > m2 ? v3 : m2;
            uint32_t k1 = -(uint32_t)(v1 > v0), k2 = -(uint32_t)(v2 > m1), k3 = -(uint32_t)(v3 > m2);
            uint32_t d = cpu_bits(g, gy + c, bf);
            /* folded ReLU: only the maximum's position gets d, and m3 is its x */
            if (relu) d &= -(uint32_t)(m3 > 0.f);
            cpu_st_bits(out, p11 + c, d & k3, bf);
            cpu_st_bits(out, p10 + c, d & k2 & ~k3, bf);
            cpu_st_bits(out, p01 + c, d & k1 & ~k2 & ~k3, bf);
            cpu_st_bits(out, p00 + c, d & ~k1 & ~k2 & ~k3, bf);
        }
    }
    if (W & 1) {
        memset(cpu_at(out, r0 + rowlen - C, bf), 0, (size_t)C * (bf ? 2 : 4));
        memset(cpu_at(out, r1 + rowlen - C, bf), 0, (size_t)C * (bf ? 2 : 4));
    }
}

/* one clone per dtype and per relu (a literal in each, so the channel loops stay branch-free) */
#define BWD_ROWS(NAME, BF, RELU)                                                                                                  \
    POOL_CLONES static void NAME(nst_pool_kind kind, const nst_tensor *x, const nst_tensor *y, const nst_tensor *dy, nst_tensor *dx, \
                                 int i)                                                                                           \
    {                                                                                                                             \
        bwd_rows(kind, x, y, dy, dx, i, BF, RELU);                                                                                \
    }
BWD_ROWS(bwd_rows_f32, 0, 0)
BWD_ROWS(bwd_rows_bf16, 1, 0)
BWD_ROWS(bwd_rows_f32_relu, 0, 1)
BWD_ROWS(bwd_rows_bf16_relu, 1, 1)
#undef BWD_ROWS

nst_status cpu_pool_backward(nst_backend *be, nst_pool_kind kind, const nst_tensor *x, const nst_tensor *y,
                             const nst_tensor *dy, nst_tensor *dx, int relu)
{
    (void)be;
    NST_TRY(check(x, y, "pool_backward"));
    NST_TRY(check(dx, dy, "pool_backward"));
    NST_TRY(cpu_check_same_dt(x, dx, "pool_backward"));
    const int bf = x->dt == NST_BF16;
#pragma omp parallel for schedule(static)
    for (int i = 0; i < y->h; i++) {
        if (relu)
            (bf ? bwd_rows_bf16_relu : bwd_rows_f32_relu)(kind, x, y, dy, dx, i);
        else
            (bf ? bwd_rows_bf16 : bwd_rows_f32)(kind, x, y, dy, dx, i);
    }
    if (x->h & 1) { /* the dropped odd last row */
        size_t rowlen = (size_t)x->w * x->c;
        memset(cpu_at(dx->data, (size_t)(x->h - 1) * rowlen, bf), 0, rowlen * nst_dtype_size(dx->dt));
    }
    return NST_OK;
}

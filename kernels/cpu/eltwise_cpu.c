/* kernels/cpu/eltwise_cpu.c: ReLU backward and the image preprocessing (forward and backward), on
 * fp32 or bf16 activations (the image and its gradient are fp32). */
#include "cpu.h"

static inline __attribute__((always_inline)) void relu_bwd(const void *y, void *g, size_t n, int bf)
{
    if (bf) { /* bf16: a masked copy of the bits, no conversion (y > 0: positive, not zero, not NaN) */
        const nst_bf16 *yp = y;
        nst_bf16 *gp = g;
#pragma omp parallel for simd schedule(static)
        for (size_t i = 0; i < n; i++) gp[i] = (int16_t)yp[i] > 0 && yp[i] <= 0x7f80 ? gp[i] : 0;
    } else {
        const float *yp = y;
        float *gp = g;
#pragma omp parallel for simd schedule(static)
        for (size_t i = 0; i < n; i++) gp[i] = yp[i] > 0.f ? gp[i] : 0.f;
    }
}

nst_status cpu_relu_backward(nst_backend *be, const nst_tensor *y, nst_tensor *dy)
{
    (void)be;
    NST_TRY(cpu_check_same_dt(y, dy, "relu_backward"));
    if (y->h != dy->h || y->w != dy->w || y->c != dy->c) return nst_fail(NST_ERUNTIME, "relu_backward: shape mismatch");
    if (y->dt == NST_BF16)
        relu_bwd(y->data, dy->data, nst_tensor_elems(y), 1);
    else
        relu_bwd(y->data, dy->data, nst_tensor_elems(y), 0);
    return NST_OK;
}

static void affine(const nst_preproc *p, float a[3], float b[3], int src[3])
{
    for (int c = 0; c < 3; c++) {
        a[c] = p->scale / p->std[c];
        b[c] = -p->mean[c] / p->std[c];
        src[c] = p->bgr ? 2 - c : c;
    }
}

/* pixels [i0, i1) of the preprocessing and of its backward (the dtype a literal: see pool_cpu.c) */
static inline __attribute__((always_inline)) void pre_fwd(const float a[3], const float b[3], const int src[3], const float *in, void *out,
                                                          size_t i0, size_t i1, int bf)
{
    for (size_t i = i0; i < i1; i++)
        for (int c = 0; c < 3; c++) cpu_st(out, 3 * i + c, in[3 * i + src[c]] * a[c] + b[c], bf);
}

static inline __attribute__((always_inline)) void pre_bwd(const float a[3], const int src[3], const void *g, float *out, size_t i0, size_t i1,
                                                          int bf)
{
    for (size_t i = i0; i < i1; i++)
        for (int c = 0; c < 3; c++) out[3 * i + src[c]] = cpu_ld(g, 3 * i + c, bf) * a[c];
}

#define PX_CHUNK 4096

nst_status cpu_preprocess(nst_backend *be, const nst_preproc *p, const nst_tensor *img, nst_tensor *x)
{
    (void)be;
    NST_TRY(cpu_check_f32(img, "preprocess"));
    NST_TRY(cpu_check_act(x, "preprocess"));
    if (img->c != 3 || x->c != 3 || img->h != x->h || img->w != x->w) return nst_fail(NST_ERUNTIME, "preprocess: shape mismatch");
    const size_t n = (size_t)img->h * img->w;
    const int bf = x->dt == NST_BF16;
    float a[3], b[3];
    int src[3];
    affine(p, a, b, src);
#pragma omp parallel for schedule(static)
    for (size_t i0 = 0; i0 < n; i0 += PX_CHUNK) {
        size_t i1 = i0 + PX_CHUNK < n ? i0 + PX_CHUNK : n;
        if (bf)
            pre_fwd(a, b, src, img->data, x->data, i0, i1, 1);
        else
            pre_fwd(a, b, src, img->data, x->data, i0, i1, 0);
    }
    return NST_OK;
}

nst_status cpu_preprocess_backward(nst_backend *be, const nst_preproc *p, const nst_tensor *dx, nst_tensor *dimg)
{
    (void)be;
    NST_TRY(cpu_check_act(dx, "preprocess_backward"));
    NST_TRY(cpu_check_f32(dimg, "preprocess_backward"));
    if (dx->c != 3 || dimg->c != 3 || dx->h != dimg->h || dx->w != dimg->w)
        return nst_fail(NST_ERUNTIME, "preprocess_backward: shape mismatch");
    const size_t n = (size_t)dx->h * dx->w;
    const int bf = dx->dt == NST_BF16;
    float a[3], b[3];
    int src[3];
    affine(p, a, b, src);
#pragma omp parallel for schedule(static)
    for (size_t i0 = 0; i0 < n; i0 += PX_CHUNK) {
        size_t i1 = i0 + PX_CHUNK < n ? i0 + PX_CHUNK : n;
        if (bf)
            pre_bwd(a, src, dx->data, dimg->data, i0, i1, 1);
        else
            pre_bwd(a, src, dx->data, dimg->data, i0, i1, 0);
    }
    return NST_OK;
}

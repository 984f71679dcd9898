/* kernels/cpu/eltwise_cpu.c: ReLU backward and the image preprocessing (forward and backward). */
#include "cpu.h"

nst_status cpu_relu_backward(nst_backend *be, const nst_tensor *y, nst_tensor *dy)
{
    (void)be;
    NST_TRY(cpu_check_f32(y, "relu_backward"));
    NST_TRY(cpu_check_f32(dy, "relu_backward"));
    if (y->h != dy->h || y->w != dy->w || y->c != dy->c) return nst_fail(NST_ERUNTIME, "relu_backward: shape mismatch");
    const float *yp = y->data;
    float *g = dy->data;
    size_t n = nst_tensor_elems(y);
#pragma omp parallel for simd schedule(static)
    for (size_t i = 0; i < n; i++) g[i] = yp[i] > 0.f ? g[i] : 0.f;
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

nst_status cpu_preprocess(nst_backend *be, const nst_preproc *p, const nst_tensor *img, nst_tensor *x)
{
    (void)be;
    NST_TRY(cpu_check_f32(img, "preprocess"));
    NST_TRY(cpu_check_f32(x, "preprocess"));
    if (img->c != 3 || x->c != 3 || img->h != x->h || img->w != x->w) return nst_fail(NST_ERUNTIME, "preprocess: shape mismatch");
    float a[3], b[3];
    int src[3];
    affine(p, a, b, src);
    const float *in = img->data;
    float *out = x->data;
    size_t n = (size_t)img->h * img->w;
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++)
        for (int c = 0; c < 3; c++) out[3 * i + c] = in[3 * i + src[c]] * a[c] + b[c];
    return NST_OK;
}

nst_status cpu_preprocess_backward(nst_backend *be, const nst_preproc *p, const nst_tensor *dx, nst_tensor *dimg)
{
    (void)be;
    NST_TRY(cpu_check_f32(dx, "preprocess_backward"));
    NST_TRY(cpu_check_f32(dimg, "preprocess_backward"));
    if (dx->c != 3 || dimg->c != 3 || dx->h != dimg->h || dx->w != dimg->w)
        return nst_fail(NST_ERUNTIME, "preprocess_backward: shape mismatch");
    float a[3], b[3];
    int src[3];
    affine(p, a, b, src);
    const float *g = dx->data;
    float *out = dimg->data;
    size_t n = (size_t)dx->h * dx->w;
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++)
        for (int c = 0; c < 3; c++) out[3 * i + src[c]] = g[3 * i + c] * a[c];
    return NST_OK;
}

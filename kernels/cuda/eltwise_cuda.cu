/* kernels/cuda/eltwise_cuda.cu: ReLU backward, the image preprocessing (forward and backward)
 * and 2x2 pooling (forward and backward), with the CPU backend's semantics: floor pooling, max
 * routing to the first maximum in scan order. One thread per output element, or 8 channels a
 * thread with vector accesses where the shapes and alignments allow (cuda_eight_wide). */
#include "cuda_impl.h"
#include "eltwise_kernels.cuh" /* (the kernels; tests/test_cuda_emu.cpp runs them on the CPU) */

static nst_status same_shape(const nst_tensor *a, const nst_tensor *b, const char *op)
{
    NST_TRY(cuda_check(a, op));
    NST_TRY(cuda_check(b, op));
    if (a->h != b->h || a->w != b->w || a->c != b->c || a->dt != b->dt) return nst_fail(NST_ERUNTIME, "%s: shape mismatch", op);
    return NST_OK;
}

nst_status cuda_relu_backward(nst_backend *be, const nst_tensor *y, nst_tensor *dy)
{
    NST_TRY(same_shape(y, dy, "relu_backward"));
    size_t n = nst_tensor_elems(y);
    if (!n) return NST_OK;
    cudaStream_t s = cuda_of(be)->stream;
    if (cuda_eight_wide(cuda_of(be), n, y->data, dy->data, NULL, NULL)) {
        const size_t n8 = n / 8;
#define RELU8(T) (CUDA_LAUNCH_I(cuda_narrow(n), k_relu_bwd8, T, n8, s, (const T *)y->data, (T *)dy->data, n8), 0)
        CUDA_DISPATCH(y->dt, RELU8);
#undef RELU8
    } else {
#define RELU(T) (k_relu_bwd<T><<<cuda_blocks(n, 256), 256, 0, s>>>((const T *)y->data, (T *)dy->data, n), 0)
        CUDA_DISPATCH(y->dt, RELU);
#undef RELU
    }
    LAUNCH_TRY("relu_backward");
    return NST_OK;
}

affine3 cuda_affine(const nst_preproc *p)
{
    affine3 f;
    for (int c = 0; c < 3; c++) {
        f.a[c] = p->scale / p->std[c];
        f.b[c] = -p->mean[c] / p->std[c];
        f.src[c] = p->bgr ? 2 - c : c;
    }
    return f;
}

nst_status cuda_preprocess(nst_backend *be, const nst_preproc *p, const nst_tensor *img, nst_tensor *x)
{
    NST_TRY(cuda_check(img, "preprocess"));
    NST_TRY(cuda_check(x, "preprocess"));
    if (img->dt != NST_F32 || img->c != 3 || x->c != 3 || img->h != x->h || img->w != x->w)
        return nst_fail(NST_ERUNTIME, "preprocess: shape mismatch");
    size_t npx = (size_t)img->h * img->w;
    if (!npx) return NST_OK;
    cuda_impl *im = cuda_of(be);
    affine3 f = cuda_affine(p);
#define PRE(T) (k_pre<T><<<cuda_blocks(npx * 3, 256), 256, 0, im->stream>>>((const float *)img->data, (T *)x->data, npx, f, im->fscale), 0)
    CUDA_DISPATCH(x->dt, PRE);
#undef PRE
    LAUNCH_TRY("preprocess");
    return NST_OK;
}

nst_status cuda_preprocess_backward(nst_backend *be, const nst_preproc *p, const nst_tensor *dx, nst_tensor *dimg)
{
    NST_TRY(cuda_check(dx, "preprocess_backward"));
    NST_TRY(cuda_check(dimg, "preprocess_backward"));
    if (dimg->dt != NST_F32 || dx->c != 3 || dimg->c != 3 || dx->h != dimg->h || dx->w != dimg->w)
        return nst_fail(NST_ERUNTIME, "preprocess_backward: shape mismatch");
    size_t npx = (size_t)dx->h * dx->w;
    if (!npx) return NST_OK;
    cuda_impl *im = cuda_of(be);
    affine3 f = cuda_affine(p);
#define PREB(T) (k_pre_bwd<T><<<cuda_blocks(npx * 3, 256), 256, 0, im->stream>>>((const T *)dx->data, (float *)dimg->data, npx, f, 1.f / im->fscale), 0)
    CUDA_DISPATCH(dx->dt, PREB);
#undef PREB
    LAUNCH_TRY("preprocess_backward");
    return NST_OK;
}

static nst_status pool_check(const nst_tensor *x, const nst_tensor *y, const char *op)
{
    NST_TRY(cuda_check(x, op));
    NST_TRY(cuda_check(y, op));
    if (y->h != x->h / 2 || y->w != x->w / 2 || y->c != x->c || x->dt != y->dt)
        return nst_fail(NST_ERUNTIME, "%s: %dx%dx%d does not pool to %dx%dx%d", op, x->h, x->w, x->c, y->h, y->w, y->c);
    return NST_OK;
}

nst_status cuda_pool_forward(nst_backend *be, nst_pool_kind kind, const nst_tensor *x, nst_tensor *y)
{
    NST_TRY(pool_check(x, y, "pool_forward"));
    size_t n = nst_tensor_elems(y);
    if (!n) return NST_OK;
    cudaStream_t s = cuda_of(be)->stream;
    int avg = kind == NST_POOL_AVG;
    if (cuda_eight_wide(cuda_of(be), x->c, x->data, y->data, NULL, NULL)) {
        const size_t n8 = n / 8;
#define PF8(T) \
    (CUDA_LAUNCH_I(cuda_narrow(nst_tensor_elems(x)), k_pool_fwd8, T, n8, s, (const T *)x->data, x->w, x->c, (T *)y->data, y->w, n8, avg), 0)
        CUDA_DISPATCH(x->dt, PF8);
#undef PF8
    } else {
#define PF(T) (k_pool_fwd<T><<<cuda_blocks(n, 256), 256, 0, s>>>((const T *)x->data, x->w, x->c, (T *)y->data, y->h, y->w, avg), 0)
        CUDA_DISPATCH(x->dt, PF);
#undef PF
    }
    LAUNCH_TRY("pool_forward");
    return NST_OK;
}

nst_status cuda_pool_backward(nst_backend *be, nst_pool_kind kind, const nst_tensor *x, const nst_tensor *y, const nst_tensor *dy,
                              nst_tensor *dx, int relu)
{
    NST_TRY(pool_check(x, y, "pool_backward"));
    NST_TRY(pool_check(dx, dy, "pool_backward"));
    NST_TRY(same_shape(x, dx, "pool_backward")); /* (the kernels index dx with x's shape) */
    size_t n = nst_tensor_elems(dx);
    if (!n) return NST_OK;
    cudaStream_t s = cuda_of(be)->stream;
    int avg = kind == NST_POOL_AVG;
    if (cuda_eight_wide(cuda_of(be), x->c, x->data, dy->data, dx->data, NULL)) {
        /* 2x2 blocks of dx, the last row and column of an odd size included */
        const size_t n8 = (size_t)((x->h + 1) / 2) * ((x->w + 1) / 2) * (x->c / 8);
#define PB8(T)                                                                                                                \
    (CUDA_LAUNCH_I(cuda_narrow(n), k_pool_bwd8, T, n8, s, (const T *)x->data, x->h, x->w, x->c, (const T *)dy->data, dy->h, dy->w, \
                   (T *)dx->data, n8, avg, relu),                                                                                 \
     0)
        CUDA_DISPATCH(x->dt, PB8);
#undef PB8
    } else {
#define PB(T)                                                                                                                \
    (CUDA_LAUNCH_I(cuda_narrow(n), k_pool_bwd, T, n, s, (const T *)x->data, x->h, x->w, x->c, (const T *)dy->data, dy->h, dy->w, \
                   (T *)dx->data, avg, relu),                                                                               \
     0)
        CUDA_DISPATCH(x->dt, PB);
#undef PB
    }
    LAUNCH_TRY("pool_backward");
    return NST_OK;
}

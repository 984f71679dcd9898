/* kernels/cuda/eltwise_cuda.cu: ReLU backward, the image preprocessing (forward and backward)
 * and 2x2 pooling (forward and backward), with the CPU backend's semantics: floor pooling, max
 * routing to the first maximum in scan order. One thread per output element. */
#include "cuda_impl.h"


template <typename T> __global__ void k_relu_bwd(const T *y, T *g, size_t n)
{
    GRID_STRIDE(i, n) if (!(ld<T>(y, i) > 0.f)) st<T>(g, i, 0.f);
}

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
#define RELU(T) (k_relu_bwd<T><<<cuda_blocks(n, 256), 256, 0, s>>>((const T *)y->data, (T *)dy->data, n), 0)
    CUDA_DISPATCH(y->dt, RELU);
#undef RELU
    LAUNCH_TRY("relu_backward");
    return NST_OK;
}

struct affine3 {
    float a[3], b[3];
    int src[3];
};

static affine3 affine(const nst_preproc *p)
{
    affine3 f;
    for (int c = 0; c < 3; c++) {
        f.a[c] = p->scale / p->std[c];
        f.b[c] = -p->mean[c] / p->std[c];
        f.src[c] = p->bgr ? 2 - c : c;
    }
    return f;
}

template <typename T> __global__ void k_pre(const float *img, T *x, size_t npx, affine3 f, float fscale)
{
    GRID_STRIDE(i, npx * 3)
    {
        size_t p = i / 3;
        int c = (int)(i % 3);
        st<T>(x, i, (img[3 * p + f.src[c]] * f.a[c] + f.b[c]) * fscale);
    }
}

template <typename T> __global__ void k_pre_bwd(const T *dx, float *dimg, size_t npx, affine3 f, float inv_fscale)
{
    GRID_STRIDE(i, npx * 3)
    {
        size_t p = i / 3;
        int c = (int)(i % 3);
        dimg[3 * p + f.src[c]] = ld<T>(dx, i) * inv_fscale * f.a[c];
    }
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
    affine3 f = affine(p);
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
    affine3 f = affine(p);
#define PREB(T) (k_pre_bwd<T><<<cuda_blocks(npx * 3, 256), 256, 0, im->stream>>>((const T *)dx->data, (float *)dimg->data, npx, f, 1.f / im->fscale), 0)
    CUDA_DISPATCH(dx->dt, PREB);
#undef PREB
    LAUNCH_TRY("preprocess_backward");
    return NST_OK;
}

/* ---- pooling ----------------------------------------------------------------------------------- */
template <typename T> __global__ void k_pool_fwd(const T *x, int W, int C, T *y, int yh, int yw, int avg)
{
    size_t n = (size_t)yh * yw * C;
    GRID_STRIDE(i, n)
    {
        int c = (int)(i % C);
        size_t q = i / C;
        int j = (int)(q % yw), r = (int)(q / yw);
        size_t p00 = ((size_t)(2 * r) * W + 2 * j) * C + c, p01 = p00 + C, p10 = p00 + (size_t)W * C, p11 = p10 + C;
        float a = ld<T>(x, p00), b = ld<T>(x, p01), d = ld<T>(x, p10), e = ld<T>(x, p11);
        float o;
        if (avg) {
            o = 0.25f * ((a + b) + (d + e));
        } else {
            o = a;
            if (b > o) o = b;
            if (d > o) o = d;
            if (e > o) o = e;
        }
        st<T>(y, i, o);
    }
}

/* One thread per element of dx; I the index type: 32-bit where the tensor has fewer than 2^31
 * elements (no 64-bit division per element), 64-bit otherwise. relu: the ReLU below folded in (a
 * select on this element's own x: for max, the maximum's position is the only one that gets g). */
template <typename T, typename I>
__global__ void k_pool_bwd(const T *x, int H, int W, int C, const T *gy, int yh, int yw, T *dx, int avg, int relu)
{
    const I n = (I)H * W * C;
    for (I i = blockIdx.x * (I)blockDim.x + threadIdx.x; i < n; i += (I)gridDim.x * blockDim.x) {
        int c = (int)(i % C);
        I q = i / C;
        int col = (int)(q % W), row = (int)(q / W);
        int r = row / 2, j = col / 2;
        float v = 0.f;
        if (r < yh && j < yw) {
            float g = ld<T>(gy, ((I)r * yw + j) * C + c);
            if (avg) {
                v = 0.25f * g;
            } else {
                I p00 = ((I)(2 * r) * W + 2 * j) * C + c, p01 = p00 + C, p10 = p00 + (I)W * C, p11 = p10 + C;
                float m = ld<T>(x, p00);
                int arg = 0;
                if (ld<T>(x, p01) > m) m = ld<T>(x, p01), arg = 1;
                if (ld<T>(x, p10) > m) m = ld<T>(x, p10), arg = 2;
                if (ld<T>(x, p11) > m) m = ld<T>(x, p11), arg = 3;
                if (arg == (row & 1) * 2 + (col & 1)) v = g;
            }
            if (relu && !(ld<T>(x, i) > 0.f)) v = 0.f;
        }
        st<T>(dx, i, v);
    }
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
#define PF(T) (k_pool_fwd<T><<<cuda_blocks(n, 256), 256, 0, s>>>((const T *)x->data, x->w, x->c, (T *)y->data, y->h, y->w, avg), 0)
    CUDA_DISPATCH(x->dt, PF);
#undef PF
    LAUNCH_TRY("pool_forward");
    return NST_OK;
}

nst_status cuda_pool_backward(nst_backend *be, nst_pool_kind kind, const nst_tensor *x, const nst_tensor *y, const nst_tensor *dy,
                              nst_tensor *dx, int relu)
{
    NST_TRY(pool_check(x, y, "pool_backward"));
    NST_TRY(pool_check(dx, dy, "pool_backward"));
    size_t n = nst_tensor_elems(dx);
    if (!n) return NST_OK;
    cudaStream_t s = cuda_of(be)->stream;
    int avg = kind == NST_POOL_AVG;
    /* the 32-bit loop's i + stride stays below 2^31 + 2^28 (at most 2^20 blocks of 256): no wrap */
    const int narrow = n < ((size_t)1 << 31);
#define PB(T)                                                                                                                      \
    ((narrow ? k_pool_bwd<T, unsigned><<<cuda_blocks(n, 256), 256, 0, s>>>((const T *)x->data, x->h, x->w, x->c, (const T *)dy->data, \
                                                                          dy->h, dy->w, (T *)dx->data, avg, relu)                  \
             : k_pool_bwd<T, size_t><<<cuda_blocks(n, 256), 256, 0, s>>>((const T *)x->data, x->h, x->w, x->c, (const T *)dy->data,   \
                                                                        dy->h, dy->w, (T *)dx->data, avg, relu)),                 \
     0)
    CUDA_DISPATCH(x->dt, PB);
#undef PB
    LAUNCH_TRY("pool_backward");
    return NST_OK;
}

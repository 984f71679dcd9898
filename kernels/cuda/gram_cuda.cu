/* kernels/cuda/gram_cuda.cu: the style Gram matrix, its difference from the target and its
 * backward, with cuBLAS GEMMs in fp32 accumulation.
 *
 * A region's features are P positions x C channels, NHWC: column-major they are a C x P matrix
 * with leading dimension C, so G = F F^T is one GEMM (OP_N, OP_T) and the backward d F one GEMM
 * (OP_N, OP_N). Regions that are not whole rows are packed first. Work goes in chunks of rows
 * (at most CHUNK_ELEMS features), each chunk's fp32 Gram added into the fp64 sums on the device:
 * long sums keep their precision, and the chunks of a tile and the tiles of an image add up the
 * same way. The Gram output is fp32 and carries 1/fscale^2, so 16-bit features never overflow
 * it (neural-style #425, neural-style-pt #97 were fp16 Gram accumulators). */
#include "cuda_impl.h"

#define CHUNK_ELEMS ((size_t)1 << 25)

static int rows_per_chunk(int w, int c)
{
    size_t r = CHUNK_ELEMS / ((size_t)(w > 0 ? w : 1) * c);
    return r < 1 ? 1 : (r > (1u << 30) ? (1 << 30) : (int)r);
}

/* Rows [y0, y0 + h) of region r of f as a dense (h * r.w) x C matrix: in place when r spans whole
 * rows, else packed into im->s0 (sized by the caller). */
static nst_status chunk_features(nst_backend *be, const nst_tensor *f, nst_rect r, int y0, int h, const void **F)
{
    cuda_impl *im = cuda_of(be);
    const size_t es = nst_dtype_size(f->dt);
    if (r.x == 0 && r.w == f->w) {
        *F = (const unsigned char *)f->data + (size_t)(r.y + y0) * f->w * f->c * es;
        return NST_OK;
    }
    *F = im->s0;
    return cuda_copy_rect_raw(be, f->data, f->w, nst_rect_make(r.x, r.y + y0, r.w, h), im->s0, r.w, 0, 0, f->c, es);
}

__global__ void k_add_f64(double *g, const float *t, size_t n)
{
    GRID_STRIDE(i, n) g[i] += (double)t[i];
}

nst_status cuda_gram_accumulate(nst_backend *be, const nst_tensor *f, nst_rect own, double *g)
{
    NST_TRY(cuda_check(f, "gram_accumulate"));
    NST_TRY(cuda_check_region(f, own, "gram_accumulate"));
    if (nst_rect_empty(own)) return NST_OK;
    cuda_impl *im = cuda_of(be);
    const int C = f->c;
    const size_t es = nst_dtype_size(f->dt), cc = (size_t)C * C;
    const int whole = own.x == 0 && own.w == f->w;
    const int rows = rows_per_chunk(own.w, C);
    NST_TRY(cuda_scratch(be, (void **)&im->gtmp, &im->gtmp_cap, cc * sizeof(float)));
    if (!whole) NST_TRY(cuda_scratch(be, &im->s0, &im->s0_cap, (size_t)(rows < own.h ? rows : own.h) * own.w * C * es));
    const float fs = cuda_act_scale(im, f->dt);
    const float alpha = 1.f / (fs * fs), beta = 0.f;
    for (int y0 = 0; y0 < own.h; y0 += rows) {
        int h = own.h - y0 < rows ? own.h - y0 : rows;
        const void *F;
        NST_TRY(chunk_features(be, f, own, y0, h, &F));
        int P = h * own.w;
        CUBLAS_TRY(im->cb->gemm_ex(im->blas, CUBLAS_OP_N, CUBLAS_OP_T, C, C, P, &alpha, F, im->blas_type, C, F, im->blas_type, C, &beta,
                                im->gtmp, CUDA_R_32F, C, im->blas_compute, CUBLAS_GEMM_DEFAULT));
        k_add_f64<<<cuda_blocks(cc, 256), 256, 0, im->stream>>>(g, im->gtmp, cc);
        LAUNCH_TRY("gram_accumulate");
    }
    return NST_OK;
}

/* d and the loss sum from the upper triangle of the sums, as kernels/cpu/gram_cpu.c */
__global__ void k_gram_diff(const double *g, const double *gp, double gs, const float *a, int c, float *d, double *part)
{
    double s = 0;
    size_t n = (size_t)c * c;
    GRID_STRIDE(k, n)
    {
        int i = (int)(k / c), j = (int)(k % c);
        size_t u = i <= j ? (size_t)i * c + j : (size_t)j * c + i;
        float now = (float)(g[u] * gs) - a[k];
        s += (double)now * now;
        d[k] = gp ? (float)((2 * g[u] - gp[u]) * gs) - a[k] : now;
    }
    double sum = block_tree_sum(s);
    if (threadIdx.x == 0) part[blockIdx.x] = sum;
}

nst_status cuda_gram_diff(nst_backend *be, const double *g, const double *g_prev, double g_scale, const float *a, int c, float *d,
                          double *sumsq)
{
    cuda_impl *im = cuda_of(be);
    size_t n = (size_t)c * c;
    unsigned b = cuda_blocks(n, RED_THREADS);
    if (b > RED_BLOCKS) b = RED_BLOCKS;
    k_gram_diff<<<b, RED_THREADS, 0, im->stream>>>(g, g_prev, g_scale, a, c, d, im->red);
    return cuda_reduce_finish(be, b, sumsq);
}

template <typename T> __global__ void k_add_region(T *df, int W, int x0, int y0, int w, int C, const float *src, size_t n)
{
    size_t row = (size_t)w * C;
    GRID_STRIDE(i, n)
    {
        size_t o = ((size_t)(y0 + i / row) * W + x0) * C + i % row;
        st<T>(df, o, ld<T>(df, o) + src[i]);
    }
}

/* df += scale * F d over seed. bf16: d rounded to bf16 to meet F in one GEMM. fp16: F widened to
 * fp32 instead (d, a difference of Gram sums, can pass fp16's range). The product is fp32 and
 * added into df by a kernel (one rounding). The stored features carry fscale, and so does the
 * stored gradient: scale applies unchanged. */
nst_status cuda_gram_backward(nst_backend *be, const nst_tensor *f, nst_rect seed, const float *d, float scale, nst_tensor *df)
{
    NST_TRY(cuda_check(f, "gram_backward"));
    NST_TRY(cuda_check(df, "gram_backward"));
    NST_TRY(cuda_check_region(f, seed, "gram_backward"));
    if (df->h != f->h || df->w != f->w || df->c != f->c || df->dt != f->dt)
        return nst_fail(NST_ERUNTIME, "gram_backward: gradient shape differs from the features");
    if (nst_rect_empty(seed)) return NST_OK;
    cuda_impl *im = cuda_of(be);
    const int C = f->c;
    const size_t es = nst_dtype_size(f->dt), cc = (size_t)C * C;
    const int whole = seed.x == 0 && seed.w == f->w;
    const int rows = rows_per_chunk(seed.w, C);
    const size_t chunk = (size_t)(rows < seed.h ? rows : seed.h) * seed.w * C;
    const void *A = d;
    cudaDataType_t ab = CUDA_R_32F;
    if (f->dt == NST_BF16) {
        NST_TRY(cuda_scratch(be, (void **)&im->gtmp, &im->gtmp_cap, cc * sizeof(float)));
        NST_TRY(cuda_convert_to(be, im->gtmp, NST_BF16, d, cc, 1.f));
        A = im->gtmp, ab = CUDA_R_16BF;
    }
    if (!whole) NST_TRY(cuda_scratch(be, &im->s0, &im->s0_cap, chunk * es));
    if (f->dt == NST_F16) NST_TRY(cuda_scratch(be, &im->s2, &im->s2_cap, chunk * sizeof(float)));
    NST_TRY(cuda_scratch(be, &im->s1, &im->s1_cap, chunk * sizeof(float)));
    const float beta = 0.f;
    cublasComputeType_t comp = f->dt == NST_F16 ? CUBLAS_COMPUTE_32F : im->blas_compute;
    for (int y0 = 0; y0 < seed.h; y0 += rows) {
        int h = seed.h - y0 < rows ? seed.h - y0 : rows;
        size_t n = (size_t)h * seed.w * C;
        const void *F;
        NST_TRY(chunk_features(be, f, seed, y0, h, &F));
        if (f->dt == NST_F16) {
            NST_TRY(cuda_convert_from(be, (float *)im->s2, F, NST_F16, n, 1.f));
            F = im->s2;
        }
        CUBLAS_TRY(im->cb->gemm_ex(im->blas, CUBLAS_OP_N, CUBLAS_OP_N, C, h * seed.w, C, &scale, A, ab, C, F,
                                f->dt == NST_F16 ? CUDA_R_32F : im->blas_type, C, &beta, im->s1, CUDA_R_32F, C, comp,
                                CUBLAS_GEMM_DEFAULT));
#define ADD(T) (k_add_region<T><<<cuda_blocks(n, 256), 256, 0, im->stream>>>((T *)df->data, df->w, seed.x, seed.y + y0, seed.w, C, (const float *)im->s1, n), 0)
        CUDA_DISPATCH(df->dt, ADD);
#undef ADD
        LAUNCH_TRY("gram_backward");
    }
    return NST_OK;
}

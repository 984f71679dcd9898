/* kernels/cuda/gram_cuda.cu: the style Gram matrix, its difference from the target and its
 * backward, with cuBLAS GEMMs.
 *
 * A region's features are P positions x C channels, NHWC: column-major they are a C x P matrix
 * with leading dimension C, so G = F F^T is one GEMM (OP_N, OP_T) and the backward d F one GEMM
 * (OP_N, OP_N). Work goes in chunks of positions (row order, CUDA_CHUNK_ELEMS features at most),
 * so the scratch is bounded whatever the region.
 *
 * Masks (kernels/backend.h): the guided sums (m F)^T F take the chunk twice, plain and weighted
 * (m_p f_p, exact in double), in one GEMM of the two (its orientation is worked out at
 * cuda_gram_accumulate); the sums' chunks hold half of CUDA_CHUNK_ELEMS, so both copies fit the
 * same scratch. The products with f_p[j] are then not exact and each rounds once. The backward
 * packs m_p f_p, rounded to the storage type, as F's rows. An all-ones mask gives the bits of
 * none: the same values through GEMMs of the same shapes and pointer alignments.
 *
 * The sums are fp64 end to end, as on the CPU (kernels/cpu/gram_sums_cpu.c): each chunk is
 * converted to double (exact from fp32, bf16 or fp16) and one FP64 GEMM adds its products (exact:
 * 24 + 24 significant bits fit in 53) into g with beta = 1, alpha = 1/fscale^2 (a power of two).
 * Nothing is rounded to fp32 on the way, so the sums of a tiled image (chunk by chunk, tile by
 * tile, rank by rank) round to the same fp32 matrix as the whole image's; fp32 partials per chunk
 * did not. (fp16 Gram accumulators overflowed in neural-style #425 and neural-style-pt #97; fp64
 * sums cannot.)
 *
 * The cost: 2 P C^2 FP64 flops per style layer, against 18 P Cin Cout flops per conv in the
 * activation dtype, forward and again backward. Per input pixel VGG-19's style layers take
 * 2 (4 x 4096 + 1024) = 35 kflop, its convs to conv5_1 about 1.4 Mflop: on an H100 SXM (67 TFLOPS
 * FP64 on its tensor cores, 990 dense bf16) the Grams take about a third of the convs' time at
 * peak rates (measured rates differ: NSTBATCH_PROFILE), an A100 (19.5 and 312) about as much,
 * plus one memory-bound conversion pass. GPUs without FP64 tensor cores (sm_86, sm_89: FP64 at
 * 1/64 rate) pay several times the convs. A SYRK would halve the flops, but forms a C x C block
 * from P terms with little parallelism, where the GEMM heuristics split K. */
#include <stdint.h>

#include "cuda_impl.h"
#include "gram_kernels.cuh" /* (the kernels; tests/test_cuda_emu.cpp runs them on the CPU) */

/* positions per chunk: CUDA_CHUNK_ELEMS features */
static size_t chunk_px(int c) { return CUDA_CHUNK_ELEMS / (size_t)(c > 0 ? c : 1); }

/* Positions per chunk of the Gram sums: half as many, masked or not, so a chunk in fp64 and its
 * weighted copy both fit in s2 (CUDA_CHUNK_ELEMS doubles, the bound the reserve counts), and an
 * all-ones mask sums in the same chunks as none: the same GEMMs, the same bits. */
static size_t sums_chunk_px(int c)
{
    size_t p = chunk_px(c) / 2;
    return p ? p : 1;
}

/* doubles from the start of s2 to the weighted chunk: a chunk, rounded up to 256 bytes, so both
 * copies have the arena's alignment and the GEMM sees the same pointers' alignment either way */
static size_t sums_span(size_t elems) { return (elems + 31) / 32 * 32; }

/* The GEMM's orientation. cuBLAS computes G = alpha A B^T + beta G (OP_N, OP_T; m = n = C, k = np)
 * on column-major matrices: A and B are C x np with leading dimension C, which is exactly a chunk
 * of np positions x C channels stored row by row (NHWC), so A[r][p] = f_p[r], and G[r][s] =
 * sum_p A[r][p] B[s][p] lands at g[r + s C]. The CPU (and kernels/backend.h) reads g row-major,
 * entry (i, j) at g[i c + j], i.e. G[r = j][s = i] = sum_p A[j][p] B[i][p]: with B the weighted
 * chunk m F and A the plain F that is sum_p (m_p f_p[i]) f_p[j], the CPU's row side weighted and
 * column side plain. The other way round gives the same bits: m_p f_p[i] f_p[j] is one exact real
 * whichever factor carries the weight (m_p f_p[i] and m_p f_p[j] are both exact in double), and
 * each product rounds it once, so the masked sums stay symmetric. (A host model of this call
 * against the CPU's definition agreed, and bit for bit with A and B swapped.) */
nst_status cuda_gram_accumulate(nst_backend *be, const nst_tensor *f, nst_rect own, const nst_tensor *m, double *g)
{
    NST_TRY(cuda_check(f, "gram_accumulate"));
    NST_TRY(cuda_check_region(f, own, "gram_accumulate"));
    NST_TRY(nst_tensor_check_mask(f, m, "gram_accumulate"));
    if (m) NST_TRY(cuda_check(m, "gram_accumulate"));
    if (nst_rect_empty(own)) return NST_OK;
    cuda_impl *im = cuda_of(be);
    if (im->gram_own && cuda_gram_sums_fit(f->c, (size_t)nst_rect_area(own))) return cuda_gram_sums_own(be, f, own, m, g);
    const int C = f->c;
    const size_t npx = (size_t)nst_rect_area(own), per = sums_chunk_px(C), span = sums_span((per < npx ? per : npx) * C);
    NST_TRY(cuda_scratch(be, &im->s2, &im->s2_cap, (m ? 2 : 1) * span * sizeof(double)));
    double *X = (double *)im->s2, *MX = m ? X + span : X;
    const float *w = m ? (const float *)m->data : NULL;
    const double fs = cuda_act_scale(im, f->dt), alpha = 1 / (fs * fs), beta = 1;
    cudaStream_t st = cuda_gram_stream(im); /* (the side stream: kernels/backend.h) */
    /* 8 channels a thread where they come in eights; 32-bit indices where f's and a chunk's fit */
    const int wide = cuda_eight_wide(im, (size_t)C, f->data, X, MX, NULL),
              narrow = cuda_narrow(nst_tensor_elems(f)) && cuda_narrow(per * C);
    for (size_t p0 = 0; p0 < npx; p0 += per) {
        const size_t np = npx - p0 < per ? npx - p0 : per, n = np * C;
        if (wide) {
            const size_t n8 = n / 8;
#define CHUNK8(T) (CUDA_LAUNCH_I(narrow, k_chunk_f64_8, T, n8, st, (const T *)f->data, w, f->w, C, own, p0, X, MX, n8), 0)
            CUDA_DISPATCH(f->dt, CHUNK8);
#undef CHUNK8
        } else {
#define CHUNK(T) (k_chunk_f64<T><<<cuda_blocks(n, 256), 256, 0, st>>>((const T *)f->data, w, f->w, C, own, p0, X, MX, n), 0)
            CUDA_DISPATCH(f->dt, CHUNK);
#undef CHUNK
        }
        LAUNCH_TRY("gram_accumulate");
        /* A = X (plain), B = MX (weighted): see above */
        CUBLAS_TRY(im->cb->gemm_ex(cuda_gram_blas(im), CUBLAS_OP_N, CUBLAS_OP_T, C, C, (int)np, &alpha, X, CUDA_R_64F, C, MX, CUDA_R_64F, C, &beta,
                                   g, CUDA_R_64F, C, CUBLAS_COMPUTE_64F, CUBLAS_GEMM_DEFAULT));
    }
    return NST_OK;
}

nst_status cuda_gram_diff(nst_backend *be, const double *g, const double *g_prev, double g_scale, const float *a, int c, float *d,
                          double *sumsq)
{
    cuda_impl *im = cuda_of(be);
    size_t n = (size_t)c * c;
    unsigned b = cuda_blocks(n, RED_THREADS);
    if (b > RED_BLOCKS) b = RED_BLOCKS;
    k_gram_diff<<<b, RED_THREADS, 0, im->stream>>>(g, g_prev, g_scale, a, c, d, im->red);
    LAUNCH_TRY("gram_diff");
    return cuda_reduce_on_device(be, b, sumsq, NULL, 1.0); /* *sumsq in device memory, no wait */
}

/* Positions [p0, p0 + np) of region r of f as a dense np x C matrix: in place when r spans whole
 * rows and there is no mask, else packed into im->s0 (sized by the caller: a chunk and 256 bytes),
 * weighted by m where there is one. A weighted chunk of whole rows goes at the in-place pointer's
 * offset modulo 256, so the GEMM sees the alignment it sees without a mask and takes the same
 * algorithm: an all-ones mask gives the same bits. */
static nst_status chunk_features(nst_backend *be, const nst_tensor *f, nst_rect r, const nst_tensor *m, size_t p0, size_t np,
                                 const void **F)
{
    cuda_impl *im = cuda_of(be);
    const unsigned char *in_place = (const unsigned char *)f->data + ((size_t)r.y * f->w + p0) * f->c * nst_dtype_size(f->dt);
    const int whole = r.x == 0 && r.w == f->w;
    if (whole && !m) {
        *F = in_place;
        return NST_OK;
    }
    void *out = (unsigned char *)im->s0 + (whole ? (uintptr_t)in_place % 256 : 0);
    const size_t n = np * f->c;
    const float *w = m ? (const float *)m->data : NULL;
#define PACK(T) (k_pack<T><<<cuda_blocks(n, 256), 256, 0, im->stream>>>((const T *)f->data, f->w, f->c, r, p0, (T *)out, n), 0)
#define PACKW(T) \
    (k_pack_weighted<T><<<cuda_blocks(n, 256), 256, 0, im->stream>>>((const T *)f->data, w, f->w, f->c, r, p0, (T *)out, n), 0)
    if (m)
        CUDA_DISPATCH(f->dt, PACKW);
    else
        CUDA_DISPATCH(f->dt, PACK);
#undef PACK
#undef PACKW
    LAUNCH_TRY("gram pack");
    *F = out;
    return NST_OK;
}

/* In bf16 or fp32 (fp16 widens F to fp32, which cuBLAS cannot add into fp16): the GEMM adds
 * scale F d into df where it lies (beta = 1, C of df's type, fp32 compute: alpha F d + df in fp32,
 * then rounded to df's type; no more roundings than the product in scratch and the add kernel
 * had), so no fp32 product in scratch and no pass to add it (8 bytes an element less). F and df
 * must not overlap (the caller falls back where they do). F comes a chunk of the seed's rows at a time as
 * chunk_features gives it (in place, or packed and weighted by the mask); whole rows go as one GEMM,
 * a narrower seed as one GEMM a row, batched, F's rows packed back to back and df's strided by the
 * tensor's (d shared: stride 0). A mask of ones and none meet the same GEMMs at the same
 * alignments with the same values: the same bits. rows: rows a chunk (at least 1). */
static nst_status gram_backward_direct(nst_backend *be, const nst_tensor *f, nst_rect seed, const nst_tensor *m, const void *A,
                                       cudaDataType_t ab, float scale, int rows, nst_tensor *df)
{
    cuda_impl *im = cuda_of(be);
    const int C = f->c, W = f->w, whole = seed.x == 0 && seed.w == W;
    const size_t es = nst_dtype_size(f->dt);
    const float one = 1.f;
    for (int y0 = 0; y0 < seed.h; y0 += rows) {
        const int nr = seed.h - y0 < rows ? seed.h - y0 : rows;
        const void *F = NULL;
        NST_TRY(chunk_features(be, f, seed, m, (size_t)y0 * seed.w, (size_t)nr * seed.w, &F));
        void *D = (unsigned char *)df->data + ((size_t)(seed.y + y0) * W + seed.x) * C * es;
        if (whole)
            CUBLAS_TRY(im->cb->gemm_ex(im->blas, CUBLAS_OP_N, CUBLAS_OP_N, C, nr * W, C, &scale, A, ab, C, F, im->blas_type, C, &one, D,
                                       im->blas_type, C, im->blas_compute, CUBLAS_GEMM_DEFAULT));
        else
            CUBLAS_TRY(im->cb->gemm_strided_batched_ex(im->blas, CUBLAS_OP_N, CUBLAS_OP_N, C, seed.w, C, &scale, A, ab, C, 0, F,
                                                       im->blas_type, C, (long long)seed.w * C, &one, D, im->blas_type, C,
                                                       (long long)W * C, nr, im->blas_compute, CUBLAS_GEMM_DEFAULT));
    }
    return NST_OK;
}

/* df += scale * F d over seed. bf16: d rounded to bf16 to meet F in one GEMM. fp16: F widened to
 * fp32 instead (d, a difference of Gram sums, can pass fp16's range). In bf16 and fp32 the GEMM
 * adds into df itself (gram_backward_direct); in fp16 the product is fp32 and added into df by a
 * kernel (one rounding). The stored features carry fscale, and so does the stored gradient: scale
 * applies unchanged. With a mask F's rows are m_p f_p, packed in the storage type (a mask value
 * of 1 leaves them as they are, so the same bits as without), and the same GEMM follows. */
nst_status cuda_gram_backward(nst_backend *be, const nst_tensor *f, nst_rect seed, const nst_tensor *m, const float *d, float scale,
                              nst_tensor *df)
{
    NST_TRY(cuda_check(f, "gram_backward"));
    NST_TRY(cuda_check(df, "gram_backward"));
    NST_TRY(cuda_check_region(f, seed, "gram_backward"));
    NST_TRY(nst_tensor_check_mask(f, m, "gram_backward"));
    if (m) NST_TRY(cuda_check(m, "gram_backward"));
    if (df->h != f->h || df->w != f->w || df->c != f->c || df->dt != f->dt)
        return nst_fail(NST_ERUNTIME, "gram_backward: gradient shape differs from the features");
    if (nst_rect_empty(seed)) return NST_OK;
    cuda_impl *im = cuda_of(be);
    const int C = f->c;
    const size_t es = nst_dtype_size(f->dt), cc = (size_t)C * C;
    const int whole = seed.x == 0 && seed.w == f->w;
    const size_t npx = (size_t)nst_rect_area(seed), per = chunk_px(C), chunk = (per < npx ? per : npx) * C;
    const void *A = d;
    cudaDataType_t ab = CUDA_R_32F;
    if (f->dt == NST_BF16) {
        NST_TRY(cuda_scratch(be, (void **)&im->gtmp, &im->gtmp_cap, cc * sizeof(float)));
        NST_TRY(cuda_convert_to(be, im->gtmp, NST_BF16, d, cc, 1.f));
        A = im->gtmp, ab = CUDA_R_16BF;
    }
    if (!whole || m) NST_TRY(cuda_scratch(be, &im->s0, &im->s0_cap, chunk * es + 256));
    /* the path below for fp16, a tensor not of the precision's type, features that are the
     * gradient, a row wider than a chunk */
    if (f->dt != NST_F16 && f->dt == be->act_dtype && f->data != df->data && (size_t)seed.w <= per) {
        const size_t rows = per / (size_t)seed.w; /* the chunk's rows: within the scratch sized above */
        return gram_backward_direct(be, f, seed, m, A, ab, scale, rows < (size_t)seed.h ? (int)rows : seed.h, df);
    }
    if (f->dt == NST_F16) NST_TRY(cuda_scratch(be, &im->s2, &im->s2_cap, chunk * sizeof(float)));
    NST_TRY(cuda_scratch(be, &im->s1, &im->s1_cap, chunk * sizeof(float)));
    const float beta = 0.f;
    /* F's type is f's (fp16 widened to fp32), as A's is: the precision's compute type where f is
     * of the precision's dtype, else fp32 */
    const cudaDataType_t ft = f->dt == NST_BF16 ? CUDA_R_16BF : CUDA_R_32F;
    const cublasComputeType_t comp = f->dt == be->act_dtype && f->dt != NST_F16 ? im->blas_compute : CUBLAS_COMPUTE_32F;
    for (size_t p0 = 0; p0 < npx; p0 += per) {
        const size_t np = npx - p0 < per ? npx - p0 : per, n = np * C;
        const void *F = NULL;
        NST_TRY(chunk_features(be, f, seed, m, p0, np, &F));
        if (f->dt == NST_F16) {
            NST_TRY(cuda_convert_from(be, (float *)im->s2, F, NST_F16, n, 1.f));
            F = im->s2;
        }
        CUBLAS_TRY(im->cb->gemm_ex(im->blas, CUBLAS_OP_N, CUBLAS_OP_N, C, (int)np, C, &scale, A, ab, C, F, ft, C, &beta, im->s1,
                                   CUDA_R_32F, C, comp, CUBLAS_GEMM_DEFAULT));
#define ADD(T) (k_add_region<T><<<cuda_blocks(n, 256), 256, 0, im->stream>>>((T *)df->data, df->w, C, seed, p0, (const float *)im->s1, n), 0)
        CUDA_DISPATCH(df->dt, ADD);
#undef ADD
        LAUNCH_TRY("gram_backward");
    }
    return NST_OK;
}

/* kernels/cuda/gram_sums_cuda.cu: the Gram sums on our own kernel (NSTBATCH_CUDA_GRAM=own;
 * gram_sums_kernels.cuh), beside cuBLAS's FP64 GEMM in gram_cuda.cu, which it replaces where the
 * benchmark shows it faster: the features read once in their storage type (the GEMM's path first
 * writes each chunk out in fp64, 8 bytes an element, and reads it back twice), and only the upper
 * triangle's blocks computed. The partials go to s2, whose bound (CUDA_CHUNK_ELEMS doubles) the
 * reserve already counts; both kernels are queued on the Gram sums' stream (cuda_gram_stream) with no wait, so a recorded
 * iteration (CUDA graphs) replays them. */
#include <stdint.h>

#include "cuda_impl.h"
#include "gram_sums_kernels.cuh"

static_assert(GS_PARTS * GS_BT * GS_BT <= CUDA_CHUNK_ELEMS, "the partials fit s2's bound");
static_assert(GS_KT == 2 * GS_THREADS / 8 && GS_BT == 64 && GS_THREADS == 128, "a stage is two positions a thread, 8 channels each");

/* whether the own kernel takes a region of np positions of c channels: splits exist (always, up to
 * 5760 channels) */
int cuda_gram_sums_fit(int c, size_t np)
{
    size_t per = 0;
    return c > 0 && gs_splits(np, (c + GS_BT - 1) / GS_BT, &per) > 0;
}

nst_status cuda_gram_sums_own(nst_backend *be, const nst_tensor *f, nst_rect own, const nst_tensor *m, double *g)
{
    cuda_impl *im = cuda_of(be);
    const int C = f->c, nb = (C + GS_BT - 1) / GS_BT;
    const size_t np = (size_t)nst_rect_area(own);
    size_t per = 0;
    const unsigned splits = gs_splits(np, nb, &per);
    if (!splits) return nst_fail(NST_ERUNTIME, "gram_accumulate: %d channels over %zu positions do not fit the own kernel", C, np);
    const int nblk = nb * (nb + 1) / 2; /* (at most GS_PARTS: gs_splits) */
    NST_TRY(cuda_scratch(be, &im->s2, &im->s2_cap, (size_t)splits * nblk * GS_BT * GS_BT * sizeof(double)));
    const float *w = m ? (const float *)m->data : NULL;
    const double fs = cuda_act_scale(im, f->dt), alpha = 1 / (fs * fs);
    const bool vec = cuda_eight_wide(im, (size_t)C, f->data, NULL, NULL, NULL);
    double *part = (double *)im->s2;
    cudaStream_t st = cuda_gram_stream(im); /* (the side stream: kernels/backend.h) */
#define SUMS(T) (k_gram_sums<T><<<splits * (unsigned)nblk, GS_THREADS, 0, st>>>((const T *)f->data, w, f->w, C, own, nb, per, np, part, vec), 0)
    CUDA_DISPATCH(f->dt, SUMS);
#undef SUMS
    LAUNCH_TRY("gram sums (own)");
    k_gram_sums_add<<<cuda_blocks((size_t)C * C, 256), 256, 0, st>>>(part, C, nb, splits, alpha, g);
    LAUNCH_TRY("gram sums (own): the splits added");
    return NST_OK;
}

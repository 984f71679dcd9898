/* kernels/cuda/conv_first_cuda.cu: the first convolution (3 input channels, conv1_1) as kernels of
 * our own, forward with bias and ReLU, and backward-data, on the unpadded 3-channel tensors: no
 * pad or unpad pass, and no tensor-core kernel starved of channels (cuDNN ran conv1_1, its input
 * padded to 8 channels, at 8 and 13 TFLOP/s on an H200, 10 % of a 2048x1536 iteration for 0.2 % of
 * its FLOPs). NSTBATCH_CUDA_CONV1=own takes them for every layer they fit (3 input channels, a
 * multiple of 8 outputs, at most 256); cuDNN stays the default until a GPU run has compared both
 * (the op harness judges them as it judges cuDNN: kernels/check/).
 *
 * The arithmetic: the weights are the layer's, as cuDNN reads them (the activation dtype, KRSC
 * padded), widened to fp32 in shared memory; every sum is fp32 from zero in a fixed order, so
 * results repeat bit for bit.
 * - forward: one thread per output pixel; its 27 inputs (3 x 3 neighbours x 3 channels, zero
 *   outside the tensor: 'same' padding) in registers; outputs 8 at a time, each the sum over
 *   k = (ky 3 + kx) 3 + c ascending of w[o][ky][kx][c] x[y + ky - 1][x + kx - 1][c], then + bias,
 *   then ReLU (as cuDNN's fused call: the bias after the sum), stored in the activation dtype.
 * - backward-data: one thread per input pixel; dx[c] = the sum over (ky, kx) ascending and o
 *   ascending of w[o][ky][kx][c] dy[y + 1 - ky][x + 1 - kx][o], the neighbours inside the tensor
 *   (the outputs whose window read this pixel through tap (ky, kx)).
 * Both also run on the image itself (conv_forward_image, conv_backward_image: kernels/backend.h),
 * the preprocessing applied to each value read and its backward to each value written, with the
 * rounding to the storage type between (preproc.cuh): the bits of the preprocessing's own passes
 * and these kernels in turn, without the network input written and read back, nor its gradient. */
#include <stdint.h>

#include "cuda_impl.h"
#include "conv_first_kernels.cuh" /* (the kernels; tests/test_cuda_emu.cpp runs them on the CPU) */

/* blocks of this many threads; the grid strides over the pixels */
#define CONV1_THREADS 256
#define CONV1_MAX_COUT 256 /* the weights in fp32, 28 x 256 x 4 bytes: within 48 KiB of shared memory */

int cuda_conv_first_fits(int cin, int cout) { return cin == 3 && cout % 8 == 0 && cout > 0 && cout <= CONV1_MAX_COUT; }

template <typename T, typename In>
static void launch_fwd(cudaStream_t st, In x, const void *w, const void *bias, void *y, int h, int wd, int cout, int cin_p, int relu, bool vec)
{
    const size_t npx = (size_t)h * wd, shm = (size_t)28 * cout * sizeof(float);
    k_conv1_fwd<T, In><<<cuda_blocks(npx, CONV1_THREADS), CONV1_THREADS, shm, st>>>(x, (const T *)w, (const T *)bias, (T *)y, h, wd, cout, cin_p,
                                                                                     relu, vec);
}

template <typename T, typename Out>
static void launch_bwd(cudaStream_t st, const void *dy, const void *w, Out dx, int h, int wd, int cout, int cin_p, bool vec)
{
    const size_t npx = (size_t)h * wd, shm = (size_t)27 * cout * sizeof(float);
    k_conv1_bwd<T, Out><<<cuda_blocks(npx, CONV1_THREADS), CONV1_THREADS, shm, st>>>((const T *)dy, (const T *)w, dx, h, wd, cout, cin_p, vec);
}

nst_status cuda_conv_first_forward(nst_backend *be, const void *x, const nst_preproc *pre, const void *w, const void *bias, void *y, int h,
                                   int wd, int cout, int cin_p, int relu)
{
    cuda_impl *im = cuda_of(be);
    const bool vec = im->vec8 && (uintptr_t)y % 16 == 0; /* (cout a multiple of 8: every pixel's outputs then aligned too) */
    const affine3 f = pre ? cuda_affine(pre) : affine3{};
#define FWD(T)                                                                                                            \
    (pre ? launch_fwd<T>(im->stream, conv1_in_image<T>{(const float *)x, f, im->fscale}, w, bias, y, h, wd, cout, cin_p, relu, vec) \
         : launch_fwd<T>(im->stream, conv1_in_act<T>{(const T *)x}, w, bias, y, h, wd, cout, cin_p, relu, vec),                    \
     0)
    CUDA_DISPATCH(be->act_dtype, FWD);
#undef FWD
    LAUNCH_TRY(pre ? "conv1_1 forward from the image (own)" : "conv1_1 forward (own)");
    return NST_OK;
}

nst_status cuda_conv_first_backward(nst_backend *be, const void *dy, const nst_preproc *pre, const void *w, void *dx, int h, int wd, int cout,
                                    int cin_p)
{
    cuda_impl *im = cuda_of(be);
    const bool vec = im->vec8 && (uintptr_t)dy % 16 == 0;
    const affine3 f = pre ? cuda_affine(pre) : affine3{};
#define BWD(T)                                                                                                              \
    (pre ? launch_bwd<T>(im->stream, dy, w, conv1_out_image<T>{(float *)dx, f, 1.f / im->fscale}, h, wd, cout, cin_p, vec) \
         : launch_bwd<T>(im->stream, dy, w, conv1_out_act<T>{(T *)dx}, h, wd, cout, cin_p, vec),                            \
     0)
    CUDA_DISPATCH(be->act_dtype, BWD);
#undef BWD
    LAUNCH_TRY(pre ? "conv1_1 backward-data to the image (own)" : "conv1_1 backward-data (own)");
    return NST_OK;
}

/* kernels/cuda/grid_stride.cuh: the loops by which a kernel's threads cover n elements with any
 * grid. Includes nothing: cuda_impl.h includes it for nvcc, and tests/cuda_emu.h for the host
 * stand-in, so both run the same loops. */

/* the loop of a kernel over n elements, any grid */
#define GRID_STRIDE(i, n) for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < (n); i += (size_t)gridDim.x * blockDim.x)

/* The same in index type I: 32-bit (unsigned) where cuda_narrow holds for every index the kernel
 * forms (then i + the stride, at most 2^20 blocks of 256, stays below 2^31 + 2^28: no wrap), with
 * no 64-bit division per element; size_t otherwise. */
#define GRID_STRIDE_I(I, i, n) for (I i = blockIdx.x * (I)blockDim.x + threadIdx.x; i < (n); i += (I)gridDim.x * blockDim.x)

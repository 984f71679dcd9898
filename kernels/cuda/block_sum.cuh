/* kernels/cuda/block_sum.cuh: the reductions' launch shape and a block's fixed-tree sum, device
 * code that includes nothing (cuda_impl.h includes it; tests/test_cuda_emu.cpp runs it on the CPU
 * through its host stand-in of CUDA's names). */

#define RED_THREADS 256
#define RED_BLOCKS 1024

/* The sum of v over the block (blockDim.x == RED_THREADS), valid in thread 0: a fixed tree, so
 * the order of additions never changes. */
__device__ __forceinline__ double block_tree_sum(double v)
{
    __shared__ double sh[RED_THREADS];
    sh[threadIdx.x] = v;
    __syncthreads();
    for (int s = RED_THREADS / 2; s > 0; s >>= 1) {
        if ((int)threadIdx.x < s) sh[threadIdx.x] += sh[threadIdx.x + s];
        __syncthreads();
    }
    return sh[0];
}

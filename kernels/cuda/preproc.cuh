/* kernels/cuda/preproc.cuh: the network input from the image, and the image's gradient from the
 * input's, one value at a time: the arithmetic that k_pre and k_pre_bwd (eltwise_kernels.cuh) run
 * as passes of their own, and conv1_1's own kernels (conv_first_kernels.cuh) run on the way in and
 * out, so that reading the image directly gives the bits of the two passes in turn. Device code
 * that includes nothing (cuda_impl.h includes it); tests/test_cuda_emu.cpp runs it on the CPU. */

/* x = (img[src c] a_c + b_c) fscale, the network input (a host function fills it: cuda_affine) */
struct affine3 {
    float a[3], b[3];
    int src[3];
};

/* v[c] by selects: indexing a kernel parameter's array by a variable copies it to local memory */
template <typename V> __device__ __forceinline__ V pick3(const V *v, int c) { return c == 0 ? v[0] : c == 1 ? v[1] : v[2]; }

/* v rounded to T, as a tensor of T stores it and reads it back */
template <typename T> __device__ __forceinline__ float round_to(float v)
{
    T t;
    st<T>(&t, 0, v);
    return ld<T>(&t, 0);
}

/* input channel c of pixel p, before its rounding to the storage type: one fused multiply-add, so
 * that no choice of the compiler's (contracting a x + b or not) can differ between the kernels that
 * inline it; fscale is a power of two (exact but at the subnormal edge, and the same multiply on
 * every path) */
__device__ __forceinline__ float pre_value(const float *img, size_t p, int c, const affine3 &f, float fscale)
{
    return fmaf(img[3 * p + pick3(f.src, c)], pick3(f.a, c), pick3(f.b, c)) * fscale;
}

/* the image gradient at img[3 p + src c] from the input's gradient g (as stored) */
__device__ __forceinline__ float pre_grad(float g, int c, const affine3 &f, float inv_fscale) { return g * inv_fscale * pick3(f.a, c); }

/* kernels/cuda/vec8.cuh: 8 consecutive values of a tensor as one access (16 bytes of a 16-bit type,
 * 32 of fp32), widened to fp32 or rounded from it as ld<T> and st<T> do element by element: the
 * same values, fewer and wider memory transactions. Device code that includes nothing (cuda_impl.h
 * includes it); tests/test_cuda_emu.cpp runs this very code on the CPU, the vector branches
 * included, through its host stand-in of CUDA's vector types and pair conversions. */

/* 16 bytes from src to dst (each 16-byte aligned): one vector load and one vector store on the
 * GPU, registers where either side is a local array; on the host stand-in a copy, which C++ allows
 * between unrelated types where a cast would not, that stops the test at a misaligned address */
__device__ __forceinline__ void copy16(void *dst, const void *src)
{
#ifdef __CUDACC__
    *reinterpret_cast<uint4 *>(dst) = *reinterpret_cast<const uint4 *>(src);
#else
    if (((uintptr_t)dst | (uintptr_t)src) % 16) { /* the GPU would fault or read wrong: so does the stand-in */
        fprintf(stderr, "vec8.cuh: a 16-byte access at %p <- %p, not 16-byte aligned\n", dst, src);
        abort();
    }
    memcpy(dst, src, 16);
#endif
}

/* two 16-bit values from two floats (rounded as st<T> rounds), and back: .x at the lower address */
__device__ __forceinline__ __nv_bfloat162 pair_of(const __nv_bfloat16 *, float a, float b) { return __floats2bfloat162_rn(a, b); }
__device__ __forceinline__ __half2 pair_of(const __half *, float a, float b) { return __floats2half2_rn(a, b); }
__device__ __forceinline__ float2 floats_of(__nv_bfloat162 h) { return __bfloat1622float2(h); }
__device__ __forceinline__ float2 floats_of(__half2 h) { return __half22float2(h); }

/* 8 consecutive values of T at p into v: vec, p 16-byte aligned: one 16-byte access (two for
 * fp32); element by element otherwise. The same values either way. */
template <typename T> __device__ __forceinline__ void load8(const T *p, float *v, bool vec)
{
    if (vec) {
        if constexpr (sizeof(T) == 2) {
            alignas(16) decltype(pair_of(p, 0.f, 0.f)) h[4];
            copy16(h, p);
#pragma unroll
            for (int j = 0; j < 4; j++) {
                const float2 f = floats_of(h[j]);
                v[2 * j] = f.x, v[2 * j + 1] = f.y;
            }
            return;
        } else if constexpr (sizeof(T) == 4) {
            alignas(16) float4 a[2];
            copy16(&a[0], p), copy16(&a[1], p + 4);
            v[0] = a[0].x, v[1] = a[0].y, v[2] = a[0].z, v[3] = a[0].w;
            v[4] = a[1].x, v[5] = a[1].y, v[6] = a[1].z, v[7] = a[1].w;
            return;
        }
    }
#pragma unroll
    for (int j = 0; j < 8; j++) v[j] = ld<T>(p, j);
}
template <typename T> __device__ __forceinline__ void store8(T *p, const float *v, bool vec)
{
    if (vec) {
        if constexpr (sizeof(T) == 2) {
            alignas(16) decltype(pair_of(p, 0.f, 0.f)) h[4];
#pragma unroll
            for (int j = 0; j < 4; j++) h[j] = pair_of(p, v[2 * j], v[2 * j + 1]);
            copy16(p, h);
            return;
        } else if constexpr (sizeof(T) == 4) {
            alignas(16) const float4 a[2] = {{v[0], v[1], v[2], v[3]}, {v[4], v[5], v[6], v[7]}};
            copy16(p, &a[0]), copy16(p + 4, &a[1]);
            return;
        }
    }
#pragma unroll
    for (int j = 0; j < 8; j++) st<T>(p, j, v[j]);
}

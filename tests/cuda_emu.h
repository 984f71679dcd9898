/* tests/cuda_emu.h: a host stand-in for the CUDA names our own kernels use, so that their device
 * code (the kernels/cuda/ files named _kernels.cuh, which include nothing) compiles with g++ and runs on the CPU:
 * a launch runs its blocks one after another, each block's threads as host threads that meet at
 * a real barrier (__syncthreads), each warp's 32 at a barrier of their own (the FP64 MMA's model
 * of its fragments), with threadIdx per thread; dynamic shared memory is one global
 * array (emu_shared), filled with NaN before each block, so a read of anything the block did not
 * write shows in the results, and AddressSanitizer catches a read past its end; bf16 and fp16 round
 * to nearest even, as __float2bfloat16_rn and __float2half_rn; the vector types are structs of
 * the same layout, their 16-byte accesses copies (vec8.cuh). Only for tests. */
#ifndef NST_CUDA_EMU_H
#define NST_CUDA_EMU_H

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <functional>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __launch_bounds__(threads)
#define __forceinline__ inline
/* dynamic shared memory (`extern __shared__`): emu_shared below; a kernel's static `__shared__`
 * array is one per program, which is the block's as the blocks run one after another: the
 * includer defines __shared__ as static around such a file (tests/test_cuda_emu.cpp) */
#define __shared__

struct dim3 {
    unsigned x = 1, y = 1, z = 1;
};
static dim3 gridDim, blockDim, blockIdx;
static thread_local dim3 threadIdx;
static pthread_barrier_t emu_barrier;
static bool emu_sequential; /* emu_launch_sequential's threads, one after another: no barrier may be met */
static inline void __syncthreads()
{
    if (emu_sequential) {
        fprintf(stderr, "cuda_emu: __syncthreads in a kernel run by emu_launch_sequential: launch it with emu_launch\n");
        abort();
    }
    pthread_barrier_wait(&emu_barrier);
}

/* the warps of a block (32 threads each, from thread 0): their own barriers, for the warp-wide
 * instructions below, which a warp's threads meet alone */
static pthread_barrier_t emu_warp_barrier[32];
static double emu_warp_a[1024 * 4], emu_warp_b[1024 * 2];

/* which of the FP64 MMA paths the kernels take on the stand-in: sm_90's one m16n8k8, or (true)
 * sm_80's four m8n8k4 */
static bool emu_mma_sm80;

/* this thread's warp meets at its own barrier: a warp-wide instruction's exchange of registers */
static inline void emu_warp_meet(void)
{
    if (emu_sequential) {
        fprintf(stderr, "cuda_emu: a warp-wide MMA in a kernel run by emu_launch_sequential: launch it with emu_launch\n");
        abort();
    }
    pthread_barrier_wait(&emu_warp_barrier[threadIdx.x / 32]);
}

/* mma.sync.aligned.m8n8k4.row.col.f64 (PTX ISA, "Matrix Fragments for mma.m8n8k4 with .f64"):
 * D (8 x 8) += A (8 x 4) B (4 x 8) over the warp of this thread; lane l = 4 g + t holds a = A[g][t],
 * b = B[t][g], d0, d1 = D[g][2t], D[g][2t + 1]; each entry's four products added in k order, each
 * through one fused multiply-add */
static inline void emu_mma_m8n8k4_f64(double &d0, double &d1, double a, double b)
{
    const unsigned th = threadIdx.x, lane = th % 32, base = th - lane;
    emu_warp_a[th] = a, emu_warp_b[th] = b;
    emu_warp_meet();
    const unsigned g = lane / 4, t = lane % 4;
    double out[2] = {d0, d1};
    for (unsigned e = 0; e < 2; e++) /* A[g][k]: lane 4 g + k; B[k][c]: lane 4 c + k */
        for (unsigned k = 0; k < 4; k++) out[e] = fma(emu_warp_a[base + 4 * g + k], emu_warp_b[base + 4 * (2 * t + e) + k], out[e]);
    emu_warp_meet(); /* every lane read before any writes again */
    d0 = out[0], d1 = out[1];
}

/* mma.sync.aligned.m16n8k8.row.col.f64 (PTX ISA, "Matrix Fragments for mma.m16n8k8", .f64):
 * D (16 x 8) += A (16 x 8) B (8 x 8) over the warp of this thread; lane l = 4 g + t holds
 * a = A[g][t], A[g + 8][t], A[g][t + 4], A[g + 8][t + 4]; b = B[t][g], B[t + 4][g];
 * d = D[g][2t], D[g][2t + 1], D[g + 8][2t], D[g + 8][2t + 1]. Each entry's eight products added in
 * k order, each through one fused multiply-add (the hardware's order within the eight may differ:
 * a test's data where that matters is not exact anyway). */
static inline void emu_mma_m16n8k8_f64(double *d, const double *a, const double *b)
{
    const unsigned th = threadIdx.x, lane = th % 32, base = th - lane;
    for (int i = 0; i < 4; i++) emu_warp_a[th * 4 + i] = a[i];
    for (int i = 0; i < 2; i++) emu_warp_b[th * 2 + i] = b[i];
    emu_warp_meet();
    /* A[r][k]: lane 4 (r % 8) + k % 4, register (r >= 8) + 2 (k >= 4); B[k][c]: lane 4 c + k % 4, register k >= 4 */
    auto A = [&](unsigned r, unsigned k) { return emu_warp_a[(base + 4 * (r % 8) + k % 4) * 4 + (r >= 8) + 2 * (k >= 4)]; };
    auto B = [&](unsigned k, unsigned c) { return emu_warp_b[(base + 4 * c + k % 4) * 2 + (k >= 4)]; };
    const unsigned g = lane / 4, t = lane % 4;
    double out[4] = {d[0], d[1], d[2], d[3]};
    for (unsigned e = 0; e < 4; e++) {
        const unsigned row = g + 8 * (e / 2), col = 2 * t + e % 2;
        for (unsigned k = 0; k < 8; k++) out[e] = fma(A(row, k), B(k, col), out[e]);
    }
    emu_warp_meet(); /* every lane read before any writes again */
    for (int e = 0; e < 4; e++) d[e] = out[e];
}

/* the largest dynamic shared memory a kernel under test asks, in floats; a kernel's `extern
 * __shared__ float NAME[]` is made this array by `#define NAME emu_shared` around its include */
#define EMU_SHARED_FLOATS (28 * 256)
float emu_shared[EMU_SHARED_FLOATS];

/* the bits of a double as an integer (CUDA's intrinsic) */
static inline long long __double_as_longlong(double d)
{
    long long v;
    memcpy(&v, &d, sizeof v);
    return v;
}

#include "../kernels/cuda/grid_stride.cuh" /* the same loops as nvcc's */

struct __nv_bfloat16 {
    uint16_t u;
};
struct __half {
    _Float16 h;
};
static inline float emu_bf16_to_float(uint16_t u)
{
    uint32_t b = (uint32_t)u << 16;
    float f;
    memcpy(&f, &b, 4);
    return f;
}
static inline uint16_t emu_float_to_bf16(float f)
{
    uint32_t b;
    memcpy(&b, &f, 4);
    if (isnan(f)) return 0x7fc0;
    b += 0x7fff + ((b >> 16) & 1); /* round to nearest, ties to even */
    return (uint16_t)(b >> 16);
}
/* the vector types and pair conversions vec8.cuh uses: .x at the lower address, as CUDA's */
struct uint4 {
    unsigned x, y, z, w;
};
struct float2 {
    float x, y;
};
struct float4 {
    float x, y, z, w;
};
struct __nv_bfloat162 {
    __nv_bfloat16 x, y;
};
struct __half2 {
    __half x, y;
};
static inline __nv_bfloat162 __floats2bfloat162_rn(float a, float b) { return {{emu_float_to_bf16(a)}, {emu_float_to_bf16(b)}}; }
static inline float2 __bfloat1622float2(__nv_bfloat162 h) { return {emu_bf16_to_float(h.x.u), emu_bf16_to_float(h.y.u)}; }
static inline __half2 __floats2half2_rn(float a, float b) { return {{(_Float16)a}, {(_Float16)b}}; }
static inline float2 __half22float2(__half2 h) { return {(float)h.x.h, (float)h.y.h}; }

template <typename T> float ld(const T *p, size_t i);
template <> inline float ld<float>(const float *p, size_t i) { return p[i]; }
template <> inline float ld<__nv_bfloat16>(const __nv_bfloat16 *p, size_t i) { return emu_bf16_to_float(p[i].u); }
template <> inline float ld<__half>(const __half *p, size_t i) { return (float)p[i].h; }
template <typename T> void st(T *p, size_t i, float v);
template <> inline void st<float>(float *p, size_t i, float v) { p[i] = v; }
template <> inline void st<__nv_bfloat16>(__nv_bfloat16 *p, size_t i, float v) { p[i].u = emu_float_to_bf16(v); }
template <> inline void st<__half>(__half *p, size_t i, float v) { p[i].h = (_Float16)v; }

/* kernel<<<grid, threads>>> for a kernel whose threads never meet (no __syncthreads, no shared
 * memory): the same threads, run one after another on this one, which is the same as any
 * interleaving for such a kernel, and costs no host thread each */
static inline void emu_launch_sequential(unsigned grid, unsigned threads, const std::function<void()> &body)
{
    gridDim.x = grid, blockDim.x = threads;
    emu_sequential = true;
    for (unsigned b = 0; b < grid; b++) {
        blockIdx.x = b;
        for (unsigned t = 0; t < threads; t++) {
            threadIdx.x = t;
            body();
        }
    }
    emu_sequential = false;
}

/* kernel<<<grid, threads, shared_bytes>>>, with body() calling the kernel */
static inline void emu_launch(unsigned grid, unsigned threads, size_t shared_bytes, const std::function<void()> &body)
{
    if (shared_bytes > sizeof emu_shared) abort();
    gridDim.x = grid, blockDim.x = threads;
    for (unsigned b = 0; b < grid; b++) {
        blockIdx.x = b;
        for (size_t i = 0; i < EMU_SHARED_FLOATS; i++) emu_shared[i] = NAN;
        pthread_barrier_init(&emu_barrier, NULL, threads);
        const unsigned warps = threads % 32 == 0 && threads <= 1024 ? threads / 32 : 0;
        for (unsigned w = 0; w < warps; w++) pthread_barrier_init(&emu_warp_barrier[w], NULL, 32);
        std::vector<pthread_t> th(threads);
        struct arg {
            unsigned t;
            const std::function<void()> *body;
        };
        std::vector<arg> args(threads);
        for (unsigned t = 0; t < threads; t++) {
            args[t] = {t, &body};
            pthread_create(&th[t], NULL, [](void *a) -> void * {
                threadIdx.x = ((arg *)a)->t;
                (*((arg *)a)->body)();
                return NULL;
            }, &args[t]);
        }
        for (unsigned t = 0; t < threads; t++) pthread_join(th[t], NULL);
        pthread_barrier_destroy(&emu_barrier);
        for (unsigned w = 0; w < warps; w++) pthread_barrier_destroy(&emu_warp_barrier[w]);
    }
}

#endif

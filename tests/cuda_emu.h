/* tests/cuda_emu.h: a host stand-in for the CUDA names our own kernels use, so that their device
 * code (the kernels/cuda/ files named _kernels.cuh, which include nothing) compiles with g++ and runs on the CPU:
 * a launch runs its blocks one after another, each block's threads as fibers on the launching
 * thread (a stack and a context each) that meet at a barrier (__syncthreads), each warp's 32 at a
 * barrier of their own (the FP64 MMA's model of its fragments), with threadIdx per fiber. Between
 * two barriers each thread runs alone to the next one, in rising thread order in even blocks and
 * falling order in odd ones, so a read of a value that another thread writes before the same
 * barrier sees it unwritten in one of the two; barriers that never fill stop the test, named.
 * Dynamic shared memory is one global array (emu_shared), filled with NaN before each block, so a
 * read of anything the block did not write shows in the results, and AddressSanitizer catches a
 * read past its end (the switches are annotated for it; it still warns once that it does not
 * fully support swapcontext); bf16 and fp16 round to nearest even, as
 * __float2bfloat16_rn and __float2half_rn; the vector types are structs of the same layout, their
 * 16-byte accesses copies (vec8.cuh). Only for tests. */
#ifndef NST_CUDA_EMU_H
#define NST_CUDA_EMU_H

#include <math.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <functional>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#define EMU_ASAN 1
#endif

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
static dim3 threadIdx; /* the running fiber's */
static bool emu_sequential; /* emu_launch_sequential's threads, one after another: no barrier may be met */

/* ---- a block's threads as fibers ---------------------------------------------------------------
 * Each has a stack of its own (mapped once, reused by every block) and a context; emu_launch's
 * loop resumes them in turn, and a fiber that waits at a barrier not yet full goes back to it. */
#define EMU_MAX_THREADS 1024
#define EMU_STACK_BYTES ((size_t)256 << 10)
struct emu_fiber {
    ucontext_t ctx;
    char *stack;
    bool done;
};
static emu_fiber emu_fibers[EMU_MAX_THREADS];
static ucontext_t emu_loop_ctx;                     /* emu_launch's, where a fiber goes back to */
static const std::function<void()> *emu_body;      /* the kernel call every fiber runs */
static unsigned long emu_progress;                  /* arrivals and ends: a round of fibers without one is a deadlock */
static const void *emu_loop_stack;                  /* the launching thread's stack, for ASan */
static size_t emu_loop_stack_bytes;

/* this fiber back to emu_launch's loop; for good (its kernel returned) or to be resumed */
static inline void emu_yield(bool for_good)
{
#ifdef EMU_ASAN
    void *fake = NULL;
    __sanitizer_start_switch_fiber(for_good ? NULL : &fake, emu_loop_stack, emu_loop_stack_bytes);
#endif
    if (for_good) setcontext(&emu_loop_ctx);
    swapcontext(&emu_fibers[threadIdx.x].ctx, &emu_loop_ctx);
#ifdef EMU_ASAN
    __sanitizer_finish_switch_fiber(fake, &emu_loop_stack, &emu_loop_stack_bytes);
#endif
}

static void emu_fiber_main(void)
{
#ifdef EMU_ASAN
    __sanitizer_finish_switch_fiber(NULL, &emu_loop_stack, &emu_loop_stack_bytes);
#endif
    (*emu_body)();
    emu_fibers[threadIdx.x].done = true;
    emu_progress++;
    emu_yield(true);
}

/* emu_launch's loop into fiber t, until it waits or ends */
static inline void emu_resume(unsigned t)
{
#ifdef EMU_ASAN
    void *fake = NULL;
    __sanitizer_start_switch_fiber(&fake, emu_fibers[t].stack, EMU_STACK_BYTES);
#endif
    threadIdx.x = t;
    swapcontext(&emu_loop_ctx, &emu_fibers[t].ctx);
#ifdef EMU_ASAN
    __sanitizer_finish_switch_fiber(fake, NULL, NULL);
#endif
}

struct emu_barrier_t {
    unsigned n, arrived, gen;
};
static emu_barrier_t emu_barrier;
/* the last of the n to arrive opens it and runs on; the others go back to the loop until then */
static inline void emu_barrier_wait(emu_barrier_t *b, const char *what)
{
    if (b->n == 0) {
        fprintf(stderr, "cuda_emu: %s in a block whose threads do not make it (%u threads)\n", what, blockDim.x);
        abort();
    }
    const unsigned gen = b->gen;
    emu_progress++;
    if (++b->arrived == b->n) {
        b->arrived = 0, b->gen++;
        return;
    }
    while (b->gen == gen) emu_yield(false);
}

static inline void __syncthreads()
{
    if (emu_sequential) {
        fprintf(stderr, "cuda_emu: __syncthreads in a kernel run by emu_launch_sequential: launch it with emu_launch\n");
        abort();
    }
    emu_barrier_wait(&emu_barrier, "__syncthreads");
}

/* the warps of a block (32 threads each, from thread 0): their own barriers, for the warp-wide
 * instructions below, which a warp's threads meet alone */
static emu_barrier_t emu_warp_barrier[32];
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
    emu_barrier_wait(&emu_warp_barrier[threadIdx.x / 32], "a warp-wide MMA");
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
    if (shared_bytes > sizeof emu_shared || threads == 0 || threads > EMU_MAX_THREADS) abort();
    gridDim.x = grid, blockDim.x = threads;
    emu_body = &body;
    for (unsigned t = 0; t < threads; t++)
        if (!emu_fibers[t].stack) {
            void *p = mmap(NULL, EMU_STACK_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
            if (p == MAP_FAILED) abort();
            mprotect(p, 4096, PROT_NONE); /* a guard page: an overflow faults */
            emu_fibers[t].stack = (char *)p;
        }
    for (unsigned b = 0; b < grid; b++) {
        blockIdx.x = b;
        for (size_t i = 0; i < EMU_SHARED_FLOATS; i++) emu_shared[i] = NAN;
        emu_barrier = {threads, 0, 0};
        const unsigned warps = threads % 32 == 0 ? threads / 32 : 0;
        for (unsigned w = 0; w < 32; w++) emu_warp_barrier[w] = {w < warps ? 32u : 0u, 0, 0};
        for (unsigned t = 0; t < threads; t++) {
            emu_fiber *f = &emu_fibers[t];
            f->done = false;
            getcontext(&f->ctx);
            f->ctx.uc_stack.ss_sp = f->stack, f->ctx.uc_stack.ss_size = EMU_STACK_BYTES, f->ctx.uc_link = NULL;
            makecontext(&f->ctx, emu_fiber_main, 0);
        }
        for (unsigned left = threads; left;) {
            const unsigned long before = emu_progress;
            for (unsigned i = 0; i < threads; i++) {
                const unsigned t = b % 2 ? threads - 1 - i : i;
                if (emu_fibers[t].done) continue;
                emu_resume(t);
                left -= emu_fibers[t].done;
            }
            if (emu_progress == before) {
                fprintf(stderr, "cuda_emu: block %u of %u: %u of its %u threads wait at barriers that never fill\n", b, grid, left, threads);
                abort();
            }
        }
    }
}

#endif

/* kernels/cuda/cuda_impl.h: internals shared by the CUDA backend's files (nvcc only).
 *
 * One rank drives one GPU through one stream. Every buffer of the backend interface is an
 * offset in the rank's arena (kernels/arena.h), reserved with one cudaMalloc at open. Activations
 * are stored in the precision's dtype (bf16, fp16 or fp32) with fp32 accumulation everywhere;
 * images, Gram matrices, targets and optimiser state are fp32 (the Gram sums fp64).
 *
 * Feature scale: nst_feature_scale (kernels/precision.h), the policy shared with the CPU backend:
 * 1/8 for fp16 storage, 1 otherwise. The preprocessing multiplies by it, conv biases are stored
 * multiplied by it, and the ops that leave the activation domain divide it out (Gram sums and
 * sums of squares by fscale^2, the image gradient by fscale, downloads of activation tensors by
 * fscale).
 *
 * Reductions (sums of squares, dot products) run in double with a launch shape that depends on
 * the element count only, so a result is the same from run to run. */
#ifndef NST_CUDA_IMPL_H
#define NST_CUDA_IMPL_H

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include "cublas_dl.h"

extern "C" {
#include "../arena.h"
#include "../backend.h"
}

typedef struct cuda_impl {
    int device;
    char bus_id[32];
    cudaStream_t stream;
    cudnnHandle_t dnn;
    cublasHandle_t blas;
    const nst_cublas_api *cb;  /* cuBLAS, loaded at open */
    nst_precision prec;
    cudnnDataType_t dnn_type;  /* activation storage, as cuDNN names it */
    cudaDataType_t blas_type;  /* the same, as cuBLAS names it */
    cublasComputeType_t blas_compute;
    cudnnMathType_t math;
    float fscale;              /* see the file comment */
    int fuse;                  /* bias+ReLU inside cuDNN's call (NSTBATCH_CUDA_FUSE=0: a separate kernel, for comparison) */
    int conv1_own;             /* NSTBATCH_CUDA_CONV1=own: conv1_1 on our own kernels (conv_first_cuda.cu), not cuDNN */
    int vec8;                  /* 8-channel element passes where they fit (cuda_eight_wide); NSTBATCH_CUDA_VEC8=0: none */
    int gram_own;              /* NSTBATCH_CUDA_GRAM=own: the Gram sums on our own kernel (gram_sums_cuda.cu), not cuBLAS's GEMM */
    cublasMath_t blas_math;    /* the precision's cuBLAS math mode, on both handles */
    /* NSTBATCH_CUDA_OVERLAP=1: the Gram sums on a side stream beside the next layers (kernels/backend.h:
     * side, join), with a cuBLAS handle and workspace of its own (a workspace serves one stream at a time) */
    int overlap;
    cudaStream_t side;
    cublasHandle_t blas_side;
    cudaEvent_t forked, joined; /* the side's start after the main stream's work; the main stream's wait for the side */
    int on_side;                /* the Gram sums called now go to the side stream */
    int side_pending;           /* the side holds work the main stream is not yet ordered after */
    unsigned char *base;       /* the arena's memory */
    nst_arena arena;
    /* scratch from the arena, grown on first use (the first iteration), then reused; be->reserve
     * (backend_cuda.cu) counts what bounds each */
    void *ws;      size_t ws_cap, ws_limit; /* cuDNN workspace (ws_limit at most) */
    void *s0;      size_t s0_cap;           /* a Gram backward chunk packed or weighted; conv1_1's padded input/gradient (a whole window) */
    void *s1;      size_t s1_cap;           /* transfers through fp32, the Gram backward's product: a chunk */
    void *s2;      size_t s2_cap;           /* the Gram sums' half chunk in fp64 and its weighted copy, or the own kernel's partials; the backward's fp16 chunk in fp32 */
    float *gtmp;   size_t gtmp_cap;         /* the Gram backward's d in bf16 (c^2) */
    double *red;                            /* reduction partials (RED_BLOCKS + 1) */
    double *red_host;                       /* pinned: the result read back */
    unsigned long long *clocks;             /* the phase clocks: [0] the last stamp's time, [1 + i] clock i (ns) */
    cudaGraphExec_t graph[NST_GRAPH_SEGMENTS]; /* the recorded iteration's segments (graph_end), NULL where none */
    int graphs;                             /* segments held: graph[0 .. graphs) */
    int graph_seg;                          /* the segment being recorded */
    char *notes; size_t notes_len, notes_cap; /* the algorithms chosen, one line each (report_cuda.cu) */
    /* gpu.conv_algorithms = timed (conv_cuda.cu): where the choices are kept (no find: none), and
     * what a timing holds for (the GPU model, cuDNN's version, the precision) */
    int conv_timed;
    nst_conv_memory conv_memory;
    char conv_device[160];
} cuda_impl;

/* Elements per piece of the ops that go through scratch piece by piece (the Gram ops, rectangle
 * transfers, fp32 conversions of uploads and downloads): their scratch stays below a fixed size
 * (128 MiB for a chunk in fp64) whatever the tile. */
#define CUDA_CHUNK_ELEMS ((size_t)1 << 24)

static inline cuda_impl *cuda_of(nst_backend *be) { return (cuda_impl *)be->impl; }

/* Record "<call>: <library message> (file:line)" and return NST_ERUNTIME. */
nst_status cuda_fail(const char *lib, const char *call, const char *what, const char *file, int line);

/* CUDA_TRY(call); CUDA_TRY_AS(call, lib, what): the failure named as lib and what */
#define CUDA_TRY_AS(call, lib, what)                                                                            \
    do {                                                                                                        \
        cudaError_t e_ = (call);                                                                                \
        if (e_ != cudaSuccess) return cuda_fail(lib, what, cudaGetErrorString(e_), __FILE__, __LINE__);         \
    } while (0)
#define CUDA_TRY(call) CUDA_TRY_AS(call, "CUDA", #call)
#define CUDNN_TRY(call)                                                                                         \
    do {                                                                                                        \
        cudnnStatus_t e_ = (call);                                                                              \
        if (e_ != CUDNN_STATUS_SUCCESS) return cuda_fail("cuDNN", #call, cudnnGetErrorString(e_), __FILE__, __LINE__); \
    } while (0)
#define CUBLAS_TRY(call)                                                                                        \
    do {                                                                                                        \
        cublasStatus_t e_ = (call);                                                                             \
        if (e_ != CUBLAS_STATUS_SUCCESS) return cuda_fail("cuBLAS", #call, cuda_of(be)->cb->status_string(e_), __FILE__, __LINE__); \
    } while (0)
/* after every kernel launch, naming it: a bad configuration shows here, a fault at the next sync */
#define LAUNCH_TRY(name) CUDA_TRY_AS(cudaGetLastError(), "CUDA launch of", (name))

/* The stream and cuBLAS handle of the Gram sums: the side's between side(1) and side(0) */
static inline cudaStream_t cuda_gram_stream(const cuda_impl *im) { return im->on_side ? im->side : im->stream; }
static inline cublasHandle_t cuda_gram_blas(const cuda_impl *im) { return im->on_side ? im->blas_side : im->blas; }
/* The main stream's next work ordered after all the side's so far (nothing where none is pending) */
nst_status cuda_join(nst_backend *be);

/* arena-backed scratch that only grows; s2 (the Gram sums' scratch) taken on the main stream, or
 * any scratch grown, joins the side first */
nst_status cuda_scratch(nst_backend *be, void **buf, size_t *cap, size_t bytes);
/* NST_OK, or, while an iteration is recorded as a CUDA graph, a failed recording (what: why, for
 * the note): for work a replay must not repeat or cannot reproduce */
nst_status cuda_not_recorded(const char *what);

#include "grid_stride.cuh" /* GRID_STRIDE, GRID_STRIDE_I */

/* the feature scale a buffer of dtype dt carries (16-bit types are activations) */
static inline float cuda_act_scale(const cuda_impl *im, nst_dtype dt) { return dt == NST_F32 ? 1.f : im->fscale; }

/* grid for n elements, at most 65535 * 16 blocks (the kernels stride) */
static inline unsigned cuda_blocks(size_t n, unsigned threads)
{
    size_t b = (n + threads - 1) / threads;
    if (b > 1048576) b = 1048576;
    return b ? (unsigned)b : 1u;
}

/* Whether 8-channel kernels (vec8.cuh) may run: a multiple of 8 channels (or elements in all, for
 * an element pass: c = n) and every tensor at a 16-byte boundary (the arena's are; a view into one
 * may not be), unless NSTBATCH_CUDA_VEC8=0 (the benchmark's comparison). NULL for a tensor not used. */
static inline int cuda_eight_wide(const cuda_impl *im, size_t c, const void *a, const void *b, const void *d, const void *e)
{
    const uintptr_t any = (uintptr_t)a | (uintptr_t)b | (uintptr_t)d | (uintptr_t)e;
    return im->vec8 && c % 8 == 0 && any % 16 == 0;
}
/* 32-bit indices where every index a kernel forms over n elements stays below 2^31 (GRID_STRIDE_I) */
static inline int cuda_narrow(size_t n) { return n < ((size_t)1 << 31); }
/* Kernel K<T, I> over n work items on stream s, 256 threads a block: I = unsigned where narrow
 * (cuda_narrow of every index it forms), size_t otherwise; the arguments convert to its I parameters */
#define CUDA_LAUNCH_I(narrow, K, T, n, s, ...)                                                           \
    ((narrow) ? K<T, unsigned><<<cuda_blocks(n, 256), 256, 0, s>>>(__VA_ARGS__)                        \
              : K<T, size_t><<<cuda_blocks(n, 256), 256, 0, s>>>(__VA_ARGS__))

/* ---- element types ------------------------------------------------------------------------ */
template <typename T> __device__ __forceinline__ float ld(const T *p, size_t i);
template <> __device__ __forceinline__ float ld<float>(const float *p, size_t i) { return p[i]; }
template <> __device__ __forceinline__ float ld<__half>(const __half *p, size_t i) { return __half2float(p[i]); }
template <> __device__ __forceinline__ float ld<__nv_bfloat16>(const __nv_bfloat16 *p, size_t i) { return __bfloat162float(p[i]); }
template <typename T> __device__ __forceinline__ void st(T *p, size_t i, float v);
template <> __device__ __forceinline__ void st<float>(float *p, size_t i, float v) { p[i] = v; }
template <> __device__ __forceinline__ void st<__half>(__half *p, size_t i, float v) { p[i] = __float2half_rn(v); }
template <> __device__ __forceinline__ void st<__nv_bfloat16>(__nv_bfloat16 *p, size_t i, float v) { p[i] = __float2bfloat16_rn(v); }

/* Call f.template run<T>() with T the storage type of dt. */
#define CUDA_DISPATCH(dt, CALL)                                                                   \
    ((dt) == NST_F32 ? CALL(float) : (dt) == NST_BF16 ? CALL(__nv_bfloat16) : CALL(__half))

#include "block_sum.cuh" /* RED_THREADS, RED_BLOCKS, block_tree_sum */
#include "vec8.cuh"      /* load8, store8 */
#include "preproc.cuh"   /* affine3, pre_value, pre_grad */

/* the preprocessing's affine map (kernels/backend.h: nst_preproc) as the kernels take it */
affine3 cuda_affine(const nst_preproc *p);

/* ---- shared ops of several files ----------------------------------------------------------- */
/* Copy r (all c channels) of src (sw wide) to dst (dw wide) at (dx, dy); element size es. */
nst_status cuda_copy_rect_raw(nst_backend *be, const void *src, int sw, nst_rect r, void *dst, int dw, int dx, int dy, int c,
                              size_t es);
/* The host waits for the stream: every wait goes through here, counted (kernels/backend.h);
 * read: a result comes to the host. */
nst_status cuda_wait(nst_backend *be, int read);
/* Finish a reduction whose kernel, launched by the caller, left `blocks` partials in impl->red:
 * to the host (waits: L-BFGS's dots), or on the device with no wait: *out = the sum (out may be
 * NULL), and the sum / div added into the exact accumulator acc (NULL: none), both in device
 * memory (the loss sums, kernels/backend.h). */
nst_status cuda_reduce_to_host(nst_backend *be, unsigned blocks, double *out);
nst_status cuda_reduce_on_device(nst_backend *be, unsigned blocks, double *out, nst_xsum *acc, double div);
/* checks of the interface's contracts */
#define cuda_check nst_tensor_check
#define cuda_check_region nst_tensor_check_region

/* Diagnostics (report_cuda.cu): a line of the choices made (cuDNN's algorithms per shape), and
 * be->report / be->device_free installed. */
void cuda_note(cuda_impl *im, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cuda_report_install(nst_backend *be);

/* the op entry points (one file each concern) */
nst_status cuda_copy_rect(nst_backend *, const nst_tensor *src, nst_rect r, nst_tensor *dst, int dx, int dy);
nst_status cuda_download_rect(nst_backend *, const nst_tensor *src, nst_rect r, float *host);
nst_status cuda_upload_rect(nst_backend *, const float *host, nst_tensor *dst, nst_rect r);
nst_status cuda_download_rect_queued(nst_backend *, const nst_tensor *src, nst_rect r, float *host);
nst_status cuda_upload_rect_queued(nst_backend *, const float *host, nst_tensor *dst, nst_rect r);
nst_status cuda_convert_to(nst_backend *, void *dst, nst_dtype dt, const float *src, size_t n, float scale);
nst_status cuda_convert_from(nst_backend *, float *dst, const void *src, nst_dtype dt, size_t n, float scale);
/* n fp32 values of the host to dst of dtype dt times scale, and back (dst = src times scale), in
 * pieces of CUDA_CHUNK_ELEMS through s1 (fp32 at scale 1: straight); they return with the stream
 * synchronised, so host buffers may be pageable and reused at once */
nst_status cuda_upload_convert(nst_backend *, void *dst, nst_dtype dt, const float *host, size_t n, float scale);
nst_status cuda_download_convert(nst_backend *, float *host, const void *src, nst_dtype dt, size_t n, float scale);

nst_status cuda_conv_create(nst_backend *, int cin, int cout, const float *w, const float *b, nst_conv **out);
void cuda_conv_destroy(nst_backend *, nst_conv *);
nst_status cuda_conv_forward(nst_backend *, nst_conv *, const nst_tensor *x, nst_tensor *y, int relu);
nst_status cuda_conv_backward_data(nst_backend *, nst_conv *, const nst_tensor *dy, nst_tensor *dx);

/* conv1_1 on our own kernels (conv_first_cuda.cu): whether a layer fits them, and its two directions
 * on raw buffers (w: the layer's KRSC weights, cin_p channels a tap; bias as cuDNN's call takes it).
 * pre NULL: x is the network input and dx its gradient; else x is the fp32 image and dx its fp32
 * gradient, the preprocessing pre applied on the way (conv_forward_image, conv_backward_image). */
int cuda_conv_first_fits(int cin, int cout);
nst_status cuda_conv_first_forward(nst_backend *, const void *x, const nst_preproc *pre, const void *w, const void *bias, void *y, int h,
                                   int w_px, int cout, int cin_p, int relu);
nst_status cuda_conv_first_backward(nst_backend *, const void *dy, const nst_preproc *pre, const void *w, void *dx, int h, int w_px,
                                    int cout, int cin_p);
int cuda_conv_reads_image(nst_backend *, const nst_conv *);
nst_status cuda_conv_forward_image(nst_backend *, nst_conv *, const nst_preproc *, const nst_tensor *img, nst_tensor *y, int relu);
nst_status cuda_conv_backward_image(nst_backend *, nst_conv *, const nst_preproc *, const nst_tensor *dy, nst_tensor *dimg);

nst_status cuda_relu_backward(nst_backend *, const nst_tensor *y, nst_tensor *dy);
nst_status cuda_preprocess(nst_backend *, const nst_preproc *, const nst_tensor *img, nst_tensor *x);
nst_status cuda_preprocess_backward(nst_backend *, const nst_preproc *, const nst_tensor *dx, nst_tensor *dimg);
nst_status cuda_pool_forward(nst_backend *, nst_pool_kind, const nst_tensor *x, nst_tensor *y);
nst_status cuda_pool_backward(nst_backend *, nst_pool_kind, const nst_tensor *x, const nst_tensor *y, const nst_tensor *dy,
                              nst_tensor *dx, int relu);

nst_status cuda_gram_accumulate(nst_backend *, const nst_tensor *f, nst_rect own, const nst_tensor *m, double *g);
/* the Gram sums on our own kernel (gram_sums_cuda.cu): whether a region of np positions of c
 * channels fits it, and gram_accumulate's work there (the arguments checked by the caller) */
int cuda_gram_sums_fit(int c, size_t np);
nst_status cuda_gram_sums_own(nst_backend *, const nst_tensor *f, nst_rect own, const nst_tensor *m, double *g);
nst_status cuda_gram_diff(nst_backend *, const double *g, const double *g_prev, double g_scale, const float *a, int c, float *d,
                          double *sumsq);
nst_status cuda_gram_backward(nst_backend *, const nst_tensor *f, nst_rect seed, const nst_tensor *m, const float *d, float scale,
                              nst_tensor *df);

nst_status cuda_mse(nst_backend *, const nst_tensor *f, const nst_tensor *p, nst_rect own, nst_rect seed, const nst_tensor *m,
                    float scale, nst_xsum *sumsq, nst_tensor *df);
nst_status cuda_tv(nst_backend *, const nst_tensor *img, nst_rect own, nst_rect seed, float scale, nst_xsum *sum, nst_tensor *dimg);
nst_status cuda_sumsq(nst_backend *, const nst_tensor *t, nst_rect own, nst_xsum *out);
nst_status cuda_dot(nst_backend *, const float *a, const float *b, size_t n, double *out);
nst_status cuda_axpby(nst_backend *, float *y, const float *x, size_t n, float a, float b);
nst_status cuda_box_hold(nst_backend *, float *v, const float *x, const float *g, size_t n);
nst_status cuda_box_step(nst_backend *, float *x, float *d, size_t n, float t);
nst_status cuda_adam(nst_backend *, float *x, const float *g, float *m, float *v, size_t n, const nst_adam_params *,
                     const nst_adam_step *);
nst_status cuda_adam_tick(nst_backend *, const nst_adam_params *, nst_adam_step *);
nst_status cuda_stamp(nst_backend *, int i);
nst_status cuda_clocks_read(nst_backend *, int n, double *sec);

#endif

/* kernels/cpu/cpu.h: internals shared by the CPU backend's files. The CPU backend is the
 * reference every other backend is compared with: oneDNN's direct convolutions for the
 * convolutions, forward and backward-data (chosen by measurement over im2col + OpenBLAS, see
 * bench/results/cpu_conv_choice.md; the implementation by name, conv_pick_cpu.c), its own kernels
 * for the Gram sums (in fixed point, gram_fixed_cpu.c, and in double) and the Gram backward (AVX-512, AVX2 and portable paths with the
 * same bits, isa_cpu.c), plain C with OpenMP for everything else. No result depends on the size of
 * the call that computes it, so a window gives the whole image's bits (the tiling's exactness).
 *
 * Activations and their gradients are stored in fp32 (the reference) or bf16 (run.precision =
 * bf16: oneDNN's bf16 convolutions, fp32 accumulation); every element op reads them
 * into fp32, computes in fp32 and rounds once when it stores. Images, Gram matrices, targets and
 * optimiser state are fp32 in both. Reductions are summed per row into doubles and the rows added
 * in order, so results do not depend on the thread count. */
#ifndef NST_KERNELS_CPU_H
#define NST_KERNELS_CPU_H

#include <oneapi/dnnl/dnnl.h>

#include "../backend.h"
#include "../bf16.h"

typedef struct {
    dnnl_engine_t eng;
    dnnl_stream_t stream;
    int threads;
    float *scratch;    /* the Gram backward's packed D and rows */
    size_t scratch_cap;
    double *dscratch;  /* rows converted to double for the Gram sums */
    size_t dscratch_cap;
    float *cscratch;   /* a band of the first conv's fp32 output */
    size_t cscratch_cap;
    double clock[NST_CLOCKS], last_stamp; /* the phase clocks (the ops are done when they return) */
} cpu_impl;

static inline cpu_impl *cpu_of(nst_backend *be) { return (cpu_impl *)be->impl; }

/* The instruction set the backend's own kernels use (isa_cpu.c): at most what oneDNN may use
 * (ONEDNN_MAX_CPU_ISA), lowered further by the test hook NSTBATCH_CPU_KERNELS. Every level gives
 * the same bits, but for the bf16 Gram backward at AVX512_BF16, which flushes subnormal partial
 * sums as VDPBF16PS does (gram_backward_cpu.c). */
typedef enum { CPU_ISA_PORTABLE, CPU_ISA_AVX2, CPU_ISA_AVX512, CPU_ISA_AVX512_BF16 } cpu_isa_level;
cpu_isa_level cpu_kernels_isa(void);
/* the level as it computes data of dtype dt: AVX512_BF16 is AVX512 for fp32 data (the same bits) */
cpu_isa_level cpu_kernels_isa_for(nst_dtype dt);
const char *cpu_isa_level_name(cpu_isa_level l);

/* oneDNN call check: records "oneDNN <call>: <status> (file:line)". */
nst_status cpu_dnnl_fail(dnnl_status_t st, const char *call, const char *file, int line);
#define DNNL_TRY(call)                                                                            \
    do {                                                                                          \
        dnnl_status_t dnnl_st_ = (call);                                                          \
        if (dnnl_st_ != dnnl_success) return cpu_dnnl_fail(dnnl_st_, #call, __FILE__, __LINE__);  \
    } while (0)

nst_status cpu_copy_rect(nst_backend *, const nst_tensor *src, nst_rect r, nst_tensor *dst, int dx, int dy);
nst_status cpu_download_rect(nst_backend *, const nst_tensor *src, nst_rect r, float *host);
nst_status cpu_upload_rect(nst_backend *, const float *host, nst_tensor *dst, nst_rect r);

nst_status cpu_conv_create(nst_backend *, int cin, int cout, const float *w, const float *b, nst_conv **out);
void cpu_conv_destroy(nst_backend *, nst_conv *);
/* fails (with oneDNN's status) where this CPU has no convolution in the backend's dtype */
nst_status cpu_conv_probe(nst_backend *);
/* out: the oneDNN implementations the convolutions are pinned to (conv_pick_cpu.c), by a first
 * layer's and a 64-channel layer's ops on a small image */
nst_status cpu_conv_survey(nst_backend *, char *out, size_t cap);
nst_status cpu_conv_forward(nst_backend *, nst_conv *, const nst_tensor *x, nst_tensor *y, int relu);
nst_status cpu_conv_backward_data(nst_backend *, nst_conv *, const nst_tensor *dy, nst_tensor *dx);

nst_status cpu_gram_accumulate(nst_backend *, const nst_tensor *f, nst_rect own, const nst_tensor *m, double *g);
nst_status cpu_gram_fixed(nst_backend *, const nst_tensor *f, nst_rect own, const nst_tensor *m, int e, int64_t *acc, int *emax);
nst_status cpu_gram_diff(nst_backend *, const double *g, const double *g_prev, double g_scale, const float *a, int c,
                         float *d, double *sumsq);
nst_status cpu_gram_backward(nst_backend *, const nst_tensor *f, nst_rect seed, const nst_tensor *m, const float *d, float scale,
                             nst_tensor *df);

nst_status cpu_relu_backward(nst_backend *, const nst_tensor *y, nst_tensor *dy);
nst_status cpu_preprocess(nst_backend *, const nst_preproc *, const nst_tensor *img, nst_tensor *x);
nst_status cpu_preprocess_backward(nst_backend *, const nst_preproc *, const nst_tensor *dx, nst_tensor *dimg);

nst_status cpu_pool_forward(nst_backend *, nst_pool_kind, const nst_tensor *x, nst_tensor *y);
nst_status cpu_pool_backward(nst_backend *, nst_pool_kind, const nst_tensor *x, const nst_tensor *y,
                             const nst_tensor *dy, nst_tensor *dx, int relu);

nst_status cpu_mse(nst_backend *, const nst_tensor *f, const nst_tensor *p, nst_rect own, nst_rect seed, const nst_tensor *m,
                   float scale, nst_xsum *sumsq, nst_tensor *df);
nst_status cpu_tv(nst_backend *, const nst_tensor *img, nst_rect own, nst_rect seed, float scale, nst_xsum *sum,
                  nst_tensor *dimg);
nst_status cpu_sumsq(nst_backend *, const nst_tensor *t, nst_rect own, nst_xsum *out);
nst_status cpu_dot(nst_backend *, const float *a, const float *b, size_t n, double *out);
nst_status cpu_axpby(nst_backend *, float *y, const float *x, size_t n, float a, float b);
nst_status cpu_box_hold(nst_backend *, float *v, const float *x, const float *g, size_t n);
nst_status cpu_dot_exact(nst_backend *, const float *a, const float *b, int w, int h, int seg, nst_xsum *acc);
nst_status cpu_box_step(nst_backend *, float *x, float *d, size_t n, float t);
nst_status cpu_adam(nst_backend *, float *x, const float *g, float *m, float *v, size_t n, const nst_adam_params *,
                    const nst_adam_step *);
nst_status cpu_adam_tick(nst_backend *, const nst_adam_params *, nst_adam_step *);

/* Checks shared by the ops: fp32 tensors (images); activation tensors (fp32 or bf16); two
 * tensors of one op in one dtype; a region inside the tensor. */
nst_status cpu_check_f32(const nst_tensor *t, const char *op);
nst_status cpu_check_act(const nst_tensor *t, const char *op);
nst_status cpu_check_same_dt(const nst_tensor *a, const nst_tensor *b, const char *op);
#define cpu_check_region nst_tensor_check_region

/* Element i of an fp32 (bf = 0) or bf16 (bf = 1) buffer, as fp32, and a store that rounds. The
 * ops call these with bf a constant, inside functions the compiler inlines and specialises, so
 * each loop is compiled once per dtype without a branch per element. */
static inline __attribute__((always_inline)) float cpu_ld(const void *p, size_t i, int bf)
{
    return bf ? nst_bf16_to_f32(((const nst_bf16 *)p)[i]) : ((const float *)p)[i];
}
static inline __attribute__((always_inline)) void cpu_st(void *p, size_t i, float v, int bf)
{
    if (bf)
        ((nst_bf16 *)p)[i] = nst_f32_to_bf16(v);
    else
        ((float *)p)[i] = v;
}
/* the raw bits of element i (exact moves), and their store */
static inline __attribute__((always_inline)) uint32_t cpu_bits(const void *p, size_t i, int bf)
{
    return bf ? ((const nst_bf16 *)p)[i] : ((const uint32_t *)p)[i];
}
static inline __attribute__((always_inline)) void cpu_st_bits(void *p, size_t i, uint32_t v, int bf)
{
    if (bf)
        ((nst_bf16 *)p)[i] = (nst_bf16)v;
    else
        ((uint32_t *)p)[i] = v;
}
/* the byte address of element i */
static inline void *cpu_at(const void *p, size_t i, int bf) { return (char *)p + i * (bf ? 2 : 4); }
/* Convert n values between fp32 and a buffer of dtype dt (a copy for fp32). */
void cpu_to_f32(float *dst, const void *src, size_t n, nst_dtype dt);
void cpu_from_f32(void *dst, const float *src, size_t n, nst_dtype dt);

#endif

/* kernels/cuda/conv_cuda.cu: 3x3 'same' convolutions with cuDNN, NHWC, the activation dtype for
 * data and filters and fp32 accumulation (CUDNN_DATA_FLOAT compute; tensor-op math except in
 * fp32). conv1_1's 3 input channels are zero-padded to 8 (4 in fp32) so tensor-core kernels
 * apply; its input and input gradient pass through padded scratch. Algorithms come from cuDNN's
 * heuristics: the first deterministic one (bit-for-bit reruns and tile invariance rule out
 * atomics-based backward algorithms) whose math type is allowed and whose workspace, asked of cuDNN
 * for that algorithm and math type, fits the limit; or, with gpu.conv_algorithms = timed, the
 * fastest such one as cuDNN's Find times them on the layer's buffers, kept by the caller
 * (nst_conv_memory: gpu.conv_choices' file) so that a rerun takes the same without timing. Once per layer, direction and
 * input size, cached with the shape's descriptors; each call sets the descriptor's math type to its
 * algorithm's. Bias and ReLU run inside cuDNN's call
 * (cudnnConvolutionBiasActivationForward: one pass over the output instead of two, which counts on
 * the memory-bound full-resolution layers); a layer whose configuration cuDNN does not support
 * there, or NSTBATCH_CUDA_FUSE=0, adds them with one kernel after the convolution. Both add the
 * same bias, stored in the activation dtype: cuDNN's supported configurations of the fused call
 * give the bias y's data type (FLOAT only with int8 data), so bf16 and fp16 layers take it rounded
 * to 16 bits, and the separate kernel reads those values too: an fp32 bias there made the fused
 * and unfused renders differ by up to 2^-8 |b|. (The CPU adds the fp32 bias: that 2^-8 |b| is
 * within the conv tolerance of kernels/check/tolerance.c.) */
#include <stdio.h>

#include "cuda_impl.h"

extern "C" {
#include "../../util/mem.h"
}

#define MAX_SHAPES 16

typedef struct {
    int h, w;
    cudnnTensorDescriptor_t x, y;
    cudnnConvolutionFwdAlgo_t fwd;
    cudnnConvolutionBwdDataAlgo_t bwd;
    cudnnMathType_t fwd_math, bwd_math; /* the math type each algorithm was chosen with */
    size_t fwd_ws, bwd_ws;
    int have_fwd, have_bwd; /* each direction's algorithm is picked on its first call */
    int fused;            /* bias+ReLU in cuDNN's call: -1 untried, 1 works, 0 not supported for this shape */
} conv_shape;

struct nst_conv {
    int cin, cout, cin_p; /* cin_p: cin padded for tensor cores */
    int own;              /* on our own kernels (conv_first_cuda.cu: NSTBATCH_CUDA_CONV1=own, 3 input channels) */
    void *w;              /* KRSC (cout, 3, 3, cin_p), activation dtype */
    void *bias;           /* times fscale, activation dtype (see the file comment) */
    cudnnFilterDescriptor_t wd;
    cudnnConvolutionDescriptor_t cd;
    cudnnTensorDescriptor_t bd;    /* 1 x cout x 1 x 1 */
    cudnnActivationDescriptor_t relu;
    conv_shape shape[MAX_SHAPES];
    int nshape, next;
};

static void shape_free(conv_shape *s)
{
    if (s->x) cudnnDestroyTensorDescriptor(s->x);
    if (s->y) cudnnDestroyTensorDescriptor(s->y);
    s->x = s->y = NULL;
}

void cuda_conv_destroy(nst_backend *be, nst_conv *cv)
{
    if (!cv) return;
    for (int i = 0; i < cv->nshape; i++) shape_free(&cv->shape[i]);
    if (cv->wd) cudnnDestroyFilterDescriptor(cv->wd);
    if (cv->cd) cudnnDestroyConvolutionDescriptor(cv->cd);
    if (cv->bd) cudnnDestroyTensorDescriptor(cv->bd);
    if (cv->relu) cudnnDestroyActivationDescriptor(cv->relu);
    if (cv->w) be->ops->free(be, cv->w);
    if (cv->bias) be->ops->free(be, cv->bias);
    nst_free(cv);
}

static nst_status conv_create(nst_backend *be, nst_conv *cv, const float *w_oihw, const float *bias)
{
    cuda_impl *im = cuda_of(be);
    const int cin = cv->cin, cout = cv->cout, cp = cv->cin_p;
    /* OIHW fp32 -> KRSC padded, on the host, then to the device in the activation dtype */
    size_t n = (size_t)cout * 9 * cp;
    float *h = (float *)nst_calloc(n * sizeof(float), "conv weights");
    if (!h) return NST_ENOMEM;
    for (int o = 0; o < cout; o++)
        for (int i = 0; i < cin; i++)
            for (int k = 0; k < 9; k++) h[((size_t)o * 9 + k) * cp + i] = w_oihw[((size_t)o * cin + i) * 9 + k];
    const size_t es = nst_dtype_size(be->act_dtype);
    nst_status s = be->ops->alloc(be, n * es, &cv->w);
    if (s == NST_OK) s = be->ops->alloc(be, (size_t)cout * es, &cv->bias);
    /* weights are not activations: no feature scale on them (upload would apply it) */
    if (s == NST_OK) s = cuda_upload_convert(be, cv->w, be->act_dtype, h, n, 1.f);
    if (s == NST_OK) { /* the bias is added to activations: it carries fscale (applied here) */
        for (int o = 0; o < cout; o++) h[o] = bias[o] * im->fscale;
        s = cuda_upload_convert(be, cv->bias, be->act_dtype, h, (size_t)cout, 1.f);
    }
    nst_free(h);
    NST_TRY(s);
    CUDNN_TRY(cudnnCreateTensorDescriptor(&cv->bd));
    CUDNN_TRY(cudnnSetTensor4dDescriptor(cv->bd, CUDNN_TENSOR_NHWC, im->dnn_type, 1, cout, 1, 1));
    CUDNN_TRY(cudnnCreateActivationDescriptor(&cv->relu));
    CUDNN_TRY(cudnnSetActivationDescriptor(cv->relu, CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN, 0.0));
    CUDNN_TRY(cudnnCreateFilterDescriptor(&cv->wd));
    CUDNN_TRY(cudnnSetFilter4dDescriptor(cv->wd, im->dnn_type, CUDNN_TENSOR_NHWC, cout, cp, 3, 3));
    CUDNN_TRY(cudnnCreateConvolutionDescriptor(&cv->cd));
    CUDNN_TRY(cudnnSetConvolution2dDescriptor(cv->cd, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    CUDNN_TRY(cudnnSetConvolutionMathType(cv->cd, im->math));
    return NST_OK;
}

nst_status cuda_conv_create(nst_backend *be, int cin, int cout, const float *w, const float *b, nst_conv **out)
{
    NST_TRY(cuda_join(be)); /* it uploads the weights: after the side's work, as every transfer (backend_cuda.cu) */
    nst_conv *cv = (nst_conv *)nst_calloc(sizeof *cv, "a conv layer");
    if (!cv) return NST_ENOMEM;
    int pad = be->act_dtype == NST_F32 ? 4 : 8;
    cv->cin = cin, cv->cout = cout;
    cv->cin_p = cin % pad ? (cin + pad - 1) / pad * pad : cin;
    cv->own = cuda_of(be)->conv1_own && cuda_conv_first_fits(cin, cout);
    if (cv->own) cuda_note(cuda_of(be), "  %d->%d: our own kernels, forward and backward-data (NSTBATCH_CUDA_CONV1=own)", cin, cout);
    nst_status s = conv_create(be, cv, w, b);
    if (s != NST_OK) {
        cuda_conv_destroy(be, cv);
        return s;
    }
    *out = cv;
    return NST_OK;
}

static const char *math_name(cudnnMathType_t m)
{
    return m == CUDNN_FMA_MATH ? "FMA" : m == CUDNN_TENSOR_OP_MATH ? "tensor-op" : m == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION ? "tensor-op+conversion"
                                                                                                                            : "default";
}
static const char *fwd_name(int a)
{
    static const char *const n[] = {"IMPLICIT_GEMM", "IMPLICIT_PRECOMP_GEMM", "GEMM", "DIRECT", "FFT", "FFT_TILING", "WINOGRAD", "WINOGRAD_NONFUSED"};
    return a >= 0 && a < 8 ? n[a] : "?";
}
static const char *bwd_name(int a)
{
    static const char *const n[] = {"ALGO_0", "ALGO_1", "FFT", "FFT_TILING", "WINOGRAD", "WINOGRAD_NONFUSED"};
    return a >= 0 && a < 6 ? n[a] : "?";
}

/* FFT and Winograd algorithms transform the inputs and round the transforms, an error the
 * tolerance table (kernels/check/tolerance.c) does not bound: every output there is a sum of
 * exact products of the stored inputs and weights, accumulated in fp32. So direct and GEMM-based
 * algorithms only. */
static int transforms(cudnnConvolutionFwdAlgo_t a)
{
    return a == CUDNN_CONVOLUTION_FWD_ALGO_FFT || a == CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING || a == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD ||
           a == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED;
}
static int transforms(cudnnConvolutionBwdDataAlgo_t a)
{
    return a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT || a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING ||
           a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD || a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED;
}

/* Whether an algorithm cuDNN proposes may be used: it ran its checks, is deterministic, and does not
 * convert fp32 data to fp16 where the precision did not ask for it. */
static int usable(cudnnStatus_t status, cudnnDeterminism_t det, cudnnMathType_t math, cudnnMathType_t allowed)
{
    return status == CUDNN_STATUS_SUCCESS && det == CUDNN_DETERMINISTIC &&
           (math != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION || allowed == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION) &&
           (allowed != CUDNN_FMA_MATH || math == CUDNN_FMA_MATH); /* strict fp32: DEFAULT may mean TF32 on sm_80+ */
}

/* Whether perf's algorithm may run here: usable, no transform, and its workspace, asked of cuDNN
 * with the descriptor set to its math type (ws(algo, &bytes)), within the limit. */
template <typename Perf, typename Ws> static int fits(cuda_impl *im, nst_conv *cv, const Perf &perf, Ws ws, size_t *bytes)
{
    if (!usable(perf.status, perf.determinism, perf.mathType, im->math) || transforms(perf.algo)) return 0;
    if (cudnnSetConvolutionMathType(cv->cd, perf.mathType) != CUDNN_STATUS_SUCCESS) return 0;
    return ws(perf.algo, bytes) == CUDNN_STATUS_SUCCESS && *bytes <= im->ws_limit;
}

/* The first of perf[0..got) that fits; -1 if none. */
template <typename Perf, typename Ws> static int first_fit(cuda_impl *im, nst_conv *cv, const Perf *perf, int got, Ws ws, size_t *bytes)
{
    for (int i = 0; i < got; i++)
        if (fits(im, cv, perf[i], ws, bytes)) return i;
    return -1;
}

/* The fastest of Find's timings that fits; -1 if none (*n: how many fit). */
template <typename Perf, typename Ws>
static int fastest_fit(cuda_impl *im, nst_conv *cv, const Perf *perf, int got, Ws ws, size_t *bytes, int *n)
{
    int best = -1;
    size_t b = 0;
    *n = 0;
    for (int i = 0; i < got; i++)
        if (fits(im, cv, perf[i], ws, &b) && ++*n && (best < 0 || perf[i].time < perf[best].time)) best = i, *bytes = b;
    return best;
}

/* Whether a kept choice (algo, math) may run: the heuristics list algo for this shape as they
 * list the ones they take (deterministic, supported), and math is allowed and its workspace within
 * the limit, whatever the file says. The algorithm is matched alone: Find may time one with another
 * math type than the heuristics list it with. */
template <typename Perf, typename Ws>
static int kept_fits(cuda_impl *im, nst_conv *cv, const Perf *perf, int got, Ws ws, int algo, int math, size_t *bytes)
{
    for (int i = 0; i < got; i++)
        if ((int)perf[i].algo == algo) {
            Perf p = perf[i];
            p.mathType = (cudnnMathType_t)math;
            return fits(im, cv, p, ws, bytes);
        }
    return 0;
}

/* The most workspace a usable algorithm of the heuristics' list asks for, within the limit: Find
 * times the algorithms in that much (one that needs more reports an allocation failure and is
 * not taken), so the search holds no more than the heuristic path could. */
template <typename Perf, typename Ws> static size_t most_ws(cuda_impl *im, nst_conv *cv, const Perf *perf, int got, Ws ws)
{
    size_t most = 0, b = 0;
    for (int i = 0; i < got; i++)
        if (fits(im, cv, perf[i], ws, &b) && b > most) most = b;
    return most;
}

/* The choice kept for this layer, direction and input size (gpu.conv_choices), in *t; 0 if none. */
static int recall(cuda_impl *im, const nst_conv *cv, int dir, int h, int w, nst_conv_timing *t)
{
    *t = nst_conv_timing{im->conv_device, dir, cv->cin, cv->cout, h, w, -1, -1, 0};
    return im->conv_memory.find && im->conv_memory.find(im->conv_memory.user, t);
}

/* What a pick settles: the algorithm, its math type and workspace, and how it was chosen. */
typedef struct {
    int algo;
    cudnnMathType_t math;
    size_t ws;
    char how[96];
} conv_pick;

/* One direction's algorithm for an h x w input. The heuristics' first that fits (the default),
 * or with gpu.conv_algorithms = timed: a choice kept from an earlier timing (the caller's memory:
 * this run's, gpu.conv_choices' file) where it fits, else the fastest that fits of cuDNN's Find,
 * which runs every algorithm once on the layer's own buffers (x: read, y: overwritten, as the call
 * that follows overwrites it), on an idle stream; handed to the caller's memory. list(n, &got,
 * perf) and find(n, &got, perf, ws, bytes) are cuDNN's calls for the direction, ws(algo, &bytes)
 * its workspace size. */
template <typename Perf, typename List, typename Ws, typename Find>
static nst_status choose(nst_backend *be, nst_conv *cv, int dir, int h, int w, List list, Ws ws, Find find, conv_pick *out)
{
    cuda_impl *im = cuda_of(be);
    enum { N = 16 }; /* above both directions' algorithm counts, twice for the math types Find may time apart */
    Perf perf[N], timed[N];
    int got = 0, ntimed = 0, nfit = 0;
    size_t bytes = 0;
    CUDNN_TRY(cudnnSetConvolutionMathType(cv->cd, im->math));
    CUDNN_TRY(list(N, &got, perf));
    int i = first_fit(im, cv, perf, got, ws, &bytes);
    if (i < 0)
        return nst_fail(NST_ERUNTIME, "cuDNN: no deterministic %s algorithm for the %dx%dx%d -> %d conv within a %.0f MiB workspace",
                        dir ? "backward-data" : "forward", h, w, cv->cin, cv->cout, (double)im->ws_limit / (1 << 20));
    out->algo = (int)perf[i].algo, out->math = perf[i].mathType, out->ws = bytes, out->how[0] = '\0';
    if (!im->conv_timed) return NST_OK;
    nst_conv_timing kept;
    if (recall(im, cv, dir, h, w, &kept) && kept_fits(im, cv, perf, got, ws, kept.algo, kept.math, &bytes)) {
        out->algo = kept.algo, out->math = (cudnnMathType_t)kept.math, out->ws = bytes;
        snprintf(out->how, sizeof out->how, "; kept from an earlier timing (%.3f ms)", kept.ms);
        return NST_OK;
    }
    size_t need = most_ws(im, cv, perf, got, ws);
    NST_TRY(cuda_scratch(be, &im->ws, &im->ws_cap, need ? need : 256));
    NST_TRY(cuda_wait(be, 0)); /* Find times each algorithm alone */
    CUDNN_TRY(cudnnSetConvolutionMathType(cv->cd, im->math));
    cudnnStatus_t fs = find(N, &ntimed, timed, im->ws, im->ws_cap);
    if (fs != CUDNN_STATUS_SUCCESS) { /* the heuristics' choice stands (a lost device fails the next call anyway) */
        snprintf(out->how, sizeof out->how, "; heuristics' (cuDNN's Find: %.48s)", cudnnGetErrorString(fs));
        return NST_OK;
    }
    int k = fastest_fit(im, cv, timed, ntimed, ws, &bytes, &nfit);
    if (k < 0) {
        snprintf(out->how, sizeof out->how, "; heuristics' (none of the %d timed fits)", ntimed);
        return NST_OK;
    }
    out->algo = (int)timed[k].algo, out->math = timed[k].mathType, out->ws = bytes;
    snprintf(out->how, sizeof out->how, "; timed %.3f ms, the fastest of %d that fit", (double)timed[k].time, nfit);
    kept.algo = out->algo, kept.math = (int)out->math, kept.ms = timed[k].time;
    if (im->conv_memory.add) im->conv_memory.add(im->conv_memory.user, &kept);
    return NST_OK;
}

/* choose(), then its line in the notes (name: the direction's algorithm names) */
template <typename Perf, typename List, typename Ws, typename Find>
static nst_status pick(nst_backend *be, nst_conv *cv, int dir, int h, int w, List list, Ws ws, Find find, const char *(*name)(int),
                       conv_pick *out)
{
    NST_TRY(choose<Perf>(be, cv, dir, h, w, list, ws, find, out));
    cuda_note(cuda_of(be), "  %d->%d at %dx%d: %s %s (%s, %.1f MiB%s)", cv->cin, cv->cout, h, w, dir ? "backward-data" : "forward",
              name(out->algo), math_name(out->math), (double)out->ws / (1 << 20), out->how);
    return NST_OK;
}

/* The forward algorithm of shape t (x read, y overwritten by a timed search). */
static nst_status pick_fwd(nst_backend *be, nst_conv *cv, conv_shape *t, const void *x, void *y)
{
    cuda_impl *im = cuda_of(be);
    conv_pick p;
    NST_TRY(pick<cudnnConvolutionFwdAlgoPerf_t>(
        be, cv, 0, t->h, t->w,
        [&](int n, int *got, cudnnConvolutionFwdAlgoPerf_t *perf) {
            return cudnnGetConvolutionForwardAlgorithm_v7(im->dnn, t->x, cv->wd, cv->cd, t->y, n, got, perf);
        },
        [&](cudnnConvolutionFwdAlgo_t a, size_t *b) { return cudnnGetConvolutionForwardWorkspaceSize(im->dnn, t->x, cv->wd, cv->cd, t->y, a, b); },
        [&](int n, int *got, cudnnConvolutionFwdAlgoPerf_t *perf, void *ws, size_t wsb) {
            return cudnnFindConvolutionForwardAlgorithmEx(im->dnn, t->x, x, cv->wd, cv->w, cv->cd, t->y, y, n, got, perf, ws, wsb);
        },
        fwd_name, &p));
    t->fwd = (cudnnConvolutionFwdAlgo_t)p.algo, t->fwd_math = p.math, t->fwd_ws = p.ws, t->have_fwd = 1;
    return NST_OK;
}

/* The backward-data algorithm of shape s (dy read, dx overwritten by a timed search). */
static nst_status pick_bwd(nst_backend *be, nst_conv *cv, conv_shape *s, const void *dy, void *dx)
{
    cuda_impl *im = cuda_of(be);
    conv_pick p;
    NST_TRY(pick<cudnnConvolutionBwdDataAlgoPerf_t>(
        be, cv, 1, s->h, s->w,
        [&](int n, int *got, cudnnConvolutionBwdDataAlgoPerf_t *perf) {
            return cudnnGetConvolutionBackwardDataAlgorithm_v7(im->dnn, cv->wd, s->y, cv->cd, s->x, n, got, perf);
        },
        [&](cudnnConvolutionBwdDataAlgo_t a, size_t *b) {
            return cudnnGetConvolutionBackwardDataWorkspaceSize(im->dnn, cv->wd, s->y, cv->cd, s->x, a, b);
        },
        [&](int n, int *got, cudnnConvolutionBwdDataAlgoPerf_t *perf, void *ws, size_t wsb) {
            return cudnnFindConvolutionBackwardDataAlgorithmEx(im->dnn, cv->wd, cv->w, s->y, dy, cv->cd, s->x, dx, n, got, perf, ws, wsb);
        },
        bwd_name, &p));
    s->bwd = (cudnnConvolutionBwdDataAlgo_t)p.algo, s->bwd_math = p.math, s->bwd_ws = p.ws, s->have_bwd = 1;
    return NST_OK;
}

/* A new shape's descriptors, in t. */
static nst_status shape_make(cuda_impl *im, nst_conv *cv, int h, int w, conv_shape *t)
{
    t->h = h, t->w = w;
    t->fused = im->fuse ? -1 : 0;
    CUDNN_TRY(cudnnCreateTensorDescriptor(&t->x));
    CUDNN_TRY(cudnnCreateTensorDescriptor(&t->y));
    CUDNN_TRY(cudnnSetTensor4dDescriptor(t->x, CUDNN_TENSOR_NHWC, im->dnn_type, 1, cv->cin_p, h, w));
    CUDNN_TRY(cudnnSetTensor4dDescriptor(t->y, CUDNN_TENSOR_NHWC, im->dnn_type, 1, cv->cout, h, w));
    return NST_OK;
}

/* The cached descriptors and algorithms of one input size (created on first use; a shape whose
 * creation failed is not cached, so no later call finds it half-built), with the direction's
 * algorithm picked on its first call: forward (in: x, out: y) or backward-data (in: dy, out: the
 * padded or plain dx), the buffers a timed search runs on. */
static nst_status shape_for(nst_backend *be, nst_conv *cv, int h, int w, int bwd, const void *in, void *out_buf, conv_shape **out)
{
    cuda_impl *im = cuda_of(be);
    conv_shape *s = NULL;
    for (int i = 0; i < cv->nshape; i++)
        if (cv->shape[i].h == h && cv->shape[i].w == w) s = &cv->shape[i];
    if (!s) {
        conv_shape t;
        memset(&t, 0, sizeof t);
        nst_status st = shape_make(im, cv, h, w, &t);
        if (st != NST_OK) {
            shape_free(&t);
            return st;
        }
        if (cv->nshape < MAX_SHAPES) s = &cv->shape[cv->nshape++];
        else { /* a ring: renders use a handful of tile shapes */
            s = &cv->shape[cv->next];
            cv->next = (cv->next + 1) % MAX_SHAPES;
            shape_free(s);
        }
        *s = t;
    }
    if (!bwd && !s->have_fwd) NST_TRY(pick_fwd(be, cv, s, in, out_buf));
    if (bwd && !s->have_bwd) NST_TRY(pick_bwd(be, cv, s, in, out_buf));
    size_t ws = s->fwd_ws > s->bwd_ws ? s->fwd_ws : s->bwd_ws;
    NST_TRY(cuda_scratch(be, &im->ws, &im->ws_cap, ws ? ws : 256));
    *out = s;
    return NST_OK;
}

/* y = relu(y + b) or y + b, per channel (b as the fused call takes it) */
template <typename T> __global__ void k_bias_act(T *y, const T *b, size_t n, int C, int relu)
{
    GRID_STRIDE(i, n)
    {
        float v = ld<T>(y, i) + ld<T>(b, i % C);
        st<T>(y, i, relu && v < 0.f ? 0.f : v);
    }
}

/* pad C channels to Cp with zeros, and back */
template <typename T> __global__ void k_pad(const T *x, T *xp, size_t npx, int C, int Cp)
{
    GRID_STRIDE(i, npx * Cp)
    {
        size_t p = i / Cp;
        int c = (int)(i % Cp);
        xp[i] = c < C ? x[p * C + c] : T(0.f);
    }
}

template <typename T> __global__ void k_unpad(const T *xp, T *x, size_t npx, int C, int Cp)
{
    GRID_STRIDE(i, npx * C)
    {
        size_t p = i / C;
        int c = (int)(i % C);
        x[i] = xp[p * Cp + c];
    }
}

static nst_status check_io(const nst_conv *cv, const nst_tensor *x, const nst_tensor *y, nst_dtype dt, const char *op)
{
    NST_TRY(cuda_check(x, op));
    NST_TRY(cuda_check(y, op));
    if (x->c != cv->cin || y->c != cv->cout || x->h != y->h || x->w != y->w || x->dt != dt || y->dt != dt)
        return nst_fail(NST_ERUNTIME, "%s: %dx%dx%d -> %dx%dx%d does not fit the %d -> %d layer", op, x->h, x->w, x->c, y->h, y->w, y->c,
                        cv->cin, cv->cout);
    return NST_OK;
}

nst_status cuda_conv_forward(nst_backend *be, nst_conv *cv, const nst_tensor *x, nst_tensor *y, int relu)
{
    cuda_impl *im = cuda_of(be);
    NST_TRY(check_io(cv, x, y, be->act_dtype, "conv_forward"));
    if (!x->h || !x->w) return NST_OK;
    if (cv->own) return cuda_conv_first_forward(be, x->data, NULL, cv->w, cv->bias, y->data, x->h, x->w, cv->cout, cv->cin_p, relu);
    conv_shape *s;
    const void *xin = x->data;
    size_t npx = (size_t)x->h * x->w;
    if (cv->cin_p != cv->cin) { /* (before the algorithm is picked: a timed search reads the padded input) */
        NST_TRY(cuda_scratch(be, &im->s0, &im->s0_cap, npx * cv->cin_p * nst_dtype_size(x->dt)));
#define PAD(T) (k_pad<T><<<cuda_blocks(npx * cv->cin_p, 256), 256, 0, im->stream>>>((const T *)x->data, (T *)im->s0, npx, cv->cin, cv->cin_p), 0)
        CUDA_DISPATCH(x->dt, PAD);
#undef PAD
        LAUNCH_TRY("conv pad");
        xin = im->s0;
    }
    NST_TRY(shape_for(be, cv, x->h, x->w, 0, xin, y->data, &s));
    const float one = 1.f, zero = 0.f;
    CUDNN_TRY(cudnnSetConvolutionMathType(cv->cd, s->fwd_math)); /* the descriptor is the layer's: its shapes' algorithms differ */
    if (relu && s->fused != 0) { /* z = y with alpha2 = 0: y = relu(conv(x) + b) */
        cudnnStatus_t st = cudnnConvolutionBiasActivationForward(im->dnn, &one, s->x, xin, cv->wd, cv->w, cv->cd, s->fwd, im->ws, s->fwd_ws,
                                                                 &zero, s->y, y->data, cv->bd, cv->bias, cv->relu, s->y, y->data);
        if (st == CUDNN_STATUS_SUCCESS) {
            if (s->fused < 0) cuda_note(im, "  %d->%d at %dx%d: bias+ReLU fused into cuDNN's call", cv->cin, cv->cout, s->h, s->w);
            s->fused = 1;
            return NST_OK;
        }
        /* cuDNN 9 reports sub-codes (3002 _SHAPE, 3003 _DATA_TYPE, 2002.. of BAD_PARAM): compare categories */
        cudnnStatus_t cat = (cudnnStatus_t)CUDNN_STATUS_CATEGORY(st);
        if (s->fused == 1 || (cat != CUDNN_STATUS_NOT_SUPPORTED && cat != CUDNN_STATUS_BAD_PARAM))
            return cuda_fail("cuDNN", "cudnnConvolutionBiasActivationForward", cudnnGetErrorString(st), __FILE__, __LINE__);
        s->fused = 0; /* not for this layer and shape: the separate kernel from now on */
        cuda_note(im, "  %d->%d at %dx%d: bias+ReLU as a separate kernel (fused call: %s)", cv->cin, cv->cout, s->h, s->w, cudnnGetErrorString(st));
    }
    CUDNN_TRY(cudnnConvolutionForward(im->dnn, &one, s->x, xin, cv->wd, cv->w, cv->cd, s->fwd, im->ws, s->fwd_ws, &zero, s->y, y->data));
    size_t n = npx * cv->cout;
#define BA(T) (k_bias_act<T><<<cuda_blocks(n, 256), 256, 0, im->stream>>>((T *)y->data, (const T *)cv->bias, n, cv->cout, relu), 0)
    CUDA_DISPATCH(y->dt, BA);
#undef BA
    LAUNCH_TRY("conv bias+relu");
    return NST_OK;
}

nst_status cuda_conv_backward_data(nst_backend *be, nst_conv *cv, const nst_tensor *dy, nst_tensor *dx)
{
    cuda_impl *im = cuda_of(be);
    NST_TRY(check_io(cv, dx, dy, be->act_dtype, "conv_backward_data"));
    if (!dx->h || !dx->w) return NST_OK;
    if (cv->own) return cuda_conv_first_backward(be, dy->data, NULL, cv->w, dx->data, dx->h, dx->w, cv->cout, cv->cin_p);
    conv_shape *s;
    size_t npx = (size_t)dx->h * dx->w;
    void *out = dx->data;
    if (cv->cin_p != cv->cin) {
        NST_TRY(cuda_scratch(be, &im->s0, &im->s0_cap, npx * cv->cin_p * nst_dtype_size(dx->dt)));
        out = im->s0;
    }
    NST_TRY(shape_for(be, cv, dx->h, dx->w, 1, dy->data, out, &s));
    const float one = 1.f, zero = 0.f;
    CUDNN_TRY(cudnnSetConvolutionMathType(cv->cd, s->bwd_math));
    CUDNN_TRY(cudnnConvolutionBackwardData(im->dnn, &one, cv->wd, cv->w, s->y, dy->data, cv->cd, s->bwd, im->ws, s->bwd_ws, &zero, s->x, out));
    if (out != dx->data) {
#define UNPAD(T) (k_unpad<T><<<cuda_blocks(npx * cv->cin, 256), 256, 0, im->stream>>>((const T *)im->s0, (T *)dx->data, npx, cv->cin, cv->cin_p), 0)
        CUDA_DISPATCH(dx->dt, UNPAD);
#undef UNPAD
        LAUNCH_TRY("conv unpad");
    }
    return NST_OK;
}

/* ---- conv1_1 from the image (kernels/backend.h: conv_forward_image) ---------------------------- */
int cuda_conv_reads_image(nst_backend *be, const nst_conv *cv) { return cv && cv->own && be->in_dtype == be->act_dtype; }

/* img and y (or dy and dimg): an fp32 image of 3 channels and the layer's output, of one shape */
static nst_status check_image(nst_backend *be, const nst_conv *cv, const nst_tensor *img, const nst_tensor *y, const char *op)
{
    NST_TRY(cuda_check(img, op));
    NST_TRY(cuda_check(y, op));
    if (!cuda_conv_reads_image(be, cv)) return nst_fail(NST_ERUNTIME, "%s: the %d -> %d layer does not read the image", op, cv->cin, cv->cout);
    if (img->dt != NST_F32 || img->c != 3 || y->c != cv->cout || y->dt != be->act_dtype || img->h != y->h || img->w != y->w)
        return nst_fail(NST_ERUNTIME, "%s: %dx%dx%d -> %dx%dx%d does not fit the %d -> %d layer on an fp32 image", op, img->h, img->w, img->c,
                        y->h, y->w, y->c, cv->cin, cv->cout);
    return NST_OK;
}

nst_status cuda_conv_forward_image(nst_backend *be, nst_conv *cv, const nst_preproc *p, const nst_tensor *img, nst_tensor *y, int relu)
{
    NST_TRY(check_image(be, cv, img, y, "conv_forward_image"));
    if (!img->h || !img->w) return NST_OK;
    return cuda_conv_first_forward(be, img->data, p, cv->w, cv->bias, y->data, img->h, img->w, cv->cout, cv->cin_p, relu);
}

nst_status cuda_conv_backward_image(nst_backend *be, nst_conv *cv, const nst_preproc *p, const nst_tensor *dy, nst_tensor *dimg)
{
    NST_TRY(check_image(be, cv, dimg, dy, "conv_backward_image"));
    if (!dimg->h || !dimg->w) return NST_OK;
    return cuda_conv_first_backward(be, dy->data, p, cv->w, dimg->data, dimg->h, dimg->w, cv->cout, cv->cin_p);
}

/* kernels/backend.h: the compute backend interface. Every op the style transfer needs, behind one
 * table of function pointers, implemented by kernels/cpu/ (reference C + oneDNN, always built)
 * and kernels/cuda/ (cuDNN, cuBLAS, own CUDA kernels; built where nvcc exists).
 *
 * Data layout. An activation tensor is one tile's h x w positions x c channels, NHWC (channels
 * fastest), batch 1, in the backend's memory, stored in the backend's activation dtype
 * (run.precision: fp32, or bf16 / fp16 with fp32 accumulation). Images, Gram matrices, style
 * targets and optimiser state are always fp32.
 *
 * Regions. The tiled renderer computes losses only over positions a tile owns, and seeds
 * gradients over a wider region (the positions whose footprint reaches the tile's core), so ops
 * that reduce or seed take rects in the tensor's own coordinates:
 *   own  - positions counted in sums (Gram, loss values),
 *   seed - positions that receive loss gradients.
 * A whole-image render passes the full tensor for both.
 *
 * Every op returns a status; a failure records one message (util/status.h).
 */
#ifndef NST_BACKEND_H
#define NST_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "../tiler/rect.h"
#include "../util/status.h"
#include "precision.h"
#include "xsum.h"

typedef struct {
    int h, w, c;
    nst_dtype dt;
    void *data;
} nst_tensor;

static inline size_t nst_tensor_elems(const nst_tensor *t) { return (size_t)t->h * t->w * t->c; }
static inline nst_rect nst_tensor_rect(const nst_tensor *t) { return nst_rect_make(0, 0, t->w, t->h); }

typedef enum { NST_POOL_MAX, NST_POOL_AVG } nst_pool_kind;

/* Network input from an RGB image in [0,1]: in[c] = (img[bgr ? 2 - c : c] * scale - mean[c]) / std[c] */
typedef struct {
    int bgr;
    float scale, mean[3], std[3];
} nst_preproc;

typedef struct {
    float lr, beta1, beta2, eps;
    long long t; /* step number, from 1 (where no nst_adam_step is given) */
    int clamp;   /* project onto [0,1] after the step */
} nst_adam_params;

/* Adam's step in backend memory, so that a captured iteration (CUDA graphs) replays with the next
 * step's bias corrections: the steps taken, and step t's lr / (1 - beta1^t) and
 * 1 / sqrt(1 - beta2^t) as the adam op uses them. */
typedef struct {
    double t;
    float step, rbc2;
} nst_adam_step;

typedef struct nst_backend nst_backend;
typedef struct nst_profile nst_profile;
typedef struct nst_conv nst_conv; /* a backend-prepared 3x3 conv layer: weights in its layout, algorithms */

typedef struct {
    /* memory */
    nst_status (*alloc)(nst_backend *, size_t bytes, void **ptr);
    void (*free)(nst_backend *, void *ptr);
    /* host fp32 <-> backend buffer of n elements of dtype dt */
    nst_status (*upload)(nst_backend *, void *dst, const float *src, size_t n, nst_dtype dt);
    nst_status (*download)(nst_backend *, float *dst, const void *src, size_t n, nst_dtype dt);
    nst_status (*zero)(nst_backend *, void *ptr, size_t bytes);
    nst_status (*copy)(nst_backend *, void *dst, const void *src, size_t bytes); /* backend to backend */
    nst_status (*synchronize)(nst_backend *);
    /* Rectangles of pixels (all channels; tensors of equal channels and dtype): tensor to tensor
     * (dst at (dx, dy)), and between a tensor and r.w * r.h * c packed host floats. The host
     * transfers take fp32 tensors (the images the renderer moves); the CPU also converts other
     * dtypes, the CUDA backend refuses them. */
    nst_status (*copy_rect)(nst_backend *, const nst_tensor *src, nst_rect r, nst_tensor *dst, int dx, int dy);
    nst_status (*download_rect)(nst_backend *, const nst_tensor *src, nst_rect r, float *host);
    nst_status (*upload_rect)(nst_backend *, const float *host, nst_tensor *dst, nst_rect r);

    /* 3x3 convolution, stride 1, zero 'same' padding. Weights OIHW fp32 on the host. */
    nst_status (*conv_create)(nst_backend *, int cin, int cout, const float *w_oihw, const float *bias, nst_conv **out);
    void (*conv_destroy)(nst_backend *, nst_conv *);
    /* y = relu(conv(x) + b) if relu, else conv(x) + b */
    nst_status (*conv_forward)(nst_backend *, nst_conv *, const nst_tensor *x, nst_tensor *y, int relu);
    /* dx = gradient of conv(x) with respect to x, given dy (overwrites dx) */
    nst_status (*conv_backward_data)(nst_backend *, nst_conv *, const nst_tensor *dy, nst_tensor *dx);
    /* dy *= (y > 0), y the ReLU output */
    nst_status (*relu_backward)(nst_backend *, const nst_tensor *y, nst_tensor *dy);
    /* 2x2 stride-2 pooling, floor: y is (h/2) x (w/2) */
    nst_status (*pool_forward)(nst_backend *, nst_pool_kind, const nst_tensor *x, nst_tensor *y);
    /* dx = gradient through the pool (overwrites dx; max routes to the first maximum). relu: x is
     * a ReLU's output and dx the gradient at that ReLU's input, its backward folded in (dx = 0
     * where x > 0 fails): one pass instead of two, the same bits as pool_backward then
     * relu_backward (a select, never a product). */
    nst_status (*pool_backward)(nst_backend *, nst_pool_kind, const nst_tensor *x, const nst_tensor *y,
                                const nst_tensor *dy, nst_tensor *dx, int relu);
    /* x = network input of img (img: fp32, c = 3); and its gradient (dimg overwritten) */
    nst_status (*preprocess)(nst_backend *, const nst_preproc *, const nst_tensor *img, nst_tensor *x);
    nst_status (*preprocess_backward)(nst_backend *, const nst_preproc *, const nst_tensor *dx, nst_tensor *dimg);

    /* Masks. m, where an op takes one, weights each position: NULL (every weight 1), or an fp32
     * tensor of f's height and width with one channel (the guided Gram and the masked content
     * loss). A weight of 1 is exact in every product below, so an all-ones mask gives the bits
     * of m = NULL. */
    /* g (c x c, fp64, upper triangle used) += sum over own of (m_p f_p) f_p^T: the unnormalised
     * Gram sums. m_p f_p[i] is exact in double, the product with f_p[j] rounds once, and every
     * partial sum is in double, none rounded to fp32 on the way, so the sums of a tiled image
     * (added chunk by chunk, tile by tile, rank by rank) round to the same fp32 matrix as the
     * whole image's. */
    nst_status (*gram_accumulate)(nst_backend *, const nst_tensor *f, nst_rect own, const nst_tensor *m, double *g);
    /* Loss sums stay in backend memory. The sums these ops produce (gram_diff's *sumsq, and the
     * nst_xsum accumulators of mse, tv and sumsq) are written or added where they are, in backend
     * memory (host memory on the CPU, device memory on a GPU), with no wait for the device: an
     * iteration reads them with one `read` only where it reports, checkpoints or decides a stop
     * (nst/optimise/objective.h). A GPU backend adds a reduction's double into the accumulator on
     * the device (kernels/xsum_core.h: the integer arithmetic the CPU runs). */
    /* d = g * g_scale - a (c x c, fp32, symmetric, from g's upper triangle); *sumsq = sum of d^2.
     * With g_prev (the previous iteration's sums, for the lagged Gram) d is taken at the linear
     * extrapolation 2 g - g_prev, while *sumsq stays that of g: the loss of the current image. */
    nst_status (*gram_diff)(nst_backend *, const double *g, const double *g_prev, double g_scale, const float *a, int c,
                            float *d, double *sumsq);
    /* df_p += (m_p f_p) (scale d) at positions p in seed (d symmetric c x c; m_p f_p rounded to
     * f's dtype, then the product as without a mask) */
    nst_status (*gram_backward)(nst_backend *, const nst_tensor *f, nst_rect seed, const nst_tensor *m, const float *d,
                                float scale, nst_tensor *df);
    /* The loss sums add into exact accumulators (kernels/xsum.h). On the CPU each position's (or
     * pixel's) own sum is taken in double, in order, and the positions' sums exactly, so a tiled
     * image's sums equal the whole image's bit for bit; the CUDA backend adds its reduction's
     * double, tile by tile. */
    /* *sumsq += sum over p in own of m_p sum_c (f - p)^2; if df: df += (scale m_p) (f - p) over seed */
    nst_status (*mse)(nst_backend *, const nst_tensor *f, const nst_tensor *p, nst_rect own, nst_rect seed, const nst_tensor *m,
                      float scale, nst_xsum *sumsq, nst_tensor *df);
    /* Squared total variation of img (fp32, c = 3): *sum += the sum over pairs (p, right or lower
     * neighbour) with p in own of (x_q - x_p)^2; if dimg: dimg += scale * d(sum)/dx over seed. */
    nst_status (*tv)(nst_backend *, const nst_tensor *img, nst_rect own, nst_rect seed, float scale, nst_xsum *sum,
                     nst_tensor *dimg);
    /* Adam on n fp32 values: step p->t, or s's (backend memory; NULL: p->t) */
    nst_status (*adam)(nst_backend *, float *x, const float *g, float *m, float *v, size_t n, const nst_adam_params *p,
                       const nst_adam_step *s);
    /* s->t += 1 and s's scalars for that step from p's lr and betas, on the device (no wait) */
    nst_status (*adam_tick)(nst_backend *, const nst_adam_params *p, nst_adam_step *s);
    /* *out += sum over own of t^2 (each position's channels in double, the positions exactly) */
    nst_status (*sumsq)(nst_backend *, const nst_tensor *t, nst_rect own, nst_xsum *out);
    /* *out = sum a[i] * b[i] (fp32 arrays), independent of the thread count */
    nst_status (*dot)(nst_backend *, const float *a, const float *b, size_t n, double *out);
    /* y = a * x + b * y on n fp32 values (x may be y): the L-BFGS vector updates */
    nst_status (*axpby)(nst_backend *, float *y, const float *x, size_t n, float a, float b);
    /* The box [0, 1] of the pixels (projected L-BFGS): v = 0 where x sits on a bound that g
     * pushes against (x <= 0 and g > 0, or x >= 1 and g < 0), the pixels held there; v may be g */
    nst_status (*box_hold)(nst_backend *, float *v, const float *x, const float *g, size_t n);
    /* x = clamp(x + t d, 0, 1), then d = the step taken (the new x minus the old) */
    nst_status (*box_step)(nst_backend *, float *x, float *d, size_t n, float t);

    /* raw bytes between the host and a backend buffer (the host-staged Gram allreduce) */
    nst_status (*read)(nst_backend *, void *host, const void *src, size_t bytes);
    nst_status (*write)(nst_backend *, void *dst, const void *host, size_t bytes);
    /* named ranges around phases, for profilers (NVTX on CUDA; nothing on the CPU) */
    void (*range_push)(nst_backend *, const char *name);
    void (*range_pop)(nst_backend *);

    /* The Gram sums in fixed point, order-independent (NULL where a backend has none: the CUDA
     * one, whose tiles are not exact anyway). acc (2 c c int64; for entry (i, j >= i)
     * lo = acc[i c + j] in [0, 2^40) and hi = acc[c c + i c + j], the value lo + 2^40 hi) +=
     * sum over own of floor((m_p f_p[i]) f_p[j] 2^(43 - 2e)): the products rounded down to
     * multiples of 2^(2e - 43), summed exactly, given every |f| < 2^e and masks in [0, 1].
     * *emax = max(*emax, the smallest k with every |f| < 2^k over own): NST_GRAM_EMIN with all
     * zeros, NST_GRAM_ENONFINITE with a NaN or infinity (or a mask weight outside [0, 1]); where
     * it exceeds e the call added nothing valid (the caller sums again with e = that bound). */
    nst_status (*gram_fixed)(nst_backend *, const nst_tensor *f, nst_rect own, const nst_tensor *m, int e, int64_t *acc, int *emax);
    /* acc += a . b, grouped the same way on every tiling (NULL where a backend has none: the CUDA
     * one): a and b hold a tile's pixels, h rows of w x 3 values; each row's products are added in
     * double over runs of `seg` pixels from the row's start, in order, and the runs' sums exactly
     * (kernels/xsum.h). Tiles whose rows start at multiples of seg in the image then add up to the
     * whole image's sum, bit for bit. */
    nst_status (*dot_exact)(nst_backend *, const float *a, const float *b, int w, int h, int seg, nst_xsum *acc);

    /* Phase clocks on the backend's queue, for the phase timers without a wait per phase
     * (nst/optimise/timers.h). stamp: when the work queued before it is done, the time since the
     * previous stamp is added to clock `slot` (0 <= slot < NST_CLOCKS; -1: to none): a GPU
     * measures it on the device (its global nanosecond timer, in a one-thread kernel), the CPU,
     * whose ops are done when they return, on the host's clock. clocks_read: waits, sets sec[i]
     * to clock i's seconds (i < n) and sets the clocks to zero. */
    nst_status (*stamp)(nst_backend *, int slot);
    nst_status (*clocks_read)(nst_backend *, int n, double *sec);

    /* CUDA graphs: one iteration recorded once and replayed (NULL where a backend has none: the
     * CPU, whose ops run as they are called), as up to NST_GRAPH_SEGMENTS segments, between which
     * the host does what cannot be recorded (the halo exchange and the Gram sums between ranks,
     * through the host). graph_begin: the ops queued from now on are recorded as segment seg, not
     * run (no op may wait for the device meanwhile); seg 0 drops every segment held. graph_end:
     * the recording becomes segment seg (none where nothing was recorded); NST_OK, or NST_ERUNTIME, not a device fault, with why in
     * nst_fail_message() where it cannot be (an op that failed while recording: a wait, or a
     * library call that cannot be recorded), and nothing recorded ran: the caller runs the work
     * itself. graph_launch: run segment seg once, queued like any op; *launched = 0 where it is not
     * held. graph_segments: how many are held (0: none recorded, or all dropped together because a
     * scratch buffer one of them used was reallocated since). */
    nst_status (*graph_begin)(nst_backend *, int seg);
    nst_status (*graph_end)(nst_backend *);
    nst_status (*graph_launch)(nst_backend *, int seg, int *launched);
    int (*graph_segments)(nst_backend *);

    /* Host memory for transfers: page-locked on a GPU, so that the queued transfers below need not
     * wait (a GPU's copies to or from pageable memory may); the host's own on the CPU. host_free:
     * NULL is ignored. */
    nst_status (*host_alloc)(nst_backend *, size_t bytes, void **ptr);
    void (*host_free)(nst_backend *, void *ptr);
    /* download_rect and upload_rect queued like any op, without their wait: host (from host_alloc)
     * holds the downloaded rect, and may be changed after an upload, only once the backend has been
     * synchronized since (synchronize, or an op that waits). So a batch of rects costs one wait. */
    nst_status (*download_rect_queued)(nst_backend *, const nst_tensor *src, nst_rect r, float *host);
    nst_status (*upload_rect_queued)(nst_backend *, const float *host, nst_tensor *dst, nst_rect r);

    /* The Gram sums beside the next layers: a GPU's second stream (NSTBATCH_CUDA_OVERLAP=1; NULL
     * where a backend has none: the CPU, whose ops run as they are called). side(be, 1): the ops
     * called until side(be, 0), gram_accumulate alone, go on the side stream, after all the work
     * queued so far. The ops after side(be, 0) are not ordered after them until join: the caller
     * joins before an op reads what the side writes (the sums) or writes what it reads (the
     * features, the masks). The backend joins by itself at the start of every op of this table
     * that moves data to or from the host or waits (conv_create's upload too), and before a free,
     * a scratch buffer's growth, graph_begin and graph_end, so the host never sees side work
     * unfinished. */
    nst_status (*side)(nst_backend *, int on);
    nst_status (*join)(nst_backend *);

    /* conv1_1 straight from the image (NULL where a backend has none: the CPU). conv_reads_image:
     * whether conv c takes the two below (CUDA: conv1_1 on our own kernels). conv_forward_image:
     * y = conv_forward(preprocess(img)); conv_backward_image: dimg = preprocess_backward(
     * conv_backward_data(dy)); each the bits of the two ops in turn (the network input and its
     * gradient rounded to their dtype on the way, as stored), without the network input or its
     * gradient written and read back. */
    int (*conv_reads_image)(nst_backend *, const nst_conv *);
    nst_status (*conv_forward_image)(nst_backend *, nst_conv *, const nst_preproc *, const nst_tensor *img, nst_tensor *y, int relu);
    nst_status (*conv_backward_image)(nst_backend *, nst_conv *, const nst_preproc *, const nst_tensor *dy, nst_tensor *dimg);
} nst_backend_ops;

#define NST_CLOCKS 16
#define NST_GRAPH_SEGMENTS 8 /* a recorded iteration's segments, at most (graph_begin) */

#define NST_GRAM_EMIN (-1000)
#define NST_GRAM_LO_BITS 40 /* gram_fixed's lo plane holds [0, 2^40); the value is lo + 2^40 hi */
#define NST_GRAM_ENONFINITE 100000
/* g's upper triangle (c x c, host memory) = the values of gram_fixed's sums acc at bound 2^e, after
 * they are added over ranks (lo may then exceed 2^40): lo + 2^40 hi rounded once to double, times
 * the grid 2^(2e - 43); NaN everywhere with bad (a feature was not finite). */
void nst_gram_fixed_to_double(const int64_t *acc, int c, int e, int bad, double *g);

/* The memory at a phase boundary (nst_backend_mark): the device's free memory (GPU backends;
 * 0 on the CPU) and the backend's own buffers. */
#define NST_MAX_MARKS 16
typedef struct {
    char phase[32];
    size_t device_free, in_use, peak;
} nst_memory_mark;

struct nst_backend {
    const nst_backend_ops *ops;
    void *impl;
    nst_dtype act_dtype;  /* activation storage */
    nst_dtype in_dtype;   /* the network input's storage (the preprocessed image and its gradient): fp32
                           * in the CPU's bf16, so the network sees small changes of the pixels */
    char name[16];        /* "cpu", "cuda" */
    /* Whether an op over a window gives the bits the whole tensor's op gives there (the CPU: its
     * kernels are chosen so that no result depends on the size of the call, kernels/cpu/). Where
     * not (cuDNN and cuBLAS choose algorithms per shape), tiles agree within tolerances only. */
    int tiles_exact;
    char description[224];  /* "CPU, fp32, oneDNN 2.6.3 (AVX2: jit:avx2), 2 threads": the convolutions' implementations too */
    char choice[256];       /* why run.device = auto chose it ("" when named explicitly) */
    /* What the bits of a result depend on besides the data and the precision, where tiles are
     * exact (the CPU: its level, the convolutions' implementations, its own kernels' path): ranks
     * that differ here would not give the one-tile render's bits. "" on a GPU. */
    char arith[160];        /* "jit:avx512_core, jit:avx512_core_amx_bf16; own kernels AVX-512" */
    int threads;            /* CPU threads this process computes with */
    int cores_allowed;      /* cores in this process's affinity mask (mpirun may bind ranks) */
    int cores_launcher;     /* cores in its parent's (the launcher's) mask: what the launcher was given */
    size_t bytes_in_use, bytes_peak; /* backend buffers (the memory model is checked against this) */
    size_t capacity;        /* bytes this backend can hand out (the CUDA arena); 0: host memory, no fixed limit */
    size_t reserve;         /* of capacity, kept for the backend's own scratch (workspaces, packing) */
    size_t limit;           /* test hook NSTBATCH_MEMORY_LIMIT_MB: allocations fail beyond this many bytes in use; 0: none */
    int alloc_failures;     /* allocations refused (out of device memory, or over limit): the render halves its tiles */
    nst_precision precision;
    /* GPU backends: the device, its PCI bus id (ranks compare them to find shared GPUs), and the
     * stream the ops run on (the Gram allreduce is queued on it). */
    int gpu_index;
    char gpu_bus_id[32];
    void *gpu_stream;
    struct nst_profile *profile; /* NSTBATCH_PROFILE=1: per-op timers (kernels/profile.h) */
    struct nst_graph_standin *graph_standin; /* NSTBATCH_GRAPH_STANDIN=1: CUDA graphs' semantics on the CPU (kernels/graph_standin.h) */
    /* Diagnostics for a first contact with a device (GPU backends; NULL on the CPU): the libraries
     * as loaded and the algorithms chosen per layer shape, as lines of text; the device's free
     * memory now (0, or -1). */
    void (*report)(nst_backend *, char *out, size_t cap);
    int (*device_free)(nst_backend *, size_t *free_b, size_t *total_b);
    /* Waits of the host for the backend (a GPU's stream synchronised: every read, download,
     * upload, write, synchronize, dot and clocks_read), and of them the reads of results to the
     * host. The CPU counts the same calls, so a CPU run shows where a GPU run would wait: an
     * iteration between two reports makes none (nst/render/render.c counts them). */
    long long host_waits, host_reads;
    nst_memory_mark marks[NST_MAX_MARKS]; /* nst_backend_mark's */
    int nmarks;
    void (*destroy)(nst_backend *);
};

/* CPU threads for a rank when run.threads = 0: its share of the node's cores (ranks_on_node
 * ranks), at most the cores its affinity mask allows, at least 1. */
int nst_default_threads(int ranks_on_node);

/* A convolution algorithm chosen by timing (gpu.conv_algorithms = timed), keyed by what the timing
 * holds for (the GPU model, the library's version, the precision: `device`, the backend's text), the
 * direction (0 forward, 1 backward-data), the layer and the input size; algo and math are the
 * library's numbers. The backend's caller keeps them (nst/run/conv_store.h: gpu.conv_choices' file),
 * so a rerun takes the same algorithms without timing: find fills t's algo, math and ms and returns
 * 1 where it knows t's key; add keeps a new timing. */
typedef struct {
    const char *device;
    int dir, cin, cout, h, w;
    int algo, math;
    double ms;
} nst_conv_timing;
typedef struct {
    int (*find)(void *user, nst_conv_timing *t);
    void (*add)(void *user, const nst_conv_timing *t);
    void *user;
} nst_conv_memory;

/* How to open a backend. */
typedef struct {
    const char *device;      /* "auto" (CUDA where a usable GPU exists, else the CPU), "cpu", "cuda" */
    int threads;             /* CPU threads, 0 = all this process may use */
    nst_precision precision;
    int gpu;                 /* device index (the binding's choice, mpi/gpu_bind.h) */
    int gpu_sharers;         /* ranks that use this GPU (they split its memory) */
    double memory_gb;        /* run.memory_gb: a cap on the arena; 0 = the rank's share of free memory */
    int collective_ranks;    /* ranks the Gram sums span: above 1 on an unshared GPU, NCCL will need memory of its own */
    size_t gpu_free_bytes;   /* the GPU's free memory, agreed by the ranks sharing it once all their contexts exist
                              * (nst/run/device.c); each sizes its arena from 1/gpu_sharers of it. 0: measure at open */
    int conv_timed;          /* gpu.conv_algorithms = timed: GPU convolution algorithms chosen by timing them, not by heuristics */
    const nst_conv_memory *conv_memory; /* where timed choices are kept between runs (gpu.conv_choices); NULL: timed afresh */
} nst_backend_options;

/* Open a backend. be->choice says why run.device = auto chose it. NSTBATCH_MEMORY_LIMIT_MB (a test
 * hook) caps the bytes its allocations may hold, to exercise the out-of-memory paths on any machine.
 * NSTBATCH_PROFILE=1 times every op and prints the table to stderr when the backend closes. */
nst_status nst_backend_open_with(const nst_backend_options *o, nst_backend **out);
/* The CPU (in fp32, the reference) or auto with defaults (tests, tools). */
nst_status nst_backend_open(const char *device, int threads, nst_backend **out);
void nst_backend_close(nst_backend *be);

/* Device faults. A failed CUDA, cuDNN or cuBLAS call (a sticky error: the device context is lost)
 * cannot be recovered from, and a rank that returned it from an op between two collectives would
 * leave its peers waiting in the next one until the job's wall-clock limit. So the backends report
 * them here: with a handler installed (the program's, once every rank's device is open: main.c,
 * which aborts every rank with one message) this does not return; without one (tests, tools, and
 * while devices open, where the ranks agree on the outcome) it records msg and returns
 * NST_ERUNTIME. Running out of memory is no fault: NST_ENOMEM, which the planner handles and every
 * rank agrees on. */
typedef void (*nst_backend_fatal_fn)(const char *msg);
void nst_backend_set_fatal_handler(nst_backend_fatal_fn fn);
nst_status nst_backend_fault(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Note the memory after `phase` ("opened", "style targets", "level 1 rendered", ...): the last
 * NST_MAX_MARKS are kept; the run's record and the self-test's report print them. */
void nst_backend_mark(nst_backend *be, const char *phase);
/* The marks and be->report's lines as text, each line prefixed by indent. */
void nst_backend_diagnostics(const nst_backend *be, char *out, size_t cap, const char *indent);
/* How many times `what` occurs in be->report's text (on a GPU, the notes of what ran: the cuDNN
 * picks, "; timed ", bias+ReLU fused or not, our own kernels); 0 without a report. */
int nst_backend_notes_count(const nst_backend *be, const char *what);

/* The backends' allocators call this first: NST_ENOMEM (counted in be->alloc_failures) when bytes
 * more would pass be->limit (the NSTBATCH_MEMORY_LIMIT_MB test hook). */
nst_status nst_backend_check_limit(nst_backend *be, size_t bytes);

/* The ops' argument checks, shared by the backends: a usable tensor; r inside it. */
nst_status nst_tensor_check(const nst_tensor *t, const char *op);
nst_status nst_tensor_check_region(const nst_tensor *t, nst_rect r, const char *op);
/* m is NULL or a mask for f: fp32, one channel, f's height and width (the ops' masks) */
nst_status nst_tensor_check_mask(const nst_tensor *f, const nst_tensor *m, const char *op);

/* A backend op that makes the host wait for the device; read: it brings a result to the host. */
static inline void nst_backend_count_wait(nst_backend *be, int read)
{
    be->host_waits++;
    be->host_reads += read != 0;
}

/* Allocate a tensor of h x w x c in the backend's activation dtype (data zero-filled). */
nst_status nst_tensor_alloc(nst_backend *be, int h, int w, int c, nst_dtype dt, nst_tensor *t);
void nst_tensor_free(nst_backend *be, nst_tensor *t);

#endif

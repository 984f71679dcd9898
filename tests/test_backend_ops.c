/* tests/test_backend_ops.c: every op of every reduced-precision backend against the CPU backend
 * in fp32, through the op harness (kernels/check/, the same table nstbatch --self-test runs): the
 * CPU in bf16 (here and in CI), and the CUDA backend in fp32, tf32, bf16 (bias+ReLU fused into
 * cuDNN's call and as a separate kernel; the convolution algorithms by heuristics and by timing;
 * conv1_1 on cuDNN and on our own kernels; the Gram sums on cuBLAS and on our own kernel) and fp16 where a GPU exists (SKIP where the machine has no
 * NVIDIA device, saying why; FAIL where it has one that CUDA cannot use), and the GPU's 8-channel
 * element passes against one element a thread, bit for bit.
 * Then the harness is tested itself: the tolerances follow from the precisions, and a backend
 * with one op wrong by a little more than its tolerance, or writing a NaN, is caught. And the
 * graph stand-in's queued transfers follow a GPU stream's order. */
#include "../kernels/backend.h"
#include "../kernels/check/check.h"
#include "../kernels/cuda/cuda.h"
#include "../util/mem.h"
#include "test.h"

#include <limits.h>
#include <malloc.h>

static nst_backend *cpu;

static void on_fail(void *user, const nst_check_row *r, const char *what, double err, double tol)
{
    (void)user;
    printf("    mismatch %s (%s): error %.3g > %.3g\n", r->op, what, err, tol);
}

/* the rows of the report whose op has `part` in its name */
static int rows_named(const nst_check *c, const char *part)
{
    int n = 0;
    for (int i = 0; i < c->nrows; i++) n += strstr(c->row[i].op, part) != NULL && c->row[i].cases > 0;
    return n;
}

/* the harness over dev; prints the report; returns failures; *images: its rows of conv1_1 from the
 * image (NULL: not asked) */
static int run_harness(nst_backend *dev, const char *label, int *images)
{
    nst_check c;
    memset(&c, 0, sizeof c);
    c.ref = cpu;
    c.dev = dev;
    c.on_fail = on_fail;
    printf("    %s: %s against %s\n", label, dev->description, cpu->description);
    nst_status s = nst_check_ops(&c);
    CHECK(s == NST_OK, "the harness ran: %s", nst_fail_message());
    nst_check_print(&c, stdout, "    ");
    CHECK(c.nrows >= 20, "every op compared (%d rows)", c.nrows);
    if (images) *images = rows_named(&c, "_image");
    return nst_check_failures(&c);
}

static void t_cpu_bf16_against_fp32(void)
{
    nst_backend_options o = {.device = "cpu", .precision = NST_PREC_BF16, .gpu_sharers = 1, .collective_ranks = 1};
    nst_backend *dev = NULL;
    if (nst_backend_open_with(&o, &dev) != NST_OK) SKIP("no bf16 on this CPU: %s", nst_fail_message());
    int f = run_harness(dev, "cpu bf16", NULL);
    CHECK(f == 0, "%d comparisons over their tolerance", f);
    nst_backend_close(dev);
}

/* The CPU in fp32 is the reference, so its ops are compared with naive loops (test_ops.c); here
 * its tiling contracts: windows of every width and height, and the Gram backward's rows. */
static void t_cpu_fp32_contracts(void)
{
    nst_check c;
    memset(&c, 0, sizeof c);
    c.ref = cpu, c.dev = cpu, c.on_fail = on_fail;
    printf("    cpu fp32: %s\n", cpu->description);
    CHECK(nst_check_contracts(&c) == NST_OK, "the contracts ran: %s", nst_fail_message());
    nst_check_print(&c, stdout, "    ");
    CHECK(c.nrows >= 3, "windows forward and backward, and the Gram backward's rows (%d rows)", c.nrows);
    CHECK(nst_check_failures(&c) == 0, "%d contracts broken", nst_check_failures(&c));
}

/* ---- the harness catches what it must ----------------------------------------------------- */

static nst_backend_ops broken_ops;
static const nst_backend_ops *real_ops;
static double bump; /* relative error the broken relu_backward adds */

static nst_status broken_relu_backward(nst_backend *be, const nst_tensor *y, nst_tensor *dy)
{
    NST_TRY(real_ops->relu_backward(be, y, dy));
    size_t n = nst_tensor_elems(dy);
    float *h = nst_alloc_array(n ? n : 1, sizeof(float), "t");
    float m = 0;
    NST_TRY(real_ops->download(be, h, dy->data, n, dy->dt));
    for (size_t i = 0; i < n; i++) m = fabsf(h[i]) > m ? fabsf(h[i]) : m;
    for (size_t i = 0; i < n; i++)
        if (fabsf(h[i]) == m) h[i] += (float)(bump * m) * (h[i] < 0 ? -1 : 1); /* the largest: survives the rounding */
    nst_status s = real_ops->upload(be, dy->data, h, n, dy->dt);
    nst_free(h);
    return s;
}

static nst_status nan_pool_forward(nst_backend *be, nst_pool_kind k, const nst_tensor *x, nst_tensor *y)
{
    NST_TRY(real_ops->pool_forward(be, k, x, y));
    size_t n = nst_tensor_elems(y);
    if (!n) return NST_OK;
    float nan = NAN;
    return real_ops->upload(be, y->data, &nan, 1, y->dt);
}

static const nst_check_row *row(const nst_check *c, const char *op)
{
    for (int i = 0; i < c->nrows; i++)
        if (strcmp(c->row[i].op, op) == 0) return &c->row[i];
    return NULL;
}

static void t_harness_catches_errors(void)
{
    nst_backend_options o = {.device = "cpu", .precision = NST_PREC_BF16, .gpu_sharers = 1, .collective_ranks = 1};
    nst_backend *dev = NULL;
    if (nst_backend_open_with(&o, &dev) != NST_OK) o.precision = NST_PREC_FP32;
    if (!dev) CHECK(nst_backend_open_with(&o, &dev) == NST_OK, "%s", nst_fail_message());
    if (!dev) return;
    real_ops = dev->ops;
    broken_ops = *dev->ops;
    broken_ops.relu_backward = broken_relu_backward;
    broken_ops.pool_forward = nan_pool_forward;
    dev->ops = &broken_ops;
    /* relu_backward off by 2x its tolerance (bigger than the rounding of the result): caught */
    bump = 2.0 * nst_tolerance(NST_TOL_ELEMENT, dev->precision, 1);
    nst_check c;
    memset(&c, 0, sizeof c);
    c.ref = cpu, c.dev = dev, c.quick = 1;
    CHECK(nst_check_ops(&c) == NST_OK, "ran: %s", nst_fail_message());
    const nst_check_row *r = row(&c, "relu_backward"), *p = row(&c, "pool_forward max"), *q = row(&c, "pool_backward max");
    CHECK(r && r->failed > 0, "an error of 2x the tolerance is caught (%s: %d of %d failed)", r ? r->op : "no row", r ? r->failed : 0,
          r ? r->cases : 0);
    /* (the quick table's 1x1 case, at both channel counts, pools to an empty output, which holds no NaN) */
    CHECK(p && p->failed == p->cases - 2 && p->cases > 2, "a NaN fails every comparison it is in (%d of %d)", p ? p->failed : 0,
          p ? p->cases : 0);
    CHECK(q && q->failed == 0, "the other ops still pass (pool_backward: %d failed)", q ? q->failed : -1);
    /* and the same op off by half its tolerance passes */
    bump = 0.4 * nst_tolerance(NST_TOL_ELEMENT, dev->precision, 1);
    broken_ops.pool_forward = real_ops->pool_forward;
    memset(&c, 0, sizeof c);
    c.ref = cpu, c.dev = dev, c.quick = 1;
    CHECK(nst_check_ops(&c) == NST_OK, "ran: %s", nst_fail_message());
    CHECK(nst_check_failures(&c) == 0, "an error of 0.4x the tolerance passes (%d failures)", nst_check_failures(&c));
    dev->ops = real_ops;
    nst_backend_close(dev);
}

static void t_tolerances_follow_the_precision(void)
{
    const nst_tol_class k[] = {NST_TOL_ELEMENT, NST_TOL_CONV, NST_TOL_GRAM_BACKWARD};
    for (int i = 0; i < 3; i++) {
        double f32 = nst_tolerance(k[i], NST_PREC_FP32, 576), f16 = nst_tolerance(k[i], NST_PREC_FP16, 576),
               bf = nst_tolerance(k[i], NST_PREC_BF16, 576), tf = nst_tolerance(k[i], NST_PREC_TF32, 576);
        CHECK(f32 < f16 && f16 < bf, "%s: fp32 %.3g < fp16 %.3g < bf16 %.3g", nst_tol_class_name(k[i]), f32, f16, bf);
        CHECK(f32 <= tf, "%s: tf32 %.3g at least fp32's %.3g", nst_tol_class_name(k[i]), tf, f32);
        /* at least one rounding of the result to the storage dtype: 2^-8 in bf16, 2^-11 in fp16 */
        CHECK(bf >= 0x1p-8 && f16 >= 0x1p-11, "%s: bf16 %.3g, fp16 %.3g cover one storage rounding", nst_tol_class_name(k[i]), bf, f16);
    }
    CHECK(nst_tolerance(NST_TOL_ELEMENT, NST_PREC_BF16, 1) == 2 * 0x1p-8 + 8 * 0x1p-24, "element, bf16: 2 u + 8 eps");
    CHECK(nst_tolerance(NST_TOL_F32_MATH, NST_PREC_BF16, 1) == nst_tolerance(NST_TOL_F32_MATH, NST_PREC_FP32, 1),
          "the optimisers' fp32 arithmetic does not depend on the storage");
}

/* ---- the CUDA backend in every precision -------------------------------------------------- */

static char skip_why[256];
static int ngpu;
static nst_cuda_state gpu_state;
static const nst_precision precs[] = {NST_PREC_FP32, NST_PREC_TF32, NST_PREC_BF16, NST_PREC_FP16, NST_PREC_BF16, NST_PREC_BF16, NST_PREC_FP32,
                                      NST_PREC_BF16, NST_PREC_FP32, NST_PREC_FP16, NST_PREC_BF16, NST_PREC_BF16, NST_PREC_FP16};
static const int fused[] = {1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1};
static const int timed[] = {0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0}; /* gpu.conv_algorithms = timed: cuDNN's Find's fastest (fp32: no TF32 taken) */
static const int conv1[] = {0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 0, 0, 0}; /* NSTBATCH_CUDA_CONV1=own: conv1_1 on our own kernels */
static const int vec8[] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1};  /* NSTBATCH_CUDA_VEC8=0: the element passes one element a thread */
static const int gram[] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1};  /* NSTBATCH_CUDA_GRAM=own: the Gram sums on our own kernel */
#define NPASS (int)(sizeof precs / sizeof *precs)
static int pass;

/* A timed pass compared the algorithms cuDNN's Find timed: its notes (the device's diagnostics)
 * name some picks timed; where Find fails a pick keeps the heuristics' choice and says so, and a
 * pass with no timed pick would have compared the heuristics' algorithms again */
static void timed_picks(nst_backend *dev, const char *label)
{
    const int got = nst_backend_notes_count(dev, "; timed ") + nst_backend_notes_count(dev, "; kept from an earlier timing"),
              kept = nst_backend_notes_count(dev, "; heuristics' (");
    CHECK(got > 0, "%s: no algorithm timed by cuDNN's Find (%d picks kept the heuristics' choice)", label, kept);
    if (got > 0) printf("    %s: %d algorithms timed by cuDNN's Find, %d kept the heuristics' choice\n", label, got, kept);
}

/* nst_backend_notes_count, which the timed passes above and the benchmarks read a GPU's notes
 * with: every occurrence, overlapping none, in a report of the CUDA backend's line formats; 0
 * without a report (the CPU's) or for an empty string */
static void notes_stand_in(nst_backend *be, char *out, size_t cap)
{
    (void)be;
    snprintf(out, cap, "cuDNN algorithms (layer, window: forward; backward-data; bias+ReLU):\n"
                       "  64->64 at 32x32: forward IMPLICIT_PRECOMP_GEMM tensor cores (bf16) (TENSOR_OP, 1.0 MiB; timed 0.010 ms, the fastest of 4 that fit)\n"
                       "  64->64 at 32x32: backward-data ALGO_1 tensor cores (bf16) (TENSOR_OP, 0.0 MiB; heuristics' (cuDNN's Find: NOT_SUPPORTED))\n"
                       "  64->64 at 32x32: bias+ReLU fused into cuDNN's call\n  128->128 at 16x16: forward GEMM (DEFAULT, 0.0 MiB; timed 0.002 ms, the fastest of 2 that fit)\n");
}

static void t_notes_count(void)
{
    nst_backend *host = NULL;
    CHECK(nst_backend_open("cpu", 1, &host) == NST_OK, "opening the CPU backend: %s", nst_fail_message());
    if (!host) return;
    CHECK(!host->report && nst_backend_notes_count(host, "; timed ") == 0, "the CPU keeps no notes: 0");
    host->report = notes_stand_in;
    CHECK(nst_backend_notes_count(host, "; timed ") == 2 && nst_backend_notes_count(host, "; heuristics' (") == 1 &&
              nst_backend_notes_count(host, ": forward ") == 2 && nst_backend_notes_count(host, ": backward-data ") == 1 &&
              nst_backend_notes_count(host, "bias+ReLU fused into cuDNN's call") == 1 && nst_backend_notes_count(host, "") == 0,
          "the counts in a stand-in report of the CUDA notes' formats");
    CHECK(nst_backend_notes_count(host, "aa") == 0, "a string absent from the notes: 0");
    host->report = NULL;
    nst_backend_close(host);
}

static void t_cuda_against_cpu(void)
{
    /* SKIP only where no NVIDIA device exists; one that CUDA cannot use (a driver too old for this
     * CUDA) fails here, or `make test` would pass on a GPU machine whose GPUs nothing can use */
    CHECK(gpu_state != NST_CUDA_UNUSABLE, "%s", skip_why);
    if (gpu_state == NST_CUDA_UNUSABLE) return;
    if (ngpu <= 0) SKIP("%s", skip_why);
    char label[96];
    snprintf(label, sizeof label, "cuda %s%s%s%s%s%s", nst_precision_name(precs[pass]), fused[pass] ? "" : " unfused", timed[pass] ? " timed" : "",
             conv1[pass] ? " own conv1_1" : "", vec8[pass] ? "" : " scalar passes", gram[pass] ? " own Gram sums" : "");
    setenv("NSTBATCH_CUDA_FUSE", fused[pass] ? "1" : "0", 1);
    setenv("NSTBATCH_CUDA_CONV1", conv1[pass] ? "own" : "cudnn", 1); /* read when the backend opens */
    setenv("NSTBATCH_CUDA_VEC8", vec8[pass] ? "1" : "0", 1);
    setenv("NSTBATCH_CUDA_GRAM", gram[pass] ? "own" : "cublas", 1);
    nst_backend_options o = {.device = "cuda", .precision = precs[pass], .gpu_sharers = 1, .memory_gb = 2.0, .collective_ranks = 1,
                             .conv_timed = timed[pass]};
    nst_backend *dev = NULL;
    CHECK(nst_backend_open_with(&o, &dev) == NST_OK, "opening %s: %s", label, nst_fail_message());
    if (!dev) return;
    int images = 0;
    int f = run_harness(dev, label, &images);
    CHECK(f == 0, "%s: %d comparisons over their tolerance", label, f);
    /* conv1_1 on our own kernels reads the image: the harness compared that path (else a render
     * would take the other one without any check noticing) */
    CHECK(images == (conv1[pass] ? 2 : 0), "%s: %d rows of conv1_1 from the image compared", label, images);
    if (timed[pass]) timed_picks(dev, label);
    CHECK(dev->ops->synchronize(dev) == NST_OK, "the stream ends clean: %s", nst_fail_message());
    nst_backend_close(dev);
}

/* The GPU's 8-channel element passes (the default) against one element a thread
 * (NSTBATCH_CUDA_VEC8=0), bit for bit: ReLU backward, pooling forward and backward (max and average,
 * the ReLU below folded in and not), on an odd size with ties, zeros of both signs and a NaN, in
 * fp32 and bf16. A NaN may come back with another payload (each path rounds it with its own
 * conversion): any NaN for a NaN. */
enum { VB_H = 9, VB_W = 7, VB_C = 24, VB_OUT = 6 };

/* the six outputs on a backend opened with NSTBATCH_CUDA_VEC8=wide, into out[k] (NULL on failure) */
static void vb_outputs(nst_precision p, int wide, float *out[VB_OUT])
{
    static const float lv[] = {-1.f, -0.5f, -0.f, 0.f, 0.25f, 0.25f, 0.5f, 1.f, 2.f};
    const size_t n = (size_t)VB_H * VB_W * VB_C, ny = (size_t)(VB_H / 2) * (VB_W / 2) * VB_C;
    setenv("NSTBATCH_CUDA_VEC8", wide ? "1" : "0", 1);
    nst_backend_options o = {.device = "cuda", .precision = p, .gpu_sharers = 1, .memory_gb = 1.0, .collective_ranks = 1};
    nst_backend *be = NULL;
    for (int k = 0; k < VB_OUT; k++) out[k] = NULL;
    if (nst_backend_open_with(&o, &be) != NST_OK) return;
    float *x = nst_alloc_array(n, sizeof(float), "t"), *g = nst_alloc_array(n, sizeof(float), "t");
    for (size_t i = 0; i < n; i++) x[i] = lv[(i * 7 + 3) % 9], g[i] = lv[(i * 5 + 1) % 9] * 3.f;
    x[5] = NAN, g[11] = NAN;
    const nst_dtype dt = be->act_dtype;
    nst_tensor tx = {0}, tg = {0}, ty = {0}, tgy = {0}, tdx = {0};
    nst_status s = nst_tensor_alloc(be, VB_H, VB_W, VB_C, dt, &tx);
    if (s == NST_OK) s = nst_tensor_alloc(be, VB_H, VB_W, VB_C, dt, &tg);
    if (s == NST_OK) s = nst_tensor_alloc(be, VB_H / 2, VB_W / 2, VB_C, dt, &ty);
    if (s == NST_OK) s = nst_tensor_alloc(be, VB_H / 2, VB_W / 2, VB_C, dt, &tgy);
    if (s == NST_OK) s = nst_tensor_alloc(be, VB_H, VB_W, VB_C, dt, &tdx);
    if (s == NST_OK) s = be->ops->upload(be, tx.data, x, n, dt);
    if (s == NST_OK) s = be->ops->upload(be, tgy.data, g, ny, dt);
    for (int k = 0; s == NST_OK && k < VB_OUT; k++) {
        const nst_pool_kind pk = k == 2 || k == 5 ? NST_POOL_AVG : NST_POOL_MAX;
        const nst_tensor *res = &tdx;
        if (k == 0) { /* relu_backward */
            s = be->ops->upload(be, tg.data, g, n, dt);
            if (s == NST_OK) s = be->ops->relu_backward(be, &tx, &tg);
            res = &tg;
        } else if (k <= 2) { /* pool_forward max, avg */
            s = be->ops->pool_forward(be, pk, &tx, &ty);
            res = &ty;
        } else { /* pool_backward max, max+relu, avg+relu */
            s = be->ops->pool_forward(be, pk, &tx, &ty);
            if (s == NST_OK) s = be->ops->pool_backward(be, pk, &tx, &ty, &tgy, &tdx, k != 3);
        }
        const size_t m = nst_tensor_elems(res);
        if (s == NST_OK && (out[k] = nst_alloc_array(m, sizeof(float), "t"))) s = be->ops->download(be, out[k], res->data, m, dt);
    }
    if (s == NST_OK) s = be->ops->synchronize(be);
    if (s != NST_OK)
        for (int k = 0; k < VB_OUT; k++) nst_free(out[k]), out[k] = NULL;
    nst_tensor_free(be, &tx), nst_tensor_free(be, &tg), nst_tensor_free(be, &ty), nst_tensor_free(be, &tgy), nst_tensor_free(be, &tdx);
    nst_free(x), nst_free(g);
    nst_backend_close(be);
}

static void t_cuda_vec8_bits(void)
{
    if (ngpu <= 0) SKIP("%s", skip_why);
    static const char *const what[VB_OUT] = {"relu_backward", "pool_forward max", "pool_forward avg", "pool_backward max",
                                             "pool_backward max+relu", "pool_backward avg+relu"};
    const size_t n = (size_t)VB_H * VB_W * VB_C, ny = (size_t)(VB_H / 2) * (VB_W / 2) * VB_C;
    for (int pi = 0; pi < 2; pi++) {
        const nst_precision p = pi ? NST_PREC_BF16 : NST_PREC_FP32;
        float *a[VB_OUT], *b[VB_OUT];
        vb_outputs(p, 1, a);
        vb_outputs(p, 0, b);
        for (int k = 0; k < VB_OUT; k++) {
            CHECK(a[k] && b[k], "%s %s: the op ran both ways: %s", nst_precision_name(p), what[k], nst_fail_message());
            const size_t m = k == 1 || k == 2 ? ny : n;
            int differ = 0;
            for (size_t i = 0; a[k] && b[k] && i < m; i++)
                differ += !(isnan(a[k][i]) && isnan(b[k][i])) && memcmp(&a[k][i], &b[k][i], sizeof(float)) != 0;
            CHECK(differ == 0, "%s %s %dx%dx%d: %d of %zu elements differ between 8 channels a thread and one element a thread",
                  nst_precision_name(p), what[k], VB_H, VB_W, VB_C, differ, m);
            nst_free(a[k]), nst_free(b[k]);
        }
    }
    unsetenv("NSTBATCH_CUDA_VEC8");
}

/* The graph stand-in's queued transfers (kernels/graph_standin.h) as a GPU's stream orders them:
 * a queued download reaches the host only at the next wait, and an upload's host buffer changed
 * before that wait is reported there (unchanged, it is not): so the renders on the stand-in show
 * a missing wait (tests/test_optim.sh plants one in the halo exchange). */
static void t_standin_queued_transfers(void)
{
    nst_backend *be = NULL;
    nst_fail_clear(); /* (an earlier test's message would stand: the first failure's is kept) */
    setenv("NSTBATCH_GRAPH_STANDIN", "1", 1);
    nst_status s = nst_backend_open("cpu", 1, &be);
    unsetenv("NSTBATCH_GRAPH_STANDIN");
    CHECK(s == NST_OK && be && be->graph_standin, "the CPU backend with the stand-in: %s", nst_fail_message());
    if (!be) return;
    enum { H = 4, W = 5, N = H * W * 3 };
    const nst_rect all = nst_rect_make(0, 0, W, H);
    nst_tensor t;
    float src[N], *h = NULL, *u = NULL;
    for (int i = 0; i < N; i++) src[i] = (float)(i + 1);
    CHECK(nst_tensor_alloc(be, H, W, 3, NST_F32, &t) == NST_OK && be->ops->upload_rect(be, src, &t, all) == NST_OK &&
              be->ops->host_alloc(be, sizeof src, (void **)&h) == NST_OK && be->ops->host_alloc(be, sizeof src, (void **)&u) == NST_OK,
          "set-up: %s", nst_fail_message());
    if (!h || !u) return;
    memset(h, 0, sizeof src);
    CHECK(be->ops->download_rect_queued(be, &t, all, h) == NST_OK, "download_rect_queued: %s", nst_fail_message());
    CHECK(h[0] == 0 && h[N - 1] == 0, "a queued download is not on the host before a wait (%g, %g)", h[0], h[N - 1]);
    CHECK(be->ops->synchronize(be) == NST_OK && memcmp(h, src, sizeof src) == 0, "it is after the wait");
    for (int i = 0; i < N; i++) u[i] = 7;
    CHECK(be->ops->upload_rect_queued(be, u, &t, all) == NST_OK, "upload_rect_queued: %s", nst_fail_message());
    u[3] = 8; /* a race on a GPU: the copy may read the buffer until the wait */
    s = be->ops->synchronize(be);
    CHECK(s != NST_OK && strstr(nst_fail_message(), "changed before the backend was waited for"),
          "an upload's buffer changed before the wait is reported there: %s", s == NST_OK ? "it passed" : nst_fail_message());
    nst_fail_clear();
    CHECK(be->ops->upload_rect_queued(be, u, &t, all) == NST_OK && be->ops->synchronize(be) == NST_OK,
          "an unchanged one is not: %s", nst_fail_message());
    be->ops->host_free(be, h), be->ops->host_free(be, u);
    nst_tensor_free(be, &t);
    nst_backend_close(be);
}

/* conv1_1 from the image (kernels/backend.h: conv_forward_image), as the harness judges it on a
 * GPU: the graph stand-in has the path with NSTBATCH_CUDA_CONV1=own, as its own two ops in turn, so
 * this proves the harness's comparison runs and reports here (a wrong ReLU put in the stand-in's
 * path by hand made it fail); the GPU kernels' own arithmetic is test_cuda_emu's (t_conv1_image) */
static void t_standin_conv_image(void)
{
    nst_backend *be = NULL;
    nst_fail_clear();
    setenv("NSTBATCH_GRAPH_STANDIN", "1", 1);
    setenv("NSTBATCH_CUDA_CONV1", "own", 1);
    nst_status s = nst_backend_open("cpu", 1, &be);
    unsetenv("NSTBATCH_GRAPH_STANDIN");
    unsetenv("NSTBATCH_CUDA_CONV1");
    CHECK(s == NST_OK && be && be->ops->conv_forward_image, "the CPU backend with the stand-in and conv1_1 from the image: %s", nst_fail_message());
    if (!be) return;
    nst_check c;
    memset(&c, 0, sizeof c);
    c.ref = cpu, c.dev = be, c.on_fail = on_fail, c.quick = 1;
    CHECK(nst_check_ops(&c) == NST_OK, "the harness ran: %s", nst_fail_message());
    for (int i = 0; i < c.nrows; i++)
        if (strstr(c.row[i].op, "_image"))
            CHECK(c.row[i].failed == 0, "%s: %d of %d cases differ from the ops in turn (%s)", c.row[i].op, c.row[i].failed, c.row[i].cases,
                  c.row[i].worst);
    CHECK(rows_named(&c, "_image") == 2, "conv_forward_image and conv_backward_image compared (%d rows)", rows_named(&c, "_image"));
    CHECK(nst_check_failures(&c) == 0, "the stand-in against the CPU: %d comparisons over their tolerance", nst_check_failures(&c));
    nst_backend_close(be);
}

int main(void)
{
    /* The full table allocates and frees buffers of up to 140 MiB case after case; glibc hands the
     * large ones back to the kernel at each free, and every case faulted them in again (3.9 of 17
     * CPU seconds, system time, capped at AVX512_CORE). Kept by the process (the heap, never
     * trimmed), they are 1.2. */
    mallopt(M_MMAP_MAX, 0);
    mallopt(M_TRIM_THRESHOLD, INT_MAX);
    if (nst_backend_open("cpu", 0, &cpu) != NST_OK) {
        printf("cannot open the CPU backend: %s\n", nst_fail_message());
        return 1;
    }
    RUN(t_tolerances_follow_the_precision);
    RUN(t_cpu_fp32_contracts);
    RUN(t_cpu_bf16_against_fp32);
    RUN(t_harness_catches_errors);
    RUN(t_standin_queued_transfers);
    RUN(t_standin_conv_image);
    RUN(t_notes_count);
    gpu_state = nst_cuda_probe_state(&ngpu, skip_why, sizeof skip_why);
    if (ngpu > 0 && !nst_cuda_has_ops()) ngpu = 0, snprintf(skip_why, sizeof skip_why, "this build has no CUDA backend");
    for (pass = 0; pass < (ngpu > 0 ? NPASS : 1); pass++) RUN(t_cuda_against_cpu);
    RUN(t_cuda_vec8_bits);
    nst_backend_close(cpu);
    return test_report("test_backend_ops");
}

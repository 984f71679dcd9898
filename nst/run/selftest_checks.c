/* nst/run/selftest_checks.c: the self-test's three checks (see selftest.h): the op harness in every
 * precision of the rank's device, a render on one tile against several, and the Gram allreduce. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../io/image/image.h"
#include "../../util/log.h"
#include "../../util/mem.h"
#include "../../util/plant.h"
#include "../../util/timer.h"
#include "../../mpi/comm.h"
#include "../model/random_vgg.h"
#include "../render/render.h"
#include "selftest_impl.h"
#include "../model/spec.h"
#include "../../kernels/cuda/cuda.h"

static void st_fill(st_row *r, const char *op, const char *prec, int cases, int failed, double err, double tol, const char *worst)
{
    memset(r, 0, sizeof *r);
    snprintf(r->op, sizeof r->op, "%s", op);
    snprintf(r->prec, sizeof r->prec, "%s", prec);
    snprintf(r->worst, sizeof r->worst, "%.119s", worst);
    r->cases = cases, r->failed = failed, r->err = err, r->tol = tol, r->rank = nst_comm_rank();
}

int st_room(void) { return nst_planted("tablefull") ? 8 : ST_MAX_ROWS - 1; } /* planted: the tests must see lost rows fail */

st_row *st_add(st_table *t, const char *op, const char *prec, int cases, int failed, double err, double tol, const char *worst)
{
    if (t->n >= st_room()) { /* (sized for every row the checks make: a defect of the self-test's) */
        st_lost(t, 1);
        return NULL;
    }
    st_row *r = &t->row[t->n++];
    st_fill(r, op, prec, cases, failed, err, tol, worst);
    return r;
}

void st_lost(st_table *t, int n)
{
    const int room = st_room();
    st_row *r = &t->row[room];
    if (t->n <= room) {
        st_fill(r, ST_LOST_OP, "-", 0, 0, INFINITY, 0, "");
        t->n = room + 1;
    }
    r->cases += n, r->failed += n;
    snprintf(r->worst, sizeof r->worst, "%d row%s past its room of %d lost: a defect of the self-test, not of the device", r->failed,
             r->failed == 1 ? "" : "s", room);
}

void st_add_late(st_table *t, const char *op, const char *prec, const char *what)
{
    char text[120];
    snprintf(text, sizeof text, "not run: the %.3g s budget was spent after %.3g s (%.50s)", t->deadline - t->start, nst_now() - t->start,
             what);
    st_row *r = st_add(t, op, prec, 0, 0, 0, 0, text);
    if (r) r->late = 1;
}

int st_late(const st_table *t) { return t->deadline > 0 && nst_now() > t->deadline; }

/* ---- the GPU --------------------------------------------------------------------------------- */

void st_gpu(st_table *t, const nst_backend *be, const char *run_device)
{
    char why[200];
    int ngpu = 0;
    nst_cuda_state state = nst_cuda_probe_state(&ngpu, why, sizeof why);
    const char *prec = nst_precision_name(be->precision);
    if (be->gpu_stream) {
        st_add(t, "GPU", prec, 1, 0, 0, 0, be->description);
    } else if (strcmp(run_device, "cpu") == 0) { /* chosen: whatever a GPU here would make of it */
        st_add(t, "GPU", prec, 0, 0, 0, 0, "run.device = cpu");
    } else if (state == NST_CUDA_UNUSABLE) {
        /* run.device = auto renders on the CPU here, as it says; a machine whose GPU nothing can use fails the self-test */
        char what[120];
        snprintf(what, sizeof what, "%.119s", why);
        st_add(t, "GPU", prec, 1, 1, INFINITY, 0, what);
    } else {
        char what[120];
        snprintf(what, sizeof what, "%.119s", state == NST_CUDA_USABLE ? "not used" : why);
        st_add(t, "GPU", prec, 0, 0, 0, 0, what);
    }
}

/* ---- the op harness ------------------------------------------------------------------------- */

/* One pass: a backend in precision p (bias+ReLU fused into cuDNN's call or not), every op of the
 * harness against ref, or (contracts) only the tiling's contracts on it: the CPU in fp32, which is
 * ref. A backend that does not open is one failed row naming why, or, when the precision is
 * optional on this device (bf16 on a CPU without it), a row that does not apply. */
static void harness_pass(st_table *t, nst_backend *ref, nst_backend_options o, nst_precision p, int fused, int optional, int contracts)
{
    char label[24];
    snprintf(label, sizeof label, "%s%s%s", nst_precision_name(p), fused ? "" : " unfused", o.conv_timed ? " timed" : "");
    if (st_late(t)) {
        st_add_late(t, "op harness", label, "every op");
        return;
    }
    o.precision = p;
    nst_backend *dev = NULL;
    const char *had = getenv("NSTBATCH_CUDA_FUSE"); /* read when the CUDA backend opens: the user's, put back after */
    char user[64] = "";
    if (had) snprintf(user, sizeof user, "%s", had);
    if (!fused) setenv("NSTBATCH_CUDA_FUSE", "0", 1);
    nst_status s = nst_backend_open_with(&o, &dev);
    if (had) setenv("NSTBATCH_CUDA_FUSE", user, 1);
    else unsetenv("NSTBATCH_CUDA_FUSE");
    if (s != NST_OK) {
        char why[120];
        snprintf(why, sizeof why, "%.119s", nst_fail_message());
        if (optional) st_add(t, "op harness", label, 0, 0, 0, 0, why);
        else st_add(t, "open the backend", label, 1, 1, INFINITY, 0, why);
        return;
    }
    nst_check c;
    memset(&c, 0, sizeof c);
    /* the quick table (make test's test_backend_ops runs the full one); failures are counted in
     * the rows, and the table shows each row's worst case */
    c.ref = ref, c.dev = dev, c.quick = 1, c.deadline = t->deadline;
    s = contracts ? nst_check_contracts(&c) : nst_check_ops(&c);
    for (int i = 0; i < c.nrows; i++) {
        const nst_check_row *r = &c.row[i];
        st_add(t, r->op, label, r->cases, r->failed, r->err, r->tol, r->worst);
    }
    if (c.skipped[0]) st_add_late(t, "op harness", label, c.skipped);
    if (s != NST_OK) st_add(t, "stream after the ops", label, 1, 1, INFINITY, 0, nst_fail_message());
    nst_backend_close(dev);
}

nst_status st_harness(st_table *t, const st_device *d, const nst_config *cfg, int threads)
{
    nst_backend *ref = NULL;
    NST_TRY(nst_backend_open("cpu", threads, &ref));
    const int gpu = d->gpu >= 0;
    nst_backend_options o = {.device = gpu ? "cuda" : "cpu", .threads = threads, .precision = NST_PREC_AUTO, .gpu = gpu ? d->gpu : 0,
                             .gpu_sharers = d->sharers, .memory_gb = cfg->run_memory_gb, .collective_ranks = 1};
    if (gpu) {
        /* every precision; bf16 unfused; bf16 with the algorithms gpu.conv_algorithms = timed takes
         * (Find's, no file): the same tolerances */
        static const struct { nst_precision p; int fused, timed; } pass[] = {
            {NST_PREC_FP32, 1, 0}, {NST_PREC_TF32, 1, 0}, {NST_PREC_BF16, 1, 0}, {NST_PREC_FP16, 1, 0}, {NST_PREC_BF16, 0, 0}, {NST_PREC_BF16, 1, 1}};
        _Static_assert(sizeof pass / sizeof *pass <= ST_HARNESS_PASSES, "the self-test's table has room for ST_HARNESS_PASSES passes");
        for (size_t i = 0; i < sizeof pass / sizeof *pass; i++) {
            o.conv_timed = pass[i].timed;
            harness_pass(t, ref, o, pass[i].p, pass[i].fused, 0, 0);
        }
    } else {
        harness_pass(t, ref, o, NST_PREC_FP32, 1, 0, 1); /* the CPU's fp32 is the reference itself: its contracts */
        harness_pass(t, ref, o, NST_PREC_BF16, 1, 1, 0);
    }
    nst_backend_close(ref);
    return NST_OK;
}

/* ---- a render's first objective: on tiles against one tile, and against the CPU in fp32 ------------- */

/* 6x4 tiles of 32 px whose windows (the 24 px halo of relu3_1) are cut from the image: the halo
 * exchange and the owned-region Gram sums take part, and windows of several shapes meet the
 * convolutions. The first objective (loss terms and image gradient before any step) is judged,
 * not pixels after Adam steps: its first steps follow the gradient's sign, so rounding
 * differences grow (kernels/check/check.h, nst_first_verdict_judge). The input is noise
 * (optim.init = noise): a smooth image has ties in max-pooling that rounding breaks either way. */
#define RENDER_W 192
#define RENDER_H 128
#define RENDER_TILE "32"
#define RENDER_DEPTH 5 /* convolutions to relu3_1 */

/* smooth colour fields with edges: every layer of the network sees structure */
static nst_status synthetic(nst_image *img, int w, int h, double f)
{
    NST_TRY(nst_image_alloc(img, w, h));
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int c = 0; c < 3; c++) {
                double v = 0.5 + 0.35 * sin(f * (x * (0.11 + 0.05 * c) + y * (0.07 - 0.02 * c))) + ((x / 13 + y / 11) % 2 ? 0.1 : -0.1);
                img->px[((size_t)y * w + x) * 3 + c] = (float)(v < 0 ? 0 : v > 1 ? 1 : v);
            }
    return NST_OK;
}

typedef struct {
    nst_config cfg;
    nst_loss_spec spec;
    nst_weights w;
    nst_image content, style;
} first_case;

typedef struct {
    double loss[NST_LOSS_NTERMS];
    nst_image grad;
} first_result;

static nst_status case_open(first_case *fc, int threads)
{
    memset(fc, 0, sizeof *fc);
    nst_config_defaults(&fc->cfg);
    char th[48];
    snprintf(th, sizeof th, "run.threads=%d", threads);
    const char *sets[] = {"optim.iterations=1", "optim.init=noise", "run.print_every=0", th, "style.layers=relu1_1,relu2_1,relu3_1",
                          "content.layers=relu2_2"};
    for (size_t i = 0; i < sizeof sets / sizeof *sets; i++) NST_TRY(nst_config_set(&fc->cfg, sets[i]));
    NST_TRY(nst_loss_spec_parse(&fc->cfg, &fc->spec));
    NST_TRY(nst_weights_random(&fc->w, 7, 8));
    nst_status s = synthetic(&fc->content, RENDER_W, RENDER_H, 1.0);
    if (s == NST_OK) s = synthetic(&fc->style, 64, 64, 2.3);
    return s;
}

static void case_close(first_case *fc)
{
    nst_image_free(&fc->content), nst_image_free(&fc->style);
    nst_weights_free(&fc->w);
}

/* The case rendered on be with the case's settings and sets[0..n) over them, quietly: the image
 * into out, the stats into st, the first gradient into grad (NULL: not kept). */
static nst_status case_render(const first_case *fc, const char *const *sets, size_t n, nst_backend *be, nst_image *out,
                              nst_render_stats *st, nst_image *grad)
{
    nst_config c = fc->cfg;
    for (size_t i = 0; i < n; i++) NST_TRY(nst_config_set(&c, sets[i]));
    memset(st, 0, sizeof *st);
    nst_log_set_quiet(1);
    nst_status s = nst_render_image(&c, &fc->spec, be, &fc->w, &fc->content, &fc->style, NULL, out, st, grad);
    nst_log_set_quiet(0);
    return s;
}

/* One iteration on tiles of `tile` px on be: the first objective into r (r->grad allocated). */
static nst_status first_at(const first_case *fc, const char *tile, nst_backend *be, first_result *r)
{
    char set[64];
    snprintf(set, sizeof set, "tiling.tile_size=%s", tile);
    const char *sets[] = {set};
    nst_render_stats st;
    nst_image out = {0};
    nst_status s = case_render(fc, sets, 1, be, &out, &st, &r->grad);
    nst_image_free(&out);
    const double l[] = {st.first.total, st.first.content, st.first.style, st.first.tv, st.first.temporal};
    memcpy(r->loss, l, sizeof l);
    return s;
}

/* A row judging got against ref (exact: bit for bit, a tile-exact backend against itself). */
static void judge_row(st_table *t, const char *op, nst_precision p, int exact, const first_result *ref, const first_result *got,
                      const char *what)
{
    nst_first_verdict v;
    nst_first_verdict_judge(p, RENDER_DEPTH, exact, ref->loss, got->loss, ref->grad.px, got->grad.px, (size_t)RENDER_W * RENDER_H * 3, &v);
    char text[200], row[120];
    nst_first_verdict_describe(&v, text, sizeof text);
    snprintf(row, sizeof row, "%.30s; %.87s", what, text);
    /* the row's error is the share of samples apart, or the loss's error when that is what failed */
    int loss_bad = !(v.loss_err <= v.loss_tol);
    double err = loss_bad ? v.loss_err : exact ? v.max_err : v.share, tol = loss_bad ? v.loss_tol : exact ? 0 : v.max_share;
    st_add(t, op, nst_precision_name(p), 1, !v.ok, isfinite(v.l2) ? err : INFINITY, tol, row);
}

nst_status st_render(st_table *t, nst_backend *be, int threads)
{
    const nst_precision p = be->precision;
    first_case fc;
    first_result one = {0}, many = {0}, cpu = {0};
    nst_status s = case_open(&fc, threads);
    if (s == NST_OK) s = first_at(&fc, "256", be, &one);
    if (s == NST_OK) s = first_at(&fc, RENDER_TILE, be, &many);
    char what[64];
    snprintf(what, sizeof what, "%dx%d, " RENDER_TILE " px tiles", RENDER_W, RENDER_H);
    if (s == NST_OK) judge_row(t, "first objective on tiles", p, be->tiles_exact, &one, &many, what);
    /* the device against the CPU in fp32, unless it is that */
    if (s == NST_OK && (be->gpu_stream || p != NST_PREC_FP32)) {
        nst_backend *ref = NULL;
        s = nst_backend_open("cpu", threads, &ref);
        if (s == NST_OK) s = first_at(&fc, "256", ref, &cpu);
        if (ref) nst_backend_close(ref);
        if (s == NST_OK) judge_row(t, "first objective vs CPU fp32", p, 0, &cpu, &one, "one tile");
    } else if (s == NST_OK) {
        st_add(t, "first objective vs CPU fp32", nst_precision_name(p), 0, 0, 0, 0, "the device is the CPU in fp32: the reference itself");
    }
    if (s != NST_OK) {
        char why[120];
        snprintf(why, sizeof why, "%.119s", nst_fail_message());
        st_add(t, "first objective on tiles", nst_precision_name(p), 1, 1, INFINITY, 0, why);
    }
    nst_image_free(&one.grad), nst_image_free(&many.grad), nst_image_free(&cpu.grad);
    case_close(&fc);
    return NST_OK;
}

/* ---- CUDA graphs ---------------------------------------------------------------------------- */

/* gpu.graphs on the device the way a render uses it: GRAPH_ITERS Adam iterations on the tiles
 * above, the quiet ones from the third recorded once and replayed, against the same render with
 * every iteration run as it is: the same kernels in the same order, so the same bits
 * (tests/test_gpu_render.sh checks more: two levels, previews, 2 ranks). A recording that fails
 * fails the row with why: gpu.graphs would do nothing on this device. */
#define GRAPH_ITERS 8

static nst_status graph_render(const first_case *fc, nst_backend *be, int on, nst_image *out, nst_render_stats *st)
{
    char iters[48];
    snprintf(iters, sizeof iters, "optim.iterations=%d", GRAPH_ITERS);
    const char *sets[] = {iters, "optim.method=adam", "tiling.tile_size=" RENDER_TILE, on ? "gpu.graphs=true" : "gpu.graphs=false"};
    return case_render(fc, sets, sizeof sets / sizeof *sets, be, out, st, NULL);
}

/* Values of a and b (n each) whose bits differ, and the largest difference. */
static size_t bits_apart(const float *a, const float *b, size_t n, double *max)
{
    size_t k = 0;
    *max = 0;
    for (size_t i = 0; i < n; i++)
        if (memcmp(&a[i], &b[i], sizeof *a) != 0) {
            k++;
            const double d = fabs((double)a[i] - (double)b[i]);
            *max = d > *max || d != d ? d : *max;
        }
    return k;
}

nst_status st_graphs(st_table *t, nst_backend *be, int threads)
{
    const char *op = "CUDA graphs: replay == run", *prec = nst_precision_name(be->precision);
    if (!be->ops->graph_begin) {
        st_add(t, op, prec, 0, 0, 0, 0, "this backend runs its ops as they are called: no graphs");
        return NST_OK;
    }
    if (be->profile) {
        st_add(t, op, prec, 0, 0, 0, 0, "NSTBATCH_PROFILE times op by op: no graphs");
        return NST_OK;
    }
    first_case fc;
    nst_image run = {0}, replay = {0};
    nst_render_stats a, b;
    nst_status s = case_open(&fc, threads);
    if (s == NST_OK) s = graph_render(&fc, be, 0, &run, &a);
    if (s == NST_OK) s = graph_render(&fc, be, 1, &replay, &b);
    char row[120];
    if (s == NST_OK) {
        double max;
        const size_t n = (size_t)RENDER_W * RENDER_H * 3, k = bits_apart(run.px, replay.px, n, &max);
        if (b.graph_replays == 0)
            snprintf(row, sizeof row, "not recorded: %.100s", b.graphs_off[0] ? b.graphs_off : "no iteration was replayed");
        else
            snprintf(row, sizeof row, "%lld of %d iterations replayed; %zu of %zu values apart", b.graph_replays, GRAPH_ITERS, k, n);
        st_add(t, op, prec, 1, b.graph_replays == 0 || k > 0, k ? max : b.graph_replays ? 0 : INFINITY, 0, row);
    } else {
        snprintf(row, sizeof row, "%.119s", nst_fail_message());
        st_add(t, op, prec, 1, 1, INFINITY, 0, row);
    }
    nst_image_free(&run), nst_image_free(&replay);
    case_close(&fc);
    return NST_OK;
}

/* ---- the Gram allreduce -------------------------------------------------------------------- */

/* A Gram's worth of sums (512 x 512, the widest style layer) and a few more, so no path rounds
 * the count to a convenient size. Rank r holds (r + 1) k 2^-10: every partial sum is exact in
 * double, so any path, in any order, must give the exact total. */
#define AR_N ((size_t)512 * 512 + 7)

static double ar_value(size_t i, int rank) { return (double)(rank + 1) * (double)(i % 1021 + 1) * 0x1p-10; }

/* One allreduce through coll.sum_grams as d stands (NCCL or not), compared on every rank. */
static nst_status ar_once(st_table *t, nst_device *d, double *dev, double *host, const char *op, const char *prec)
{
    nst_backend *be = d->be;
    const int R = nst_comm_size(), me = nst_comm_rank();
    for (size_t i = 0; i < AR_N; i++) host[i] = ar_value(i, me);
    nst_status s = be->ops->write(be, dev, host, AR_N * sizeof(double));
    nst_collectives coll = nst_device_collectives(d);
    if (nst_comm_check(s) == NST_OK) /* every rank enters the collective, or none */
        s = coll.sum_grams(coll.ctx, dev, AR_N);
    else if (s == NST_OK)
        s = nst_fail(NST_ERUNTIME, "another rank could not write its sums");
    if (s == NST_OK) s = be->ops->read(be, host, dev, AR_N * sizeof(double));
    char what[120];
    if (s != NST_OK) {
        snprintf(what, sizeof what, "%.119s", nst_fail_message());
        st_add(t, op, prec, 1, 1, INFINITY, 0, what);
        return s; /* recorded: the other paths still run */
    }
    double worst = 0, big = 0;
    for (size_t i = 0; i < AR_N; i++) {
        double want = (double)R * (R + 1) / 2 * (double)(i % 1021 + 1) * 0x1p-10;
        big = fmax(big, want);
        worst = isfinite(host[i]) ? fmax(worst, fabs(host[i] - want)) : INFINITY;
    }
    snprintf(what, sizeof what, "%zu doubles over %d ranks, against the exact sum", AR_N, R);
    st_add(t, op, prec, 1, !(worst == 0), worst / big, 0, what);
    return NST_OK;
}

/* ---- the halo exchange in backend memory ----------------------------------------------------- */

#define HX_N ((size_t)3 * 4099) /* floats: a 4099-pixel rect, odd, so no path rounds the count */

static float hx_value(size_t i, int rank) { return (float)((rank + 1) * 4096 + (int)(i % 997)); }

/* One ring through coll.exchange: each rank sends to the next and receives from the one before. */
static nst_status hx_ring(nst_backend *be, const nst_collectives *coll, float *send, float *recv, float *host, int *wrong)
{
    const int R = nst_comm_size(), me = nst_comm_rank(), from = (me + R - 1) % R;
    for (size_t i = 0; i < HX_N; i++) host[i] = hx_value(i, me);
    nst_status s = be->ops->write(be, send, host, HX_N * sizeof(float));
    if (s == NST_OK) s = be->ops->zero(be, recv, HX_N * sizeof(float));
    if (nst_comm_check(s) != NST_OK) /* every rank enters the exchange, or none */
        return s != NST_OK ? s : nst_fail(NST_ERUNTIME, "another rank could not write its message");
    const nst_peer_msg out = {(me + 1) % R, send, HX_N * sizeof(float)}, in = {from, recv, HX_N * sizeof(float)};
    NST_TRY(coll->exchange(coll->ctx, &out, 1, &in, 1));
    NST_TRY(be->ops->read(be, host, recv, HX_N * sizeof(float)));
    *wrong = 0;
    for (size_t i = 0; i < HX_N; i++) *wrong += host[i] != hx_value(i, from);
    return NST_OK;
}

nst_status st_halo(st_table *t, nst_device *d)
{
    nst_backend *be = d->be;
    const char *prec = nst_precision_name(be->precision), *op = "halo exchange (device)";
    nst_collectives coll = nst_device_collectives(d);
    double without = !coll.exchange; /* agreed: a test hook may be set on some ranks only */
    if (nst_comm_size() > 1) NST_TRY(nst_comm_sum_doubles(&without, 1));
    if (nst_comm_size() == 1 || without > 0) {
        st_add(t, op, prec, 0, 0, 0, 0, nst_comm_size() == 1 ? "one rank: run the self-test under mpirun or srun with 2 or more"
                                                             : "the halos go through host memory here (no NCCL between distinct GPUs)");
        return NST_OK;
    }
    float *send = NULL, *recv = NULL, *host = nst_alloc_array(HX_N, sizeof(float), "the halo check");
    nst_status s = host ? be->ops->alloc(be, HX_N * sizeof(float), (void **)&send) : NST_ENOMEM;
    if (s == NST_OK) s = be->ops->alloc(be, HX_N * sizeof(float), (void **)&recv);
    int wrong = -1;
    if (nst_comm_check(s) == NST_OK) /* every rank has its buffers, or none goes on */
        s = hx_ring(be, &coll, send, recv, host, &wrong);
    else if (s == NST_OK)
        s = nst_fail(NST_ERUNTIME, "another rank could not allocate its buffers");
    char what[120];
    if (s != NST_OK) snprintf(what, sizeof what, "%.119s", nst_fail_message());
    else snprintf(what, sizeof what, "%zu floats from rank %d of %d, %d wrong", HX_N, (nst_comm_rank() + nst_comm_size() - 1) % nst_comm_size(),
                  nst_comm_size(), wrong);
    st_add(t, op, prec, 1, s != NST_OK || wrong != 0, s != NST_OK || wrong ? INFINITY : 0, 0, what);
    if (send) be->ops->free(be, send);
    if (recv) be->ops->free(be, recv);
    nst_free(host);
    return NST_OK;
}

nst_status st_allreduce(st_table *t, nst_device *d)
{
    nst_backend *be = d->be;
    const char *prec = nst_precision_name(be->precision);
    if (nst_comm_size() == 1) {
        st_add(t, "gram allreduce", prec, 0, 0, 0, 0, "one rank: run the self-test under mpirun or srun with 2 or more");
        return NST_OK;
    }
    double *dev = NULL, *host = nst_alloc_array(AR_N, sizeof(double), "the allreduce check");
    nst_status s = host ? be->ops->alloc(be, AR_N * sizeof(double), (void **)&dev) : NST_ENOMEM;
    if (s != NST_OK) { /* this rank's failed row; no rank enters the allreduce */
        char what[120];
        snprintf(what, sizeof what, "%.119s", nst_fail_message());
        st_add(t, "gram allreduce", prec, 1, 1, INFINITY, 0, what);
    }
    if (nst_comm_check(s) == NST_OK) {
        if (!be->gpu_stream) {
            ar_once(t, d, dev, host, "gram allreduce (MPI)", prec);
        } else {
            int nccl = d->nccl;
            if (nccl) ar_once(t, d, dev, host, "gram allreduce (NCCL)", prec);
            d->nccl = 0; /* the path shared GPUs take: read back, MPI, write */
            ar_once(t, d, dev, host, "gram allreduce (host-staged)", prec);
            d->nccl = nccl;
            if (!nccl) st_add(t, "gram allreduce (NCCL)", prec, 0, 0, 0, 0, d->gram_path);
        }
    }
    if (dev) be->ops->free(be, dev);
    nst_free(host);
    return NST_OK;
}

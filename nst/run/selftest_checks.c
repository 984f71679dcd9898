/* nst/run/selftest_checks.c: the self-test's three checks (see selftest.h): the op harness in every
 * precision of the rank's device, a render on one tile against several, and the Gram allreduce. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../io/image.h"
#include "../../util/log.h"
#include "../../util/mem.h"
#include "../../mpi/comm.h"
#include "../model/random_vgg.h"
#include "../optim/render.h"
#include "selftest_impl.h"
#include "../model/spec.h"
#include "../../kernels/cuda/cuda.h"

void st_add(st_table *t, const char *op, const char *prec, int cases, int failed, double err, double tol, const char *worst)
{
    if (t->n == ST_MAX_ROWS) return; /* the table is sized for every row the checks make */
    st_row *r = &t->row[t->n++];
    memset(r, 0, sizeof *r);
    snprintf(r->op, sizeof r->op, "%s", op);
    snprintf(r->prec, sizeof r->prec, "%s", prec);
    snprintf(r->worst, sizeof r->worst, "%.119s", worst);
    r->cases = cases, r->failed = failed, r->err = err, r->tol = tol, r->rank = nst_comm_rank();
}

/* ---- the GPU --------------------------------------------------------------------------------- */

void st_gpu(st_table *t, const nst_backend *be, const char *run_device)
{
    char why[200];
    int ngpu = 0;
    nst_cuda_state state = nst_cuda_probe_state(&ngpu, why, sizeof why);
    const char *prec = nst_precision_name(be->precision);
    if (be->gpu_stream) {
        st_add(t, "GPU", prec, 1, 0, 0, 0, be->description);
    } else if (state == NST_CUDA_UNUSABLE) {
        /* run.device = auto renders on the CPU here, as it says; a machine whose GPU nothing can use fails the self-test */
        char what[120];
        snprintf(what, sizeof what, "%.119s", why);
        st_add(t, "GPU", prec, 1, 1, INFINITY, 0, what);
    } else {
        char what[120];
        snprintf(what, sizeof what, "%.119s", strcmp(run_device, "cpu") == 0 ? "run.device = cpu" : state == NST_CUDA_USABLE ? "not used" : why);
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
    snprintf(label, sizeof label, "%s%s", nst_precision_name(p), fused ? "" : " unfused");
    if (!fused) setenv("NSTBATCH_CUDA_FUSE", "0", 1); /* read when the CUDA backend opens */
    o.precision = p;
    nst_backend *dev = NULL;
    nst_status s = nst_backend_open_with(&o, &dev);
    unsetenv("NSTBATCH_CUDA_FUSE");
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
    c.ref = ref, c.dev = dev, c.quick = 1;
    s = contracts ? nst_check_contracts(&c) : nst_check_ops(&c);
    for (int i = 0; i < c.nrows; i++) {
        const nst_check_row *r = &c.row[i];
        st_add(t, r->op, label, r->cases, r->failed, r->err, r->tol, r->worst);
    }
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
        static const nst_precision p[] = {NST_PREC_FP32, NST_PREC_TF32, NST_PREC_BF16, NST_PREC_FP16};
        for (int i = 0; i < 4; i++) harness_pass(t, ref, o, p[i], 1, 0, 0);
        harness_pass(t, ref, o, NST_PREC_BF16, 0, 0, 0);
    } else {
        harness_pass(t, ref, o, NST_PREC_FP32, 1, 0, 1); /* the CPU's fp32 is the reference itself: its contracts */
        harness_pass(t, ref, o, NST_PREC_BF16, 1, 1, 0);
    }
    nst_backend_close(ref);
    return NST_OK;
}

/* ---- a render on one tile against several ----------------------------------------------------- */

/* 3x2 tiles of 64 px whose windows (a 24 px halo for these layers) are cut from the image, not
 * all of it: the halo exchange and the owned-region Gram sums take part, and windows of several
 * shapes meet the convolutions */
#define RENDER_W 192
#define RENDER_H 128
#define RENDER_TILE "64"
#define RENDER_STEPS 4

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

static nst_status render_at(const nst_config *base, const char *tile, const nst_loss_spec *spec, nst_backend *be, const nst_weights *w,
                            const nst_image *content, const nst_image *style, nst_image *out)
{
    nst_config c = *base;
    char set[64];
    snprintf(set, sizeof set, "tiling.tile_size=%s", tile);
    NST_TRY(nst_config_set(&c, set));
    nst_render_stats st;
    nst_log_set_quiet(1);
    nst_status s = nst_render_image(&c, spec, be, w, content, style, NULL, out, &st);
    nst_log_set_quiet(0);
    return s;
}

/* The largest |difference| of two images (infinite on NaN or Inf). */
static double max_diff(const nst_image *a, const nst_image *b)
{
    double m = 0;
    for (size_t i = 0; i < (size_t)a->w * a->h * 3; i++) {
        if (!isfinite(a->px[i]) || !isfinite(b->px[i])) return INFINITY;
        m = fmax(m, fabs((double)a->px[i] - b->px[i]));
    }
    return m;
}

nst_status st_render(st_table *t, nst_backend *be, int threads)
{
    nst_config c;
    nst_config_defaults(&c);
    char th[48], it[48];
    snprintf(th, sizeof th, "run.threads=%d", threads);
    snprintf(it, sizeof it, "optim.iterations=%d", RENDER_STEPS);
    const char *sets[] = {it, "run.print_every=0", th, "style.layers=relu1_1,relu2_1,relu3_1", "content.layers=relu2_2"};
    for (size_t i = 0; i < sizeof sets / sizeof *sets; i++) NST_TRY(nst_config_set(&c, sets[i]));
    nst_loss_spec spec;
    NST_TRY(nst_loss_spec_parse(&c, &spec));
    nst_weights w;
    NST_TRY(nst_weights_random(&w, 7, 8));
    nst_image content = {0}, style = {0}, one = {0}, many = {0};
    nst_status s = synthetic(&content, RENDER_W, RENDER_H, 1.0);
    if (s == NST_OK) s = synthetic(&style, 64, 64, 2.3);
    if (s == NST_OK) s = render_at(&c, "256", &spec, be, &w, &content, &style, &one);
    if (s == NST_OK) s = render_at(&c, RENDER_TILE, &spec, be, &w, &content, &style, &many);
    const char *prec = nst_precision_name(be->precision);
    char what[120];
    if (s == NST_OK && be->tiles_exact) { /* the same bits */
        double e = max_diff(&one, &many);
        snprintf(what, sizeof what, "%dx%d, %d Adam steps, " RENDER_TILE " px tiles against one tile", RENDER_W, RENDER_H, RENDER_STEPS);
        st_add(t, "render on 6 tiles", prec, 1, !(e == 0), e, 0, what);
    } else if (s == NST_OK) { /* convolutions that may differ with the window's shape: the share of samples apart */
        nst_render_verdict v;
        nst_tiled_render_verdict(be->precision, one.px, many.px, (size_t)RENDER_W * RENDER_H * 3, &v);
        snprintf(what, sizeof what, "share of samples over %.3g apart (largest %.3g); %dx%d, %d Adam steps, " RENDER_TILE " px tiles",
                 v.threshold, v.max_diff, RENDER_W, RENDER_H, RENDER_STEPS);
        st_add(t, "render on 6 tiles", prec, 1, !v.ok, isfinite(v.max_diff) ? v.fraction : INFINITY, v.max_fraction, what);
    } else {
        snprintf(what, sizeof what, "%.119s", nst_fail_message());
        st_add(t, "render on 6 tiles", prec, 1, 1, INFINITY, 0, what);
    }
    nst_image_free(&content), nst_image_free(&style), nst_image_free(&one), nst_image_free(&many);
    nst_weights_free(&w);
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

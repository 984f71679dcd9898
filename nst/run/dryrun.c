/* nst/run/dryrun.c: --dry-run: every level's plan, memory against the budget, a time estimate from a
 * calibration on this machine, and the output files, without rendering anything (see dryrun.h).
 *
 * The estimate. A level's time is dominated by its iterations, and an iteration's time by the
 * window pixels of the busiest rank (the halos included): each rank times a few iterations of the
 * whole objective (forward, Gram sums and allreduce, backward, Adam-free; the fastest counts) on a calibration tile
 * of its own backend, all ranks at once as in a render, and the slowest rank's seconds per window
 * pixel scale to every level: iterations x the busiest rank's window pixels x that, x 1.5 when
 * the Gram needs two passes. Each level adds what does not repeat: forward passes for the
 * content targets, the final loss and the style targets (the busiest rank's style windows), half
 * an iteration per pixel each; the first touch of the level's fresh buffers (seconds per byte,
 * timed on a buffer of the backend); and the kernels' set-up for new shapes (the warm-up
 * iteration's excess over a steady one, once for the windows and once per style image). The tile
 * is at most 512 x 512 px, so the calibration takes seconds whatever the print's size. */
#include "dryrun.h"

#include <math.h>
#include <string.h>

#include "../../mpi/comm.h"
#include "../../util/log.h"
#include "../../util/mem.h"
#include "../../util/timer.h"
#include "../optimise/objective.h"

#define CAL_SIDE 512
#define CAL_ITERS 2
#define CAL_TOUCH (64u << 20) /* bytes whose first touch is timed */

static double gib(double b) { return b / (double)(1ull << 30); }

typedef struct {
    double per_px;   /* seconds per window pixel of one iteration */
    double setup;    /* seconds of the kernels' set-up for a new shape */
    double per_byte; /* seconds per byte of a fresh buffer's first touch */
} calibration;

/* Seconds per byte to allocate, touch and free a fresh buffer of the backend. */
static nst_status time_first_touch(nst_backend *be, double *per_byte)
{
    void *p = NULL;
    double t0 = nst_now();
    NST_TRY(be->ops->alloc(be, CAL_TOUCH, &p));
    nst_status s = be->ops->zero(be, p, CAL_TOUCH);
    if (s == NST_OK) s = be->ops->synchronize(be);
    be->ops->free(be, p);
    *per_byte = (nst_now() - t0) / CAL_TOUCH;
    return s;
}

/* This rank's calibration on its backend (a synthetic S x S tile). */
static nst_status calibrate(const nst_levels_ctx *c, int side, calibration *cal)
{
    nst_backend *be = c->be;
    NST_TRY(time_first_touch(be, &cal->per_byte));
    const size_t n = (size_t)side * side * 3;
    float *img = nst_alloc_array(n, sizeof(float), "calibration image");
    if (!img) return NST_ENOMEM;
    for (size_t i = 0; i < n; i++) img[i] = 0.5f + 0.4f * sinf(0.013f * (float)i); /* smooth, not constant */
    nst_net net;
    nst_objective obj;
    nst_tile t;
    nst_collectives none = {0};
    nst_rect whole = nst_rect_make(0, 0, side, side);
    nst_loss_terms terms;
    int have_net = 0, have_obj = 0, have_tile = 0;
    nst_status s = nst_net_create(be, c->weights, c->spec->deepest, c->spec->pool, &net);
    have_net = s == NST_OK;
    if (s == NST_OK) s = nst_objective_init(&obj, c->spec, &net, none, NST_GRAM_RESIDENT, NULL, side, side);
    have_obj = s == NST_OK;
    if (s == NST_OK) s = nst_objective_set_style(&obj, img, side, side);
    if (s == NST_OK) s = nst_tile_init(&obj, &t, 0, whole, whole, 0);
    have_tile = s == NST_OK;
    if (s == NST_OK) s = nst_tile_set_content(&obj, &t, img);
    if (s == NST_OK) s = be->ops->upload(be, t.img.data, img, n, NST_F32);
    double warm = 0, steady = INFINITY;
    for (int it = -1; s == NST_OK && it < CAL_ITERS; it++) { /* one warm-up, then the fastest timed one: */
        double t0 = nst_now();                                /* a shared machine only ever adds time */
        s = nst_objective_eval(&obj, &t, 1, 1, NULL, &terms);
        if (s == NST_OK) s = be->ops->synchronize(be);
        double dt = nst_now() - t0;
        if (it < 0)
            warm = dt;
        else if (dt < steady)
            steady = dt;
    }
    if (s == NST_OK) {
        cal->per_px = steady / ((double)side * side);
        cal->setup = warm > steady ? warm - steady : 0;
    }
    if (have_tile) nst_tile_free(&obj, &t);
    if (have_obj) nst_objective_free(&obj);
    if (have_net) nst_net_destroy(&net);
    nst_free(img);
    return s;
}

/* The busiest rank's window pixels in L. */
static double busiest_windows(const nst_layout *L)
{
    double most = 0;
    for (int r = 0; r < L->nranks; r++) {
        double px = 0;
        for (int t = 0; t < L->grid.ntiles; t++)
            if (L->owner[t] == r) px += (double)nst_rect_area(nst_grid_window(&L->grid, t));
        most = px > most ? px : most;
    }
    return most;
}

/* The output files and their sizes before compression (the reduced levels add a third). */
static void describe_outputs(const nst_output_spec *out, int W, int H)
{
    static const char *names[NST_OUT_NFORMATS] = {"TIFF", "HDF5", "PNG", "JPEG", "DZI"};
    double raw = (double)W * H * 3 * (out->bits / 8);
    for (int f = 0; f < NST_OUT_NFORMATS; f++) {
        if (!out->want[f]) continue;
        double b = raw * (out->pyramid && f != NST_OUT_PNG && f != NST_OUT_JPEG ? 4.0 / 3.0 : 1.0);
        nst_info("         %-4s %s: %dx%d, %d-bit, %.1f MB before compression%s\n", names[f], out->path[f], W, H, out->bits, b / 1e6,
                 f == NST_OUT_TIFF && b > 4.0e9 ? " (BigTIFF)" : "");
    }
    if (out->preview_path[0]) nst_info("         preview %s: %d px long side\n", out->preview_path, out->preview_side);
}

/* Level k's seconds on layout L from the slowest ranks' calibration (see the top of the file);
 * *iter: one iteration's. */
static nst_status level_seconds(const nst_levels_ctx *c, const nst_level_plan *p, int k, const nst_layout *L, const calibration *cal,
                                double *secs, double *iter)
{
    double win = busiest_windows(L), style_px = 0;
    size_t style_bytes = 0;
    if (c->spec->nstyle && c->styles)
        NST_TRY(nst_style_plan(c->cfg, c->spec, c->shapes, c->styles, p->w[k] > p->h[k] ? p->w[k] : p->h[k],
                               nst_layout_style_budget(L, c->be, c->budget), &style_px, &style_bytes));
    *iter = cal->per_px * win * (L->gram == NST_GRAM_TWO_PASS ? 1.5 : 1.0);
    *secs = (double)p->iterations[k] * *iter + 0.5 * cal->per_px * (2 * win + style_px) +
            cal->setup * (1 + (c->styles ? c->styles->n : 0)) + cal->per_byte * (double)(L->mem_max + style_bytes);
    return NST_OK;
}

/* Every rank's calibration; *cal: the slowest rank's figures. Collective. */
static nst_status calibrate_all(const nst_levels_ctx *c, int side, calibration *cal)
{
    double lo, sum;
    NST_TRY(nst_comm_agree(calibrate(c, side, cal)));
    double v[3] = {cal->per_px, cal->setup, cal->per_byte};
    for (int i = 0; i < 3; i++) NST_TRY(nst_comm_agree(nst_comm_stats(&v[i], &lo, &v[i], &sum, 1)));
    cal->per_px = v[0], cal->setup = v[1], cal->per_byte = v[2];
    return NST_OK;
}

/* Level k's line: its plan, its memory and, with a calibration, its seconds. */
static nst_status describe_level(const nst_levels_ctx *c, const nst_level_plan *p, int k, const nst_layout *L, const calibration *cal,
                                 double *total)
{
    char tiles[96], time[96] = "";
    if (cal) {
        double secs = 0, iter = 0;
        NST_TRY(nst_comm_agree(level_seconds(c, p, k, L, cal, &secs, &iter)));
        *total += secs;
        snprintf(time, sizeof time, "; about %.0f s (%.3g s per iteration)", secs, iter);
    }
    nst_layout_describe_tiles(&L->grid, tiles, sizeof tiles);
    nst_info("level %d/%d: %dx%d, %lld iterations: %s, halo %d px, Gram %s; %.3g GiB per rank (backend %.3g) of %.3g GiB%s%s\n", k + 1, p->n,
             p->w[k], p->h[k], p->iterations[k], tiles, L->grid.halo, nst_gram_strategy_name(L->gram), gib((double)L->mem_total),
             gib((double)L->mem_max), gib((double)L->mem_budget),
             L->lbfgs_unfit ? ", with Adam (optim.method = auto: L-BFGS's state fits no tiling)" : "", time);
    return NST_OK;
}

#define WHY_MAX 2048 /* a failure's message, as util/status.c keeps it */

/* Every level planned once (collective, as the plans are): L[k], or why[k] where level k fits no
 * plan ("" where it fits); the count of those. */
static int plan_levels(const nst_levels_ctx *c, const nst_level_plan *p, nst_layout *L, char (*why)[WHY_MAX])
{
    int unfit = 0;
    for (int k = 0; k < p->n; k++) {
        memset(&L[k], 0, sizeof L[k]);
        why[k][0] = 0;
        if (nst_levels_plan_layout(c, p, k, &L[k]) == NST_OK) continue;
        snprintf(why[k], WHY_MAX, "%s", nst_fail_message());
        nst_fail_clear();
        unfit++;
    }
    return unfit;
}

nst_status nst_dry_run(const nst_levels_ctx *c, const nst_level_plan *p, const nst_output_spec *out, int W, int H)
{
    const double t_start = nst_now();
    int side = CAL_SIDE;
    for (int k = 0; k < p->n; k++) /* no larger than the largest level */
        side = fmin(side, fmax(p->w[k], p->h[k]));
    side = side < 16 ? 16 : side / 16 * 16;
    nst_layout L[NST_MAX_LEVELS];
    char why[NST_MAX_LEVELS][WHY_MAX];
    /* a render that would stop at start gets no calibration: on a CPU with full-width weights it
     * takes most of a minute, for an estimate that would not be printed */
    const int unfit = plan_levels(c, p, L, why);
    calibration cal = {0};
    nst_status s = NST_OK;
    if (!unfit) {
        s = calibrate_all(c, side, &cal);
        if (s == NST_OK)
            nst_info("dry run: nothing is rendered or written. Calibration: %d iterations of a %dx%d tile on every rank (%s): %.3g s per "
                     "megapixel of window per iteration, %.2g s of set-up per new shape, %.2g s per GiB of fresh buffers (the slowest rank)\n",
                     CAL_ITERS, side, side, c->be->description, cal.per_px * 1e6, cal.setup, cal.per_byte * (double)(1u << 30));
    } else {
        nst_info("dry run: nothing is rendered or written; no time estimate (and no calibration): a level fits no plan\n");
    }
    double total = 0;
    for (int k = 0; s == NST_OK && k < p->n; k++) {
        if (why[k][0]) /* say why, and go on with the other levels */
            nst_info("level %d/%d: %dx%d, %lld iterations: does not fit: %s\n", k + 1, p->n, p->w[k], p->h[k], p->iterations[k], why[k]);
        else
            s = describe_level(c, p, k, &L[k], unfit ? NULL : &cal, &total);
    }
    for (int k = 0; k < p->n; k++) nst_layout_free(&L[k]);
    if (s != NST_OK) return s;
    if (!unfit)
        nst_info("estimate: about %.0f s for the %d level%s (the output's writing not included); the dry run took %.1f s\n", total, p->n,
                 p->n == 1 ? "" : "s", nst_now() - t_start);
    nst_info("output:\n");
    describe_outputs(out, W, H);
    if (unfit && p->n == 1)
        return nst_fail(NST_EINPUT, "the render fits no plan within the memory budget (see above): it would stop at start");
    if (unfit)
        return nst_fail(NST_EINPUT, "%d of the %d levels fit%s no plan within the memory budget (see above): this render would stop at start",
                        unfit, p->n, unfit == 1 ? "s" : "");
    return NST_OK;
}

/* nst/render/render.c: the tiled optimisation loop of one image, phase by phase (see render.h);
 * its tiles are in tiles.c, the halo exchange in exchange.c, checkpoints and previews in
 * boundary.c. */
#include "render.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../mpi/comm.h"
#include "../../mpi/watchdog.h"
#include "../../util/log.h"
#include "../../util/mem.h"
#include "../../util/plant.h"
#include "../../util/signals.h"
#include "../../util/timer.h"
#include "../report/first_gradient.h"
#include "../report/progress.h"
#include "../state/checkpoint.h"
#include "exchange.h"
#include "recorded.h"

/* ---- rows without a progress reporter ----------------------------------------------------------- */

static void print_header(void)
{
    nst_info("%10s %12s %12s %12s %12s %9s\n", "iteration", "loss", "content", "style", "tv", "s/iter");
}

static void print_terms(long long it, const nst_loss_terms *t, double spi)
{
    char s[32] = "-";
    if (spi > 0) nst_progress_fmt_spi(spi, s, sizeof s);
    nst_info("%10lld %12.5e %12.5e %12.5e %12.5e %9s\n", it, t->total, t->content, t->style, t->tv, s);
}

/* The test hook NSTBATCH_FAULT=RANK:ITERATION: that rank fails at that iteration's step, as a rank
 * that ran out of memory or lost a device would, so the tests can check that every rank stops
 * with one message instead of hanging. */
static nst_status injected_fault(long long it)
{
    const char *f = getenv("NSTBATCH_FAULT");
    int rank;
    long long at;
    if (f && sscanf(f, "%d:%lld", &rank, &at) == 2 && rank == nst_comm_rank() && at == it)
        return nst_fail(NST_ERUNTIME, "rank %d: injected fault at iteration %lld (NSTBATCH_FAULT=%s)", rank, it, f);
    return NST_OK;
}

/* The test hook NSTBATCH_SLOW=RANK:ITERATION:SECONDS: that rank spends that long computing (not
 * waiting in MPI) before that iteration's step, as a slow but moving rank would, so that the tests
 * can check that the stall watchdog waits for it. RANK:ITERATION+:SECONDS does so before that
 * iteration's step and every later one: a render paced by the clock, not by this machine's speed,
 * for a test that watches a render move (a scraper's) without the CPU to make it long.
 * RANK:ITERATION:xK spends K times the watchdog's limit at that moment (20x the slowest iteration
 * so far, at least the floor), so that the delay outlasts the limit however slow a loaded machine
 * makes the iterations. RANK:ITERATION:hang waits there as if inside MPI, for ever: to the
 * watchdog, a network that stopped under the job. RANK:ITERATION:signal computes there until a
 * signal asks for a stop (10 minutes at most), in a run that did not resume a checkpoint: the run
 * a time limit stops, with no CPU spent to make it long (the resumed run goes on past it).
 * RANK * is every rank. */
static void injected_delay(long long it, int resumed)
{
    const char *f = getenv("NSTBATCH_SLOW");
    int rank = -1, n = 0;
    long long at;
    double secs;
    if (!f || (f[0] == '*' ? sscanf(f, "*:%lld%n", &at, &n) != 1 : sscanf(f, "%d:%lld%n", &rank, &at, &n) != 2)) return;
    const int every = f[n] == '+';
    if (f[n + every] != ':' || (every ? it < at : it != at)) return;
    if (rank >= 0 && rank != nst_comm_rank()) return;
    const char *v = strrchr(f, ':') + 1;
    if (strcmp(v, "hang") == 0) {
        fprintf(stderr, "nstbatch: test hook NSTBATCH_SLOW: rank %d waits as if inside MPI from iteration %lld on\n", nst_comm_rank(), it);
        nst_watchdog_hang();
    }
    if (strcmp(v, "signal") == 0) {
        if (resumed) return;
        fprintf(stderr, "nstbatch: test hook NSTBATCH_SLOW: rank %d computes before iteration %lld until a signal comes\n", nst_comm_rank(), it);
        for (double t0 = nst_now(); !nst_signal_pending() && nst_now() - t0 < 600;) nst_sleep(0.05);
        return;
    }
    if (sscanf(v, "x%lf", &secs) == 1) secs *= nst_watchdog_limit_now();
    else if (sscanf(v, "%lf", &secs) != 1) return;
    if (it == at)
        fprintf(stderr, "nstbatch: test hook NSTBATCH_SLOW: rank %d computes %.1f s before iteration %lld%s\n", nst_comm_rank(), secs, it,
                every ? " and every later one" : "");
    nst_sleep(secs);
}

/* ---- the render, phase by phase ---------------------------------------------------------------- */

/* What one render holds between its phases. */
typedef struct {
    const nst_render_ctx *ctx;
    nst_render_stats *st;
    nst_net net;
    nst_objective obj;
    nst_acts shared;   /* one set of activations for every tile (not resident Gram) */
    nst_exchange ex;
    nst_lbfgs lb;
    nst_stop stop;     /* the level's stopping rule (optim.stop_tolerance) */
    long long stop_at; /* the iteration it ended the level at, before that step; -1: it did not */
    nst_tile_state *ts;
    nst_tile *tiles;
    int have_net, have_obj, have_shared;
    long long t_start; /* Adam's step count before this level's first iteration */
    long long it0;     /* the first iteration: 0, or a resumed checkpoint's */
    nst_render_state rs; /* what a checkpoint saves and restores */
    double t_mark;     /* printed rows: when, and at which iteration, the previous one was */
    long long mark;
    long long staged;  /* host waits of the halo exchange (between ranks, through the host) */
    nst_adam_step *adam; /* Adam's step count in backend memory (ticked by every step, replayed ones too) */
    int graphs;        /* the quiet iterations may be recorded and replayed (graphs_eligible) */
    nst_recorded rec;  /* the recorded iteration: segments, and the host steps between them (rec.recording: its
                        * host code is running, this rank's own) */
} render_run;

/* The network, the objective with its style targets, the shared activations, every local tile
 * (consuming content[i] and init[i]), the halo exchange plan, L-BFGS. Collective. */
static nst_status render_setup(render_run *r, float **content, float **init)
{
    const nst_render_ctx *ctx = r->ctx;
    const nst_layout *L = ctx->layout;
    nst_status s = nst_net_create(ctx->be, ctx->weights, ctx->spec->deepest, ctx->spec->pool, &r->net);
    r->have_net = s == NST_OK;
    int want_shared = L->gram != NST_GRAM_RESIDENT && L->nlocal > 0;
    if (s == NST_OK)
        s = nst_objective_init_guided(&r->obj, ctx->spec, &r->net, ctx->coll, L->gram, L->gram != NST_GRAM_RESIDENT ? &r->shared : NULL,
                                      ctx->img_w, ctx->img_h, ctx->guides);
    r->have_obj = s == NST_OK;
    /* the style targets, computed before the render (nst/inputs/style.h) */
    if (s == NST_OK && ctx->targets) s = nst_objective_set_targets(&r->obj, ctx->targets, ctx->normA);
    s = nst_render_agree(ctx, s);
    if (s == NST_OK && want_shared) {
        int mh = 0, mw = 0; /* one set of activations for the largest local window */
        for (int i = 0; i < L->nlocal; i++) {
            nst_rect w = nst_grid_window(&L->grid, L->local[i]);
            if (w.h > mh) mh = w.h;
            if (w.w > mw) mw = w.w;
        }
        s = nst_acts_alloc(&r->net, mh, mw, &r->shared);
        r->have_shared = s == NST_OK;
    }
    if (s == NST_OK) {
        r->ts = nst_calloc(sizeof(nst_tile_state) * (size_t)(L->nlocal + 1), "tile states");
        r->tiles = nst_calloc(sizeof(nst_tile) * (size_t)(L->nlocal + 1), "tiles");
        if (!r->ts || !r->tiles) s = NST_ENOMEM;
    }
    for (int i = 0; s == NST_OK && i < L->nlocal; i++) {
        s = nst_render_tile_setup(ctx, &r->obj, &r->tiles[i], &r->ts[i], i, content[i], init ? init[i] : NULL);
        nst_free(content[i]); /* consumed: the targets and the optimised pixels have what they need */
        content[i] = NULL;
        if (init) {
            nst_free(init[i]);
            init[i] = NULL;
        }
    }
    s = nst_render_agree(ctx, s);
    if (s == NST_OK) s = nst_objective_finish_targets(&r->obj);
    if (s == NST_OK && L->lbfgs) s = nst_render_lbfgs_setup(ctx, r->ts, &r->lb);
    if (s == NST_OK && !L->lbfgs) s = ctx->be->ops->alloc(ctx->be, sizeof *r->adam, (void **)&r->adam);
    /* last: its buffers go in backend memory only where the room is left after everything else */
    s = nst_render_agree(ctx, s); /* (collective: every rank reaches it) */
    if (s == NST_OK) s = nst_exchange_plan(ctx->be, L, &ctx->coll, &r->ex);
    if (s == NST_OK && r->ex.resident) nst_info("halo exchange: device to device, the rects packed in backend memory\n");
    if (s == NST_OK) s = nst_stop_init(&r->stop, ctx->cfg->optim_stop_tolerance, (int)ctx->cfg->optim_stop_window, ctx->cfg->optim_stop_min);
    return nst_render_agree(ctx, s);
}

/* CUDA graphs (gpu.graphs): an iteration that reads nothing is recorded once, after two
 * iterations ran (every convolution's algorithm chosen, every scratch buffer grown), and replayed:
 * a launch a segment instead of hundreds (with more than one rank, the halo exchange and the Gram
 * sums between ranks run between segments: recorded.h). Only where every such iteration makes the
 * same calls with the same arguments (Adam's step count lives on the device): exact tiling (cheap
 * mode exchanges every N iterations), Adam (L-BFGS reads its dot products), and no test hook
 * acting at an iteration. The same on every rank: the replays' steps between ranks pair up. */
static int graphs_eligible(const render_run *r)
{
    const nst_render_ctx *ctx = r->ctx;
    if (!ctx->cfg->gpu_graphs || !ctx->be->ops->graph_begin || !r->adam || ctx->be->profile) return 0; /* (the profile times op by op) */
    if (ctx->layout->cheap || ctx->layout->lbfgs || r->stop.ring) return 0;
    return !getenv("NSTBATCH_FAULT") && !getenv("NSTBATCH_SLOW");
}

/* Where the iterations start: the previous level's Adam step count, or the checkpoint being
 * resumed when it stopped in this level (its pixels and optimiser state loaded here). */
static nst_status render_resume(render_run *r, nst_status s)
{
    const nst_render_ctx *ctx = r->ctx;
    r->t_start = ctx->state_in ? ctx->state_in->t : 0;
    r->it0 = 0;
    nst_render_state rs = {ctx, r->ts, &r->lb, &r->stop, &r->obj, 0, &r->st->first};
    r->rs = rs;
    if (s == NST_OK && ctx->ckpt && ctx->ckpt->resume && ctx->ckpt->level == ctx->level) {
        s = nst_render_agree(ctx, nst_render_load_state(&r->rs));
        r->t_start = r->rs.t_start;
        r->it0 = ctx->ckpt->iteration;
        if (s == NST_OK) nst_info("resumed: level %d at iteration %lld of %lld from %s\n", ctx->level + 1, r->it0, ctx->iterations, ctx->ckpt->dir);
        r->st->resumed_at = r->it0;
    }
    r->rs.t_start = r->t_start;
    if (s == NST_OK && r->adam) { /* the steps taken before this run's first iteration */
        nst_adam_step a = {(double)(r->t_start + r->it0), 0.f, 0.f};
        s = r->ctx->be->ops->write(r->ctx->be, r->adam, &a, sizeof a);
    }
    /* agreed: a rank whose environment differs (a test hook, NSTBATCH_PROFILE) must not replay
     * alone, or the ranks' calls between them would stop pairing up */
    if (s == NST_OK) r->graphs = nst_render_agree(ctx, graphs_eligible(r) ? NST_OK : NST_ERUNTIME) == NST_OK;
    if (r->graphs) {
        nst_recorded_init(&r->rec, ctx->be, ctx->layout->nranks > 1);
        r->obj.host_steps = nst_recorded_hook(&r->rec);
    }
    return s;
}

/* The halo exchange, timed; its waits are counted apart (between ranks, through the host). A host
 * step of a recorded iteration (recorded.h). */
static nst_status exchange_step(void *arg)
{
    render_run *r = arg;
    nst_backend *be = r->ctx->be;
    nst_timer_start(&r->st->timers);
    be->ops->range_push(be, "halo exchange"); /* NVTX ranges: Nsight Systems shows the phases */
    const long long w0 = be->host_waits;
    nst_status s = nst_exchange_refresh(r->ctx, r->tiles, r->ts, &r->ex);
    r->staged += be->host_waits - w0;
    be->ops->range_pop(be);
    nst_timer_lap(&r->st->timers, NST_T_EXCHANGE);
    return s;
}

/* The halo exchange: every iteration in exact mode, every exchange_every in cheap mode. */
static nst_status iter_exchange(render_run *r, long long it)
{
    const nst_layout *L = r->ctx->layout;
    if (L->cheap && !(it > 0 && it % L->exchange_every == 0)) return NST_OK;
    return nst_host_step(r->obj.host_steps, exchange_step, r);
}

/* Whether iteration it reads its loss terms from the device: a row (printed, or the progress
 * reporter's: it0 and every run.print_every), the first gradient's file (iteration 0), and every
 * iteration while the stopping rule is on. The others leave them there and wait for nothing.
 * Every rank decides alike (the terms are added over ranks). */
static int wants_terms(const render_run *r, long long it)
{
    const long long every = r->ctx->cfg->run_print_every;
    if (it == 0 || it == r->it0 || (every > 0 && it % every == 0)) return 1;
    return r->stop.ring != NULL;
}

/* Forward, the Gram statistics summed over the ranks, backward: the loss and its gradient on
 * every local tile (terms NULL: the loss left on the device). Runs only when s is NST_OK (the
 * NVTX range opens either way). */
static nst_status iter_objective(render_run *r, nst_status s, nst_loss_terms *terms)
{
    nst_backend *be = r->ctx->be;
    be->ops->range_push(be, "objective");
    if (s == NST_OK) s = nst_objective_eval(&r->obj, r->tiles, r->ctx->layout->nlocal, 1, &r->st->timers, terms);
    be->ops->range_pop(be);
    return s;
}

/* The iteration's row: to the progress reporter, or printed every run.print_every iterations
 * (terms NULL: not read, no row). The phase timers are read where there are terms. */
static nst_status iter_report(render_run *r, long long it, const nst_loss_terms *terms)
{
    const nst_render_ctx *ctx = r->ctx;
    const long long every = ctx->cfg->run_print_every;
    if (terms) NST_TRY(nst_timers_flush(&r->st->timers));
    if (it == 0) r->st->first = *terms;
    if (ctx->progress) return nst_progress_iter(ctx->progress, it, terms, &r->st->timers, ctx->be->bytes_in_use, 0, 0);
    if (terms && (it == 0 || (every > 0 && it % every == 0))) {
        double now = nst_now();
        print_terms(it, terms, it > r->mark ? (now - r->t_mark) / (double)(it - r->mark) : 0);
        r->t_mark = now;
        r->mark = it;
    }
    return NST_OK;
}

/* The optimiser's step on every local tile; every rank reaches the agreement, failed or not. */
static nst_status iter_step(render_run *r, long long it, nst_status s)
{
    nst_backend *be = r->ctx->be;
    nst_timer_start(&r->st->timers);
    if (s == NST_OK) s = injected_fault(it);
    injected_delay(it, r->it0 > 0);
    be->ops->range_push(be, "optimiser");
    s = nst_render_step(r->ctx, r->tiles, r->ts, &r->lb, r->t_start + it + 1, r->adam, s);
    be->ops->range_pop(be);
    if (!r->rec.recording) s = nst_render_agree(r->ctx, s); /* (a recording's status is agreed once, at its end) */
    if (s == NST_OK) r->st->stepped = 1;
    nst_timer_lap(&r->st->timers, NST_T_OPTIM);
    return s;
}

/* After iteration it: a checkpoint when due (or a stop on a signal), a preview when due. */
static nst_status iter_boundary(render_run *r, long long it)
{
    const nst_render_ctx *ctx = r->ctx;
    nst_status s = NST_OK;
    if (ctx->ckpt) s = nst_render_agree(ctx, nst_render_boundary(ctx, &r->rs, it + 1, r->st));
    if (s == NST_OK && ctx->save_every > 0 && (it + 1) % ctx->save_every == 0 && it + 1 < ctx->iterations)
        s = nst_render_preview(ctx, r->tiles, r->ts, it + 1, r->st);
    return s;
}

/* The first objective's image gradient over each local tile's owned pixels, before any step: to
 * the caller (ctx->first_grad) and to run.first_gradient's file (nst/report/first_gradient.h). */
static nst_status keep_first_gradient(render_run *r, const nst_loss_terms *terms)
{
    const nst_render_ctx *ctx = r->ctx;
    const nst_layout *L = ctx->layout;
    const char *path = ctx->cfg->run_first_gradient;
    if (!path[0] && !ctx->first_grad) return NST_OK;
    float **g = ctx->first_grad ? ctx->first_grad : nst_calloc(sizeof(float *) * ((size_t)L->nlocal + 1), "first gradients");
    nst_status s = g ? NST_OK : NST_ENOMEM;
    for (int i = 0; s == NST_OK && i < L->nlocal; i++) {
        g[i] = nst_alloc_array((size_t)nst_rect_area(r->tiles[i].core) * 3, sizeof(float), "a tile's first gradient");
        s = g[i] ? ctx->be->ops->download_rect(ctx->be, &r->tiles[i].dimg, r->tiles[i].own_px, g[i]) : NST_ENOMEM;
    }
    s = nst_render_agree(ctx, s);
    if (s == NST_OK && path[0]) {
        nst_gradient_file h;
        nst_first_gradient_header(&h, ctx->img_w, ctx->img_h, ctx->spec, ctx->be, terms);
        s = nst_first_gradient_write(path, L, g, &h);
    }
    if (!ctx->first_grad) {
        for (int i = 0; g && i < L->nlocal; i++) nst_free(g[i]);
        nst_free(g);
    }
    return s;
}

/* An iteration's work when it reads nothing: exchange, objective, step. */
static nst_status quiet_work(render_run *r, long long it)
{
    nst_status s = iter_objective(r, iter_exchange(r, it), NULL);
    return iter_step(r, it, s);
}

static nst_status agree_step(void *ctx, nst_status s)
{
    return nst_render_agree(ctx, s);
}

/* Iteration it recorded (nothing runs: the caller replays it). Its host code is this rank's own
 * (the objective's and the step's status checks between ranks are left out, as are the host
 * steps), so a rank whose recording fails makes no call the others do not; the outcome is agreed
 * once, at the end, with the failing rank's reason. */
static nst_status record_iteration(render_run *r, long long it)
{
    const nst_collectives keep = r->obj.coll;
    r->obj.coll.check = NULL;
    nst_status s = nst_recorded_begin(&r->rec);
    if (s == NST_OK && nst_planted("graphwait")) s = r->ctx->be->ops->synchronize(r->ctx->be); /* planted: fails this rank's recording */
    s = nst_recorded_end(&r->rec, s == NST_OK ? quiet_work(r, it) : s);
    r->obj.coll = keep;
    return r->ctx->coll.agree ? r->ctx->coll.agree(r->ctx->coll.ctx, s) : nst_render_agree(r->ctx, s);
}

/* Whether every rank holds its recorded iteration: else all record again (never recorded, or a
 * rank's dropped because a scratch buffer grew on a row's extra work, a preview's transfer say).
 * Agreed, so that every rank replays or none does: their steps between ranks pair up. */
static int all_held(render_run *r)
{
    return nst_render_agree(r->ctx, nst_recorded_held(&r->rec) ? NST_OK : NST_ERUNTIME) == NST_OK;
}

/* Iteration it recorded, at the level's third iteration or after its graphs were dropped: 1 where
 * every rank holds its recording; else the level goes on without graphs, with a note. */
static int record_or_give_up(render_run *r, long long it)
{
    if (record_iteration(r, it) == NST_OK) {
        r->st->graph_records++;
        r->st->graph_segments = r->rec.nseg;
        return 1;
    }
    snprintf(r->st->graphs_off, sizeof r->st->graphs_off, "%s", nst_fail_message());
    nst_info("CUDA graphs: not used in this level: %s\n", r->st->graphs_off);
    nst_fail_clear();
    r->graphs = 0;
    r->obj.host_steps = NULL;
    return 0;
}

/* A quiet iteration: the recorded one replayed (recorded now if need be), or run as it is. A
 * recording that fails ran nothing: the iteration runs as it is, and the level without graphs. */
static nst_status quiet_iteration(render_run *r, long long it)
{
    int held = r->graphs && all_held(r);
    if (r->graphs && !held && it >= r->it0 + 2) held = record_or_give_up(r, it);
    if (!held) return quiet_work(r, it);
    NST_TRY(nst_recorded_replay(&r->rec, agree_step, (void *)r->ctx));
    r->st->graph_replays++;
    return NST_OK;
}

/* One iteration: exchange, objective, report, step, boundary; each runs only if the last went well. */
static nst_status render_iteration(render_run *r, long long it)
{
    nst_loss_terms terms;
    if (!wants_terms(r, it)) { /* nothing to report or decide before the step; its waits counted (render.h) */
        const long long w0 = r->ctx->be->host_waits, staged0 = r->staged + r->obj.staged_waits;
        nst_status s = quiet_iteration(r, it);
        if (s == NST_OK) s = iter_report(r, it, NULL);
        const long long staged = r->staged + r->obj.staged_waits - staged0;
        r->st->quiet_iterations++;
        r->st->quiet_waits += r->ctx->be->host_waits - w0 - staged;
        r->st->quiet_staged += staged;
        if (s == NST_OK) s = iter_boundary(r, it);
        return s;
    }
    nst_status s = iter_objective(r, iter_exchange(r, it), &terms);
    if (s == NST_OK && it == 0) s = keep_first_gradient(r, &terms);
    if (s == NST_OK) s = iter_report(r, it, &terms);
    if (s == NST_OK && nst_stop_feed(&r->stop, terms.total)) { /* the level ends here, before this step */
        r->stop_at = it;
        return NST_OK;
    }
    if (s == NST_OK) s = iter_step(r, it, NST_OK);
    if (s == NST_OK) s = iter_boundary(r, it);
    return s;
}

/* The stall watchdog (mpi/watchdog.h) watches the iterations: what they are, what a run started
 * again would resume from. */
static void watch_begin(render_run *r)
{
    const nst_render_ctx *ctx = r->ctx;
    const nst_ckpt *c = ctx->ckpt;
    char where[200], saved[4400];
    snprintf(where, sizeof where, "%s%s%slevel %d", c && c->job[0] ? "job " : "", c && c->job[0] ? c->job : "", c && c->job[0] ? ", " : "",
             ctx->level + 1);
    if (c && c->enabled && c->resume && c->level == ctx->level)
        snprintf(saved, sizeof saved, "the checkpoint of level %d, iteration %lld in %s is in force", ctx->level + 1, c->iteration, c->dir);
    else if (c && c->enabled && !c->written)
        snprintf(saved, sizeof saved, "no checkpoint of this render in %s yet: a run again starts over", c->dir);
    else
        saved[0] = 0; /* a later level: the last checkpoint written stays the one in force */
    if (saved[0] || !c || !c->enabled) nst_watchdog_saved(saved);
    const long long set = ctx->cfg->run_stall_timeout;
    nst_watchdog_arm(set == NST_WORD(0) ? 0 : (double)set, where, r->it0);
}

/* The iterations from it0, when s is NST_OK, timed without the checkpoints and previews they
 * wrote (the times and counts are set either way). */
static nst_status render_loop(render_run *r, nst_status s)
{
    const nst_render_ctx *ctx = r->ctx;
    nst_render_stats *st = r->st;
    if (s == NST_OK && ctx->progress)
        nst_progress_level(ctx->progress, ctx->level, r->it0);
    else if (s == NST_OK)
        print_header();
    double t_loop = nst_now();
    r->t_mark = t_loop; /* s/iter of a row: since the previous row */
    r->mark = r->it0;
    watch_begin(r);
    r->stop_at = -1;
    for (long long it = r->it0; s == NST_OK && it < ctx->iterations && r->stop_at < 0; it++) {
        s = render_iteration(r, it);
        if (s == NST_OK) nst_watchdog_beat(it + 1);
    }
    nst_watchdog_disarm();
    if (s == NST_OK) s = nst_timers_flush(&st->timers); /* the last rows' phases */
    double t_end = nst_now();
    st->seconds = t_end - t_loop - st->checkpoint_seconds - st->preview_seconds;
    st->steps = r->stop_at >= 0 ? r->stop_at : ctx->iterations;
    st->iterations = st->steps - r->it0;
    st->stopped = r->stop_at >= 0;
    if (s == NST_OK && st->graph_replays)
        nst_info("CUDA graphs: %lld of the level's %lld iterations replayed %s (%d)\n", st->graph_replays, st->iterations,
                 st->graph_segments > 1 ? "as recorded segments, the steps between ranks between them" : "as one recorded graph", st->graph_segments);
    if (s == NST_OK && st->stopped)
        nst_info("level %d: stopped after %lld of %lld iterations: the loss's mean over the last %d fell %.3g%% below the %d before "
                 "(optim.stop_tolerance = %g%%)\n", ctx->level + 1, st->steps, ctx->iterations, r->stop.window, 100 * r->stop.last_drop,
                 r->stop.window, 100 * r->stop.tolerance);
    return s;
}

/* The level's result in the pixels: the average (optim.average), and clamped into [0, 1] where the
 * steps may have left it (optim.clamp = false) or rounding may (the average's bias correction):
 * every output and the next level see it clamped, so its loss is taken clamped. */
static nst_status render_result(render_run *r)
{
    const nst_render_ctx *ctx = r->ctx;
    nst_status s = nst_render_take_average(ctx, r->ts, r->st->steps);
    if (s == NST_OK && (!ctx->cfg->optim_clamp || ctx->cfg->optim_average > 0)) s = nst_render_project(ctx, r->ts);
    return nst_render_agree(ctx, s);
}

/* The loss of the result: windows made current, one more forward. */
static nst_status render_final_loss(render_run *r)
{
    const nst_render_ctx *ctx = r->ctx;
    nst_render_stats *st = r->st;
    const long long iters = st->steps;
    nst_status s = nst_exchange_refresh(ctx, r->tiles, r->ts, &r->ex);
    nst_loss_terms terms;
    if (s == NST_OK) s = nst_objective_eval(&r->obj, r->tiles, ctx->layout->nlocal, 0, NULL, &terms);
    if (s != NST_OK) return s;
    st->last = terms;
    if (iters == 0) st->first = terms;
    const double loop_spi = st->iterations > 0 ? st->seconds / (double)st->iterations : 0; /* the loop's mean */
    if (ctx->progress) return nst_progress_iter(ctx->progress, iters, &terms, &st->timers, ctx->be->bytes_in_use, 1, loop_spi);
    print_terms(iters, &terms, loop_spi);
    return NST_OK;
}

/* Adam's moments, downloaded for the next level (ctx->state_out). */
static nst_status keep_adam_state(render_run *r)
{
    const nst_render_ctx *ctx = r->ctx;
    const nst_layout *L = ctx->layout;
    nst_backend *be = ctx->be;
    nst_adam_state *so = ctx->state_out;
    nst_status s = NST_OK;
    so->t = r->t_start + r->st->steps;
    so->m = nst_calloc(sizeof(float *) * 2 * ((size_t)L->nlocal + 1), "Adam state");
    so->v = so->m ? so->m + L->nlocal + 1 : NULL;
    if (!so->m) s = NST_ENOMEM;
    for (int i = 0; s == NST_OK && i < L->nlocal; i++) {
        size_t n = nst_tensor_elems(&r->ts[i].m);
        so->m[i] = nst_alloc_array(n, sizeof(float), "Adam state");
        so->v[i] = nst_alloc_array(n, sizeof(float), "Adam state");
        if (!so->m[i] || !so->v[i]) s = NST_ENOMEM;
        if (s == NST_OK) s = be->ops->download(be, so->m[i], r->ts[i].m.data, n, NST_F32);
        if (s == NST_OK) s = be->ops->download(be, so->v[i], r->ts[i].v.data, n, NST_F32);
    }
    return s;
}

/* Whatever setup made, in any state it stopped in. */
static void render_teardown(render_run *r)
{
    const nst_render_ctx *ctx = r->ctx;
    const nst_layout *L = ctx->layout;
    r->st->bytes_peak = ctx->be->bytes_peak;
    r->st->exchange_bytes = r->ex.resident_bytes;
    if (L->lbfgs && r->lb.resets) nst_info("L-BFGS: %d direction%s reset to the gradient (not a descent direction)\n", r->lb.resets, r->lb.resets == 1 ? "" : "s");
    nst_lbfgs_free(&r->lb);
    nst_stop_free(&r->stop);
    if (r->adam) ctx->be->ops->free(ctx->be, r->adam);
    nst_exchange_free(ctx->be, &r->ex);
    for (int i = 0; r->ts && i < L->nlocal; i++) nst_render_tile_teardown(ctx, &r->obj, &r->tiles[i], &r->ts[i]);
    nst_free(r->ts);
    nst_free(r->tiles);
    if (r->have_obj) nst_objective_free(&r->obj);
    if (r->have_shared) nst_acts_free(&r->net, &r->shared);
    if (r->have_net) nst_net_destroy(&r->net);
}

nst_status nst_render(const nst_render_ctx *ctx, float **content, float **init, float **out, nst_render_stats *st)
{
    if (ctx->iterations == 0) {
        memset(st, 0, sizeof *st);
        return nst_render_initial(ctx, content, init, out, st);
    }
    nst_backend *be = ctx->be;
    render_run r;
    memset(&r, 0, sizeof r);
    r.ctx = ctx;
    r.st = st;
    memset(st, 0, sizeof *st);
    nst_status ts = nst_timers_use(&st->timers, be); /* on the backend's clocks: no wait per phase (nst/optimise/timers.h) */
    be->bytes_peak = be->bytes_in_use; /* the peak of this render (the style targets came and went before) */
    double t0 = nst_now();

    nst_status s = ts == NST_OK ? render_setup(&r, content, init) : ts;
    s = render_resume(&r, s);
    st->setup_seconds = nst_now() - t0;
    s = render_loop(&r, s);
    if (s == NST_OK) s = render_result(&r);
    if (s == NST_OK) s = render_final_loss(&r);
    if (s == NST_OK) s = nst_render_snapshot_end(ctx, r.tiles, r.ts);
    if (s == NST_OK) s = nst_render_download_cores(ctx, r.tiles, r.ts, -1, out); /* the cores of the result */
    if (s == NST_OK && ctx->state_out && !ctx->layout->lbfgs) s = keep_adam_state(&r);
    render_teardown(&r);
    return s;
}

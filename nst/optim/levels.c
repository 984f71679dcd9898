/* nst/optim/levels.c: one job, coarse to fine (see levels.h). */
#include "levels.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../io/resample.h"
#include "../../mpi/comm.h"
#include "../../util/log.h"
#include "../../util/mem.h"
#include "../../util/timer.h"
#include "checkpoint.h"
#include "color.h"
#include "move.h"

nst_status nst_levels_plan(const nst_config *cfg, const nst_loss_spec *spec, int W, int H, nst_level_plan *p)
{
    memset(p, 0, sizeof *p);
    const double f = cfg->pyramid_factor;
    const int shortest = W < H ? W : H;
    int n;
    if (cfg->pyramid_levels == NST_WORD(0)) { /* auto: the coarsest short side at least pyramid.min_size */
        n = 1;
        while (n < NST_MAX_LEVELS && shortest / pow(f, n) >= (double)cfg->pyramid_min_size) n++;
    } else {
        n = (int)cfg->pyramid_levels;
    }
    p->n = n;
    const int m = nst_loss_spec_min_side(spec);
    for (int k = 0; k < n; k++) {
        double d = pow(f, n - 1 - k);
        p->w[k] = k == n - 1 ? W : (int)lround(W / d);
        p->h[k] = k == n - 1 ? H : (int)lround(H / d);
        if (p->w[k] < 1) p->w[k] = 1;
        if (p->h[k] < 1) p->h[k] = 1;
        if (p->w[k] < m || p->h[k] < m)
            return nst_fail(NST_EINPUT,
                            "%s: pyramid.levels = %d with pyramid.factor = %g makes level 1 %dx%d; the deepest layer in use (%s) needs "
                            "at least %dx%d: fewer levels or a smaller factor",
                            nst_config_origin(cfg, NST_K_pyramid_levels), n, f, p->w[0], p->h[0], nst_vgg_layer_at(spec->deepest)->relu, m, m);
        p->iterations[k] = cfg->optim_iterations;
    }
    if (cfg->pyramid_iterations[0]) {
        char list[NST_CFG_STR_MAX];
        snprintf(list, sizeof list, "%s", cfg->pyramid_iterations);
        int k = 0;
        for (char *save = NULL, *tok = strtok_r(list, ", \t", &save); tok; tok = strtok_r(NULL, ", \t", &save), k++) {
            char *end;
            long long v = strtoll(tok, &end, 10);
            if (*end || v < 0 || v > 100000000 || k >= n)
                return nst_fail(NST_EINPUT, "%s: pyramid.iterations = '%s': %d integers in 0..100000000 expected, one per level (coarse to fine)",
                                nst_config_origin(cfg, NST_K_pyramid_iterations), cfg->pyramid_iterations, n);
            p->iterations[k] = v;
        }
        if (k != n)
            return nst_fail(NST_EINPUT, "%s: pyramid.iterations has %d value%s for %d level%s", nst_config_origin(cfg, NST_K_pyramid_iterations), k,
                            k == 1 ? "" : "s", n, n == 1 ? "" : "s");
    }
    return NST_OK;
}

/* ---- the previous level, upsampled ----------------------------------------------------------------- */

/* The optimised region of tile t: its core (exact), or its window (cheap). */
static nst_rect opt_rect(const nst_layout *L, int t) { return L->cheap ? nst_grid_window(&L->grid, t) : nst_grid_core(&L->grid, t); }

/* Move the previous level's per-tile arrays (over data[t], local tiles; the cores are the plan's
 * pieces, so overlapping windows give each pixel once) to the footprints of the new level's
 * regions dst[t], and resample every local one to the new size (out[i], allocated). */
static nst_status upsample(const nst_layout *Lp, int wp, int hp, const nst_rect *data, float **px, const nst_layout *Ln, int wn, int hn,
                           const nst_rect *dst, float **out, int raw)
{
    const int np = Lp->grid.ntiles, nn = Ln->grid.ntiles;
    nst_rect *cores = nst_alloc_array((size_t)np, sizeof(nst_rect), "previous cores");
    nst_rect *fp = nst_alloc_array((size_t)nn, sizeof(nst_rect), "footprints");
    float **srcpx = nst_calloc(sizeof(float *) * (size_t)np, "previous pixels");
    unsigned char **dstpx = nst_calloc(sizeof(unsigned char *) * (size_t)nn, "footprint buffers");
    nst_status s = cores && fp && srcpx && dstpx ? NST_OK : NST_ENOMEM;
    int ntr = 0;
    nst_transfer *tr = NULL;
    if (s == NST_OK) {
        for (int t = 0; t < np; t++) cores[t] = nst_grid_core(&Lp->grid, t);
        for (int i = 0; i < Lp->nlocal; i++) srcpx[Lp->local[i]] = px[i];
        for (int t = 0; t < nn; t++) fp[t] = nst_resample_footprint(wp, hp, wn, hn, dst[t]);
        for (int i = 0; s == NST_OK && i < Ln->nlocal; i++) {
            int t = Ln->local[i];
            dstpx[t] = nst_alloc_array((size_t)nst_rect_area(fp[t]) * 3, sizeof(float), "a footprint of the previous level");
            if (!dstpx[t]) s = NST_ENOMEM;
        }
        tr = nst_plan_rects(cores, np, fp, nn, &ntr);
        if (s == NST_OK && !tr) s = nst_fail(NST_ENOMEM, "out of memory planning the level change");
    }
    s = nst_comm_agree(s);
    if (s == NST_OK) {
        nst_float_rects fr = {data, srcpx, 3};
        nst_move mv = {tr, ntr, Lp->owner, Ln->owner, fp, dstpx, 3 * sizeof(float), nst_produce_floats, NULL, &fr};
        s = nst_move_run(&mv, 0, NULL);
    }
    for (int i = 0; s == NST_OK && i < Ln->nlocal; i++) {
        int t = Ln->local[i];
        nst_image region = {fp[t].w, fp[t].h, (float *)dstpx[t]};
        nst_source *src = NULL;
        out[i] = nst_alloc_array((size_t)nst_rect_area(dst[t]) * 3, sizeof(float), "an upsampled window");
        s = out[i] ? nst_source_wrap_region(&region, fp[t], wp, hp, "the previous level", &src) : NST_ENOMEM;
        if (s == NST_OK) s = raw ? nst_resample_rect_raw(src, wn, hn, dst[t], out[i]) : nst_resample_rect(src, wn, hn, dst[t], out[i]);
        nst_source_close(src);
    }
    for (int t = 0; dstpx && t < nn; t++) nst_free(dstpx[t]);
    free(tr);
    nst_free(cores), nst_free(fp), nst_free(srcpx), nst_free(dstpx);
    return nst_comm_agree(s);
}

/* The initial windows of level Ln from the previous level's result, and Adam's moments when carried. */
static nst_status level_change(const nst_layout *Lp, int wp, int hp, float **pcores, const nst_adam_state *pst, const nst_layout *Ln,
                               int wn, int hn, float **init, nst_adam_state *st)
{
    nst_rect *dcore = nst_alloc_array((size_t)Lp->grid.ntiles, sizeof(nst_rect), "previous regions");
    nst_rect *dopt = nst_alloc_array((size_t)Lp->grid.ntiles, sizeof(nst_rect), "previous regions");
    nst_rect *win = nst_alloc_array((size_t)Ln->grid.ntiles, sizeof(nst_rect), "new windows");
    nst_rect *opt = nst_alloc_array((size_t)Ln->grid.ntiles, sizeof(nst_rect), "new regions");
    nst_status s = dcore && dopt && win && opt ? NST_OK : NST_ENOMEM;
    s = nst_comm_agree(s);
    if (s == NST_OK) {
        for (int t = 0; t < Lp->grid.ntiles; t++) dcore[t] = nst_grid_core(&Lp->grid, t), dopt[t] = opt_rect(Lp, t);
        for (int t = 0; t < Ln->grid.ntiles; t++) win[t] = nst_grid_window(&Ln->grid, t), opt[t] = opt_rect(Ln, t);
        s = upsample(Lp, wp, hp, dcore, pcores, Ln, wn, hn, win, init, 0);
    }
    if (s == NST_OK && pst && st) { /* Adam's moments: not pixels, so not clamped; v stays >= 0 */
        st->t = pst->t;
        st->m = nst_calloc(sizeof(float *) * 2 * ((size_t)Ln->nlocal + 1), "Adam state");
        s = nst_comm_agree(st->m ? NST_OK : NST_ENOMEM);
        if (s == NST_OK) {
            st->v = st->m + Ln->nlocal + 1;
            s = upsample(Lp, wp, hp, dopt, pst->m, Ln, wn, hn, opt, st->m, 1);
        }
        if (s == NST_OK) s = upsample(Lp, wp, hp, dopt, pst->v, Ln, wn, hn, opt, st->v, 1);
        for (int i = 0; s == NST_OK && i < Ln->nlocal; i++)
            for (size_t j = 0; j < (size_t)nst_rect_area(opt[Ln->local[i]]) * 3; j++)
                if (st->v[i][j] < 0.f) st->v[i][j] = 0.f;
    }
    nst_free(dcore), nst_free(dopt), nst_free(win), nst_free(opt);
    return s;
}

static void state_free(nst_adam_state *st, int n)
{
    for (int i = 0; st->m && i < n; i++) {
        nst_free(st->m[i]);
        nst_free(st->v[i]);
    }
    nst_free(st->m);
    memset(st, 0, sizeof *st);
}

/* ---- colour ------------------------------------------------------------------------------------- */

/* The content's colour statistics over the pixels this level's tiles own, added over ranks. */
static nst_status content_stats(const nst_levels_ctx *c, const nst_layout *L, float **content, nst_color_mode mode, nst_color_stats *cs)
{
    memset(cs, 0, sizeof *cs);
    for (int i = 0; i < L->nlocal; i++) {
        nst_rect core = nst_grid_core(&L->grid, L->local[i]), w = nst_grid_window(&L->grid, L->local[i]);
        for (int y = 0; y < core.h; y++) {
            const float *row = content[i] + ((size_t)(core.y - w.y + y) * w.w + (size_t)(core.x - w.x)) * 3;
            if (mode == NST_COLOR_LUMINANCE)
                nst_color_stats_add_luminance(cs, row, (size_t)core.w);
            else
                nst_color_stats_add(cs, row, (size_t)core.w);
        }
    }
    return c->coll.sum_doubles ? c->coll.sum_doubles(c->coll.ctx, (double *)cs, sizeof *cs / sizeof(double)) : NST_OK;
}

/* Luminance mode, at the end: the result's luminance with the content's chroma at the output size. */
static nst_status keep_chroma(const nst_levels_ctx *c, const nst_layout *L, int W, int H, float **cores)
{
    const nst_grid *g = &L->grid;
    nst_rect *rects = nst_alloc_array((size_t)g->ntiles + 1, sizeof(nst_rect), "cores");
    float **content = nst_calloc(sizeof(float *) * ((size_t)L->nlocal + 1), "content cores");
    nst_status s = rects && content ? NST_OK : NST_ENOMEM;
    s = nst_comm_agree(s);
    if (s == NST_OK) {
        for (int t = 0; t < g->ntiles; t++) rects[t] = nst_grid_core(g, t);
        s = nst_read_rects(c->cfg, NST_K_content_path, c->cfg->content_path, &c->in->content, c->in->content_random, W, H, rects, L->owner,
                           g->ntiles, content, &c->in->read_seconds, &c->in->read_pixels);
    }
    for (int i = 0; s == NST_OK && i < L->nlocal; i++)
        nst_color_keep_chroma(cores[i], content[i], (size_t)nst_rect_area(rects[L->local[i]]));
    for (int i = 0; content && i < L->nlocal; i++) nst_free(content[i]);
    nst_free(content);
    nst_free(rects);
    return s;
}

/* ---- one level on the ranks that have tiles ------------------------------------------------------- */

/* Render on the ranks that own tiles: a group of them when some have none (they wait, asleep). */
static nst_status render_level(const nst_render_ctx *ctx, float **content, float **init, float **out, nst_render_stats *st, int *ranks)
{
    const nst_layout *L = ctx->layout;
    const int nranks = nst_comm_size();
    int *map = nst_alloc_array((size_t)nranks, sizeof(int), "rank map");
    nst_status s = nst_comm_agree(map ? NST_OK : NST_ENOMEM);
    if (s != NST_OK) {
        nst_free(map);
        return s;
    }
    int nactive = 0;
    for (int r = 0; r < nranks; r++) map[r] = -1;
    for (int t = 0; t < L->grid.ntiles; t++) map[L->owner[t]] = 0;
    for (int r = 0; r < nranks; r++)
        if (map[r] == 0) map[r] = nactive++;
    *ranks = nactive;
    if (nactive == nranks) {
        nst_free(map);
        return nst_render(ctx, content, init, out, st);
    }
    nst_group *grp = NULL;
    s = nst_comm_split(L->nlocal > 0 ? 0 : -1, nst_comm_rank(), &grp);
    if (s == NST_OK && grp) {
        nst_layout sub = *L; /* the same tiles, ranks renumbered within the group */
        sub.owner = nst_alloc_array((size_t)L->grid.ntiles, sizeof(int), "tile owners");
        if (!sub.owner) nst_comm_abort(1, "out of memory renumbering a level's ranks");
        for (int t = 0; t < L->grid.ntiles; t++) sub.owner[t] = map[L->owner[t]];
        sub.rank = map[L->rank];
        sub.nranks = nactive;
        nst_render_ctx c2 = *ctx;
        c2.layout = &sub;
        nst_comm_push(grp);
        s = nst_render(&c2, content, init, out, st);
        nst_comm_pop();
        nst_free(sub.owner);
    } else {
        memset(st, 0, sizeof *st);
    }
    nst_comm_group_free(grp);
    nst_free(map);
    nst_status w = nst_comm_idle_barrier(); /* the ranks without tiles waited here, asleep */
    if (s == NST_OK) s = w;
    return nst_comm_agree(s);
}

/* The tiling of a level, for the log. */
static void describe_layout(const nst_layout *L, const nst_loss_spec *spec)
{
    const nst_grid *g = &L->grid;
    int deepest = spec->deepest < 0 ? 0 : spec->deepest;
    char tiles[96];
    nst_layout_describe_tiles(g, tiles, sizeof tiles);
    nst_info("tiling:  %s mode, %s, halo %d px%s, windows %.2fx the image; %d rank%s\n", L->cheap ? "cheap" : "exact", tiles, g->halo,
             g->halo >= L->halo_exact ? " (exact)" : "", 1.0 + nst_grid_halo_overhead(g), L->nranks, L->nranks == 1 ? "" : "s");
    nst_info("         exact halo for %s: %d px; %s\n", nst_vgg_layer_at(deepest)->relu, L->halo_exact, L->why);
    if (L->cheap)
        nst_info("         halos refreshed and overlaps blended (%s ramp of %d px) every %d iterations\n",
                 L->blend_cosine ? "raised-cosine" : "linear", L->blend_width, L->exchange_every);
}

/* ---- one try at a level ---------------------------------------------------------------------- */

/* A tile that did not fit is halved at most this many times (1/16 of its side), each try from the
 * level's start: the failure comes before any optimiser step, so no work is lost. */
#define MAX_HALVINGS 4

/* The previous level's result, for the initial pixels (and Adam's moments when carried). */
typedef struct {
    const nst_layout *L;
    int w, h;
    float **cores;
    const nst_adam_state *state; /* NULL: not carried */
} prev_level;

static int halve(int v, int align)
{
    int h = (v / 2 + align - 1) / align * align;
    return h < align ? align : h;
}

/* A try's buffers: content, init and result per local tile, 3 x (nlocal + 1) of them. */
static void bufs_free(float ***bufs, int nlocal)
{
    for (int i = 0; *bufs && i < 3 * (nlocal + 1); i++) nst_free((*bufs)[i]);
    nst_free(*bufs);
    *bufs = NULL;
}

/* Everything a failed try holds. */
static void try_free(nst_layout *L, float ***bufs, nst_adam_state *st)
{
    bufs_free(bufs, L->nlocal);
    state_free(st, L->nlocal);
    nst_layout_free(L);
}

/* The layout of level k: tiles of fw x fh px (0: planned within budget), whose backend buffers
 * model less than backend_below if not 0. Pure geometry, the same on every rank. */
static nst_status plan_level(const nst_levels_ctx *c, const nst_level_plan *p, int k, int fw, int fh, const char *forced,
                             size_t backend_below, nst_layout *L)
{
    nst_plan_req req = {c->budget, backend_below, p->iterations[k], fw, fh, forced};
    return nst_comm_agree(nst_layout_plan_tiles(c->cfg, c->spec, c->shapes, p->w[k], p->h[k], nst_comm_size(), nst_comm_rank(), &req, L));
}

/* Level k on layout L: the content and initial windows, the colour statistics, the style targets
 * and the render; the result's cores in (*bufs)[2 (nlocal + 1) + i]. *retry: it failed only because
 * a backend allocation did not fit, before any optimiser step, on every rank's word: smaller tiles
 * may fit. The caller frees *bufs and *state_out. */
static nst_status level_try(const nst_levels_ctx *c, const nst_level_plan *p, int k, int resuming, const prev_level *pv, const nst_layout *L,
                            float ***bufs_out, nst_adam_state *state_out, nst_level_report *r, int *retry)
{
    const nst_config *cfg = c->cfg;
    const nst_loss_spec *spec = c->spec;
    const nst_color_mode mode = (nst_color_mode)nst_color_mode_parse(cfg->color_mode);
    const int w = p->w[k], h = p->h[k];
    nst_ckpt *ck = c->ckpt;
    const int failures0 = c->be->alloc_failures;
    *retry = 0;
    *bufs_out = NULL;
    r->tiles = L->grid.ntiles, r->tile_w = L->grid.tile_w, r->tile_h = L->grid.tile_h, r->halo = L->grid.halo;
    r->gram = nst_gram_strategy_name(L->gram);
    describe_layout(L, spec);
    if (p->n == 1 && L->grid.ntiles < L->nranks) { /* (coarse pyramid levels run on fewer ranks by design) */
        char idle[48]; /* smaller tiles would only add halo work: fewer ranks is what helps */
        if (L->grid.ntiles == L->nranks - 1)
            snprintf(idle, sizeof idle, "rank %d has", L->grid.ntiles);
        else
            snprintf(idle, sizeof idle, "ranks %d..%d have", L->grid.ntiles, L->nranks - 1);
        nst_warn("%d tile%s for %d ranks: %s no work; this image is rendered as fast on %d rank%s (mpirun -np %d)\n", L->grid.ntiles,
                 L->grid.ntiles == 1 ? "" : "s", L->nranks, idle, L->grid.ntiles, L->grid.ntiles == 1 ? "" : "s", L->grid.ntiles);
    }
    const double windows = 1.0 + nst_grid_halo_overhead(&L->grid);
    if (cfg->tiling_tile_size != NST_WORD(0) && windows > 4.0 && k == p->n - 1) { /* a set size that mostly computes halos */
        char where[NST_CFG_ORIGIN_MAX + 64];
        nst_config_where(cfg, NST_K_tiling_tile_size, where, sizeof where);
        nst_warn("%s = %lld makes the windows %.1fx the image (each tile computes a %d px halo around its core): every tile repeats its "
                 "neighbours' work; tiling.tile_size = auto, or a larger size, renders the same image faster\n",
                 where, cfg->tiling_tile_size, windows, L->grid.halo);
    }

    float **bufs = nst_calloc(sizeof(float *) * 3 * ((size_t)L->nlocal + 1), "level buffers");
    *bufs_out = bufs;
    nst_status s = nst_comm_agree(bufs ? NST_OK : NST_ENOMEM);
    if (s != NST_OK) return s;
    float **content = bufs, **init = bufs + L->nlocal + 1, **cores = bufs + 2 * (L->nlocal + 1);
    /* the initial pixels: a resumed level's come from the checkpoint (the content stands in) */
    int have_init = !resuming && (k > 0 || strcmp(cfg->optim_init, "image") == 0);
    nst_adam_state state_in;
    memset(&state_in, 0, sizeof state_in);
    s = nst_inputs_windows(cfg, c->in, L, w, h, content, k == 0 && have_init ? init : NULL);
    if (s == NST_OK && pv) s = level_change(pv->L, pv->w, pv->h, pv->cores, pv->state, L, w, h, init, &state_in);
    /* colour: the content's statistics at this level; luminance-only inputs */
    nst_color_stats cs;
    memset(&cs, 0, sizeof cs);
    if (s == NST_OK && mode != NST_COLOR_NONE) s = nst_comm_agree(content_stats(c, L, content, mode, &cs));
    if (s == NST_OK && mode == NST_COLOR_LUMINANCE)
        for (int i = 0; i < L->nlocal; i++) {
            size_t n = (size_t)nst_rect_area(nst_grid_window(&L->grid, L->local[i]));
            nst_color_to_luminance(content[i], n);
            if (k == 0 && have_init) nst_color_to_luminance(init[i], n);
        }
    /* the style targets at this level's size */
    nst_style_targets T;
    memset(&T, 0, sizeof T);
    if (s == NST_OK && spec->nstyle > 0 && p->iterations[k] > 0) {
        s = nst_style_targets_compute(cfg, spec, c->weights, c->be, c->coll, c->styles, w > h ? w : h,
                                      nst_layout_style_budget(L, c->be, c->budget), mode, &cs, c->cache, &T);
        r->style_seconds = T.seconds, r->style_tiles = T.tiles, r->style_cached = T.from_cache;
        if (s == NST_OK)
            nst_info("         style targets for %dx%d: %s (%.2f s)\n", w, h,
                     T.from_cache ? "from the cache" : T.tiles > 1 ? "computed over tiles" : "computed", T.seconds);
    }
    /* the render */
    int rendered = 0;
    if (s == NST_OK) {
        nst_render_ctx ctx = {cfg, spec, c->be, c->weights, L, c->coll, w, h, p->iterations[k], spec->nstyle ? T.A : NULL, T.normA,
                              state_in.m ? &state_in : NULL, state_out, ck, k, c->progress, c->preview_path, c->preview_side, c->save_every};
        s = render_level(&ctx, content, have_init ? init : NULL, cores, &r->stats, &r->ranks);
        rendered = 1;
        if (ck && s == NST_OK) s = nst_comm_agree(nst_ckpt_sync(ck)); /* a generation written on a subgroup, to the ranks that waited */
        if (resuming && s == NST_OK) ck->resume = 0; /* (a try that failed is followed by one that resumes too) */
    }
    state_free(&state_in, L->nlocal);
    nst_style_targets_free(&T);
    s = nst_comm_agree(s);
    if (s == NST_ENOMEM) { /* every rank's word: all rendered, none stepped, some allocation refused */
        double mine[3] = {rendered, r->stats.stepped, c->be->alloc_failures - failures0}, mn[3], mx[3], sum[3];
        if (nst_comm_stats(mine, mn, mx, sum, 3) == NST_OK) *retry = mn[0] > 0 && mx[1] == 0 && mx[2] > 0;
    }
    return s;
}

/* ---- the loop ---------------------------------------------------------------------------------- */

nst_status nst_levels_plan_layout(const nst_levels_ctx *c, const nst_level_plan *p, int k, nst_layout *L)
{
    return plan_level(c, p, k, 0, 0, NULL, 0, L);
}

/* Before anything heavy runs: every level from k0 on must have a plan within the budget, for its
 * render and its style targets (each is planned again when its turn comes; this only refuses
 * early what would fail late). */
static nst_status preflight(const nst_levels_ctx *c, const nst_level_plan *p, int k0)
{
    for (int k = k0; k < p->n; k++) {
        nst_layout L;
        memset(&L, 0, sizeof L);
        nst_status s = plan_level(c, p, k, 0, 0, NULL, 0, &L);
        double px;
        size_t bytes;
        if (s == NST_OK && c->styles && c->spec->nstyle > 0 && p->iterations[k] > 0)
            s = nst_comm_agree(nst_style_plan(c->cfg, c->spec, c->shapes, c->styles, p->w[k] > p->h[k] ? p->w[k] : p->h[k],
                                              nst_layout_style_budget(&L, c->be, c->budget), &px, &bytes));
        nst_layout_free(&L);
        if (s != NST_OK) return p->n > 1 ? nst_fail_context(s, "level %d of %d (%dx%d)", k + 1, p->n, p->w[k], p->h[k]) : s;
    }
    return NST_OK;
}

nst_status nst_levels_run(const nst_levels_ctx *c, const nst_level_plan *p, nst_layout *Lout, float ***cores_out, nst_level_report *rep)
{
    const nst_config *cfg = c->cfg;
    const nst_color_mode mode = (nst_color_mode)nst_color_mode_parse(cfg->color_mode);
    const int carry = strcmp(cfg->pyramid_state, "carry") == 0 && strcmp(cfg->optim_method, "adam") == 0;
    nst_layout prev;
    float **pcores = NULL;
    nst_adam_state pstate;
    int pw = 0, ph = 0;
    long long adam_t = 0; /* Adam's steps so far, when its state is carried */
    memset(&prev, 0, sizeof prev);
    memset(&pstate, 0, sizeof pstate);
    nst_status s = NST_OK;
    nst_ckpt *ck = c->ckpt;
    const int k0 = ck && ck->resume ? ck->level : 0; /* a resume starts at the checkpoint's level */
    if (k0 >= p->n) return nst_fail(NST_EINPUT, "checkpoint %s: level %d, but this render has %d level%s", ck->dir, k0 + 1, p->n, p->n == 1 ? "" : "s");
    NST_TRY(preflight(c, p, k0));
    for (int k = 0; k < k0; k++) { /* finished before the checkpoint: their reports from the manifest */
        nst_level_report *r = &rep[k];
        const nst_ckpt_level *lv = &ck->levels[k];
        memset(r, 0, sizeof *r);
        r->w = p->w[k], r->h = p->h[k], r->iterations = p->iterations[k], r->tiles = lv->tiles, r->ranks = lv->ranks;
        r->first.total = lv->first, r->last.total = lv->last, r->seconds = lv->seconds;
        r->gram = "-";
        adam_t += p->iterations[k];
        if (p->n > 1) nst_info("level %d/%d: %dx%d, finished before the checkpoint (loss %.5e -> %.5e)\n", k + 1, p->n, r->w, r->h, lv->first, lv->last);
    }
    for (int k = k0; s == NST_OK && k < p->n; k++) {
        double t0 = nst_now();
        const int w = p->w[k], h = p->h[k];
        const int resuming = ck && ck->resume && k == k0;
        nst_level_report *r = &rep[k];
        memset(r, 0, sizeof *r);
        r->w = w, r->h = h, r->iterations = p->iterations[k];
        if (p->n > 1) nst_info("level %d/%d: %dx%d, %lld iterations\n", k + 1, p->n, w, h, p->iterations[k]);
        pstate.t = adam_t; /* (ranks that had no tiles hold no moments: the step count is the plan's) */
        const prev_level pv = {&prev, pw, ph, pcores, carry ? &pstate : NULL};
        nst_layout L;
        memset(&L, 0, sizeof L);
        float **bufs = NULL;
        nst_adam_state state_out;
        memset(&state_out, 0, sizeof state_out);
        s = plan_level(c, p, k, resuming ? ck->tile_w : 0, resuming ? ck->tile_h : 0, "the checkpoint's", 0, &L);
        for (int halvings = 0; s == NST_OK; halvings++) {
            int retry = 0;
            s = level_try(c, p, k, resuming, k > k0 ? &pv : NULL, &L, &bufs, carry && k + 1 < p->n ? &state_out : NULL, r, &retry);
            r->halvings = resuming ? 0 : halvings;
            if (s == NST_OK || !retry) break;
            /* the next try: tiles of half the side (a resumed level keeps the checkpoint's), whose model
             * must promise less than the one that failed (for the checkpoint's tiles: two-pass Gram) */
            char why[1024];
            snprintf(why, sizeof why, "%s", nst_fail_message());
            nst_fail_clear(); /* on every rank: nst_comm_agree gave all of them the message */
            nst_layout next;
            const int nw = resuming ? L.grid.tile_w : halve(L.grid.tile_w, L.align), nh = resuming ? L.grid.tile_h : halve(L.grid.tile_h, L.align);
            const int last = resuming ? halvings > 0 : halvings == MAX_HALVINGS;
            nst_status ps = last ? NST_ENOMEM
                                 : plan_level(c, p, k, nw, nh, resuming ? "the checkpoint's (in less memory after an allocation failure)"
                                                                        : "halved after an allocation failure:", L.mem_max, &next);
            if (ps != NST_OK) {
                nst_fail_clear();
                s = nst_fail(NST_ENOMEM, "%s; tiles of %dx%d px%s, and %s", why, L.grid.tile_w, L.grid.tile_h,
                             resuming ? " (the checkpoint's)" : halvings ? " after halving" : "",
                             resuming ? "no Gram strategy for them models less memory" : last ? "they are halved at most 4 times"
                                                                                             : "halving them again does not model less memory");
                break;
            }
            nst_warn("level %d: tiles of %dx%d px did not fit (%s); trying again with %dx%d px%s%s\n", k + 1, L.grid.tile_w, L.grid.tile_h, why,
                     next.grid.tile_w, next.grid.tile_h, resuming ? " (the checkpoint's), Gram " : "", resuming ? nst_gram_strategy_name(next.gram) : "");
            try_free(&L, &bufs, &state_out);
            L = next;
            s = NST_OK;
        }
        if (k > k0) { /* the previous level is in this one's initial windows now */
            for (int i = 0; pcores && i < prev.nlocal; i++) nst_free(pcores[i]);
            nst_free(pcores);
            pcores = NULL;
            state_free(&pstate, prev.nlocal);
            nst_layout_free(&prev);
        }
        r->first = r->stats.first, r->last = r->stats.last;
        r->seconds = nst_now() - t0;
        if (s == NST_OK && ck) {
            nst_ckpt_level lv = {w, h, r->tiles, r->ranks, r->iterations, r->first.total, r->last.total, r->seconds};
            nst_ckpt_level_done(ck, k, &lv);
        }
        if (s == NST_OK && p->n > 1)
            nst_info("level %d/%d done: %dx%d, loss %.5e -> %.5e, %.2f s%s\n", k + 1, p->n, w, h, r->first.total, r->last.total, r->seconds,
                     r->ranks < nst_comm_size() ? " (on fewer ranks: it has fewer tiles)" : "");
        /* keep this level's result for the next one (or the output) */
        float **kept = NULL;
        if (s == NST_OK) {
            float **cores = bufs + 2 * (L.nlocal + 1);
            kept = nst_calloc(sizeof(float *) * ((size_t)L.nlocal + 1), "a level's result");
            s = nst_comm_agree(kept ? NST_OK : NST_ENOMEM);
            for (int i = 0; kept && i < L.nlocal; i++) kept[i] = cores[i], cores[i] = NULL;
        }
        if (s != NST_OK) {
            nst_free(kept);
            try_free(&L, &bufs, &state_out);
            break;
        }
        bufs_free(&bufs, L.nlocal);
        prev = L, pcores = kept, pstate = state_out, pw = w, ph = h;
        adam_t += p->iterations[k];
    }
    if (s == NST_OK && mode == NST_COLOR_LUMINANCE) s = keep_chroma(c, &prev, pw, ph, pcores);
    state_free(&pstate, prev.nlocal);
    if (s != NST_OK) {
        for (int i = 0; pcores && i < prev.nlocal; i++) nst_free(pcores[i]);
        nst_free(pcores);
        nst_layout_free(&prev);
        return s;
    }
    *Lout = prev;
    *cores_out = pcores;
    return NST_OK;
}

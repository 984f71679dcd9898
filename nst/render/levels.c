/* nst/render/levels.c: one job, coarse to fine (see levels.h). */
#include "levels.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../io/image/resample.h"
#include "../../mpi/comm.h"
#include "../../util/log.h"
#include "../../util/mem.h"
#include "../../util/timer.h"
#include "../state/checkpoint.h"
#include "../inputs/color.h"
#include "../plan/move.h"

/* pyramid.levels = auto: coarse levels of fixed long sides, pyramid.min_size times factor^k, each
 * at least sqrt(factor) below the output's long side (a step smaller than that would cost a level
 * nearly at full size for little), and each with a short side the deepest layer can take; then
 * the output. Fixed sizes: a 1k preview and a 16k print of one job share their coarse levels,
 * which set the large structures. The short sides come from the aspect before rounding (aw x ah),
 * a function of the picture and the side alone, so the preview's and the print's agree. Returns
 * the count; the sizes in p. */
static int auto_levels(const nst_config *cfg, int W, int H, int aw, int ah, int min_side, nst_level_plan *p)
{
    const double f = cfg->pyramid_factor, L = W > H ? W : H, AL = aw > ah ? aw : ah;
    int n = 0;
    for (double side = cfg->pyramid_min_size; n < NST_MAX_LEVELS - 1 && side * sqrt(f) <= L; side *= f) {
        int w = (int)lround(aw * side / AL), h = (int)lround(ah * side / AL);
        if (w < min_side || h < min_side) continue;
        p->w[n] = w, p->h[n] = h, n++;
    }
    p->w[n] = W, p->h[n] = H;
    return n + 1;
}

/* pyramid.levels = N: N levels, each factor times smaller than the next, the last the output. */
static nst_status counted_levels(const nst_config *cfg, int n, int W, int H, int min_side, const nst_loss_spec *spec, nst_level_plan *p)
{
    const double f = cfg->pyramid_factor;
    for (int k = 0; k < n; k++) {
        double d = pow(f, n - 1 - k);
        p->w[k] = k == n - 1 ? W : (int)lround(W / d);
        p->h[k] = k == n - 1 ? H : (int)lround(H / d);
        if (p->w[k] < 1) p->w[k] = 1;
        if (p->h[k] < 1) p->h[k] = 1;
        if (p->w[k] < min_side || p->h[k] < min_side)
            return nst_fail(NST_EINPUT,
                            "%s: pyramid.levels = %d with pyramid.factor = %g makes level 1 %dx%d; the deepest layer in use (%s) needs "
                            "at least %dx%d: fewer levels or a smaller factor",
                            nst_config_origin(cfg, NST_K_pyramid_levels), n, f, p->w[0], p->h[0], nst_vgg_layer_at(spec->deepest)->relu,
                            min_side, min_side);
    }
    return NST_OK;
}

/* Without pyramid.iterations: optim.iterations at the coarsest level (a lone level's count), each
 * finer level pyramid.decay times the one before, but none fewer than pyramid.min_iterations (or
 * optim.iterations, if that is fewer). The finer levels refine what the coarse ones set, and each
 * costs about factor^2 times the one before. */
static void schedule(const nst_config *cfg, nst_level_plan *p)
{
    const long long floor = cfg->pyramid_min_iterations < cfg->optim_iterations ? cfg->pyramid_min_iterations : cfg->optim_iterations;
    double its = (double)cfg->optim_iterations;
    for (int k = 0; k < p->n; k++, its *= cfg->pyramid_decay) {
        long long v = llround(its);
        p->iterations[k] = v > floor ? v : floor;
    }
}

nst_status nst_levels_plan(const nst_config *cfg, const nst_loss_spec *spec, int W, int H, int aw, int ah, nst_level_plan *p)
{
    memset(p, 0, sizeof *p);
    const int m = nst_loss_spec_min_side(spec);
    if (cfg->pyramid_levels == NST_WORD(0)) {
        p->n = auto_levels(cfg, W, H, aw, ah, m, p);
    } else {
        p->n = (int)cfg->pyramid_levels;
        NST_TRY(counted_levels(cfg, p->n, W, H, m, spec, p));
    }
    const int n = p->n;
    schedule(cfg, p);
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

/* Level k's tiling on the log, and a warning for a tiling that leaves ranks idle or mostly
 * computes halos. */
static void try_describe(const nst_levels_ctx *c, const nst_level_plan *p, int k, const nst_layout *L)
{
    const nst_config *cfg = c->cfg;
    describe_layout(L, c->spec);
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
}

/* What one try at a level holds between its phases. */
typedef struct {
    const nst_levels_ctx *c;
    const nst_level_plan *p;
    int k, w, h;
    const nst_layout *L;
    nst_color_mode mode;
    float **content, **init, **cores; /* per local tile, in the try's buffers */
    int have_init;                    /* init holds the initial pixels (else the content stands in) */
    nst_adam_state state_in;          /* Adam's moments from the previous level, when carried */
    nst_color_stats cs;               /* the content's colour statistics at this level */
    nst_style_targets T;              /* the blended targets; with style.masks, each image's in each[] */
    nst_style_targets each[NST_MAX_STYLES];
    float *A[NST_MAX_GRAMS];          /* the targets by the objective's slot (borrowed from T or each[]) */
    double normA[NST_MAX_GRAMS];
    nst_guides guides;
    float ***masks;                   /* per local tile, its windows of every mask (NULL: none) */
    float **tt, **tc;                 /* per local tile, the temporal term's target and weights (NULL: none) */
} level_attempt;

/* The temporal term's windows: the target as read, the weights as one value per pixel. */
static nst_status temporal_windows(level_attempt *a)
{
    const nst_layout *L = a->L;
    const nst_grid *g = &L->grid;
    nst_temporal_sources *ts = a->c->temporal;
    nst_rect *rects = nst_alloc_array((size_t)g->ntiles + 1, sizeof(nst_rect), "window rectangles");
    a->tt = nst_calloc(sizeof(float *) * ((size_t)L->nlocal + 1), "temporal windows");
    a->tc = nst_calloc(sizeof(float *) * ((size_t)L->nlocal + 1), "temporal windows");
    nst_status s = nst_comm_agree(rects && a->tt && a->tc ? NST_OK : NST_ENOMEM);
    for (int t = 0; s == NST_OK && t < g->ntiles; t++) rects[t] = nst_grid_window(g, t);
    const char *path = a->c->cfg->content_path;
    if (s == NST_OK)
        s = nst_read_rects(a->c->cfg, NST_K_content_path, path, &ts->target, 0, a->w, a->h, rects, L->owner, g->ntiles, a->tt, NULL, NULL);
    if (s == NST_OK)
        s = nst_read_rects(a->c->cfg, NST_K_content_path, path, &ts->c, 0, a->w, a->h, rects, L->owner, g->ntiles, a->tc, NULL, NULL);
    for (int i = 0; s == NST_OK && i < L->nlocal; i++) {
        size_t n = (size_t)nst_rect_area(rects[L->local[i]]);
        for (size_t p = 0; p < n; p++) a->tc[i][p] = a->tc[i][3 * p];
    }
    nst_free(rects);
    return s;
}

static void temporal_free(level_attempt *a)
{
    for (int i = 0; i < a->L->nlocal; i++) {
        if (a->tt) nst_free(a->tt[i]);
        if (a->tc) nst_free(a->tc[i]);
    }
    nst_free(a->tt), nst_free(a->tc);
    a->tt = a->tc = NULL;
}

/* The content and initial windows (level 0: the init image; later levels: the previous level's
 * result upsampled, with Adam's moments when carried), the colour statistics. */
static nst_status try_inputs(level_attempt *a, const prev_level *pv)
{
    const nst_layout *L = a->L;
    const int k = a->k;
    nst_status s = nst_inputs_windows(a->c->cfg, a->c->in, L, a->w, a->h, a->content, k == 0 && a->have_init ? a->init : NULL);
    if (s == NST_OK && a->c->masks) s = nst_masks_windows(a->c->cfg, a->c->masks, L, a->w, a->h, &a->masks);
    if (s == NST_OK && a->c->temporal && a->c->spec->temporal_weight > 0 && k == a->p->n - 1) s = temporal_windows(a);
    if (s == NST_OK && pv) s = level_change(pv->L, pv->w, pv->h, pv->cores, pv->state, L, a->w, a->h, a->init, &a->state_in);
    /* colour: the content's statistics at this level; luminance-only inputs */
    if (s == NST_OK && a->mode != NST_COLOR_NONE) s = nst_comm_agree(content_stats(a->c, L, a->content, a->mode, &a->cs));
    if (s == NST_OK && a->mode == NST_COLOR_LUMINANCE)
        for (int i = 0; i < L->nlocal; i++) {
            size_t n = (size_t)nst_rect_area(nst_grid_window(&L->grid, L->local[i]));
            nst_color_to_luminance(a->content[i], n);
            if (k == 0 && a->have_init) nst_color_to_luminance(a->init[i], n);
        }
    return s;
}

/* With style.masks, each image's targets: the objective's slots (image g, layer k at g nstyle + k),
 * and the report's sums. */
static nst_status targets_each(level_attempt *a, size_t budget)
{
    const nst_levels_ctx *c = a->c;
    const int n = c->styles->n, ns = c->spec->nstyle;
    NST_TRY(nst_style_targets_each(c->cfg, c->spec, c->weights, c->be, c->coll, c->styles, a->w > a->h ? a->w : a->h, budget, a->mode,
                                   &a->cs, c->cache, a->each));
    memset(&a->T, 0, sizeof a->T);
    a->T.from_cache = 1;
    for (int g = 0; g < n; g++) {
        for (int k = 0; k < ns; k++) a->A[g * ns + k] = a->each[g].A[k], a->normA[g * ns + k] = a->each[g].normA[k];
        a->T.seconds += a->each[g].seconds;
        a->T.from_cache &= a->each[g].from_cache;
        if (a->each[g].tiles > a->T.tiles) a->T.tiles = a->each[g].tiles;
    }
    return NST_OK;
}

/* The style targets at this level's size (none without styles or iterations). */
static nst_status try_targets(level_attempt *a, nst_level_report *r)
{
    const nst_levels_ctx *c = a->c;
    const nst_loss_spec *spec = c->spec;
    const int w = a->w, h = a->h;
    if (spec->nstyle <= 0 || a->p->iterations[a->k] <= 0) return NST_OK;
    size_t budget = nst_layout_style_budget(a->L, c->be, c->budget);
    nst_status s = spec->nmask ? targets_each(a, budget)
                               : nst_style_targets_compute(c->cfg, spec, c->weights, c->be, c->coll, c->styles, w > h ? w : h, budget,
                                                           a->mode, &a->cs, c->cache, &a->T);
    if (s == NST_OK && !spec->nmask) memcpy(a->A, a->T.A, sizeof a->T.A), memcpy(a->normA, a->T.normA, sizeof a->T.normA);
    r->style_seconds = a->T.seconds, r->style_tiles = a->T.tiles, r->style_cached = a->T.from_cache;
    if (s == NST_OK) {
        char phase[32];
        snprintf(phase, sizeof phase, "level %d style targets", a->k % 1000 + 1);
        nst_backend_mark(c->be, phase);
    }
    if (s == NST_OK)
        nst_info("         style targets for %dx%d: %s (%.2f s)\n", w, h,
                 a->T.from_cache ? "from the cache" : a->T.tiles > 1 ? "computed over tiles" : "computed", a->T.seconds);
    return s;
}

/* The level's steps, which the stopping rule may have cut short: the ranks without tiles (which
 * waited) learn them from the others, who all decided the same. */
static nst_status agree_steps(nst_render_stats *st)
{
    double mine[2] = {(double)st->steps, st->stopped}, mn[2], mx[2], sum[2];
    NST_TRY(nst_comm_stats(mine, mn, mx, sum, 2));
    st->steps = (long long)mx[0], st->stopped = mx[1] > 0;
    return NST_OK;
}

/* The render, on the ranks that have tiles; then the checkpoint's generation to every rank. */
static nst_status try_render(level_attempt *a, int resuming, nst_adam_state *state_out, nst_level_report *r)
{
    const nst_levels_ctx *c = a->c;
    const nst_loss_spec *spec = c->spec;
    nst_ckpt *ck = c->ckpt;
    nst_render_ctx ctx = {c->cfg, spec, c->be, c->weights, a->L, c->coll, a->w, a->h, a->p->iterations[a->k], spec->nstyle ? a->A : NULL,
                          a->normA, a->state_in.m ? &a->state_in : NULL, state_out, ck, a->k, c->progress, c->preview_path, c->preview_side,
                          c->save_every, NULL, a->masks, a->tt, a->tc, NULL};
    if (c->masks && (c->masks->n || c->masks->content)) { /* the masks: each style's weight as its share of an even blend */
        a->guides.n = c->masks->n;
        a->guides.content = c->masks->content;
        for (int g = 0; g < a->guides.n; g++) a->guides.weight[g] = c->styles->blend[g] * a->guides.n;
        ctx.guides = &a->guides;
    }
    nst_status s = render_level(&ctx, a->content, a->have_init ? a->init : NULL, a->cores, &r->stats, &r->ranks);
    if (s == NST_OK) s = agree_steps(&r->stats);
    char phase[32];
    snprintf(phase, sizeof phase, "level %d rendered", a->k % 1000 + 1);
    nst_backend_mark(c->be, phase);
    if (ck && s == NST_OK) s = nst_comm_agree(nst_ckpt_sync(ck)); /* a generation written on a subgroup, to the ranks that waited */
    if (resuming && s == NST_OK) ck->resume = 0; /* (a try that failed is followed by one that resumes too) */
    return s;
}

/* Level k on layout L: the content and initial windows, the colour statistics, the style targets
 * and the render; the result's cores in (*bufs)[2 (nlocal + 1) + i]. *retry: it failed only because
 * a backend allocation did not fit, before any optimiser step, on every rank's word: smaller tiles
 * may fit. The caller frees *bufs and *state_out. */
static nst_status level_try(const nst_levels_ctx *c, const nst_level_plan *p, int k, int resuming, const prev_level *pv, const nst_layout *L,
                            float ***bufs_out, nst_adam_state *state_out, nst_level_report *r, int *retry)
{
    const nst_config *cfg = c->cfg;
    const int failures0 = c->be->alloc_failures;
    *retry = 0;
    *bufs_out = NULL;
    r->tiles = L->grid.ntiles, r->tile_w = L->grid.tile_w, r->tile_h = L->grid.tile_h, r->halo = L->grid.halo;
    r->gram = nst_gram_strategy_name(L->gram);
    try_describe(c, p, k, L);

    float **bufs = nst_calloc(sizeof(float *) * 3 * ((size_t)L->nlocal + 1), "level buffers");
    *bufs_out = bufs;
    nst_status s = nst_comm_agree(bufs ? NST_OK : NST_ENOMEM);
    if (s != NST_OK) return s;
    level_attempt a;
    memset(&a, 0, sizeof a);
    a.c = c, a.p = p, a.k = k, a.w = p->w[k], a.h = p->h[k], a.L = L;
    a.mode = (nst_color_mode)nst_color_mode_parse(cfg->color_mode);
    a.content = bufs, a.init = bufs + L->nlocal + 1, a.cores = bufs + 2 * (L->nlocal + 1);
    /* the initial pixels: a resumed level's come from the checkpoint (the content stands in) */
    a.have_init = !resuming && (k > 0 || strcmp(cfg->optim_init, "image") == 0);
    s = try_inputs(&a, pv);
    if (s == NST_OK) s = try_targets(&a, r);
    int rendered = 0;
    if (s == NST_OK) {
        s = try_render(&a, resuming, state_out, r);
        rendered = 1;
    }
    state_free(&a.state_in, L->nlocal);
    nst_style_targets_free(&a.T);
    for (int g = 0; g < NST_MAX_STYLES; g++) nst_style_targets_free(&a.each[g]);
    if (c->masks) nst_masks_free_windows(a.masks, L->nlocal, c->masks->n + c->masks->content);
    temporal_free(&a);
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

/* ---- the levels, phase by phase ------------------------------------------------------------------ */

/* What the levels hold between their phases: the previous level's result, handed to the next. */
typedef struct {
    const nst_levels_ctx *c;
    const nst_level_plan *p;
    nst_level_report *rep;
    int carry;            /* Adam's moments go from level to level */
    int k0;               /* the first level rendered here: 0, or the checkpoint's */
    nst_layout prev;      /* the previous level: its layout, result cores and moments */
    float **pcores;
    nst_adam_state pstate;
    int pw, ph;
    long long adam_t;     /* Adam's steps so far, when its state is carried */
} levels_run;

/* One level's current try: its layout, its buffers, the moments it leaves for the next level. */
typedef struct {
    nst_layout L;
    float **bufs;
    nst_adam_state state_out;
} level_state;

/* The levels finished before the checkpoint: their reports from the manifest. */
static void levels_resumed(levels_run *lr)
{
    const nst_level_plan *p = lr->p;
    const nst_ckpt *ck = lr->c->ckpt;
    for (int k = 0; k < lr->k0; k++) {
        nst_level_report *r = &lr->rep[k];
        const nst_ckpt_level *lv = &ck->levels[k];
        memset(r, 0, sizeof *r);
        r->w = p->w[k], r->h = p->h[k], r->iterations = lv->iterations, r->planned = p->iterations[k], r->tiles = lv->tiles, r->ranks = lv->ranks;
        r->first.total = lv->first, r->last.total = lv->last, r->seconds = lv->seconds;
        r->gram = "-";
        lr->adam_t += lv->iterations; /* the steps it took (the stopping rule may have cut them) */
        if (p->n > 1) nst_info("level %d/%d: %dx%d, finished before the checkpoint (loss %.5e -> %.5e)\n", k + 1, p->n, r->w, r->h, lv->first, lv->last);
    }
}

/* After a try that failed only for memory: the next layout, tiles of half the side (a resumed
 * level keeps the checkpoint's), whose model must promise less than the one that failed (for the
 * checkpoint's tiles: two-pass Gram). NST_OK: ls holds the next layout; else the reason to stop. */
static nst_status level_shrink(const levels_run *lr, int k, int resuming, int halvings, level_state *ls)
{
    const nst_layout *L = &ls->L;
    char why[1024];
    snprintf(why, sizeof why, "%s", nst_fail_message());
    nst_fail_clear(); /* on every rank: nst_comm_agree gave all of them the message */
    nst_layout next;
    const int nw = resuming ? L->grid.tile_w : halve(L->grid.tile_w, L->align), nh = resuming ? L->grid.tile_h : halve(L->grid.tile_h, L->align);
    const int last = resuming ? halvings > 0 : halvings == MAX_HALVINGS;
    nst_status ps = last ? NST_ENOMEM
                         : plan_level(lr->c, lr->p, k, nw, nh, resuming ? "the checkpoint's (in less memory after an allocation failure)"
                                                                       : "halved after an allocation failure:", L->mem_max, &next);
    if (ps != NST_OK) {
        nst_fail_clear();
        return nst_fail(NST_ENOMEM, "%s; tiles of %dx%d px%s, and %s", why, L->grid.tile_w, L->grid.tile_h,
                        resuming ? " (the checkpoint's)" : halvings ? " after halving" : "",
                        resuming ? "no Gram strategy for them models less memory" : last ? "they are halved at most 4 times"
                                                                                        : "halving them again does not model less memory");
    }
    nst_warn("level %d: tiles of %dx%d px did not fit (%s); trying again with %dx%d px%s%s\n", k + 1, L->grid.tile_w, L->grid.tile_h, why,
             next.grid.tile_w, next.grid.tile_h, resuming ? " (the checkpoint's), Gram " : "", resuming ? nst_gram_strategy_name(next.gram) : "");
    try_free(&ls->L, &ls->bufs, &ls->state_out);
    ls->L = next;
    return NST_OK;
}

/* Level k planned and rendered, tried again with smaller tiles while only memory stood in the way. */
static nst_status level_render(levels_run *lr, int k, int resuming, level_state *ls, nst_level_report *r)
{
    const nst_levels_ctx *c = lr->c;
    const nst_level_plan *p = lr->p;
    nst_ckpt *ck = c->ckpt;
    lr->pstate.t = lr->adam_t; /* (ranks that had no tiles hold no moments: the step count is the plan's) */
    const prev_level pv = {&lr->prev, lr->pw, lr->ph, lr->pcores, lr->carry ? &lr->pstate : NULL};
    nst_status s = plan_level(c, p, k, resuming ? ck->tile_w : 0, resuming ? ck->tile_h : 0, "the checkpoint's", 0, &ls->L);
    for (int halvings = 0; s == NST_OK; halvings++) {
        int retry = 0;
        s = level_try(c, p, k, resuming, k > lr->k0 ? &pv : NULL, &ls->L, &ls->bufs, lr->carry && k + 1 < p->n ? &ls->state_out : NULL, r, &retry);
        r->halvings = resuming ? 0 : halvings;
        if (s == NST_OK || !retry) break;
        s = level_shrink(lr, k, resuming, halvings, ls);
    }
    return s;
}

/* The previous level's result cores, freed. */
static void prev_free(levels_run *lr)
{
    for (int i = 0; lr->pcores && i < lr->prev.nlocal; i++) nst_free(lr->pcores[i]);
    nst_free(lr->pcores);
    lr->pcores = NULL;
}

/* Level k's report finished: its losses and time, the checkpoint's manifest, the log. */
static void level_done(const levels_run *lr, int k, nst_status s, double t0)
{
    const nst_level_plan *p = lr->p;
    nst_level_report *r = &lr->rep[k];
    r->first = r->stats.first, r->last = r->stats.last;
    if (s == NST_OK) r->iterations = r->stats.steps; /* planned before, taken now */
    r->seconds = nst_now() - t0;
    if (s == NST_OK && lr->c->ckpt) {
        nst_ckpt_level lv = {p->w[k], p->h[k], r->tiles, r->ranks, r->iterations, r->first.total, r->last.total, r->seconds};
        nst_ckpt_level_done(lr->c->ckpt, k, &lv);
    }
    if (s == NST_OK && p->n > 1)
        nst_info("level %d/%d done: %dx%d, loss %.5e -> %.5e, %.2f s%s\n", k + 1, p->n, p->w[k], p->h[k], r->first.total, r->last.total, r->seconds,
                 r->ranks < nst_comm_size() ? " (on fewer ranks: it has fewer tiles)" : "");
}

/* Level k's result kept for the next one (or the output): it becomes the previous level. On a
 * failure, everything the try holds is freed. */
static nst_status level_handover(levels_run *lr, int k, nst_status s, level_state *ls)
{
    float **kept = NULL;
    if (s == NST_OK) {
        float **cores = ls->bufs + 2 * (ls->L.nlocal + 1);
        kept = nst_calloc(sizeof(float *) * ((size_t)ls->L.nlocal + 1), "a level's result");
        s = nst_comm_agree(kept ? NST_OK : NST_ENOMEM);
        for (int i = 0; kept && i < ls->L.nlocal; i++) kept[i] = cores[i], cores[i] = NULL;
    }
    if (s != NST_OK) {
        nst_free(kept);
        try_free(&ls->L, &ls->bufs, &ls->state_out);
        return s;
    }
    bufs_free(&ls->bufs, ls->L.nlocal);
    lr->prev = ls->L, lr->pcores = kept, lr->pstate = ls->state_out, lr->pw = lr->p->w[k], lr->ph = lr->p->h[k];
    lr->adam_t += lr->rep[k].iterations;
    return NST_OK;
}

/* Level k: set up its report, render it (with retries), release the previous level, hand over. */
static nst_status one_level(levels_run *lr, int k)
{
    const nst_level_plan *p = lr->p;
    const nst_ckpt *ck = lr->c->ckpt;
    double t0 = nst_now();
    const int resuming = ck && ck->resume && k == lr->k0;
    nst_level_report *r = &lr->rep[k];
    memset(r, 0, sizeof *r);
    r->w = p->w[k], r->h = p->h[k], r->iterations = r->planned = p->iterations[k];
    if (p->n > 1) nst_info("level %d/%d: %dx%d, %lld iterations\n", k + 1, p->n, p->w[k], p->h[k], p->iterations[k]);
    level_state ls;
    memset(&ls, 0, sizeof ls);
    nst_status s = level_render(lr, k, resuming, &ls, r);
    if (k > lr->k0) { /* the previous level is in this one's initial windows now */
        prev_free(lr);
        state_free(&lr->pstate, lr->prev.nlocal);
        nst_layout_free(&lr->prev);
    }
    level_done(lr, k, s, t0);
    return level_handover(lr, k, s, &ls);
}

nst_status nst_levels_run(const nst_levels_ctx *c, const nst_level_plan *p, nst_layout *Lout, float ***cores_out, nst_level_report *rep)
{
    const nst_config *cfg = c->cfg;
    const nst_color_mode mode = (nst_color_mode)nst_color_mode_parse(cfg->color_mode);
    levels_run lr;
    memset(&lr, 0, sizeof lr);
    lr.c = c, lr.p = p, lr.rep = rep;
    lr.carry = strcmp(cfg->pyramid_state, "carry") == 0 && strcmp(nst_optim_method(cfg), "adam") == 0;
    nst_status s = NST_OK;
    nst_ckpt *ck = c->ckpt;
    lr.k0 = ck && ck->resume ? ck->level : 0; /* a resume starts at the checkpoint's level */
    if (lr.k0 >= p->n)
        return nst_fail(NST_EINPUT, "checkpoint %s: level %d, but this render has %d level%s", ck->dir, lr.k0 + 1, p->n, p->n == 1 ? "" : "s");
    NST_TRY(preflight(c, p, lr.k0));
    levels_resumed(&lr);
    for (int k = lr.k0; s == NST_OK && k < p->n; k++) s = one_level(&lr, k);
    if (s == NST_OK && mode == NST_COLOR_LUMINANCE) s = keep_chroma(c, &lr.prev, lr.pw, lr.ph, lr.pcores);
    state_free(&lr.pstate, lr.prev.nlocal);
    if (s != NST_OK) {
        prev_free(&lr);
        nst_layout_free(&lr.prev);
        return s;
    }
    *Lout = lr.prev;
    *cores_out = lr.pcores;
    return NST_OK;
}

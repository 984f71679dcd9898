/* nst/plan/layout.c: tile size, halo, ownership, Gram strategy and the memory model (see layout.h). */
#include "layout.h"
#include "../optimise/lbfgs.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../util/log.h"
#include "../../util/mem.h"
#include "../../util/sysmem.h"

static size_t acts_bytes(const nst_net *net, int h, int w) { return nst_acts_bytes(net, h, w); }

/* A window's content features, its masks at the layers that use them (fp32, one channel), and
 * the temporal term's target and weights (fp32, 3 + 1 channels at the pixels). */
static size_t targets_bytes(const nst_loss_spec *spec, const nst_net *net, int h, int w)
{
    size_t b = spec->temporal_weight > 0 ? 16 * (size_t)h * w : 0;
    int used[NST_VGG_NLAYERS] = {0};
    for (int k = 0; k < spec->ncontent; k++) {
        int oh, ow, oc;
        nst_net_shape(net, spec->content[k], h, w, &oh, &ow, &oc);
        b += (size_t)oh * ow * oc * nst_dtype_size(net->be->act_dtype);
        if (spec->content_mask) b += 4 * (size_t)oh * ow;
    }
    for (int k = 0; spec->nmask && k < spec->nstyle; k++) {
        int oh, ow, oc;
        if (used[spec->style[k]]++) continue;
        nst_net_shape(net, spec->style[k], h, w, &oh, &ow, &oc);
        b += 4 * (size_t)spec->nmask * oh * ow;
    }
    return b;
}

size_t nst_layout_memory(const nst_grid *g, const int *owner, int r, int cheap, size_t opt_px_bytes, nst_gram_strategy gram,
                         const nst_loss_spec *spec, const nst_net *net)
{
    size_t b = 0, shared = 0, a = 0, tb = 0;
    int lh = -1, lw = -1; /* the previous window's size: a row's tiles mostly share one (the planner weighs thousands) */
    for (int t = 0; t < g->ntiles; t++) {
        if (owner[t] != r) continue;
        nst_rect w = nst_grid_window(g, t), c = nst_grid_core(g, t);
        size_t wpx = (size_t)w.w * w.h, cpx = (size_t)c.w * c.h;
        if (w.h != lh || w.w != lw) lh = w.h, lw = w.w, a = acts_bytes(net, w.h, w.w), tb = targets_bytes(spec, net, w.h, w.w);
        b += 24 * wpx + tb;
        b += cheap ? (opt_px_bytes - 24) * wpx : opt_px_bytes * cpx; /* cheap: over the window, whose img and dimg are x and g */
        if (gram == NST_GRAM_RESIDENT)
            b += a;
        else if (a > shared)
            shared = a;
    }
    /* the shared set is sized for the largest window's width and height (not area) */
    if (gram != NST_GRAM_RESIDENT) {
        int mh = 0, mw = 0;
        for (int t = 0; t < g->ntiles; t++)
            if (owner[t] == r) {
                nst_rect w = nst_grid_window(g, t);
                if (w.h > mh) mh = w.h;
                if (w.w > mw) mw = w.w;
            }
        if (mh) b += acts_bytes(net, mh, mw);
    }
    /* A, D fp32; G fp64 (each slot padded: nst_gram_slot_doubles); and the previous G (lagged)
     * or, where the backend sums in fixed point (exact strategies on the CPU), those sums: two
     * int64 an entry */
    const size_t per = gram == NST_GRAM_LAGGED ? 24 : net->be && net->be->ops->gram_fixed ? 32 : 16;
    for (int k = 0; k < spec->nstyle; k++) { /* per style image with masks */
        const int c = net->width[spec->style[k]];
        const size_t cc = (size_t)c * c, slots = spec->nmask ? spec->nmask : 1;
        b += (per * cc + 8 * (nst_gram_slot_doubles(c) - cc)) * slots;
    }
    return b + sizeof(nst_loss_sums); /* the loss sums, in backend memory (nst/optimise/objective.h) */
}

static double gib(size_t b) { return (double)b / (double)(1ull << 30); }

size_t nst_memory_budget(const nst_backend *be, double memory_gb, int local_ranks)
{
    if (be && be->capacity) { /* a device arena: already sized by run.memory_gb or the rank's share of the GPU */
        size_t used = be->bytes_in_use + be->reserve;
        return be->capacity > used ? be->capacity - used : 0;
    }
    if (memory_gb > 0) return (size_t)(memory_gb * (double)(1ull << 30));
    nst_sysmem m;
    nst_sysmem_read(&m);
    size_t left = m.headroom ? m.headroom : (size_t)4 << 30; /* 4 GiB when the kernel does not say */
    return (size_t)((double)left * 0.8 / (local_ranks > 0 ? local_ranks : 1));
}

nst_status nst_memory_check(const nst_config *cfg, int local_ranks)
{
    if (cfg->run_memory_gb <= 0) return NST_OK;
    nst_sysmem m;
    nst_sysmem_read(&m);
    if (!m.headroom) return NST_OK;
    const int n = local_ranks > 0 ? local_ranks : 1;
    if (cfg->run_memory_gb * (double)(1ull << 30) * n <= (double)m.headroom) return NST_OK;
    char where[320];
    if (m.group_limit && m.group_limit - (m.group_used < m.group_limit ? m.group_used : m.group_limit) == m.headroom)
        snprintf(where, sizeof where, "its memory control group (%.200s) has %.2f GiB left of a %.2f GiB limit", m.group, gib(m.headroom),
                 gib(m.group_limit));
    else
        snprintf(where, sizeof where, "the node has %.2f GiB available of %.2f GiB", gib(m.headroom), gib(m.total));
    return nst_fail(NST_EINPUT, "%s: run.memory_gb = %g for each of this node's %d rank%s is more than there is: %s; set run.memory_gb to "
                                "at most %.2f, or 0 to use 80 %% of what is left",
                    nst_config_origin(cfg, NST_K_run_memory_gb), cfg->run_memory_gb, n, n == 1 ? "" : "s", where, gib(m.headroom) / n);
}

static int round_up(int v, int a) { return (v + a - 1) / a * a; }

static int cmp_int_desc(const void *a, const void *b) { return *(const int *)b - *(const int *)a; }

/* Core sizes to try along one side of n pixels: the even splits n/k (k = 1..32) and a geometric
 * ladder about 12% apart down to the stride, rounded up to the stride, largest first, unique. */
static int candidates(int n, int align, int *out, int cap)
{
    int k = 0;
    for (int parts = 1; parts <= 32 && k < cap; parts++) out[k++] = round_up((n + parts - 1) / parts, align);
    for (double t = round_up(n, align); k < cap && t >= align; t /= 1.12) out[k++] = round_up((int)t, align);
    qsort(out, (size_t)k, sizeof *out, cmp_int_desc);
    int u = 0;
    for (int i = 0; i < k; i++)
        if (!u || out[i] != out[u - 1]) out[u++] = out[i];
    return u;
}

/* What a rank holds in host memory besides the backend's buffers while a level renders (when the
 * backend's memory is host memory, the CPU's, it comes out of the same budget): the level's
 * content, initial and result windows (3 x 12 B per window pixel), the previous level's cores (at
 * most 12 B per core pixel), and the CPU backend's scratch: the Gram backward's packed D (at most
 * 512 x 512 floats, 1 MiB) and a block of 48 rows of 512 floats per thread (96 KiB), the first
 * conv's fp32 band in bf16 (at most 8 MiB for its largest window), and per thread the Gram sums'
 * block (1 MiB with a mask) and the sums it may keep of its own (16 c^2 bytes up to 256 channels:
 * 1 MiB; kernels/cpu/gram_blocks_cpu.h). */
size_t nst_layout_host_memory(const nst_grid *g, const int *owner, int r, const nst_backend *be)
{
    const nst_dtype act = be->act_dtype;
    size_t b = 0, wmax = 0;
    for (int t = 0; t < g->ntiles; t++) {
        if (owner[t] != r) continue;
        nst_rect w = nst_grid_window(g, t), c = nst_grid_core(g, t);
        b += 36 * (size_t)w.w * w.h + 12 * (size_t)c.w * c.h;
        if ((size_t)w.w * w.h > wmax) wmax = (size_t)w.w * w.h;
    }
    if (!wmax) return b;
    const size_t threads = (size_t)(be->threads > 0 ? be->threads : 1);
    size_t gram = ((size_t)1 << 20) + threads * 48 * 512 * sizeof(float);
    size_t band = act == NST_BF16 ? 4 * 64 * wmax : 0;
    return b + threads * ((size_t)2 << 20) + gram + (band < ((size_t)8 << 20) ? band : (size_t)8 << 20);
}

size_t nst_layout_style_budget(const nst_layout *L, const nst_backend *be, size_t budget)
{
    size_t held = 0;
    for (int r = 0; !be->capacity && r < L->nranks; r++) {
        size_t h = nst_layout_host_memory(&L->grid, L->owner, r, be);
        held = h > held ? h : held;
    }
    return budget > held ? budget - held : 0;
}

void nst_layout_describe_tiles(const nst_grid *g, char *out, size_t cap)
{
    if (g->ntiles == 1)
        snprintf(out, cap, "1 tile, the whole %dx%d image", g->width, g->height);
    else
        snprintf(out, cap, "%dx%d = %d tiles of %dx%d px", g->nx, g->ny, g->ntiles, g->tile_w, g->tile_h);
}

/* The largest window of a grid: a tile and its halos, never more than the image. */
static void largest_window(const nst_grid *g, int *ww, int *wh)
{
    *ww = g->tile_w + 2 * g->halo < g->width ? g->tile_w + 2 * g->halo : g->width;
    *wh = g->tile_h + 2 * g->halo < g->height ? g->tile_h + 2 * g->halo : g->height;
}

/* The CUDA backend describes tensors with cuDNN's 4-d descriptors, whose sizes and strides are int:
 * every layer's output over the largest window must hold fewer than 2^31 values (a large arena
 * would otherwise allow ~6000 px tiles: 2.3e9 values at 64 channels). The CPU has no such limit.
 * 0 and the offending layer in *layer when g's windows break it. */
static int fits_descriptors(const nst_grid *g, const nst_net *net, int *layer)
{
    if (!net->be || !net->be->capacity) return 1;
    int ww, wh;
    largest_window(g, &ww, &wh);
    for (int i = 0; i < net->nlayers; i++) {
        int oh, ow, oc;
        nst_net_shape(net, i, wh, ww, &oh, &ow, &oc);
        if ((int64_t)oh * ow * (oc < 8 ? 8 : oc) >= ((int64_t)1 << 31)) {
            *layer = i;
            return 0;
        }
    }
    return 1;
}

/* The largest model over ranks for a grid and strategy, with the host buffers where they share the
 * backend's memory; *backend (may be NULL): the largest of the backend's buffers alone. */
static size_t worst_memory(const nst_grid *g, const int *owner, int nranks, int cheap, size_t opt_px_bytes, nst_gram_strategy gram,
                           const nst_loss_spec *spec, const nst_net *net, size_t *backend)
{
    size_t worst = 0, worst_be = 0;
    const int host = !net->be->capacity;
    for (int r = 0; r < nranks; r++) {
        size_t b = nst_layout_memory(g, owner, r, cheap, opt_px_bytes, gram, spec, net);
        size_t m = b + (host ? nst_layout_host_memory(g, owner, r, net->be) : 0);
        if (m > worst) worst = m;
        if (b > worst_be) worst_be = b;
    }
    if (backend) *backend = worst_be;
    return worst;
}

typedef struct { /* the plan that models the least memory, for the message when none fits */
    size_t mem;
    int w, h;
    nst_gram_strategy gram;
} least_plan;

/* Nothing fits the budget: one line with the budget, the smallest plan tried and what it needs,
 * and how many ranks would make it fit (geometry only: the same tiles over more ranks). */
static nst_status no_fit(const nst_config *cfg, const nst_loss_spec *spec, const nst_net *net, int W, int H, int nranks, size_t budget,
                         int halo, int align, int cheap, size_t opt_px_bytes, long long tk, least_plan least)
{
    int ranks = 0;
    nst_grid g;
    if (least.w && nst_grid_make(W, H, least.w, least.h, halo, align, &g) == 0) {
        int *owner = malloc(sizeof(int) * (size_t)g.ntiles);
        for (int r = nranks * 2; owner && r <= g.ntiles && r <= 65536 && !ranks; r *= 2) {
            nst_assign_tiles(&g, r, owner);
            if (worst_memory(&g, owner, r, cheap, opt_px_bytes, least.gram, spec, net, NULL) <= budget) ranks = r;
        }
        free(owner);
    }
    char more[96] = "", origin[NST_CFG_ORIGIN_MAX + 64] = "";
    if (ranks) snprintf(more, sizeof more, ", or %d ranks with as much memory each", ranks);
    if (tk != NST_WORD(0) || cfg->run_memory_gb > 0) { /* a key the user set limits it: name it */
        nst_config_where(cfg, tk != NST_WORD(0) ? NST_K_tiling_tile_size : NST_K_run_memory_gb, origin, sizeof origin - 2);
        strcat(origin, ": ");
    }
    return nst_fail(NST_EINPUT,
                    "%sno tiling of the %dx%d image fits the memory budget of %.3g GiB per rank (%s); the smallest plan (tiles of %dx%d "
                    "px, tiling.gram = %s) needs %.3g GiB on its busiest rank: give each rank that much (run.memory_gb, fewer ranks "
                    "per node)%s, or render a smaller output",
                    origin, W, H, gib(budget), cfg->run_memory_gb > 0 ? "run.memory_gb" : "80 % of what the node and its memory group have left",
                    least.w, least.h, nst_gram_strategy_name(least.gram), gib(least.mem), more);
}

nst_status nst_layout_plan(const nst_config *cfg, const nst_loss_spec *spec, const nst_net *net, int W, int H, int nranks, int rank,
                           size_t budget, nst_layout *L)
{
    nst_plan_req req = {budget, 0, cfg->optim_iterations, 0, 0, NULL};
    return nst_layout_plan_tiles(cfg, spec, net, W, H, nranks, rank, &req, L);
}

/* ---- one level's plan, phase by phase ------------------------------------------------------------ */

/* What the planning of one level holds between its phases. */
typedef struct {
    const nst_config *cfg;
    const nst_loss_spec *spec;
    const nst_net *net;
    int W, H, nranks;
    const nst_plan_req *req;
    nst_layout *L;
    int deepest;                /* the deepest layer in use (0 when none) */
    int halo;
    long long tk;               /* tiling.tile_size, or the forced width; NST_WORD(0): auto */
    nst_gram_strategy want[2];  /* the Gram strategies allowed, in order of preference */
    int nwant;
    int cw[128], ch[128], ncw, nch; /* the core widths and heights to try */
    int *owner;                 /* the owners of a candidate's tiles (scratch) */
    /* the cheapest plan that fits so far */
    double best_cost;
    int best_w, best_h;
    nst_gram_strategy best_g;
    size_t best_mem, best_be;
    least_plan least;           /* the plan that models the least memory, fitting or not */
} tile_plan;

/* The halo: exact, auto (exact, or 32 px in cheap mode) or given on the stride; a warning when an
 * exact render is given less than it needs. */
static nst_status plan_halo(tile_plan *p)
{
    const nst_config *cfg = p->cfg;
    nst_layout *L = p->L;
    long long hk = cfg->tiling_halo;
    if (hk == NST_WORD(1) || (hk == NST_WORD(0) && !L->cheap)) {
        p->halo = L->halo_exact;
    } else if (hk == NST_WORD(0)) {
        p->halo = round_up(32, L->align);
    } else {
        if (hk % L->align)
            return nst_fail(NST_EINPUT, "%s: tiling.halo = %lld: must be a multiple of %d (the total stride to %s), or exact or auto",
                            nst_config_origin(cfg, NST_K_tiling_halo), hk, L->align, nst_vgg_layer_at(p->deepest)->relu);
        p->halo = (int)hk;
    }
    if (!L->cheap && p->halo < L->halo_exact)
        nst_warn("tiling.halo = %d is below the exact %d px for %s: tiles will not equal the whole-image result\n", p->halo,
                 L->halo_exact, nst_vgg_layer_at(p->deepest)->relu);
    return NST_OK;
}

const char *nst_optim_method(const nst_config *cfg)
{
    if (strcmp(cfg->optim_method, "auto") != 0) return cfg->optim_method;
    return strcmp(cfg->tiling_mode, "cheap") == 0 ? "adam" : "lbfgs";
}

/* The optimiser's state per owned pixel (exact mode): the pixels and their gradient, then Adam's m
 * and v, or L-BFGS's history pairs, direction and previous gradient; and the moving average. */
static size_t optimiser_px_bytes(const nst_config *cfg, int lbfgs)
{
    return 24 + (lbfgs ? 3 * nst_lbfgs_bytes_per_value((int)cfg->optim_lbfgs_history) : 24) + (cfg->optim_average > 0 ? 12 : 0);
}

/* The optimiser's state per owned pixel, the cheap mode's blend ramp and the halo exchange period,
 * with the combinations of method and mode that do not go together refused. */
static nst_status plan_optimiser(tile_plan *p)
{
    const nst_config *cfg = p->cfg;
    nst_layout *L = p->L;
    L->lbfgs = strcmp(nst_optim_method(cfg), "lbfgs") == 0;
    L->opt_px_bytes = optimiser_px_bytes(cfg, L->lbfgs);
    if (L->lbfgs && L->cheap)
        return nst_fail(NST_EINPUT, "%s: optim.method = lbfgs needs tiling.mode = exact (the cheap mode's lagged Gram changes the "
                                    "objective under L-BFGS's curvature pairs)",
                        nst_config_origin(cfg, NST_K_optim_method));

    /* the feather ramp of the cheap mode's blend: the halo unless set */
    L->blend_width = cfg->tiling_blend_width == NST_WORD(0) ? p->halo : (int)cfg->tiling_blend_width;

    /* halo exchange period */
    long long ek = cfg->tiling_exchange_every;
    L->exchange_every = ek == NST_WORD(0) ? (L->cheap ? 4 : 1) : (int)ek;
    if (!L->cheap && L->exchange_every > 1)
        return nst_fail(NST_EINPUT, "%s: tiling.exchange_every = %d needs tiling.mode = cheap (exact tiles refresh halos every iteration)",
                        nst_config_origin(cfg, NST_K_tiling_exchange_every), L->exchange_every);
    return NST_OK;
}

/* The Gram strategies allowed, in order of preference: auto tries resident, then two-pass (exact)
 * or takes lagged (cheap); a configured one is the only one. */
static void plan_gram_strategies(tile_plan *p)
{
    const char *gram = p->cfg->tiling_gram;
    if (strcmp(gram, "auto") == 0) {
        if (p->L->cheap) {
            p->want[0] = NST_GRAM_LAGGED;
            p->nwant = 1;
        } else {
            p->want[0] = NST_GRAM_RESIDENT;
            p->want[1] = NST_GRAM_TWO_PASS;
            p->nwant = 2;
        }
    } else {
        p->want[0] = strcmp(gram, "resident") == 0   ? NST_GRAM_RESIDENT
                     : strcmp(gram, "two_pass") == 0 ? NST_GRAM_TWO_PASS
                                                     : NST_GRAM_LAGGED;
        p->nwant = 1;
        if (p->want[0] == NST_GRAM_LAGGED && !p->L->cheap)
            nst_warn("tiling.gram = lagged: the backward uses the previous iteration's Gram; not exact\n");
    }
}

/* The core sizes to try: the forced ones (a resumed checkpoint's tiles, or halved ones), the
 * configured square size (on the stride), or auto's candidates along each side. */
static nst_status tile_candidates(tile_plan *p)
{
    const nst_config *cfg = p->cfg;
    const nst_plan_req *req = p->req;
    const int align = p->L->align;
    p->tk = cfg->tiling_tile_size;
    if (req->force_w > 0 && req->force_h > 0) {
        p->cw[p->ncw++] = req->force_w;
        p->ch[p->nch++] = req->force_h;
        p->tk = req->force_w;
    } else if (p->tk != NST_WORD(0)) {
        if (p->tk % align)
            return nst_fail(NST_EINPUT, "%s: tiling.tile_size = %lld: must be a multiple of %d (the total stride to %s), or auto",
                            nst_config_origin(cfg, NST_K_tiling_tile_size), p->tk, align, nst_vgg_layer_at(p->deepest)->relu);
        p->cw[p->ncw++] = p->ch[p->nch++] = (int)p->tk;
    } else {
        p->ncw = candidates(p->W, align, p->cw, 128);
        p->nch = candidates(p->H, align, p->ch, 128);
    }
    return NST_OK;
}

/* The memory model of a candidate grid of cw x ch cores (its tiles assigned) under each allowed
 * strategy in turn: the first that fits the budget is the one used at this size (-1: none does;
 * *mem and *mem_be: what it needs). The least seen, fitting or not, is kept for the message. */
static int fit_strategy(tile_plan *p, const nst_grid *g, int cw, int ch, size_t *mem, size_t *mem_be)
{
    const nst_plan_req *req = p->req;
    for (int k = 0; k < p->nwant; k++) {
        *mem = worst_memory(g, p->owner, p->nranks, p->L->cheap, p->L->opt_px_bytes, p->want[k], p->spec, p->net, mem_be);
        if (!p->least.mem || *mem < p->least.mem) p->least = (least_plan){*mem, cw, ch, p->want[k]};
        if (req->iterations > 0 && (*mem > req->budget || (req->backend_below && *mem_be >= req->backend_below)))
            continue; /* (no optimisation: no network buffers) */
        return k;
    }
    return -1;
}

/* The choice: a fitting plan becomes the best when it costs less (the busiest rank's window pixels,
 * load, times 1.5 when the forward runs twice), or as much with larger cores, then squarer ones. */
static void keep_if_best(tile_plan *p, int64_t load, int cw, int ch, nst_gram_strategy gram, size_t mem, size_t mem_be)
{
    double cost = (double)load * (gram == NST_GRAM_TWO_PASS ? 1.5 : 1.0);
    long long area = (long long)cw * ch, best_area = (long long)p->best_w * p->best_h;
    int squarer = abs(cw - ch) < abs(p->best_w - p->best_h);
    if (cost < p->best_cost || (cost == p->best_cost && (area > best_area || (area == best_area && squarer)))) {
        p->best_cost = cost;
        p->best_w = cw;
        p->best_h = ch;
        p->best_g = gram;
        p->best_mem = mem;
        p->best_be = mem_be;
    }
}

/* One candidate core size: its grid (skipped when it cannot be made, or, auto, when its tiles are
 * too many or its windows too large for cuDNN, which a configured size is told), its tiles over
 * the ranks, its memory model against the budget, and the choice. */
static nst_status try_candidate(tile_plan *p, int cw, int ch)
{
    const long long tk = p->tk;
    nst_grid g;
    if (nst_grid_make(p->W, p->H, cw, ch, p->halo, p->L->align, &g) != 0) return NST_OK;
    if (tk == NST_WORD(0) && g.ntiles > 4096) return NST_OK; /* tiles that small only add halo */
    int bad_layer = 0;
    if (!fits_descriptors(&g, p->net, &bad_layer)) {
        if (tk == NST_WORD(0)) return NST_OK;
        int ww, wh;
        largest_window(&g, &ww, &wh);
        return nst_fail(NST_EINPUT, "%s: tiling.tile_size = %lld gives windows of %dx%d px whose %s output holds 2^31 values or more, "
                        "past cuDNN's descriptors: use a smaller tile size, or auto", nst_config_origin(p->cfg, NST_K_tiling_tile_size), tk,
                        ww, wh, nst_vgg_layer_at(bad_layer)->name);
    }
    int *o = realloc(p->owner, sizeof(int) * (size_t)g.ntiles);
    if (!o) return nst_fail(NST_ENOMEM, "out of memory planning %d tiles", g.ntiles);
    p->owner = o;
    int64_t load = nst_assign_tiles(&g, p->nranks, p->owner);
    size_t mem = 0, mem_be = 0;
    int k = fit_strategy(p, &g, cw, ch, &mem, &mem_be);
    if (k >= 0) keep_if_best(p, load, cw, ch, p->want[k], mem, mem_be);
    return NST_OK;
}

/* Every candidate width with every candidate height; the best in p->best_* (best_w 0: none fits). */
static nst_status choose_tiles(tile_plan *p)
{
    nst_status s = NST_OK;
    p->best_cost = INFINITY;
    p->least = (least_plan){0, 0, 0, p->want[0]};
    p->best_g = p->want[0];
    for (int a = 0; s == NST_OK && a < p->ncw; a++)
        for (int b = 0; s == NST_OK && b < p->nch; b++) s = try_candidate(p, p->cw[a], p->ch[b]);
    free(p->owner);
    p->owner = NULL;
    return s;
}

/* The chosen grid in L: its tiles' owners, this rank's tiles, the memory models, and why. */
static nst_status plan_commit(tile_plan *p)
{
    nst_layout *L = p->L;
    const nst_plan_req *req = p->req;
    nst_grid_make(p->W, p->H, p->best_w, p->best_h, p->halo, L->align, &L->grid);
    L->gram = p->best_g;
    L->owner = nst_alloc_array((size_t)L->grid.ntiles, sizeof(int), "tile owners");
    L->local = nst_alloc_array((size_t)L->grid.ntiles, sizeof(int), "local tiles");
    if (!L->owner || !L->local) {
        nst_layout_free(L);
        return NST_ENOMEM;
    }
    L->max_load = nst_assign_tiles(&L->grid, p->nranks, L->owner);
    for (int t = 0; t < L->grid.ntiles; t++)
        if (L->owner[t] == L->rank) L->local[L->nlocal++] = t;
    L->mem_model = nst_layout_memory(&L->grid, L->owner, L->rank, L->cheap, L->opt_px_bytes, L->gram, p->spec, p->net);
    L->mem_peak = L->mem_model;
    L->mem_max = p->best_be;
    L->mem_total = p->best_mem;
    snprintf(L->why, sizeof L->why, "%s tile size %dx%d px%s; Gram %s: %.3f GiB per rank of %.2f GiB budget%s",
             req->force_w > 0 ? (req->forced ? req->forced : "forced") : p->tk == NST_WORD(0) ? "auto" : "configured", p->best_w,
             p->best_h, p->tk == NST_WORD(0) ? " (least work on the slowest rank)" : "", nst_gram_strategy_name(p->best_g),
             gib(p->best_mem), gib(req->budget),
             strcmp(p->cfg->tiling_gram, "auto") == 0 && p->best_g == NST_GRAM_TWO_PASS ? " (resident did not fit)" : "");
    if (L->lbfgs_unfit) {
        size_t n = strlen(L->why);
        snprintf(L->why + n, sizeof L->why - n, "; optim.method = auto: Adam, as L-BFGS's state (%zu B per owned pixel) fits no tiling",
                 L->lbfgs_unfit);
    }
    return NST_OK;
}

/* The settings, the halo, the optimiser's state and the Gram strategies; then the candidate tile
 * sizes, each costed against the budget, and the cheapest that fits chosen (or, when none does,
 * what would). */
nst_status nst_layout_plan_tiles(const nst_config *cfg, const nst_loss_spec *spec, const nst_net *net, int W, int H, int nranks, int rank,
                                 const nst_plan_req *req, nst_layout *L)
{
    memset(L, 0, sizeof *L);
    L->nranks = nranks;
    L->rank = rank;
    L->mem_budget = req->budget;
    L->cheap = strcmp(cfg->tiling_mode, "cheap") == 0;
    L->blend_cosine = strcmp(cfg->tiling_blend, "cosine") == 0;
    tile_plan p = {.cfg = cfg, .spec = spec, .net = net, .W = W, .H = H, .nranks = nranks, .req = req, .L = L};
    p.deepest = spec->deepest < 0 ? 0 : spec->deepest;
    L->align = nst_vgg_footprint(p.deepest).stride;
    L->halo_exact = round_up(nst_vgg_gradient_halo(p.deepest), L->align);

    NST_TRY(plan_halo(&p));
    NST_TRY(plan_optimiser(&p));
    plan_gram_strategies(&p);
    NST_TRY(tile_candidates(&p));
    NST_TRY(choose_tiles(&p));
    if (!p.best_w && L->lbfgs && strcmp(cfg->optim_method, "auto") == 0) {
        /* auto: where L-BFGS's history does not fit the budget at any tile size (it is per owned
         * pixel, so tiles cannot shrink it: a print on few ranks), Adam's, 6x smaller at the default history. Every
         * rank plans from the same numbers, so all choose the same. */
        L->lbfgs = 0;
        L->lbfgs_unfit = optimiser_px_bytes(cfg, 1);
        L->opt_px_bytes = optimiser_px_bytes(cfg, 0);
        NST_TRY(choose_tiles(&p));
    }
    if (!p.best_w)
        return no_fit(cfg, spec, net, W, H, nranks, req->budget, p.halo, L->align, L->cheap, L->opt_px_bytes, p.tk, p.least);
    return plan_commit(&p);
}

void nst_layout_free(nst_layout *L)
{
    nst_free(L->owner);
    nst_free(L->local);
    L->owner = L->local = NULL;
}

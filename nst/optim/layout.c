/* nst/optim/layout.c: tile size, halo, ownership, Gram strategy and the memory model (see layout.h). */
#include "layout.h"
#include "lbfgs.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../util/log.h"
#include "../../util/mem.h"
#include "../../util/sysmem.h"

static size_t acts_bytes(const nst_net *net, int h, int w) { return nst_acts_bytes(net, h, w); }

static size_t targets_bytes(const nst_loss_spec *spec, const nst_net *net, int h, int w)
{
    size_t b = 0;
    for (int k = 0; k < spec->ncontent; k++) {
        int oh, ow, oc;
        nst_net_shape(net, spec->content[k], h, w, &oh, &ow, &oc);
        b += (size_t)oh * ow * oc * nst_dtype_size(net->be->act_dtype);
    }
    return b;
}

size_t nst_layout_memory(const nst_grid *g, const int *owner, int r, int cheap, size_t opt_px_bytes, nst_gram_strategy gram,
                         const nst_loss_spec *spec, const nst_net *net)
{
    size_t b = 0, shared = 0;
    for (int t = 0; t < g->ntiles; t++) {
        if (owner[t] != r) continue;
        nst_rect w = nst_grid_window(g, t), c = nst_grid_core(g, t);
        size_t wpx = (size_t)w.w * w.h, cpx = (size_t)c.w * c.h;
        b += 24 * wpx + targets_bytes(spec, net, w.h, w.w);
        b += cheap ? 24 * wpx : opt_px_bytes * cpx;
        size_t a = acts_bytes(net, w.h, w.w);
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
    for (int k = 0; k < spec->nstyle; k++) {
        int c = net->width[spec->style[k]];
        b += (gram == NST_GRAM_LAGGED ? 24 : 16) * (size_t)c * c; /* A, D fp32; G (and the lagged previous G) fp64 */
    }
    return b;
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
 * most 12 B per core pixel), and the CPU backend's scratch for its largest window: the Gram
 * backward's region copies (at most 16 MiB), the first conv's fp32 band in bf16 (at most 8 MiB)
 * and the Gram sums' block (512 KiB). */
size_t nst_layout_host_memory(const nst_grid *g, const int *owner, int r, nst_dtype act)
{
    size_t b = 0, wmax = 0;
    for (int t = 0; t < g->ntiles; t++) {
        if (owner[t] != r) continue;
        nst_rect w = nst_grid_window(g, t), c = nst_grid_core(g, t);
        b += 36 * (size_t)w.w * w.h + 12 * (size_t)c.w * c.h;
        if ((size_t)w.w * w.h > wmax) wmax = (size_t)w.w * w.h;
    }
    if (!wmax) return b;
    size_t gram = 2 * 64 * nst_dtype_size(act) * wmax, band = act == NST_BF16 ? 4 * 64 * wmax : 0;
    return b + ((size_t)1 << 19) + (gram < ((size_t)16 << 20) ? gram : (size_t)16 << 20) + (band < ((size_t)8 << 20) ? band : (size_t)8 << 20);
}

size_t nst_layout_style_budget(const nst_layout *L, const nst_backend *be, size_t budget)
{
    size_t held = 0;
    for (int r = 0; !be->capacity && r < L->nranks; r++) {
        size_t h = nst_layout_host_memory(&L->grid, L->owner, r, be->act_dtype);
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

/* The CUDA backend describes tensors with cuDNN's 4-d descriptors, whose sizes and strides are int:
 * every layer's output over the largest window must hold fewer than 2^31 values (a large arena
 * would otherwise allow ~6000 px tiles: 2.3e9 values at 64 channels). The CPU has no such limit.
 * 0 and the offending layer in *layer when g's windows break it. */
static int fits_descriptors(const nst_grid *g, const nst_net *net, int *layer)
{
    if (!net->be || !net->be->capacity) return 1;
    int wh = g->tile_h + 2 * g->halo < g->height ? g->tile_h + 2 * g->halo : g->height;
    int ww = g->tile_w + 2 * g->halo < g->width ? g->tile_w + 2 * g->halo : g->width;
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
        size_t m = b + (host ? nst_layout_host_memory(g, owner, r, net->be->act_dtype) : 0);
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

nst_status nst_layout_plan_tiles(const nst_config *cfg, const nst_loss_spec *spec, const nst_net *net, int W, int H, int nranks, int rank,
                                 const nst_plan_req *req, nst_layout *L)
{
    const size_t budget = req->budget;
    const int force_w = req->force_w, force_h = req->force_h;
    memset(L, 0, sizeof *L);
    L->nranks = nranks;
    L->rank = rank;
    L->mem_budget = budget;
    L->cheap = strcmp(cfg->tiling_mode, "cheap") == 0;
    L->blend_cosine = strcmp(cfg->tiling_blend, "cosine") == 0;
    int deepest = spec->deepest < 0 ? 0 : spec->deepest;
    L->align = nst_vgg_footprint(deepest).stride;
    L->halo_exact = round_up(nst_vgg_gradient_halo(deepest), L->align);

    /* halo */
    int halo;
    long long hk = cfg->tiling_halo;
    if (hk == NST_WORD(1) || (hk == NST_WORD(0) && !L->cheap)) {
        halo = L->halo_exact;
    } else if (hk == NST_WORD(0)) {
        halo = round_up(32, L->align);
    } else {
        if (hk % L->align)
            return nst_fail(NST_EINPUT, "%s: tiling.halo = %lld: must be a multiple of %d (the total stride to %s), or exact or auto",
                            nst_config_origin(cfg, NST_K_tiling_halo), hk, L->align, nst_vgg_layer_at(deepest)->relu);
        halo = (int)hk;
    }
    if (!L->cheap && halo < L->halo_exact)
        nst_warn("tiling.halo = %d is below the exact %d px for %s: tiles will not equal the whole-image result\n", halo,
                 L->halo_exact, nst_vgg_layer_at(deepest)->relu);

    /* the optimiser's state per owned pixel (exact mode): the pixels and their gradient, then Adam's
     * m and v, or L-BFGS's history pairs, direction and previous gradient */
    L->lbfgs = strcmp(cfg->optim_method, "lbfgs") == 0;
    L->opt_px_bytes = 24 + (L->lbfgs ? 3 * nst_lbfgs_bytes_per_value((int)cfg->optim_lbfgs_history) : 24);
    if (L->lbfgs && L->cheap)
        return nst_fail(NST_EINPUT, "%s: optim.method = lbfgs needs tiling.mode = exact (the cheap mode's lagged Gram changes the "
                                    "objective under L-BFGS's curvature pairs)",
                        nst_config_origin(cfg, NST_K_optim_method));

    /* the feather ramp of the cheap mode's blend: the halo unless set */
    L->blend_width = cfg->tiling_blend_width == NST_WORD(0) ? halo : (int)cfg->tiling_blend_width;

    /* halo exchange period */
    long long ek = cfg->tiling_exchange_every;
    L->exchange_every = ek == NST_WORD(0) ? (L->cheap ? 4 : 1) : (int)ek;
    if (!L->cheap && L->exchange_every > 1)
        return nst_fail(NST_EINPUT, "%s: tiling.exchange_every = %d needs tiling.mode = cheap (exact tiles refresh halos every iteration)",
                        nst_config_origin(cfg, NST_K_tiling_exchange_every), L->exchange_every);

    /* the Gram strategies allowed, in order of preference */
    nst_gram_strategy want[2];
    int nwant;
    if (strcmp(cfg->tiling_gram, "auto") == 0) {
        if (L->cheap) {
            want[0] = NST_GRAM_LAGGED;
            nwant = 1;
        } else {
            want[0] = NST_GRAM_RESIDENT;
            want[1] = NST_GRAM_TWO_PASS;
            nwant = 2;
        }
    } else {
        want[0] = strcmp(cfg->tiling_gram, "resident") == 0   ? NST_GRAM_RESIDENT
                  : strcmp(cfg->tiling_gram, "two_pass") == 0 ? NST_GRAM_TWO_PASS
                                                              : NST_GRAM_LAGGED;
        nwant = 1;
        if (want[0] == NST_GRAM_LAGGED && !L->cheap)
            nst_warn("tiling.gram = lagged: the backward uses the previous iteration's Gram; not exact\n");
    }

    /* tile size: given (square), or the width and height that minimise the slowest rank's cost
     * within the budget (cost: window pixels, times 1.5 when the forward runs twice); among equal
     * costs larger cores, then squarer ones */
    long long tk = cfg->tiling_tile_size;
    int cw[128], ch[128], ncw = 0, nch = 0;
    if (force_w > 0 && force_h > 0) { /* a resumed checkpoint's tiles, or halved ones */
        cw[ncw++] = force_w;
        ch[nch++] = force_h;
        tk = force_w;
    } else if (tk != NST_WORD(0)) {
        if (tk % L->align)
            return nst_fail(NST_EINPUT, "%s: tiling.tile_size = %lld: must be a multiple of %d (the total stride to %s), or auto",
                            nst_config_origin(cfg, NST_K_tiling_tile_size), tk, L->align, nst_vgg_layer_at(deepest)->relu);
        cw[ncw++] = ch[nch++] = (int)tk;
    } else {
        ncw = candidates(W, L->align, cw, 128);
        nch = candidates(H, L->align, ch, 128);
    }
    double best_cost = INFINITY;
    least_plan least = {0, 0, 0, want[0]};
    int best_w = 0, best_h = 0;
    nst_gram_strategy best_g = want[0];
    size_t best_mem = 0, best_be = 0;
    int *owner = NULL;
    for (int a = 0; a < ncw; a++)
        for (int b = 0; b < nch; b++) {
            nst_grid g;
            if (nst_grid_make(W, H, cw[a], ch[b], halo, L->align, &g) != 0) continue;
            if (tk == NST_WORD(0) && g.ntiles > 4096) continue; /* tiles that small only add halo */
            int bad_layer = 0;
            if (!fits_descriptors(&g, net, &bad_layer)) {
                if (tk == NST_WORD(0)) continue;
                free(owner);
                return nst_fail(NST_EINPUT, "%s: tiling.tile_size = %lld gives windows of %dx%d px whose %s output holds 2^31 values or more, "
                                "past cuDNN's descriptors: use a smaller tile size, or auto", nst_config_origin(cfg, NST_K_tiling_tile_size), tk,
                                g.tile_w + 2 * g.halo, g.tile_h + 2 * g.halo, nst_vgg_layer_at(bad_layer)->name);
            }
            int *o = realloc(owner, sizeof(int) * (size_t)g.ntiles);
            if (!o) {
                free(owner);
                return nst_fail(NST_ENOMEM, "out of memory planning %d tiles", g.ntiles);
            }
            owner = o;
            int64_t load = nst_assign_tiles(&g, nranks, owner);
            for (int k = 0; k < nwant; k++) {
                size_t mem_be, mem = worst_memory(&g, owner, nranks, L->cheap, L->opt_px_bytes, want[k], spec, net, &mem_be);
                if (!least.mem || mem < least.mem) least = (least_plan){mem, cw[a], ch[b], want[k]};
                if (req->iterations > 0 && (mem > budget || (req->backend_below && mem_be >= req->backend_below)))
                    continue; /* (no optimisation: no network buffers) */
                double cost = (double)load * (want[k] == NST_GRAM_TWO_PASS ? 1.5 : 1.0);
                long long area = (long long)cw[a] * ch[b], best_area = (long long)best_w * best_h;
                int squarer = abs(cw[a] - ch[b]) < abs(best_w - best_h);
                if (cost < best_cost || (cost == best_cost && (area > best_area || (area == best_area && squarer)))) {
                    best_cost = cost;
                    best_w = cw[a];
                    best_h = ch[b];
                    best_g = want[k];
                    best_mem = mem;
                    best_be = mem_be;
                }
                break; /* the first strategy that fits is the one used at this size */
            }
        }
    free(owner);
    if (!best_w) return no_fit(cfg, spec, net, W, H, nranks, budget, halo, L->align, L->cheap, L->opt_px_bytes, tk, least);
    nst_grid_make(W, H, best_w, best_h, halo, L->align, &L->grid);
    L->gram = best_g;
    L->owner = nst_alloc_array((size_t)L->grid.ntiles, sizeof(int), "tile owners");
    L->local = nst_alloc_array((size_t)L->grid.ntiles, sizeof(int), "local tiles");
    if (!L->owner || !L->local) {
        nst_layout_free(L);
        return NST_ENOMEM;
    }
    L->max_load = nst_assign_tiles(&L->grid, nranks, L->owner);
    for (int t = 0; t < L->grid.ntiles; t++)
        if (L->owner[t] == rank) L->local[L->nlocal++] = t;
    L->mem_model = nst_layout_memory(&L->grid, L->owner, rank, L->cheap, L->opt_px_bytes, L->gram, spec, net);
    L->mem_peak = L->mem_model;
    L->mem_max = best_be;
    L->mem_total = best_mem;
    snprintf(L->why, sizeof L->why, "%s tile size %dx%d px%s; Gram %s: %.3f GiB per rank of %.2f GiB budget%s",
             force_w > 0 ? (req->forced ? req->forced : "forced") : tk == NST_WORD(0) ? "auto" : "configured", best_w, best_h,
             tk == NST_WORD(0) ? " (least work on the slowest rank)" : "", nst_gram_strategy_name(best_g), gib(best_mem),
             gib(budget),
             strcmp(cfg->tiling_gram, "auto") == 0 && best_g == NST_GRAM_TWO_PASS ? " (resident did not fit)" : "");
    return NST_OK;
}

void nst_layout_free(nst_layout *L)
{
    nst_free(L->owner);
    nst_free(L->local);
    L->owner = L->local = NULL;
}

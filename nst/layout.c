/* nst/layout.c: tile size, halo, ownership, Gram strategy and the memory model (see layout.h). */
#include "layout.h"
#include "lbfgs.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/log.h"
#include "../util/mem.h"

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

size_t nst_memory_budget(const nst_backend *be, double memory_gb, int local_ranks)
{
    if (be && be->capacity) { /* a device arena: already sized by run.memory_gb or the rank's share of the GPU */
        size_t used = be->bytes_in_use + be->reserve;
        return be->capacity > used ? be->capacity - used : 0;
    }
    if (memory_gb > 0) return (size_t)(memory_gb * (double)(1ull << 30));
    unsigned long long kb = 0;
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) break;
    if (f) fclose(f);
    if (!kb) kb = 4ull << 20; /* 4 GiB when the kernel does not say */
    return (size_t)((double)kb * 1024 * 0.8 / (local_ranks > 0 ? local_ranks : 1));
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

/* The largest model over ranks for a grid and strategy. */
static size_t worst_memory(const nst_grid *g, const int *owner, int nranks, int cheap, size_t opt_px_bytes, nst_gram_strategy gram,
                           const nst_loss_spec *spec, const nst_net *net)
{
    size_t worst = 0;
    for (int r = 0; r < nranks; r++) {
        size_t m = nst_layout_memory(g, owner, r, cheap, opt_px_bytes, gram, spec, net);
        if (m > worst) worst = m;
    }
    return worst;
}

static double gib(size_t b) { return (double)b / (double)(1ull << 30); }

nst_status nst_layout_plan(const nst_config *cfg, const nst_loss_spec *spec, const nst_net *net, int W, int H, int nranks, int rank,
                           size_t budget, nst_layout *L)
{
    return nst_layout_plan_tiles(cfg, spec, net, W, H, nranks, rank, budget, 0, 0, NULL, L);
}

nst_status nst_layout_plan_tiles(const nst_config *cfg, const nst_loss_spec *spec, const nst_net *net, int W, int H, int nranks, int rank,
                                 size_t budget, int force_w, int force_h, const char *forced, nst_layout *L)
{
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
    int best_w = 0, best_h = 0;
    nst_gram_strategy best_g = want[0];
    size_t best_mem = 0;
    int *owner = NULL;
    for (int a = 0; a < ncw; a++)
        for (int b = 0; b < nch; b++) {
            nst_grid g;
            if (nst_grid_make(W, H, cw[a], ch[b], halo, L->align, &g) != 0) continue;
            if (tk == NST_WORD(0) && g.ntiles > 4096) continue; /* tiles that small only add halo */
            int *o = realloc(owner, sizeof(int) * (size_t)g.ntiles);
            if (!o) {
                free(owner);
                return nst_fail(NST_ENOMEM, "out of memory planning %d tiles", g.ntiles);
            }
            owner = o;
            int64_t load = nst_assign_tiles(&g, nranks, owner);
            for (int k = 0; k < nwant; k++) {
                size_t mem = worst_memory(&g, owner, nranks, L->cheap, L->opt_px_bytes, want[k], spec, net);
                if (mem > budget && cfg->optim_iterations > 0) continue; /* no optimisation: no network buffers */
                double cost = (double)load * (want[k] == NST_GRAM_TWO_PASS ? 1.5 : 1.0);
                long long area = (long long)cw[a] * ch[b], best_area = (long long)best_w * best_h;
                int squarer = abs(cw[a] - ch[b]) < abs(best_w - best_h);
                if (cost < best_cost || (cost == best_cost && (area > best_area || (area == best_area && squarer)))) {
                    best_cost = cost;
                    best_w = cw[a];
                    best_h = ch[b];
                    best_g = want[k];
                    best_mem = mem;
                }
                break; /* the first strategy that fits is the one used at this size */
            }
        }
    free(owner);
    if (!best_w) {
        int t = tk != NST_WORD(0) ? (int)tk : cw[ncw - 1];
        return nst_fail(NST_EINPUT,
                        "%s: no tiling of the %dx%d image fits the memory budget of %.2f GiB per rank (run.memory_gb); "
                        "tiles of %d px with tiling.gram = %s would need more; use more ranks or a smaller output",
                        nst_config_origin(cfg, tk != NST_WORD(0) ? NST_K_tiling_tile_size : NST_K_run_memory_gb), W, H,
                        gib(budget), t, nst_gram_strategy_name(want[nwant - 1]));
    }

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
    L->mem_max = best_mem;
    snprintf(L->why, sizeof L->why, "%s tile size %dx%d px%s; Gram %s: %.3f GiB per rank of %.2f GiB budget%s",
             force_w > 0 ? (forced ? forced : "forced") : tk == NST_WORD(0) ? "auto" : "configured", best_w, best_h,
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

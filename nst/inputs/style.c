/* nst/inputs/style.c: style targets over tiles and ranks, blended, cached (see style.h). */
#include "style.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../../io/image/resample.h"
#include "../../mpi/comm.h"
#include "../../tiler/grid.h"
#include "../../util/log.h"
#include "../../util/mem.h"
#include "../../util/timer.h"
#include "inputs.h"
#include "../plan/layout.h"
#include "../model/net.h"
#include "style_cache.h"

/* ---- the images ------------------------------------------------------------------------------- */

static nst_status parse_blend(const nst_config *cfg, nst_styles *st)
{
    for (int k = 0; k < st->n; k++) st->blend[k] = 1.0;
    if (cfg->style_blend_weights[0]) {
        char list[NST_CFG_STR_MAX];
        snprintf(list, sizeof list, "%s", cfg->style_blend_weights);
        int k = 0;
        for (char *save = NULL, *tok = strtok_r(list, ", \t", &save); tok; tok = strtok_r(NULL, ", \t", &save), k++) {
            char *end;
            double v = strtod(tok, &end);
            if (*end || !(v >= 0) || v > 1e12 || k >= st->n)
                return nst_fail(NST_EINPUT, "%s: style.blend_weights = '%s': %d non-negative numbers expected, one per style image",
                                nst_config_origin(cfg, NST_K_style_blend_weights), cfg->style_blend_weights, st->n);
            st->blend[k] = v;
        }
        if (k != st->n)
            return nst_fail(NST_EINPUT, "%s: style.blend_weights has %d value%s for %d style image%s",
                            nst_config_origin(cfg, NST_K_style_blend_weights), k, k == 1 ? "" : "s", st->n, st->n == 1 ? "" : "s");
    }
    double sum = 0;
    for (int k = 0; k < st->n; k++) sum += st->blend[k];
    if (!(sum > 0))
        return nst_fail(NST_EINPUT, "%s: style.blend_weights are all zero", nst_config_origin(cfg, NST_K_style_blend_weights));
    for (int k = 0; k < st->n; k++) st->blend[k] /= sum;
    return NST_OK;
}

nst_status nst_styles_open(const nst_config *cfg, nst_styles *st)
{
    memset(st, 0, sizeof *st);
    nst_status s = NST_OK;
    if (nst_comm_rank() == 0) {
        char list[NST_CFG_STR_MAX];
        snprintf(list, sizeof list, "%s", cfg->style_path);
        for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok && s == NST_OK; tok = strtok_r(NULL, ",", &save)) {
            while (*tok == ' ' || *tok == '\t') tok++;
            size_t n = strlen(tok);
            while (n && (tok[n - 1] == ' ' || tok[n - 1] == '\t')) tok[--n] = 0;
            if (!n) continue;
            if (st->n == NST_MAX_STYLES) {
                s = nst_fail(NST_EINPUT, "%s: style.path lists more than %d images", nst_config_origin(cfg, NST_K_style_path), NST_MAX_STYLES);
                break;
            }
            int k = st->n++;
            snprintf(st->path[k], sizeof st->path[k], "%s", tok);
            s = nst_open_input(cfg, NST_K_style_path, st->path[k], &st->src[k]);
            if (s != NST_OK) break;
            st->w0[k] = st->src[k]->w;
            st->h0[k] = st->src[k]->h;
            st->random[k] = st->src[k]->random_access;
            nst_info("style:   %s (%dx%d, %s%s)\n", st->path[k], st->w0[k], st->h0[k], st->src[k]->info.detail,
                     st->random[k] ? ", read by region" : "");
        }
        if (s == NST_OK && st->n == 0) s = nst_fail(NST_EINPUT, "style.path is empty: give one or more style images, comma-separated");
        if (s == NST_OK) s = parse_blend(cfg, st);
        /* what the images are: a changed file makes new targets */
        size_t len = 0;
        for (int k = 0; s == NST_OK && k < st->n; k++) {
            struct stat sb;
            long long size = 0, mtime = 0;
            if (stat(st->path[k], &sb) == 0) size = (long long)sb.st_size, mtime = (long long)sb.st_mtime;
            len += (size_t)snprintf(st->key + len, len < sizeof st->key ? sizeof st->key - len : 0, "%s%s:%lld:%lld:%a", k ? ";" : "",
                                    st->path[k], size, mtime, st->blend[k]);
            char one[sizeof st->key1[k]];
            snprintf(one, sizeof one, "%s:%lld:%lld:%a", st->path[k], size, mtime, 1.0);
            memcpy(st->key1[k], one, sizeof one);
        }
    }
    /* every rank: the list, the sizes, the blend (rank 0's open sources stay on rank 0) */
    return nst_bcast_keeping_sources(s, st, sizeof *st, st->src, NST_MAX_STYLES);
}

void nst_styles_close(nst_styles *st)
{
    for (int k = 0; k < NST_MAX_STYLES; k++) nst_source_close(st->src[k]);
    memset(st->src, 0, sizeof st->src);
}

void nst_style_size(const nst_config *cfg, const nst_styles *st, int k, int long_side, int *w, int *h)
{
    int ls = (int)lround(cfg->style_scale * long_side);
    nst_fit_long_side(st->w0[k], st->h0[k], ls < 1 ? 1 : ls, w, h);
}

nst_status nst_styles_check(const nst_config *cfg, const nst_loss_spec *spec, const nst_styles *st, int long_min, int long_max)
{
    const int m = nst_loss_spec_min_side(spec);
    for (int i = 0; i < st->n; i++) {
        int w, h;
        nst_style_size(cfg, st, i, long_max, &w, &h);
        if ((double)w * h > cfg->input_max_megapixels * 1e6)
            return nst_fail(NST_EINPUT, "%s: style.scale = %g makes the style image %s %dx%d (%.1f megapixels) at the output's size, above input.max_megapixels = %g",
                            nst_config_origin(cfg, NST_K_style_scale), cfg->style_scale, st->path[i], w, h, (double)w * h / 1e6, cfg->input_max_megapixels);
        nst_style_size(cfg, st, i, long_min, &w, &h);
        if (w < m || h < m)
            return nst_fail(NST_EINPUT, "%s: style image %s at style.scale is %dx%d at the %s level; the deepest layer in use (%s) needs at least %dx%d",
                            nst_config_origin(cfg, NST_K_style_scale), st->path[i], w, h, long_min == long_max ? "output" : "coarsest",
                            nst_vgg_layer_at(spec->deepest)->relu, m, m);
    }
    return NST_OK;
}

void nst_style_targets_free(nst_style_targets *t)
{
    for (int k = 0; k < NST_VGG_NLAYERS; k++) nst_free(t->A[k]);
    memset(t, 0, sizeof *t);
}

/* ---- tiles of one style image -------------------------------------------------------------------- */

/* The window overhang that makes every owned feature of the deepest style layer exact. */
static int feature_halo(const nst_loss_spec *spec, int align)
{
    int deepest = 0;
    for (int k = 0; k < spec->nstyle; k++)
        if (spec->style[k] > deepest) deepest = spec->style[k];
    nst_footprint f = nst_vgg_footprint(deepest);
    int h = f.lo > f.hi ? f.lo : f.hi;
    return (h + align - 1) / align * align;
}

/* Tiles for a w x h style image over n ranks: the least window area on the slowest rank among
 * splits whose window activations fit the budget (one tile when that is best). */
static nst_status plan_tiles(const nst_net *net, int w, int h, int halo, int align, int n, size_t budget, nst_grid *g, int **owner)
{
    int best = 0;
    int64_t best_load = INT64_MAX;
    int longest = w > h ? w : h;
    size_t least = 0;
    for (int k = 1; k <= 64; k++) {
        int T = (longest + k - 1) / k;
        T = (T + align - 1) / align * align;
        if (T < align) break;
        nst_grid cand;
        if (nst_grid_make(w, h, T, T, halo, align, &cand) != 0) continue;
        int wmax = T + 2 * halo < w ? T + 2 * halo : w, hmax = T + 2 * halo < h ? T + 2 * halo : h;
        int *o = malloc(sizeof(int) * (size_t)cand.ntiles);
        if (!o) return nst_fail(NST_ENOMEM, "out of memory planning style tiles");
        int64_t load = nst_assign_tiles(&cand, n, o); /* window pixels of the busiest rank: it holds them all */
        free(o);
        size_t mem = nst_acts_bytes(net, hmax, wmax) + 12 * (size_t)load;
        if (!least || mem < least) least = mem;
        if (mem > budget) continue;
        if (load < best_load) {
            best_load = load;
            best = T;
        }
    }
    if (!best)
        return nst_fail(NST_EINPUT, "the %dx%d style image needs %.3g GiB per rank in its smallest tiles, and %.3g GiB is left of the "
                        "budget beside the content's windows: lower style.scale, or give each rank more memory (run.memory_gb, fewer "
                        "ranks per node)", w, h, (double)least / (1u << 30), (double)budget / (1u << 30));
    nst_grid_make(w, h, best, best, halo, align, g);
    *owner = nst_alloc_array((size_t)g->ntiles, sizeof(int), "style tile owners");
    if (!*owner) return NST_ENOMEM;
    nst_assign_tiles(g, n, *owner);
    return NST_OK;
}

/* For the dry run: the style images' window pixels on the busiest rank at an output of long side
 * `long_side`, and the largest window's activation bytes, as image_targets would tile them. */
nst_status nst_style_plan(const nst_config *cfg, const nst_loss_spec *spec, const nst_net *net, const nst_styles *st, int long_side,
                          size_t budget, double *busiest_px, size_t *acts_bytes)
{
    const int align = nst_vgg_footprint(spec->deepest).stride, n = nst_comm_size();
    *busiest_px = 0;
    *acts_bytes = 0;
    for (int i = 0; i < st->n; i++) {
        int w, h, *owner = NULL;
        nst_grid g;
        nst_style_size(cfg, st, i, long_side, &w, &h);
        NST_TRY(plan_tiles(net, w, h, feature_halo(spec, align), align, n, budget, &g, &owner));
        *busiest_px += (double)nst_assign_tiles(&g, n, owner);
        for (int t = 0; t < g.ntiles; t++) {
            nst_rect r = nst_grid_window(&g, t);
            size_t b = nst_acts_bytes(net, r.h, r.w);
            if (b > *acts_bytes) *acts_bytes = b;
        }
        nst_free(owner);
    }
    return NST_OK;
}

/* ---- the targets of one style image, phase by phase ------------------------------------------- */

/* What the targets of one style image hold between their phases. */
typedef struct {
    const nst_config *cfg;
    const nst_loss_spec *spec;
    nst_net *net;
    nst_backend *be;
    nst_collectives coll;
    int rank;
    int w, h;                   /* the style image's size here */
    nst_grid g;
    int *owner;                 /* per tile */
    nst_rect *rects;            /* every tile's window */
    float **win;                /* this rank's windows' pixels, in tile order (freed once forwarded) */
    double *G[NST_VGG_NLAYERS]; /* the Gram sums, per style layer (backend memory) */
    int64_t *Gx[NST_VGG_NLAYERS]; /* with the backend's fixed-point sums (gram_fixed): those */
    int e[NST_VGG_NLAYERS], emax[NST_VGG_NLAYERS]; /* their bound 2^e, and the largest exponent seen */
    float *zeros;               /* a zero target (backend memory) */
} style_tiles;

/* Every tile's window, and this rank's read from style image `which`. Collective. */
static nst_status style_windows(style_tiles *T, nst_styles *st, int which)
{
    nst_status s = NST_OK;
    T->rects = nst_alloc_array((size_t)T->g.ntiles, sizeof(nst_rect), "style windows");
    T->win = nst_calloc(sizeof(float *) * ((size_t)T->g.ntiles + 1), "style windows");
    if (!T->rects || !T->win) s = NST_ENOMEM;
    for (int t = 0; s == NST_OK && t < T->g.ntiles; t++) T->rects[t] = nst_grid_window(&T->g, t);
    s = nst_comm_agree(s);
    if (s == NST_OK)
        s = nst_read_rects(T->cfg, NST_K_style_path, st->path[which], &st->src[which], st->random[which], T->w, T->h, T->rects,
                           T->owner, T->g.ntiles, T->win, NULL, NULL);
    return s;
}

/* Colour: the style's statistics over the pixels the tiles own, added over ranks, then the
 * transform towards the content's statistics applied to the local windows. */
static nst_status style_colour(style_tiles *T, nst_color_mode mode, const nst_color_stats *content)
{
    nst_status s = NST_OK;
    nst_color_stats cs;
    memset(&cs, 0, sizeof cs);
    for (int t = 0, li = 0; t < T->g.ntiles; t++) {
        if (T->owner[t] != T->rank) continue;
        nst_rect c = nst_grid_core(&T->g, t), wr = T->rects[t];
        for (int y = 0; y < c.h; y++) {
            const float *row = T->win[li] + ((size_t)(c.y - wr.y + y) * wr.w + (size_t)(c.x - wr.x)) * 3;
            if (mode == NST_COLOR_LUMINANCE)
                nst_color_stats_add_luminance(&cs, row, (size_t)c.w);
            else
                nst_color_stats_add(&cs, row, (size_t)c.w);
        }
        li++;
    }
    if (T->coll.sum_doubles) s = T->coll.sum_doubles(T->coll.ctx, (double *)&cs, sizeof cs / sizeof(double));
    nst_color_xform xf;
    if (s == NST_OK) s = nst_color_xform_make(mode, content, &cs, &xf);
    for (int t = 0, li = 0; s == NST_OK && t < T->g.ntiles; t++)
        if (T->owner[t] == T->rank) nst_color_xform_apply(&xf, T->win[li++], (size_t)nst_rect_area(T->rects[t]));
    return s;
}

/* Local window li (grid tile t) forwarded in the activations (allocated on first use, for the
 * largest local window, hmax x wmax) and the positions it owns added to the Gram sums; its pixels
 * are freed either way on the last pass. */
static nst_status tile_grams(style_tiles *T, int t, int li, nst_acts *acts, int *have_acts, int hmax, int wmax, int last)
{
    nst_backend *be = T->be;
    const nst_loss_spec *spec = T->spec;
    nst_rect core = nst_grid_core(&T->g, t), wr = T->rects[t];
    nst_rect own[NST_VGG_NLAYERS], seed[NST_VGG_NLAYERS];
    nst_layer_regions(T->net, core, wr, 0, own, seed);
    nst_tensor img;
    nst_status s = nst_tensor_alloc(be, wr.h, wr.w, 3, NST_F32, &img);
    if (s == NST_OK) s = be->ops->upload(be, img.data, T->win[li], (size_t)nst_rect_area(wr) * 3, NST_F32);
    if (s == NST_OK && !*have_acts) {
        s = nst_acts_alloc(T->net, hmax, wmax, acts);
        *have_acts = s == NST_OK;
    }
    if (s == NST_OK) s = nst_acts_reshape(T->net, acts, wr.h, wr.w);
    if (s == NST_OK) s = nst_net_forward(T->net, &img, acts);
    for (int k = 0; s == NST_OK && k < spec->nstyle; k++) {
        const nst_tensor *f = &acts->out[spec->style[k]];
        s = T->Gx[k] ? be->ops->gram_fixed(be, f, own[spec->style[k]], NULL, T->e[k], T->Gx[k], &T->emax[k])
                     : be->ops->gram_accumulate(be, f, own[spec->style[k]], NULL, T->G[k]);
    }
    nst_tensor_free(be, &img);
    if (last || s != NST_OK) {
        nst_free(T->win[li]);
        T->win[li] = NULL;
    }
    return s;
}

/* This rank's Gram sums: every local window forwarded, its owned positions summed (in backend
 * memory), in one set of activations. With fixed-point sums, whose bound must be the same on every
 * rank, the windows are forwarded twice: once for the largest exponent over the ranks, then
 * summed with it (the targets are then the same bits on any number of ranks). */
static nst_status gram_sums(style_tiles *T)
{
    nst_backend *be = T->be;
    const nst_loss_spec *spec = T->spec;
    nst_status s = NST_OK;
    const int fixed = be->ops->gram_fixed != NULL;
    for (int k = 0; s == NST_OK && k < spec->nstyle; k++) {
        size_t cc = (size_t)T->net->width[spec->style[k]] * T->net->width[spec->style[k]];
        s = be->ops->alloc(be, 2 * cc * sizeof(float), (void **)&T->G[k]);
        if (s == NST_OK) s = be->ops->zero(be, T->G[k], cc * sizeof(double));
        if (s == NST_OK && fixed) s = be->ops->alloc(be, 2 * cc * sizeof(int64_t), (void **)&T->Gx[k]);
        T->e[k] = NST_GRAM_EMIN; /* the first pass only finds the bound */
    }
    nst_acts acts;
    int have_acts = 0, wmax = 0, hmax = 0; /* one set of activations, sized for the largest local window */
    for (int t = 0; t < T->g.ntiles; t++)
        if (T->owner[t] == T->rank) {
            if (T->rects[t].w > wmax) wmax = T->rects[t].w;
            if (T->rects[t].h > hmax) hmax = T->rects[t].h;
        }
    for (int pass = fixed ? 0 : 1; s == NST_OK && pass < 2; pass++) {
        for (int k = 0; s == NST_OK && fixed && k < spec->nstyle; k++) {
            size_t cc = (size_t)T->net->width[spec->style[k]] * T->net->width[spec->style[k]];
            s = be->ops->zero(be, T->Gx[k], 2 * cc * sizeof(int64_t));
            T->emax[k] = NST_GRAM_EMIN;
        }
        for (int t = 0, li = 0; s == NST_OK && t < T->g.ntiles; t++)
            if (T->owner[t] == T->rank) s = tile_grams(T, t, li++, &acts, &have_acts, hmax, wmax, pass == 1);
        if (pass == 0) { /* every rank reaches the agreement, failed or not */
            s = T->coll.check ? T->coll.check(T->coll.ctx, s) : s;
            if (s == NST_OK && T->coll.max_ints) s = T->coll.max_ints(T->coll.ctx, T->emax, (size_t)spec->nstyle);
            for (int k = 0; k < spec->nstyle; k++) T->e[k] = T->emax[k] < NST_GRAM_ENONFINITE ? T->emax[k] : NST_GRAM_EMIN;
        }
    }
    if (have_acts) nst_acts_free(T->net, &acts);
    return s;
}

/* A zero target as large as the largest style layer's: gram_diff then yields A = G/M and its norm. */
static nst_status zero_target(style_tiles *T)
{
    nst_backend *be = T->be;
    const nst_loss_spec *spec = T->spec;
    size_t most = 0;
    for (int j = 0; j < spec->nstyle; j++) {
        size_t cj = (size_t)T->net->width[spec->style[j]];
        if (cj * cj > most) most = cj * cj;
    }
    nst_status s = be->ops->alloc(be, most * sizeof(float), (void **)&T->zeros);
    if (s == NST_OK) s = be->ops->zero(be, T->zeros, most * sizeof(float));
    return s;
}

/* The sums over ranks, divided by the whole image's positions: A[k] on the host and its norm. */
static nst_status targets_from_sums(style_tiles *T, float **A, double *normA)
{
    nst_backend *be = T->be;
    const nst_loss_spec *spec = T->spec;
    nst_status s = NST_OK;
    for (int k = 0; s == NST_OK && k < spec->nstyle; k++) {
        int c = T->net->width[spec->style[k]], lh, lw, lc;
        size_t cc = (size_t)c * c;
        nst_net_shape(T->net, spec->style[k], T->h, T->w, &lh, &lw, &lc);
        if (T->Gx[k]) { /* fixed point: integers added over ranks, then their values */
            if (T->coll.sum_int64) s = T->coll.sum_int64(T->coll.ctx, T->Gx[k], 2 * cc);
            if (s == NST_OK) nst_gram_fixed_to_double(T->Gx[k], c, T->e[k], T->emax[k] >= NST_GRAM_ENONFINITE, T->G[k]);
        } else if (T->coll.sum_grams) {
            s = T->coll.sum_grams(T->coll.ctx, T->G[k], cc);
        }
        if (s == NST_OK && !T->zeros) s = zero_target(T);
        float *Ad = NULL;
        double *norm = NULL; /* gram_diff's sum stays in backend memory (kernels/backend.h) */
        if (s == NST_OK) s = be->ops->alloc(be, cc * sizeof(float), (void **)&Ad);
        if (s == NST_OK) s = be->ops->alloc(be, sizeof(double), (void **)&norm);
        if (s == NST_OK) s = be->ops->gram_diff(be, T->G[k], NULL, 1.0 / ((double)lh * lw), T->zeros, c, Ad, norm);
        if (s == NST_OK) s = be->ops->read(be, &normA[k], norm, sizeof(double));
        if (s == NST_OK) {
            A[k] = nst_alloc_array(cc, sizeof(float), "style targets");
            s = A[k] ? be->ops->download(be, A[k], Ad, cc, NST_F32) : NST_ENOMEM;
        }
        if (Ad) be->ops->free(be, Ad);
        if (norm) be->ops->free(be, norm);
    }
    return s;
}

/* Whatever the phases made, in any state they stopped in. */
static void style_tiles_free(style_tiles *T)
{
    for (int k = 0; k < NST_VGG_NLAYERS; k++) {
        if (T->G[k]) T->be->ops->free(T->be, T->G[k]);
        if (T->Gx[k]) T->be->ops->free(T->be, T->Gx[k]);
    }
    if (T->zeros) T->be->ops->free(T->be, T->zeros);
    for (int i = 0; T->win && i < T->g.ntiles; i++) nst_free(T->win[i]);
    nst_free(T->win);
    nst_free(T->rects);
    nst_free(T->owner);
}

/* A[k] (host) = the Gram targets of style image `which` at w x h, tiled over the group: the tiles
 * planned, the windows read (and colour-transformed), the Gram sums of each rank's windows, then
 * added over the ranks and normalised. Every rank reaches every agreement, failed or not. */
static nst_status image_targets(const nst_config *cfg, const nst_loss_spec *spec, nst_net *net, nst_collectives coll, nst_styles *st,
                                int which, int w, int h, size_t budget, nst_color_mode mode, const nst_color_stats *content, float **A,
                                double *normA, int *tiles)
{
    const int rank = nst_comm_rank();
    const int align = nst_vgg_footprint(spec->deepest).stride;
    style_tiles T = {.cfg = cfg, .spec = spec, .net = net, .be = net->be, .coll = coll, .rank = rank, .w = w, .h = h};
    nst_status s = plan_tiles(net, w, h, feature_halo(spec, align), align, nst_comm_size(), budget, &T.g, &T.owner);
    s = nst_comm_agree(s);
    if (s != NST_OK) {
        style_tiles_free(&T); /* this rank's owners, when another rank's plan failed */
        return s;
    }
    *tiles = T.g.ntiles;
    s = style_windows(&T, st, which);
    if (s == NST_OK && mode != NST_COLOR_NONE) s = style_colour(&T, mode, content);
    if (s == NST_OK) s = gram_sums(&T);
    s = coll.check ? coll.check(coll.ctx, s) : s;
    if (s == NST_OK) s = targets_from_sums(&T, A, normA);
    style_tiles_free(&T);
    return nst_comm_agree(s);
}

/* ---- the targets -------------------------------------------------------------------------------- */

/* Broadcast targets from the group's rank 0 (which has them) to the others (allocated here). */
static nst_status share(nst_style_targets *t)
{
    NST_TRY(nst_comm_bcast(t->normA, sizeof t->normA, 0));
    for (int k = 0; k < t->n; k++) {
        size_t cc = (size_t)t->C[k] * t->C[k];
        if (!t->A[k]) t->A[k] = nst_alloc_array(cc, sizeof(float), "style targets");
        if (!t->A[k]) nst_comm_abort(1, "out of memory receiving style targets");
        NST_TRY(nst_comm_bcast(t->A[k], cc * sizeof(float), 0));
    }
    return NST_OK;
}

nst_status nst_style_targets_compute(const nst_config *cfg, const nst_loss_spec *spec, const nst_weights *weights, nst_backend *be,
                                     nst_collectives coll, nst_styles *st, int long_side, size_t budget, nst_color_mode mode,
                                     const nst_color_stats *content, nst_style_cache *cache, nst_style_targets *out)
{
    memset(out, 0, sizeof *out);
    double t0 = nst_now();
    out->n = spec->nstyle;
    if (spec->nstyle == 0) return NST_OK;
    nst_net net;
    nst_status s = nst_net_create(be, weights, spec->deepest, spec->pool, &net);
    if (s != NST_OK) return nst_comm_agree(s);
    for (int k = 0; k < spec->nstyle; k++) out->C[k] = net.width[spec->style[k]];

    /* the key: images, their sizes here, layers, pooling, network and its input preprocessing,
     * colour transform, and the arithmetic (backend and precision: bf16 targets are not fp32's) */
    char key[4096];
    size_t len = (size_t)snprintf(key, sizeof key, "%s|long:%d|scale:%a|layers:", st->key, long_side, cfg->style_scale);
    for (int k = 0; k < spec->nstyle && len < sizeof key; k++) len += (size_t)snprintf(key + len, sizeof key - len, "%d,", spec->style[k]);
    if (len < sizeof key)
        len += (size_t)snprintf(key + len, sizeof key - len, "|pool:%d|net:%016llx|pre:%d:%a:%a,%a,%a:%a,%a,%a|color:%d|%s:%s",
                                (int)spec->pool, (unsigned long long)nst_weights_hash(weights), weights->bgr, weights->scale,
                                weights->mean[0], weights->mean[1], weights->mean[2], weights->std[0], weights->std[1], weights->std[2],
                                (int)mode, be->name, nst_precision_name(be->precision));
    if (mode != NST_COLOR_NONE)
        for (int i = 0; i < 13 && len < sizeof key; i++) len += (size_t)snprintf(key + len, sizeof key - len, ":%a", ((const double *)content)[i]);

    int found = nst_comm_rank() == 0 && nst_style_cache_get(cache, key, out->C, out->n, out);
    s = nst_comm_bcast(&found, sizeof found, 0);
    if (s == NST_OK && found) {
        s = share(out);
        out->from_cache = 1;
    } else if (s == NST_OK) {
        double *acc[NST_VGG_NLAYERS] = {0};
        for (int k = 0; s == NST_OK && k < out->n; k++) {
            acc[k] = nst_calloc(sizeof(double) * (size_t)out->C[k] * out->C[k], "style target blend");
            if (!acc[k]) s = NST_ENOMEM;
        }
        s = nst_comm_agree(s);
        for (int i = 0; s == NST_OK && i < st->n; i++) {
            int w, h, tiles = 0;
            nst_style_size(cfg, st, i, long_side, &w, &h);
            int m = nst_loss_spec_min_side(spec);
            if (w < m || h < m) {
                s = nst_comm_agree(nst_fail(NST_EINPUT, "%s: style image %s at style.scale is %dx%d here; the deepest layer in use (%s) needs at least %dx%d",
                                            nst_config_origin(cfg, NST_K_style_scale), st->path[i], w, h, nst_vgg_layer_at(spec->deepest)->relu, m, m));
                break;
            }
            float *A[NST_VGG_NLAYERS] = {0};
            double norm[NST_VGG_NLAYERS];
            s = image_targets(cfg, spec, &net, coll, st, i, w, h, budget, mode, content, A, norm, &tiles);
            if (tiles > out->tiles) out->tiles = tiles;
            for (int k = 0; s == NST_OK && k < out->n; k++)
                for (size_t j = 0; j < (size_t)out->C[k] * out->C[k]; j++) acc[k][j] += st->blend[i] * A[k][j];
            for (int k = 0; k < NST_VGG_NLAYERS; k++) nst_free(A[k]);
            if (st->n == 1)
                for (int k = 0; k < out->n; k++) out->normA[k] = norm[k]; /* the one image's, as computed */
        }
        for (int k = 0; s == NST_OK && k < out->n; k++) {
            size_t cc = (size_t)out->C[k] * out->C[k];
            out->A[k] = nst_alloc_array(cc, sizeof(float), "style targets");
            if (!out->A[k]) {
                s = NST_ENOMEM;
                break;
            }
            double ss = 0;
            for (size_t j = 0; j < cc; j++) {
                out->A[k][j] = (float)acc[k][j];
                ss += (double)out->A[k][j] * out->A[k][j];
            }
            if (st->n > 1) out->normA[k] = ss;
        }
        for (int k = 0; k < NST_VGG_NLAYERS; k++) nst_free(acc[k]);
        s = nst_comm_agree(s);
        if (s == NST_OK && nst_comm_rank() == 0) nst_style_cache_put(cache, key, out);
    }
    nst_net_destroy(&net);
    if (s != NST_OK) nst_style_targets_free(out);
    out->seconds = nst_now() - t0;
    return s;
}

/* Image i of st as a set of one (its source borrowed). */
static void single_view(const nst_styles *st, int i, nst_styles *one)
{
    memset(one, 0, sizeof *one);
    one->n = 1;
    snprintf(one->path[0], sizeof one->path[0], "%s", st->path[i]);
    one->blend[0] = 1;
    one->w0[0] = st->w0[i], one->h0[0] = st->h0[i], one->random[0] = st->random[i];
    one->src[0] = st->src[i];
    snprintf(one->key, sizeof one->key, "%s", st->key1[i]);
    snprintf(one->key1[0], sizeof one->key1[0], "%s", st->key1[i]);
}

nst_status nst_style_targets_each(const nst_config *cfg, const nst_loss_spec *spec, const nst_weights *weights, nst_backend *be,
                                  nst_collectives coll, nst_styles *st, int long_side, size_t budget, nst_color_mode mode,
                                  const nst_color_stats *content, nst_style_cache *cache, nst_style_targets *out)
{
    for (int i = 0; i < st->n; i++) memset(&out[i], 0, sizeof out[i]);
    nst_styles *one = nst_alloc(sizeof *one, "a style image's view");
    nst_status s = nst_comm_agree(one ? NST_OK : NST_ENOMEM);
    for (int i = 0; s == NST_OK && i < st->n; i++) {
        single_view(st, i, one);
        s = nst_style_targets_compute(cfg, spec, weights, be, coll, one, long_side, budget, mode, content, cache, &out[i]);
        st->src[i] = one->src[0]; /* (opened there when read by region) */
    }
    nst_free(one);
    if (s != NST_OK)
        for (int i = 0; i < st->n; i++) nst_style_targets_free(&out[i]);
    return s;
}

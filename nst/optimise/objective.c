/* nst/optimise/objective.c: the Gatys objective over tiles with global statistics (see objective.h). */
#include "objective.h"

#include "../state/checkpoint.h"

#include <math.h>
#include <string.h>

#include "../../util/mem.h"
#include "../../util/plant.h"

/* Relative-error normalisers: a target of (near) zero norm would divide by zero; it then counts
 * as an absolute error instead. */
#define NORM_FLOOR 1e-30

static int floor_div(int a, int s) { return a >= 0 ? a / s : -((-a + s - 1) / s); }
static int ceil_div(int a, int s) { return -floor_div(-a, s); }

const char *nst_gram_strategy_name(nst_gram_strategy s)
{
    switch (s) {
    case NST_GRAM_RESIDENT: return "resident";
    case NST_GRAM_TWO_PASS: return "two_pass";
    default: return "lagged";
    }
}

nst_status nst_objective_init(nst_objective *o, const nst_loss_spec *spec, nst_net *net, nst_collectives coll,
                              nst_gram_strategy strategy, nst_acts *shared, int img_w, int img_h)
{
    return nst_objective_init_guided(o, spec, net, coll, strategy, shared, img_w, img_h, NULL);
}

nst_status nst_objective_init_guided(nst_objective *o, const nst_loss_spec *spec, nst_net *net, nst_collectives coll,
                                     nst_gram_strategy strategy, nst_acts *shared, int img_w, int img_h, const nst_guides *guides)
{
    memset(o, 0, sizeof *o);
    if (guides) o->guides = *guides;
    if (o->guides.n < 0 || o->guides.n > NST_MAX_STYLES)
        return nst_fail(NST_ERUNTIME, "objective: %d style masks (at most %d)", o->guides.n, NST_MAX_STYLES);
    o->ngram = spec->nstyle * (o->guides.n ? o->guides.n : 1);
    o->spec = spec;
    o->net = net;
    o->coll = coll;
    o->strategy = strategy;
    o->shared = shared;
    o->img_w = img_w;
    o->img_h = img_h;
    /* shared may be allocated later (after the style targets), but must be given */
    if (strategy != NST_GRAM_RESIDENT && !shared) return nst_fail(NST_ERUNTIME, "objective: %s needs shared activations",
                                                                  nst_gram_strategy_name(strategy));
    nst_backend *be = net->be;
    int seeded[2 * NST_VGG_NLAYERS], nseeded = 0; /* the layers the loss seeds (the others' ReLUs fold into poolings) */
    for (int k = 0; k < spec->nstyle; k++) seeded[nseeded++] = spec->style[k];
    for (int k = 0; k < spec->ncontent; k++) seeded[nseeded++] = spec->content[k];
    nst_net_set_seeded(net, seeded, nseeded);
    o->host = nst_calloc(sizeof *o->host, "the loss sums");
    if (!o->host) return NST_ENOMEM;
    NST_TRY(be->ops->alloc(be, sizeof *o->sums, (void **)&o->sums));
    NST_TRY(be->ops->zero(be, o->sums, sizeof *o->sums));
    size_t at[NST_MAX_GRAMS];
    o->G_n = 0;
    for (int q = 0; q < o->ngram; q++) {
        int k = q % spec->nstyle, h, w, c;
        nst_net_shape(net, spec->style[k], img_h, img_w, &h, &w, &c);
        o->C[k] = c;
        o->M[q] = o->guides.n ? 0 : (double)h * w; /* a mask's sum arrives with the tiles' masks */
        size_t bytes = (size_t)c * c * sizeof(float);
        NST_TRY(be->ops->alloc(be, bytes, (void **)&o->A[q]));
        NST_TRY(be->ops->alloc(be, bytes, (void **)&o->D[q]));
        if (strategy == NST_GRAM_LAGGED) NST_TRY(be->ops->alloc(be, 2 * bytes, (void **)&o->Gprev[q]));
        at[q] = o->G_n;
        o->G_n += nst_gram_slot_doubles(c);
    }
    /* every slot's sums in one block, so that they are added over ranks in one call (one read,
     * one MPI allreduce or NCCL call and one write, not one each a slot); the gaps stay 0 */
    NST_TRY(be->ops->alloc(be, o->G_n * sizeof(double), (void **)&o->G_all));
    NST_TRY(be->ops->zero(be, o->G_all, o->G_n * sizeof(double)));
    for (int q = 0; q < o->ngram; q++) o->G[q] = o->G_all + at[q];
    /* lagged sums the Gram inside its one pass, where a pass cannot run again: fp64 sums there */
    o->fixed = be->ops->gram_fixed && strategy != NST_GRAM_LAGGED;
    if (coll.sum_doubles && !coll.sum_int64)
        return nst_fail(NST_ERUNTIME, "objective: the collectives lack the exact sums of the loss terms (sum_int64)");
    if (o->fixed && coll.sum_grams && !(coll.sum_int64 && coll.max_ints))
        return nst_fail(NST_ERUNTIME, "objective: the collectives lack those of the fixed-point Gram sums (sum_int64, max_ints)");
    for (int q = 0; o->fixed && q < o->ngram; q++) {
        size_t cc = (size_t)o->C[q % spec->nstyle] * o->C[q % spec->nstyle];
        NST_TRY(be->ops->alloc(be, 2 * cc * sizeof(int64_t), (void **)&o->Gx[q]));
        o->gram_e[q] = NST_GRAM_EMIN; /* unknown: the first pass finds it */
    }
    return NST_OK;
}

void nst_objective_free(nst_objective *o)
{
    if (!o->net) return;
    nst_backend *be = o->net->be;
    for (int q = 0; q < NST_MAX_GRAMS; q++) {
        if (o->A[q]) be->ops->free(be, o->A[q]);
        if (o->D[q]) be->ops->free(be, o->D[q]);
        if (o->Gprev[q]) be->ops->free(be, o->Gprev[q]);
        if (o->Gx[q]) be->ops->free(be, o->Gx[q]);
    }
    if (o->G_all) be->ops->free(be, o->G_all);
    if (o->sums) be->ops->free(be, o->sums);
    nst_free(o->host);
    memset(o, 0, sizeof *o);
}

nst_status nst_objective_set_style(nst_objective *o, const float *style, int w, int h)
{
    const nst_loss_spec *spec = o->spec;
    nst_net *net = o->net;
    nst_backend *be = net->be;
    if (spec->nstyle == 0) return NST_OK;
    if (o->guides.n) return nst_fail(NST_ERUNTIME, "objective: one style image for %d masked styles", o->guides.n);
    nst_acts acts;
    nst_tensor img;
    NST_TRY(nst_tensor_alloc(be, h, w, 3, NST_F32, &img));
    nst_status s = be->ops->upload(be, img.data, style, (size_t)w * h * 3, NST_F32);
    if (s == NST_OK) s = nst_acts_alloc(net, h, w, &acts);
    if (s == NST_OK) {
        s = nst_net_forward(net, &img, &acts);
        for (int k = 0; s == NST_OK && k < spec->nstyle; k++) {
            const nst_tensor *f = &acts.out[spec->style[k]];
            size_t cc = (size_t)o->C[k] * o->C[k];
            float *zeros = NULL;
            /* A = G/m of the style image (G's buffer borrowed); ||A||^2 from the difference to zero */
            s = be->ops->zero(be, o->G[k], cc * sizeof(double));
            if (s == NST_OK) s = be->ops->gram_accumulate(be, f, nst_tensor_rect(f), NULL, o->G[k]);
            if (s == NST_OK) s = be->ops->alloc(be, cc * sizeof(float), (void **)&zeros);
            if (s == NST_OK) s = be->ops->zero(be, zeros, cc * sizeof(float));
            if (s == NST_OK) {
                double m = (double)f->h * f->w;
                s = be->ops->gram_diff(be, o->G[k], NULL, 1.0 / m, zeros, o->C[k], o->A[k], &o->sums->ss[k]);
            }
            if (s == NST_OK) s = be->ops->read(be, &o->normA[k], &o->sums->ss[k], sizeof(double));
            if (zeros) be->ops->free(be, zeros);
        }
        nst_acts_free(net, &acts);
    }
    nst_tensor_free(be, &img);
    return s;
}

nst_status nst_objective_style_targets(const nst_loss_spec *spec, nst_backend *be, const nst_weights *w, const float *style, int sw, int sh,
                                       float **A, double *normA)
{
    nst_net net;
    nst_objective o;
    nst_acts dummy;
    NST_TRY(nst_net_create(be, w, spec->deepest, spec->pool, &net));
    nst_collectives none = {0};
    nst_status s = nst_objective_init(&o, spec, &net, none, NST_GRAM_TWO_PASS, &dummy, sw, sh);
    if (s == NST_OK) s = nst_objective_set_style(&o, style, sw, sh);
    for (int k = 0; s == NST_OK && k < spec->nstyle; k++) {
        size_t cc = (size_t)o.C[k] * o.C[k];
        A[k] = nst_alloc_array(cc, sizeof(float), "style targets");
        s = A[k] ? be->ops->download(be, A[k], o.A[k], cc, NST_F32) : NST_ENOMEM;
        normA[k] = o.normA[k];
    }
    if (o.net) nst_objective_free(&o);
    nst_net_destroy(&net);
    return s;
}

nst_status nst_objective_set_targets(nst_objective *o, float *const *A, const double *normA)
{
    nst_backend *be = o->net->be;
    for (int q = 0; q < o->ngram; q++) {
        int c = o->C[q % o->spec->nstyle];
        NST_TRY(be->ops->upload(be, o->A[q], A[q], (size_t)c * c, NST_F32));
        o->normA[q] = normA[q];
    }
    return NST_OK;
}

nst_status nst_objective_share_style(nst_objective *o)
{
    nst_backend *be = o->net->be;
    if (!o->coll.bcast || o->spec->nstyle == 0) return NST_OK;
    if (o->guides.n) return nst_fail(NST_ERUNTIME, "objective: masked styles are shared as targets (nst_objective_set_targets)");
    NST_TRY(o->coll.bcast(o->coll.ctx, o->normA, sizeof(double) * (size_t)o->spec->nstyle));
    for (int k = 0; k < o->spec->nstyle; k++) {
        size_t cc = (size_t)o->C[k] * o->C[k];
        float *host = nst_alloc_array(cc, sizeof(float), "style targets");
        if (!host) return NST_ENOMEM;
        nst_status s = be->ops->download(be, host, o->A[k], cc, NST_F32);
        if (s == NST_OK) s = o->coll.bcast(o->coll.ctx, host, cc * sizeof(float));
        if (s == NST_OK) s = be->ops->upload(be, o->A[k], host, cc, NST_F32);
        nst_free(host);
        NST_TRY(s);
    }
    return NST_OK;
}

void nst_layer_regions(const nst_net *net, nst_rect core, nst_rect window, int seed_window, nst_rect *own_out, nst_rect *seed_out)
{
    for (int i = 0; i < net->nlayers; i++) {
        nst_footprint f = nst_vgg_footprint(i);
        int lh, lw, lc;
        nst_net_shape(net, i, window.h, window.w, &lh, &lw, &lc);
        nst_rect extent = nst_rect_make(0, 0, lw, lh);
        int s = f.stride, ox = window.x / s, oy = window.y / s;
        /* own: features whose aligned block starts in the core */
        nst_rect own = {ceil_div(core.x, s) - ox, ceil_div(core.y, s) - oy, 0, 0};
        own.w = ceil_div(core.x + core.w, s) - ox - own.x;
        own.h = ceil_div(core.y + core.h, s) - oy - own.y;
        /* seed: features whose footprint [s j - lo, s j + hi] meets the core */
        int x0 = ceil_div(core.x - f.hi, s), x1 = floor_div(core.x + core.w - 1 + f.lo, s) + 1;
        int y0 = ceil_div(core.y - f.hi, s), y1 = floor_div(core.y + core.h - 1 + f.lo, s) + 1;
        nst_rect seed = {x0 - ox, y0 - oy, x1 - x0, y1 - y0};
        own_out[i] = nst_rect_intersect(own, extent);
        seed_out[i] = seed_window ? extent : nst_rect_intersect(seed, extent);
    }
}

nst_status nst_tile_init(nst_objective *o, nst_tile *t, int index, nst_rect core, nst_rect window, int seed_window)
{
    nst_net *net = o->net;
    nst_backend *be = net->be;
    memset(t, 0, sizeof *t);
    t->index = index;
    t->core = core;
    t->window = window;
    t->own_px = nst_rect_translate(core, -window.x, -window.y);
    t->seed_px = seed_window ? nst_rect_make(0, 0, window.w, window.h) : t->own_px;
    nst_layer_regions(net, core, window, seed_window, t->own, t->seed);
    nst_status s = nst_tensor_alloc(be, window.h, window.w, 3, NST_F32, &t->img);
    if (s == NST_OK) s = nst_tensor_alloc(be, window.h, window.w, 3, NST_F32, &t->dimg);
    if (s == NST_OK && o->strategy == NST_GRAM_RESIDENT) {
        s = nst_acts_alloc(net, window.h, window.w, &t->own_acts);
        t->acts = &t->own_acts;
    } else {
        t->acts = o->shared;
    }
    if (s != NST_OK) nst_tile_free(o, t);
    return s;
}

void nst_tile_free(nst_objective *o, nst_tile *t)
{
    nst_backend *be = o->net->be;
    nst_tensor_free(be, &t->img);
    nst_tensor_free(be, &t->dimg);
    for (int i = 0; i < NST_VGG_NLAYERS; i++) nst_tensor_free(be, &t->target[i]);
    nst_tensor_free(be, &t->temporal_target);
    nst_tensor_free(be, &t->temporal_c);
    for (int i = 0; t->mask && i < (o->guides.n + 1) * NST_VGG_NLAYERS; i++) nst_tensor_free(be, &t->mask[i]);
    nst_free(t->mask);
    t->mask = NULL;
    if (t->acts == &t->own_acts) nst_acts_free(o->net, &t->own_acts);
    t->acts = NULL;
}

/* a tile of the objective, for the network walk's callbacks */
typedef struct {
    nst_objective *o;
    nst_tile *t;
} seed_ctx;

static nst_status gram_layer(void *user, int layer);

/* Forward the tile's pixels through the network into its (possibly shared) activations; with
 * grams, each style layer's Gram sums too, started as soon as its features are queued: on a
 * backend with a side stream they run beside the layers above (kernels/backend.h), and are joined
 * before this returns, since the next tile's forward may overwrite the features and the caller
 * reads the sums. */
static nst_status forward_pass(nst_objective *o, nst_tile *t, int grams)
{
    nst_backend *be = o->net->be;
    if (t->acts != &t->own_acts) NST_TRY(nst_acts_reshape(o->net, t->acts, t->window.h, t->window.w));
    seed_ctx sc = {o, t};
    be->ops->range_push(be, "forward");
    nst_status s = nst_net_forward_each(o->net, &t->img, t->acts, grams ? gram_layer : NULL, &sc);
    be->ops->range_pop(be);
    if (grams && be->ops->join && !nst_planted("sidejoin") && !nst_planted("sidelate")) { /* planted: see late_join */
        nst_status j = be->ops->join(be);
        if (s == NST_OK) s = j;
    }
    return s;
}
static nst_status forward_tile(nst_objective *o, nst_tile *t) { return forward_pass(o, t, 0); }
static nst_status forward_grams(nst_objective *o, nst_tile *t) { return forward_pass(o, t, 1); }

/* Planted, so that the tests can prove their checks fail: the side's Gram sums joined after every
 * tile's forward (sidelate: the next tile's forward has overwritten the features they read), or
 * never (sidejoin: they are read before they are done). */
static nst_status late_join(nst_objective *o)
{
    nst_backend *be = o->net->be;
    return be->ops->join && nst_planted("sidelate") ? be->ops->join(be) : NST_OK;
}

nst_status nst_tile_set_content(nst_objective *o, nst_tile *t, const float *window_px)
{
    const nst_loss_spec *spec = o->spec;
    nst_backend *be = o->net->be;
    if (spec->ncontent == 0) return NST_OK;
    NST_TRY(be->ops->upload(be, t->img.data, window_px, (size_t)t->window.w * t->window.h * 3, NST_F32));
    NST_TRY(forward_tile(o, t));
    for (int k = 0; k < spec->ncontent; k++) {
        int l = spec->content[k];
        const nst_tensor *f = &t->acts->out[l];
        NST_TRY(nst_tensor_alloc(be, f->h, f->w, f->c, f->dt, &t->target[l]));
        NST_TRY(be->ops->copy_rect(be, f, nst_tensor_rect(f), &t->target[l], 0, 0));
        NST_TRY(be->ops->sumsq(be, f, t->own[l], &o->sums->normP[k]));
    }
    return NST_OK;
}

nst_status nst_tile_set_temporal(nst_objective *o, nst_tile *t, const float *target_px, const float *c_px)
{
    nst_backend *be = o->net->be;
    const int w = t->window.w, h = t->window.h;
    if (!(o->spec->temporal_weight > 0)) return NST_OK;
    NST_TRY(nst_tensor_alloc(be, h, w, 3, NST_F32, &t->temporal_target));
    NST_TRY(be->ops->upload(be, t->temporal_target.data, target_px, (size_t)w * h * 3, NST_F32));
    NST_TRY(nst_tensor_alloc(be, h, w, 1, NST_F32, &t->temporal_c));
    NST_TRY(be->ops->upload(be, t->temporal_c.data, c_px, (size_t)w * h, NST_F32));
    return nst_tensor_check_mask(&t->img, &t->temporal_c, "the temporal weights");
}

float nst_mask_quantise(float v)
{
    if (!(v > 0)) return 0; /* NaN too */
    if (v >= 1) return 1;
    return (float)(nearbyint((double)v * 65536.0) / 65536.0);
}

/* One 2x2 average (floor) of a w x h mask, in place: exact for values that are multiples of
 * 2^-16 averaged up to four times (multiples of 2^-24 in [0,1] are floats). */
static void mask_pool(float *m, int *w, int *h)
{
    int ow = *w / 2, oh = *h / 2;
    for (int y = 0; y < oh; y++)
        for (int x = 0; x < ow; x++) {
            const float *a = m + (size_t)(2 * y) * *w + 2 * x, *b = a + *w;
            m[(size_t)y * ow + x] = ((a[0] + a[1]) + (b[0] + b[1])) * 0.25f;
        }
    *w = ow, *h = oh;
}

/* Mask `which` (style g, or guides.n: the content) of a tile at every layer in use[], from its
 * window pixels: uploaded to t->mask, and its owned sums added to M of style g's slots. */
static nst_status mask_layers(nst_objective *o, nst_tile *t, int which, const float *px, const int *use)
{
    nst_backend *be = o->net->be;
    int w = t->window.w, h = t->window.h, level = 0;
    float *m = nst_alloc_array((size_t)w * h, sizeof(float), "a mask window");
    if (!m) return NST_ENOMEM;
    for (size_t i = 0; i < (size_t)w * h; i++) m[i] = nst_mask_quantise(px[i]);
    nst_status s = NST_OK;
    for (int l = 0; s == NST_OK && l < o->net->nlayers; l++) {
        if (!use[l]) continue;
        while ((1 << level) < nst_vgg_footprint(l).stride) mask_pool(m, &w, &h), level++;
        nst_tensor *mt = &t->mask[which * NST_VGG_NLAYERS + l];
        s = nst_tensor_alloc(be, h, w, 1, NST_F32, mt);
        if (s == NST_OK) s = be->ops->upload(be, mt->data, m, (size_t)w * h, NST_F32);
        if (s == NST_OK) s = nst_tensor_check_mask(&t->acts->out[l], mt, "tile masks");
        for (int k = 0; s == NST_OK && which < o->guides.n && k < o->spec->nstyle; k++) {
            if (o->spec->style[k] != l) continue;
            nst_rect r = t->own[l];
            double sum = 0;
            for (int y = r.y; y < r.y + r.h; y++)
                for (int x = r.x; x < r.x + r.w; x++) sum += m[(size_t)y * w + x];
            o->M[which * o->spec->nstyle + k] += sum; /* exact: multiples of 2^-24, far below 2^29 of them */
        }
    }
    nst_free(m);
    return s;
}

nst_status nst_tile_set_masks(nst_objective *o, nst_tile *t, float *const *px)
{
    const nst_loss_spec *spec = o->spec;
    const int n = o->guides.n;
    if (!n && !o->guides.content) return NST_OK;
    t->mask = nst_calloc(sizeof(nst_tensor) * (size_t)(n + 1) * NST_VGG_NLAYERS, "tile masks");
    if (!t->mask) return NST_ENOMEM;
    if (t->acts != &t->own_acts) NST_TRY(nst_acts_reshape(o->net, t->acts, t->window.h, t->window.w)); /* the layers' shapes */
    int style_use[NST_VGG_NLAYERS] = {0}, content_use[NST_VGG_NLAYERS] = {0};
    for (int k = 0; k < spec->nstyle; k++) style_use[spec->style[k]] = 1;
    for (int k = 0; k < spec->ncontent; k++) content_use[spec->content[k]] = 1;
    for (int g = 0; g < n; g++) NST_TRY(mask_layers(o, t, g, px[g], style_use));
    if (o->guides.content) NST_TRY(mask_layers(o, t, n, px[n], content_use));
    return NST_OK;
}

/* A tile's mask `which` (style g < guides.n, or the content's at guides.n) at layer l; NULL without. */
static const nst_tensor *mask_at(const nst_tile *t, int which, int l)
{
    const nst_tensor *m = t->mask ? &t->mask[which * NST_VGG_NLAYERS + l] : NULL;
    return m && m->data ? m : NULL;
}

/* The mask of Gram slot q's style at layer l: none without style masks (a content mask at the
 * same layer is the content term's, never the Gram's). */
static const nst_tensor *style_mask(const nst_objective *o, const nst_tile *t, int q, int l)
{
    return o->guides.n ? mask_at(t, q / o->spec->nstyle, l) : NULL;
}

/* The content mask at layer l; NULL without one. */
static const nst_tensor *content_mask(const nst_objective *o, const nst_tile *t, int l)
{
    return o->guides.content ? mask_at(t, o->guides.n, l) : NULL;
}

/* out[k] = the values of n exact sums after they are added over ranks (as integers: exact). */
static nst_status sum_exact(nst_objective *o, nst_xsum *x, int n, double *out)
{
    for (int k = 0; k < n; k++) nst_xsum_normalize(&x[k]);
    if (n && o->coll.sum_int64) NST_TRY(o->coll.sum_int64(o->coll.ctx, (int64_t *)x, (size_t)n * NST_XSUM_WORDS));
    for (int k = 0; k < n; k++) out[k] = nst_xsum_value(&x[k]);
    return NST_OK;
}

nst_status nst_objective_finish_targets(nst_objective *o)
{
    nst_backend *be = o->net->be;
    NST_TRY(be->ops->read(be, o->host, o->sums, sizeof *o->sums));
    NST_TRY(sum_exact(o, o->host->normP, o->spec->ncontent, o->normP));
    if (o->coll.sum_doubles && o->guides.n) NST_TRY(o->coll.sum_doubles(o->coll.ctx, o->M, (size_t)o->ngram));
    return NST_OK;
}

/* The weight of slot q's style term: style.weight, the layer's weight and the style's factor. */
static double style_weight(const nst_objective *o, int q)
{
    const nst_loss_spec *spec = o->spec;
    double w = spec->style_weight * spec->style_layer_weight[q % spec->nstyle];
    return o->guides.n ? w * o->guides.weight[q / spec->nstyle] : w;
}

/* Add the loss gradients seeded at `layer` into grad (and the content loss values). With grad
 * NULL only the content values are taken. */
static nst_status seed_layer(void *user, int layer, nst_tensor *grad)
{
    seed_ctx *sc = user;
    nst_objective *o = sc->o;
    nst_tile *t = sc->t;
    const nst_loss_spec *spec = o->spec;
    nst_backend *be = o->net->be;
    const nst_tensor *f = &t->acts->out[layer];
    for (int q = 0; q < o->ngram; q++) {
        int k = q % spec->nstyle;
        if (spec->style[k] != layer) continue;
        double w = style_weight(o, q);
        if (w == 0 || !grad || !(o->M[q] > 0)) continue; /* a mask of no weight here: no term */
        float scale = (float)(4.0 * w / (fmax(o->normA[q], NORM_FLOOR) * o->M[q]));
        NST_TRY(be->ops->gram_backward(be, f, t->seed[layer], style_mask(o, t, q, layer), o->D[q], scale, grad));
    }
    for (int k = 0; k < spec->ncontent; k++) {
        if (spec->content[k] != layer) continue;
        float scale = (float)(2.0 * spec->content_weight / fmax(o->normP[k], NORM_FLOOR));
        NST_TRY(be->ops->mse(be, f, &t->target[layer], t->own[layer], t->seed[layer], content_mask(o, t, layer), scale,
                             &o->sums->pending[k], grad));
    }
    return NST_OK;
}

/* Slot q's Gram sums of the tile, added to the slot's. */
static nst_status gram_slot(nst_objective *o, nst_tile *t, int q)
{
    nst_backend *be = o->net->be;
    int l = o->spec->style[q % o->spec->nstyle];
    const nst_tensor *f = &t->acts->out[l], *m = style_mask(o, t, q, l);
    return o->fixed ? be->ops->gram_fixed(be, f, t->own[l], m, o->gram_e[q], o->Gx[q], &o->emax[q])
                    : be->ops->gram_accumulate(be, f, t->own[l], m, o->G[q]);
}

/* Every slot's Gram sums of a tile whose forward is in its activations. */
static nst_status gram_tile(nst_objective *o, nst_tile *t)
{
    nst_backend *be = o->net->be;
    nst_status s = NST_OK;
    be->ops->range_push(be, "Gram sums");
    for (int q = 0; s == NST_OK && q < o->ngram; q++) s = gram_slot(o, t, q);
    be->ops->range_pop(be);
    return s;
}

/* The Gram sums of the slots at `layer` (nst_net_forward_each's callback), on the backend's side
 * stream where it has one; forward_pass joins them. The slots are independent sums, so their
 * order is free: each slot still adds its tiles in the same order. */
static nst_status gram_layer(void *user, int layer)
{
    seed_ctx *sc = user;
    nst_objective *o = sc->o;
    nst_backend *be = o->net->be;
    nst_status s = NST_OK;
    int opened = 0;
    for (int q = 0; s == NST_OK && q < o->ngram; q++) {
        if (o->spec->style[q % o->spec->nstyle] != layer) continue;
        if (!opened && be->ops->side) {
            NST_TRY(be->ops->side(be, 1));
            opened = 1;
            be->ops->range_push(be, "Gram sums");
        }
        s = gram_slot(o, sc->t, q);
    }
    if (opened) {
        be->ops->range_pop(be);
        nst_status e = be->ops->side(be, 0);
        if (s == NST_OK) s = e;
    }
    return s;
}

/* Backward of one tile whose forward is in its activations, and its TV term. */
static nst_status backward_tile(nst_objective *o, nst_tile *t, int grad)
{
    nst_backend *be = o->net->be;
    seed_ctx sc = {o, t};
    nst_status s = NST_OK;
    be->ops->range_push(be, "backward");
    if (grad) {
        s = nst_net_backward(o->net, t->acts, seed_layer, &sc, &t->dimg);
    } else {
        for (int l = 0; s == NST_OK && l < o->net->nlayers; l++) s = seed_layer(&sc, l, NULL);
    }
    be->ops->range_pop(be);
    NST_TRY(s);
    if (o->spec->tv_weight > 0) {
        double scale = o->spec->tv_weight / (3.0 * o->img_w * o->img_h);
        NST_TRY(be->ops->tv(be, &t->img, t->own_px, t->seed_px, (float)scale, &o->sums->pending[o->spec->ncontent], grad ? &t->dimg : NULL));
    }
    if (t->temporal_target.data) { /* owned pixels' sum; the gradient over the optimised (seed) pixels */
        double scale = 2.0 * o->spec->temporal_weight / (3.0 * o->img_w * o->img_h);
        NST_TRY(be->ops->mse(be, &t->img, &t->temporal_target, t->own_px, t->seed_px, &t->temporal_c, (float)scale,
                             &o->sums->pending[o->spec->ncontent + 1], grad ? &t->dimg : NULL));
    }
    return NST_OK;
}

static nst_status zero_grams(nst_objective *o)
{
    nst_backend *be = o->net->be;
    for (int q = 0; q < o->ngram; q++) {
        int c = o->C[q % o->spec->nstyle];
        NST_TRY(be->ops->zero(be, o->G[q], (size_t)c * c * sizeof(double)));
        if (o->fixed) NST_TRY(be->ops->zero(be, o->Gx[q], 2 * (size_t)c * c * sizeof(int64_t)));
        o->emax[q] = NST_GRAM_EMIN;
    }
    return NST_OK;
}

/* The status of every rank (a failed rank still reaches this, so nobody waits in vain). */
static nst_status check(nst_objective *o, nst_status s)
{
    return o->coll.check ? o->coll.check(o->coll.ctx, s) : s;
}

/* Slot q's fixed-point sums added over ranks (integers: exact in any order), into G as doubles
 * (NaN where a feature was not finite, as the fp64 sums would have it); then the next iteration's
 * bound, one above this one's largest. */
static nst_status fixed_grams(nst_objective *o, int q)
{
    nst_backend *be = o->net->be;
    const int c = o->C[q % o->spec->nstyle];
    int64_t *x = o->Gx[q];
    if (o->coll.sum_int64 && !nst_planted("allreduce")) { /* planted: the tests must catch a missing sum */
        be->ops->range_push(be, "Gram allreduce");
        nst_status r = o->coll.sum_int64(o->coll.ctx, x, 2 * (size_t)c * c);
        be->ops->range_pop(be);
        NST_TRY(r);
    }
    const int bad = o->emax[q] >= NST_GRAM_ENONFINITE;
    nst_gram_fixed_to_double(x, c, o->gram_e[q], bad, o->G[q]);
    if (!bad && o->emax[q] > NST_GRAM_EMIN) o->gram_e[q] = o->emax[q] + 1;
    return NST_OK;
}

/* The fixed-point sums' bounds after a pass: the largest exponent over the ranks, and where it
 * exceeds a slot's bound (the objective's first pass, or features grown past the last iteration's
 * twice) the pass runs again with the bound it found, which fits: the same features. Resident
 * tiles keep their features; the others are forwarded again. */
static nst_status settle_bounds(nst_objective *o, nst_tile *tiles, int ntiles)
{
    if (!o->fixed) return NST_OK;
    for (int pass = 0;; pass++) {
        if (o->coll.max_ints) NST_TRY(o->coll.max_ints(o->coll.ctx, o->emax, (size_t)o->ngram));
        int again = 0;
        for (int q = 0; q < o->ngram; q++)
            if (o->emax[q] < NST_GRAM_ENONFINITE && o->emax[q] > o->gram_e[q]) o->gram_e[q] = o->emax[q], again = 1;
        if (!again) return NST_OK;
        if (pass > 0) return nst_fail(NST_ERUNTIME, "objective: the Gram sums' bound moved between two passes over the same features");
        o->regrams++;
        nst_status s = zero_grams(o);
        for (int i = 0; s == NST_OK && i < ntiles; i++) {
            if (o->strategy != NST_GRAM_RESIDENT) s = forward_tile(o, &tiles[i]);
            if (s == NST_OK) s = gram_tile(o, &tiles[i]);
        }
        NST_TRY(check(o, s));
    }
}

/* Every slot's fp64 Gram sums added over ranks, in backend memory, in one call over their block
 * (NCCL, or MPI through the host: a host step of the iteration, host_step.h). */
static nst_status sum_over_ranks(void *arg)
{
    nst_objective *o = arg;
    nst_backend *be = o->net->be;
    if (!o->coll.sum_grams || !o->G_n || nst_planted("allreduce")) return NST_OK; /* planted: the tests must catch a missing sum */
    be->ops->range_push(be, "Gram allreduce");
    const long long w0 = be->host_waits; /* the steps between ranks wait: MPI through the host, NCCL for its stream */
    nst_status s = o->coll.sum_grams(o->coll.ctx, o->G_all, o->G_n);
    o->staged_waits += be->host_waits - w0;
    be->ops->range_pop(be);
    return s;
}

/* Sum the Gram sums over ranks and set D = G/M - A (for the lagged Gram at the extrapolated
 * sums, for the next iteration), and each slot's sum of squares at the current image (the style
 * terms, on the device until they are read). */
static nst_status reduce_grams(nst_objective *o, int extrapolate)
{
    const nst_loss_spec *spec = o->spec;
    nst_backend *be = o->net->be;
    if (!o->fixed) NST_TRY(nst_host_step(o->host_steps, sum_over_ranks, o));
    for (int q = 0; q < o->ngram; q++) {
        int k = q % spec->nstyle;
        size_t cc = (size_t)o->C[k] * o->C[k];
        if (o->fixed) NST_TRY(fixed_grams(o, q));
        if (!(o->M[q] > 0)) continue; /* a style whose mask has no weight at this layer: no term */
        const double *prev = extrapolate && o->have_prev ? o->Gprev[q] : NULL;
        NST_TRY(be->ops->gram_diff(be, o->G[q], prev, 1.0 / o->M[q], o->A[q], o->C[k], o->D[q], &o->sums->ss[q]));
        if (extrapolate) NST_TRY(be->ops->copy(be, o->Gprev[q], o->G[q], cc * sizeof(double)));
    }
    if (extrapolate) o->have_prev = 1;
    o->have_D = 1;
    return NST_OK;
}

/* The loss terms of the last evaluation: its sums read from the device (one wait), the local
 * ones added over ranks. Collective. */
static nst_status read_terms(nst_objective *o, nst_loss_terms *terms)
{
    const nst_loss_spec *spec = o->spec;
    nst_backend *be = o->net->be;
    memset(terms, 0, sizeof *terms);
    NST_TRY(be->ops->read(be, o->host, o->sums, sizeof *o->sums));
    for (int q = 0; q < o->ngram; q++) {
        if (!(o->M[q] > 0)) continue;
        double term = style_weight(o, q) * o->host->ss[q] / fmax(o->normA[q], NORM_FLOOR);
        terms->style_layer[q % spec->nstyle] += term; /* by layer: the styles' terms added */
        terms->style += term;
    }
    double sums[NST_VGG_NLAYERS + 2];
    NST_TRY(sum_exact(o, o->host->pending, spec->ncontent + 2, sums));
    for (int k = 0; k < spec->ncontent; k++) {
        terms->content_layer[k] = spec->content_weight * sums[k] / fmax(o->normP[k], NORM_FLOOR);
        terms->content += terms->content_layer[k];
    }
    terms->tv = spec->tv_weight / (3.0 * o->img_w * o->img_h) * sums[spec->ncontent];
    terms->temporal = spec->temporal_weight / (3.0 * o->img_w * o->img_h) * sums[spec->ncontent + 1];
    terms->total = terms->content + terms->style + terms->tv + terms->temporal;
    if (nst_planted("nanloss")) terms->style = terms->total = -NAN; /* planted: a diverged run's terms (x86 makes them -NaN), for its writers */
    return NST_OK;
}

/* Forward every tile and sum its Gram matrices (pass one of resident and two-pass). */
static nst_status forward_all(nst_objective *o, nst_tile *tiles, int ntiles)
{
    NST_TRY(zero_grams(o));
    for (int i = 0; i < ntiles; i++) NST_TRY(forward_grams(o, &tiles[i]));
    return NST_OK;
}

nst_status nst_objective_eval(nst_objective *o, nst_tile *tiles, int ntiles, int grad, nst_timers *tm, nst_loss_terms *terms)
{
    nst_backend *be = o->net->be;
    nst_status s = NST_OK;
    NST_TRY(be->ops->zero(be, o->sums->pending, sizeof o->sums->pending));

    if (!grad || o->strategy != NST_GRAM_LAGGED || !o->have_D) {
        /* forward of every tile, Gram sums, then the global statistic */
        if (grad && o->strategy != NST_GRAM_RESIDENT) {
            s = forward_all(o, tiles, ntiles); /* pass one: only the Gram */
        } else {
            s = zero_grams(o);
            for (int i = 0; s == NST_OK && i < ntiles; i++) {
                s = forward_grams(o, &tiles[i]);
                /* without a gradient, the content and TV values are taken while the features exist */
                if (s == NST_OK && !grad) s = backward_tile(o, &tiles[i], 0);
            }
        }
        nst_timer_lap(tm, NST_T_FORWARD);
        if (s == NST_OK) s = late_join(o);
        NST_TRY(check(o, s));
        NST_TRY(settle_bounds(o, tiles, ntiles));
        nst_timer_lap(tm, NST_T_FORWARD);
        NST_TRY(reduce_grams(o, 0));
        nst_timer_lap(tm, NST_T_GRAM_REDUCE);
    }
    if (grad) {
        if (o->strategy == NST_GRAM_LAGGED) {
            /* one pass: forward (Gram sums of this iteration) and backward with the previous D */
            s = zero_grams(o);
            nst_timer_start(tm);
            for (int i = 0; s == NST_OK && i < ntiles; i++) {
                s = forward_grams(o, &tiles[i]);
                nst_timer_lap(tm, NST_T_FORWARD);
                if (s == NST_OK) s = backward_tile(o, &tiles[i], 1);
                nst_timer_lap(tm, NST_T_BACKWARD);
            }
            if (s == NST_OK) s = late_join(o);
            NST_TRY(check(o, s));
            NST_TRY(reduce_grams(o, 1)); /* D for the next iteration; the loss of this one */
            nst_timer_lap(tm, NST_T_GRAM_REDUCE);
        } else {
            for (int i = 0; s == NST_OK && i < ntiles; i++) {
                if (o->strategy == NST_GRAM_TWO_PASS) { /* pass two: the forward again, then the backward */
                    s = forward_tile(o, &tiles[i]);
                    nst_timer_lap(tm, NST_T_FORWARD);
                }
                if (s == NST_OK) s = backward_tile(o, &tiles[i], 1);
                nst_timer_lap(tm, NST_T_BACKWARD);
            }
            NST_TRY(check(o, s));
        }
    }
    if (terms) { /* the sums, read and added over ranks */
        NST_TRY(read_terms(o, terms));
        nst_timer_lap(tm, NST_T_REDUCE);
    } else if (nst_planted("readback")) { /* planted: the tests must catch a read between rows */
        nst_loss_terms unused;
        NST_TRY(read_terms(o, &unused));
    }
    return NST_OK;
}

/* ---- checkpoint --------------------------------------------------------------------------------- */

nst_status nst_objective_state(nst_objective *o, const nst_ckpt_io *io)
{
    if (o->fixed) { /* the bounds of the next iteration's fixed-point sums (the grid they round to) */
        if (io->r && !nst_ckpt_find(io->r, "gram.bounds", &(size_t){0})) return NST_OK; /* an older checkpoint: found again */
        return nst_ckpt_io_host(io, "gram.bounds", o->gram_e, (size_t)o->ngram * sizeof(int));
    }
    if (o->strategy != NST_GRAM_LAGGED) return NST_OK; /* fp64 exact strategies keep nothing between iterations */
    int32_t flags[2] = {o->have_prev, o->have_D};
    char name[64];
    NST_TRY(nst_ckpt_io_host(io, "lagged", flags, sizeof flags));
    o->have_prev = flags[0], o->have_D = flags[1];
    for (int q = 0; q < o->ngram; q++) { /* slot q: without masks the style layer's index, as before masks */
        size_t cc = (size_t)o->C[q % o->spec->nstyle] * o->C[q % o->spec->nstyle];
        snprintf(name, sizeof name, "lagged.G/%d", q);
        NST_TRY(nst_ckpt_io_buffer(io, name, o->G[q], cc * sizeof(double)));
        snprintf(name, sizeof name, "lagged.Gprev/%d", q);
        NST_TRY(nst_ckpt_io_buffer(io, name, o->Gprev[q], cc * sizeof(double)));
        snprintf(name, sizeof name, "lagged.D/%d", q);
        NST_TRY(nst_ckpt_io_buffer(io, name, o->D[q], cc * sizeof(float)));
    }
    return NST_OK;
}

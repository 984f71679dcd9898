/* nst/objective.c: the Gatys objective over tiles with global statistics (see objective.h). */
#include "objective.h"

#include <math.h>
#include <string.h>

#include "../util/mem.h"

/* Relative-error normalisers: a target of (near) zero norm would divide by zero; it then counts
 * as an absolute error instead. */
#define NORM_FLOOR 1e-30

static int floor_div(int a, int s) { return a >= 0 ? a / s : -((-a + s - 1) / s); }
static int ceil_div(int a, int s) { return -floor_div(-a, s); }

nst_status nst_objective_init(nst_objective *o, const nst_loss_spec *spec, nst_net *net, nst_reducer red, int img_w,
                              int img_h)
{
    memset(o, 0, sizeof *o);
    o->spec = spec;
    o->net = net;
    o->red = red;
    o->img_w = img_w;
    o->img_h = img_h;
    nst_backend *be = net->be;
    for (int k = 0; k < spec->nstyle; k++) {
        int h, w, c;
        nst_net_shape(net, spec->style[k], img_h, img_w, &h, &w, &c);
        o->C[k] = c;
        o->M[k] = (double)h * w;
        size_t bytes = (size_t)c * c * sizeof(float);
        NST_TRY(be->ops->alloc(be, bytes, (void **)&o->A[k]));
        NST_TRY(be->ops->alloc(be, bytes, (void **)&o->G[k]));
        NST_TRY(be->ops->alloc(be, bytes, (void **)&o->D[k]));
    }
    return NST_OK;
}

void nst_objective_free(nst_objective *o)
{
    if (!o->net) return;
    nst_backend *be = o->net->be;
    for (int k = 0; k < NST_VGG_NLAYERS; k++) {
        if (o->A[k]) be->ops->free(be, o->A[k]);
        if (o->G[k]) be->ops->free(be, o->G[k]);
        if (o->D[k]) be->ops->free(be, o->D[k]);
    }
    memset(o, 0, sizeof *o);
}

nst_status nst_objective_set_style(nst_objective *o, const float *style, int w, int h)
{
    const nst_loss_spec *spec = o->spec;
    nst_net *net = o->net;
    nst_backend *be = net->be;
    if (spec->nstyle == 0) return NST_OK;
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
            float *tmp = NULL;
            s = be->ops->zero(be, o->A[k], cc * sizeof(float));
            if (s == NST_OK) s = be->ops->gram_accumulate(be, f, nst_tensor_rect(f), o->A[k]);
            /* normalise by the style image's position count; ||A||^2 from the difference to zero */
            if (s == NST_OK) s = be->ops->alloc(be, cc * sizeof(float), (void **)&tmp);
            if (s == NST_OK) s = be->ops->zero(be, tmp, cc * sizeof(float));
            if (s == NST_OK) {
                double m = (double)f->h * f->w;
                s = be->ops->gram_diff(be, o->A[k], (float)(1.0 / m), tmp, o->C[k], o->A[k], &o->normA[k]);
            }
            if (tmp) be->ops->free(be, tmp);
        }
        nst_acts_free(net, &acts);
    }
    nst_tensor_free(be, &img);
    return s;
}

nst_status nst_tile_init(nst_objective *o, nst_tile *t, nst_rect core, nst_rect window)
{
    nst_net *net = o->net;
    nst_backend *be = net->be;
    memset(t, 0, sizeof *t);
    t->core = core;
    t->window = window;
    t->own_px = t->seed_px = nst_rect_translate(core, -window.x, -window.y);
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
        t->own[i] = nst_rect_intersect(own, extent);
        t->seed[i] = nst_rect_intersect(seed, extent);
    }
    nst_status s = nst_tensor_alloc(be, window.h, window.w, 3, NST_F32, &t->img);
    if (s == NST_OK) s = nst_tensor_alloc(be, window.h, window.w, 3, NST_F32, &t->dimg);
    if (s == NST_OK) s = nst_acts_alloc(net, window.h, window.w, &t->acts);
    if (s != NST_OK) nst_tile_free(o, t);
    return s;
}

void nst_tile_free(nst_objective *o, nst_tile *t)
{
    nst_backend *be = o->net->be;
    nst_tensor_free(be, &t->img);
    nst_tensor_free(be, &t->dimg);
    for (int i = 0; i < NST_VGG_NLAYERS; i++) nst_tensor_free(be, &t->target[i]);
    nst_acts_free(o->net, &t->acts);
}

nst_status nst_tile_set_content(nst_objective *o, nst_tile *t, const float *window_px)
{
    const nst_loss_spec *spec = o->spec;
    nst_backend *be = o->net->be;
    if (spec->ncontent == 0) return NST_OK;
    NST_TRY(be->ops->upload(be, t->img.data, window_px, (size_t)t->window.w * t->window.h * 3, NST_F32));
    NST_TRY(nst_net_forward(o->net, &t->img, &t->acts));
    for (int k = 0; k < spec->ncontent; k++) {
        int l = spec->content[k];
        const nst_tensor *f = &t->acts.out[l];
        NST_TRY(nst_tensor_alloc(be, f->h, f->w, f->c, f->dt, &t->target[l]));
        size_t bytes = nst_tensor_elems(f) * nst_dtype_size(f->dt);
        /* copy through the host: done once per tile, and keeps the interface small */
        float *host = nst_alloc(bytes * (sizeof(float) / nst_dtype_size(f->dt)), "content targets");
        if (!host) return NST_ENOMEM;
        nst_status s = be->ops->download(be, host, f->data, nst_tensor_elems(f), f->dt);
        if (s == NST_OK) s = be->ops->upload(be, t->target[l].data, host, nst_tensor_elems(f), f->dt);
        nst_free(host);
        NST_TRY(s);
        double ss;
        NST_TRY(be->ops->sumsq(be, f, t->own[l], &ss));
        o->normP[k] += ss;
    }
    return NST_OK;
}

nst_status nst_objective_finish_targets(nst_objective *o, nst_tile *tiles, int ntiles)
{
    (void)tiles;
    (void)ntiles;
    if (o->red.sum_doubles && o->spec->ncontent) NST_TRY(o->red.sum_doubles(o->red.ctx, o->normP, (size_t)o->spec->ncontent));
    return NST_OK;
}

typedef struct {
    nst_objective *o;
    nst_tile *t;
} seed_ctx;

/* Add the loss gradients seeded at `layer` into grad (and the content loss values). */
static nst_status seed_layer(void *user, int layer, nst_tensor *grad)
{
    seed_ctx *sc = user;
    nst_objective *o = sc->o;
    nst_tile *t = sc->t;
    const nst_loss_spec *spec = o->spec;
    nst_backend *be = o->net->be;
    const nst_tensor *f = &t->acts.out[layer];
    for (int k = 0; k < spec->nstyle; k++) {
        if (spec->style[k] != layer) continue;
        double w = spec->style_weight * spec->style_layer_weight[k];
        if (w == 0 || !grad) continue;
        float scale = (float)(4.0 * w / (fmax(o->normA[k], NORM_FLOOR) * o->M[k]));
        NST_TRY(be->ops->gram_backward(be, f, t->seed[layer], o->D[k], scale, grad));
    }
    for (int k = 0; k < spec->ncontent; k++) {
        if (spec->content[k] != layer) continue;
        double ss;
        float scale = (float)(2.0 * spec->content_weight / fmax(o->normP[k], NORM_FLOOR));
        NST_TRY(be->ops->mse(be, f, &t->target[layer], t->own[layer], t->seed[layer], scale, &ss, grad));
        o->content_pending[k] += ss;
    }
    return NST_OK;
}

nst_status nst_objective_eval(nst_objective *o, nst_tile *tiles, int ntiles, int grad, nst_loss_terms *terms)
{
    const nst_loss_spec *spec = o->spec;
    nst_backend *be = o->net->be;
    memset(terms, 0, sizeof *terms);
    memset(o->content_pending, 0, sizeof o->content_pending);
    o->tv_pending = 0;

    /* 1. forward every tile and sum the Gram matrices over owned positions */
    for (int k = 0; k < spec->nstyle; k++) NST_TRY(be->ops->zero(be, o->G[k], (size_t)o->C[k] * o->C[k] * sizeof(float)));
    for (int i = 0; i < ntiles; i++) {
        nst_tile *t = &tiles[i];
        NST_TRY(nst_net_forward(o->net, &t->img, &t->acts));
        for (int k = 0; k < spec->nstyle; k++)
            NST_TRY(be->ops->gram_accumulate(be, &t->acts.out[spec->style[k]], t->own[spec->style[k]], o->G[k]));
    }
    /* 2. one global statistic: sum over ranks, then divide by the whole image's count */
    for (int k = 0; k < spec->nstyle; k++) {
        if (o->red.sum_floats) NST_TRY(o->red.sum_floats(o->red.ctx, o->G[k], (size_t)o->C[k] * o->C[k]));
        double ss;
        NST_TRY(be->ops->gram_diff(be, o->G[k], (float)(1.0 / o->M[k]), o->A[k], o->C[k], o->D[k], &ss));
        terms->style_layer[k] = spec->style_weight * spec->style_layer_weight[k] * ss / fmax(o->normA[k], NORM_FLOOR);
        terms->style += terms->style_layer[k];
    }
    /* 3. backward every tile (its activations are still resident) */
    double tv_scale = spec->tv_weight / (3.0 * o->img_w * o->img_h);
    for (int i = 0; i < ntiles; i++) {
        nst_tile *t = &tiles[i];
        seed_ctx sc = {o, t};
        if (grad) {
            NST_TRY(nst_net_backward(o->net, &t->acts, seed_layer, &sc, &t->dimg));
        } else {
            for (int l = 0; l < o->net->nlayers; l++) NST_TRY(seed_layer(&sc, l, NULL));
        }
        if (spec->tv_weight > 0) {
            double s;
            NST_TRY(be->ops->tv(be, &t->img, t->own_px, t->seed_px, (float)tv_scale, &s, grad ? &t->dimg : NULL));
            o->tv_pending += s;
        }
    }
    /* 4. the local sums, added over ranks */
    double sums[NST_VGG_NLAYERS + 1];
    for (int k = 0; k < spec->ncontent; k++) sums[k] = o->content_pending[k];
    sums[spec->ncontent] = o->tv_pending;
    if (o->red.sum_doubles) NST_TRY(o->red.sum_doubles(o->red.ctx, sums, (size_t)spec->ncontent + 1));
    for (int k = 0; k < spec->ncontent; k++) {
        terms->content_layer[k] = spec->content_weight * sums[k] / fmax(o->normP[k], NORM_FLOOR);
        terms->content += terms->content_layer[k];
    }
    terms->tv = tv_scale * sums[spec->ncontent];
    terms->total = terms->content + terms->style + terms->tv;
    return NST_OK;
}

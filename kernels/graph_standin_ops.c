/* kernels/graph_standin_ops.c: the graph stand-in's ops as a stream under capture takes them: each
 * recorded with its arguments while an iteration is recorded, run at once otherwise; and the replay
 * of a recorded op (see graph_standin.h). */
#include <string.h>

#include "../util/mem.h"
#include "graph_standin_impl.h"

rec *gs_add_to(rec_list *l, rec_op op)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 256;
        rec *v = nst_alloc_array(cap, sizeof *v, "a recorded iteration");
        if (!v) return NULL;
        if (l->n) memcpy(v, l->v, l->n * sizeof *v);
        nst_free(l->v);
        l->v = v, l->cap = cap;
    }
    rec *r = &l->v[l->n++];
    memset(r, 0, sizeof *r);
    r->op = op;
    return r;
}
static void put(rec *r, int k, const nst_tensor *t)
{
    if (t) r->t[k] = *t, r->has[k] = 1;
}
#define TP(r, k) ((r)->has[k] ? &(r)->t[k] : NULL)

static const char *const rec_name[] = {"zero", "copy", "copy_rect", "conv_forward", "conv_backward_data", "relu_backward",
                                        "pool_forward", "pool_backward", "preprocess", "preprocess_backward", "gram_accumulate",
                                        "gram_diff", "gram_backward", "mse", "tv", "adam", "adam_tick", "sumsq", "axpby", "box_hold",
                                        "box_step", "stamp"};
_Static_assert(sizeof rec_name / sizeof *rec_name == R_STAMP + 1, "a name for every recorded op");

/* the op as a stream under capture takes it: recorded (R declared), or run now */
#define RECORD(be, OP, CALL)                             \
    struct nst_graph_standin *g_ = G(be);                \
    if (g_->side_open) return gs_off_side(rec_name[OP]); \
    if (!g_->recording) return CALL;                     \
    rec *R = gs_add(g_, OP);                             \
    if (!R) return NST_ENOMEM

static nst_status s_zero(nst_backend *be, void *ptr, size_t bytes)
{
    RECORD(be, R_ZERO, REAL(be)->zero(be, ptr, bytes));
    R->p[0] = ptr, R->n = bytes;
    return NST_OK;
}
static nst_status s_copy(nst_backend *be, void *dst, const void *src, size_t bytes)
{
    RECORD(be, R_COPY, REAL(be)->copy(be, dst, src, bytes));
    R->p[0] = dst, R->p[1] = (void *)src, R->n = bytes;
    return NST_OK;
}
static nst_status s_copy_rect(nst_backend *be, const nst_tensor *src, nst_rect r, nst_tensor *dst, int dx, int dy)
{
    RECORD(be, R_COPY_RECT, REAL(be)->copy_rect(be, src, r, dst, dx, dy));
    put(R, 0, src), put(R, 1, dst), R->r[0] = r, R->i[0] = dx, R->i[1] = dy;
    return NST_OK;
}
static nst_status s_conv_forward(nst_backend *be, nst_conv *c, const nst_tensor *x, nst_tensor *y, int relu)
{
    RECORD(be, R_CONV_F, REAL(be)->conv_forward(be, c, x, y, relu));
    R->conv = c, put(R, 0, x), put(R, 1, y), R->i[0] = relu;
    return NST_OK;
}
static nst_status s_conv_backward_data(nst_backend *be, nst_conv *c, const nst_tensor *dy, nst_tensor *dx)
{
    RECORD(be, R_CONV_B, REAL(be)->conv_backward_data(be, c, dy, dx));
    R->conv = c, put(R, 0, dy), put(R, 1, dx);
    return NST_OK;
}
static nst_status s_relu_backward(nst_backend *be, const nst_tensor *y, nst_tensor *dy)
{
    RECORD(be, R_RELU_B, REAL(be)->relu_backward(be, y, dy));
    put(R, 0, y), put(R, 1, dy);
    return NST_OK;
}
static nst_status s_pool_forward(nst_backend *be, nst_pool_kind k, const nst_tensor *x, nst_tensor *y)
{
    RECORD(be, R_POOL_F, REAL(be)->pool_forward(be, k, x, y));
    R->kind = k, put(R, 0, x), put(R, 1, y);
    return NST_OK;
}
static nst_status s_pool_backward(nst_backend *be, nst_pool_kind k, const nst_tensor *x, const nst_tensor *y, const nst_tensor *dy,
                                  nst_tensor *dx, int relu)
{
    RECORD(be, R_POOL_B, REAL(be)->pool_backward(be, k, x, y, dy, dx, relu));
    R->kind = k, put(R, 0, x), put(R, 1, y), put(R, 2, dy), put(R, 3, dx), R->i[0] = relu;
    return NST_OK;
}
static nst_status s_preprocess(nst_backend *be, const nst_preproc *p, const nst_tensor *img, nst_tensor *x)
{
    RECORD(be, R_PRE, REAL(be)->preprocess(be, p, img, x));
    R->pre = *p, put(R, 0, img), put(R, 1, x);
    return NST_OK;
}
static nst_status s_preprocess_backward(nst_backend *be, const nst_preproc *p, const nst_tensor *dx, nst_tensor *dimg)
{
    RECORD(be, R_PRE_B, REAL(be)->preprocess_backward(be, p, dx, dimg));
    R->pre = *p, put(R, 0, dx), put(R, 1, dimg);
    return NST_OK;
}
static nst_status s_gram_accumulate(nst_backend *be, const nst_tensor *f, nst_rect own, const nst_tensor *m, double *g)
{
    struct nst_graph_standin *gs = G(be);
    if (!gs->side_open && !gs->recording) return REAL(be)->gram_accumulate(be, f, own, m, g);
    rec *R = gs->side_open ? gs_add_to(&gs->side, R_GRAM_ACC) : gs_add(gs, R_GRAM_ACC); /* the side's: held back until the join (graph_standin_side.c) */
    if (!R) return NST_ENOMEM;
    put(R, 0, f), put(R, 1, m), R->r[0] = own, R->p[0] = g;
    return NST_OK;
}
static nst_status s_gram_diff(nst_backend *be, const double *g, const double *gp, double gs, const float *a, int c, float *d, double *ss)
{
    RECORD(be, R_GRAM_DIFF, REAL(be)->gram_diff(be, g, gp, gs, a, c, d, ss));
    R->p[0] = (void *)g, R->p[1] = (void *)gp, R->d = gs, R->p[2] = (void *)a, R->i[0] = c, R->p[3] = d, R->p[4] = ss;
    return NST_OK;
}
static nst_status s_gram_backward(nst_backend *be, const nst_tensor *f, nst_rect seed, const nst_tensor *m, const float *d, float scale,
                                  nst_tensor *df)
{
    RECORD(be, R_GRAM_B, REAL(be)->gram_backward(be, f, seed, m, d, scale, df));
    put(R, 0, f), put(R, 1, m), put(R, 2, df), R->r[0] = seed, R->p[0] = (void *)d, R->f[0] = scale;
    return NST_OK;
}
static nst_status s_mse(nst_backend *be, const nst_tensor *f, const nst_tensor *p, nst_rect own, nst_rect seed, const nst_tensor *m,
                        float scale, nst_xsum *ss, nst_tensor *df)
{
    RECORD(be, R_MSE, REAL(be)->mse(be, f, p, own, seed, m, scale, ss, df));
    put(R, 0, f), put(R, 1, p), put(R, 2, m), put(R, 3, df), R->r[0] = own, R->r[1] = seed, R->f[0] = scale, R->p[0] = ss;
    return NST_OK;
}
static nst_status s_tv(nst_backend *be, const nst_tensor *img, nst_rect own, nst_rect seed, float scale, nst_xsum *sum, nst_tensor *dimg)
{
    RECORD(be, R_TV, REAL(be)->tv(be, img, own, seed, scale, sum, dimg));
    put(R, 0, img), put(R, 1, dimg), R->r[0] = own, R->r[1] = seed, R->f[0] = scale, R->p[0] = sum;
    return NST_OK;
}
static nst_status s_adam(nst_backend *be, float *x, const float *gr, float *m, float *v, size_t n, const nst_adam_params *ap,
                         const nst_adam_step *as)
{
    RECORD(be, R_ADAM, REAL(be)->adam(be, x, gr, m, v, n, ap, as));
    R->p[0] = x, R->p[1] = (void *)gr, R->p[2] = m, R->p[3] = v, R->n = n, R->ap = *ap, R->p[4] = (void *)as;
    return NST_OK;
}
static nst_status s_adam_tick(nst_backend *be, const nst_adam_params *ap, nst_adam_step *as)
{
    RECORD(be, R_ADAM_TICK, REAL(be)->adam_tick(be, ap, as));
    R->ap = *ap, R->p[0] = as;
    return NST_OK;
}
static nst_status s_sumsq(nst_backend *be, const nst_tensor *t, nst_rect own, nst_xsum *out)
{
    RECORD(be, R_SUMSQ, REAL(be)->sumsq(be, t, own, out));
    put(R, 0, t), R->r[0] = own, R->p[0] = out;
    return NST_OK;
}
static nst_status s_axpby(nst_backend *be, float *y, const float *x, size_t n, float a, float b)
{
    RECORD(be, R_AXPBY, REAL(be)->axpby(be, y, x, n, a, b));
    R->p[0] = y, R->p[1] = (void *)x, R->n = n, R->f[0] = a, R->f[1] = b;
    return NST_OK;
}
static nst_status s_box_hold(nst_backend *be, float *v, const float *x, const float *gr, size_t n)
{
    RECORD(be, R_BOX_HOLD, REAL(be)->box_hold(be, v, x, gr, n));
    R->p[0] = v, R->p[1] = (void *)x, R->p[2] = (void *)gr, R->n = n;
    return NST_OK;
}
static nst_status s_box_step(nst_backend *be, float *x, float *d, size_t n, float t)
{
    RECORD(be, R_BOX_STEP, REAL(be)->box_step(be, x, d, n, t));
    R->p[0] = x, R->p[1] = d, R->n = n, R->f[0] = t;
    return NST_OK;
}
static nst_status s_stamp(nst_backend *be, int slot)
{
    RECORD(be, R_STAMP, REAL(be)->stamp(be, slot));
    R->i[0] = slot;
    return NST_OK;
}

nst_status gs_replay(nst_backend *be, const rec *r)
{
    const nst_backend_ops *o = REAL(be);
    nst_tensor *t1 = (nst_tensor *)TP(r, 1), *t2 = (nst_tensor *)TP(r, 2), *t3 = (nst_tensor *)TP(r, 3);
    switch (r->op) {
    case R_ZERO: return o->zero(be, r->p[0], r->n);
    case R_COPY: return o->copy(be, r->p[0], r->p[1], r->n);
    case R_COPY_RECT: return o->copy_rect(be, TP(r, 0), r->r[0], t1, r->i[0], r->i[1]);
    case R_CONV_F: return o->conv_forward(be, r->conv, TP(r, 0), t1, r->i[0]);
    case R_CONV_B: return o->conv_backward_data(be, r->conv, TP(r, 0), t1);
    case R_RELU_B: return o->relu_backward(be, TP(r, 0), t1);
    case R_POOL_F: return o->pool_forward(be, r->kind, TP(r, 0), t1);
    case R_POOL_B: return o->pool_backward(be, r->kind, TP(r, 0), TP(r, 1), TP(r, 2), t3, r->i[0]);
    case R_PRE: return o->preprocess(be, &r->pre, TP(r, 0), t1);
    case R_PRE_B: return o->preprocess_backward(be, &r->pre, TP(r, 0), t1);
    case R_GRAM_ACC: return o->gram_accumulate(be, TP(r, 0), r->r[0], TP(r, 1), r->p[0]);
    case R_GRAM_DIFF: return o->gram_diff(be, r->p[0], r->p[1], r->d, r->p[2], r->i[0], r->p[3], r->p[4]);
    case R_GRAM_B: return o->gram_backward(be, TP(r, 0), r->r[0], TP(r, 1), r->p[0], r->f[0], t2);
    case R_MSE: return o->mse(be, TP(r, 0), TP(r, 1), r->r[0], r->r[1], TP(r, 2), r->f[0], r->p[0], t3);
    case R_TV: return o->tv(be, TP(r, 0), r->r[0], r->r[1], r->f[0], r->p[0], t1);
    case R_ADAM: return o->adam(be, r->p[0], r->p[1], r->p[2], r->p[3], r->n, &r->ap, r->p[4]);
    case R_ADAM_TICK: return o->adam_tick(be, &r->ap, r->p[0]);
    case R_SUMSQ: return o->sumsq(be, TP(r, 0), r->r[0], r->p[0]);
    case R_AXPBY: return o->axpby(be, r->p[0], r->p[1], r->n, r->f[0], r->f[1]);
    case R_BOX_HOLD: return o->box_hold(be, r->p[0], r->p[1], r->p[2], r->n);
    case R_BOX_STEP: return o->box_step(be, r->p[0], r->p[1], r->n, r->f[0]);
    case R_STAMP: return o->stamp(be, r->i[0]);
    }
    return nst_fail(NST_ERUNTIME, "graph stand-in: op %d unknown", (int)r->op);
}

void gs_ops_install(nst_backend_ops *o)
{
    o->zero = s_zero, o->copy = s_copy, o->copy_rect = s_copy_rect, o->conv_forward = s_conv_forward;
    o->conv_backward_data = s_conv_backward_data, o->relu_backward = s_relu_backward, o->pool_forward = s_pool_forward;
    o->pool_backward = s_pool_backward, o->preprocess = s_preprocess, o->preprocess_backward = s_preprocess_backward;
    o->gram_accumulate = s_gram_accumulate, o->gram_diff = s_gram_diff, o->gram_backward = s_gram_backward, o->mse = s_mse;
    o->tv = s_tv, o->adam = s_adam, o->adam_tick = s_adam_tick, o->sumsq = s_sumsq, o->axpby = s_axpby, o->box_hold = s_box_hold;
    o->box_step = s_box_step, o->stamp = s_stamp;
}

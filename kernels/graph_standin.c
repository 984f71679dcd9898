/* kernels/graph_standin.c: CUDA graphs' semantics on the CPU, for the tests (see graph_standin.h). */
#include "graph_standin.h"

#include <stdlib.h>
#include <string.h>

#include "../util/mem.h"

typedef enum {
    R_ZERO, R_COPY, R_COPY_RECT, R_CONV_F, R_CONV_B, R_RELU_B, R_POOL_F, R_POOL_B, R_PRE, R_PRE_B, R_GRAM_ACC, R_GRAM_DIFF,
    R_GRAM_B, R_MSE, R_TV, R_ADAM, R_ADAM_TICK, R_SUMSQ, R_AXPBY, R_BOX_HOLD, R_BOX_STEP, R_STAMP
} rec_op;

/* One recorded op: its arguments as the call gave them, tensors by value (a shared activation's
 * view is reshaped from tile to tile; the replay must see each call's shape). */
typedef struct {
    rec_op op;
    nst_tensor t[4];
    int has[4];
    nst_rect r[2];
    void *p[5];
    size_t n;
    int i[2];
    float f[2];
    double d;
    nst_conv *conv;
    nst_pool_kind kind;
    nst_preproc pre;
    nst_adam_params ap;
} rec;

typedef struct {
    rec *v;
    size_t n, cap;
} rec_list;

struct nst_graph_standin {
    const nst_backend_ops *real;
    nst_backend_ops ops;
    int recording, failed;
    rec_list rec;                        /* being recorded */
    rec_list seg[NST_GRAPH_SEGMENTS];    /* the recorded iteration's segments */
    int nseg, at;                        /* segments held; the one being recorded */
    struct pending *pend;                /* queued transfers not yet waited for (below) */
    size_t npend, cap_pend;
    int side_open;                       /* between side(1) and side(0) (NSTBATCH_CUDA_OVERLAP=1) */
    rec_list side;                       /* the side stream's ops, not yet joined (below) */
    nst_status side_status;              /* a failure of side work run at a free, reported at the next join */
    void *image_in;                      /* conv1_1 from the image: its network input or gradient (below) */
    size_t image_cap;
    const nst_conv *reads_image[8];      /* the layers created that take that path */
};

static struct nst_graph_standin *G(nst_backend *be) { return be->graph_standin; }
#define REAL(be) (G(be)->real)

static rec *add_to(rec_list *l, rec_op op)
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
static rec *add(struct nst_graph_standin *g, rec_op op) { return add_to(&g->rec, op); }

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

/* only the Gram sums go on the side stream (kernels/backend.h: side) */
static nst_status off_side(const char *name)
{
    return nst_fail(NST_ERUNTIME, "graph stand-in: %s called on the side stream, where only gram_accumulate goes", name);
}

/* the op as a stream under capture takes it: recorded (R declared), or run now */
#define RECORD(be, OP, CALL)                                                                                 \
    struct nst_graph_standin *g_ = G(be);                                                                 \
    if (g_->side_open) return off_side(rec_name[OP]);                                                               \
    if (!g_->recording) return CALL;                                                                      \
    rec *R = add(g_, OP);                                                                                 \
    if (!R) return NST_ENOMEM

/* ---- queued transfers, as a GPU's stream orders them ------------------------------------------ */
/* A queued download reads the device when the stream reaches it (here: at once), but the host sees
 * it only after a wait: its values are held until the next wait and written then, so host code
 * that reads the buffer before waiting reads what was there before. A queued upload reads the
 * host buffer when the stream reaches it, at any time before the next wait: a buffer changed in
 * between is a race, which the next wait reports. */
struct pending {
    float *host, *copy;
    size_t n;
    int upload;
};

static nst_status pend(struct nst_graph_standin *g, float *host, size_t n, int upload, float **copy)
{
    if (g->npend == g->cap_pend) {
        size_t cap = g->cap_pend ? 2 * g->cap_pend : 64;
        struct pending *v = nst_alloc_array(cap, sizeof *v, "queued transfers");
        if (!v) return NST_ENOMEM;
        if (g->npend) memcpy(v, g->pend, g->npend * sizeof *v);
        nst_free(g->pend);
        g->pend = v, g->cap_pend = cap;
    }
    *copy = nst_alloc_array(n ? n : 1, sizeof(float), "a queued transfer");
    if (!*copy) return NST_ENOMEM;
    g->pend[g->npend++] = (struct pending){host, *copy, n, upload};
    return NST_OK;
}

/* the wait: downloads land, uploads' buffers checked */
static nst_status settle(struct nst_graph_standin *g)
{
    nst_status s = NST_OK;
    for (size_t i = 0; i < g->npend; i++) {
        struct pending *p = &g->pend[i];
        if (!p->upload) memcpy(p->host, p->copy, p->n * sizeof(float));
        else if (s == NST_OK && memcmp(p->host, p->copy, p->n * sizeof(float)) != 0)
            s = nst_fail(NST_ERUNTIME, "graph stand-in: the host buffer of a queued upload changed before the backend was waited for");
        nst_free(p->copy);
    }
    g->npend = 0;
    return s;
}

/* an op a recording cannot hold: it fails the recording, saying why */
static nst_status refuse(nst_backend *be, const char *name, const char *what)
{
    G(be)->failed = 1;
    return nst_fail(NST_ERUNTIME, "%s %s while an iteration is recorded (graph stand-in)", name, what);
}

static nst_status side_join(nst_backend *be);

/* an op that makes the host wait: it fails a recording, joins the side stream as the CUDA backend
 * does, and settles the queued transfers */
#define WAITS(be, name, CALL)                                                 \
    do {                                                                      \
        if (G(be)->side_open) return off_side(name);                          \
        if (G(be)->recording) return refuse(be, name, "waits for the device"); \
        NST_TRY(side_join(be));                                               \
        NST_TRY(settle(G(be)));                                               \
        return CALL;                                                          \
    } while (0)

/* ---- recorded ops -------------------------------------------------------------------------------- */
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
    rec *R = gs->side_open ? add_to(&gs->side, R_GRAM_ACC) : add(gs, R_GRAM_ACC); /* the side's: held back until the join (below) */
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

/* one recorded op, run */
static nst_status replay(nst_backend *be, const rec *r)
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

/* ---- the side stream ------------------------------------------------------------------------------ */
/* A GPU runs the side's Gram sums at any time between their fork (side(1): after the work queued
 * before) and the join; the stand-in runs them at the latest, at the join, so that a main-stream op
 * that reads the sums before the join (they are not there yet), or writes the features they read
 * (they read the new values), changes the render, and a missing join shows. The ops held back are
 * recorded at the join while an iteration is recorded, as a capture follows the join's event. */
static nst_status s_side(nst_backend *be, int on)
{
    struct nst_graph_standin *g = G(be);
    if (on && g->side_open) return nst_fail(NST_ERUNTIME, "graph stand-in: the side stream opened twice");
    g->side_open = on;
    return NST_OK;
}

static nst_status side_join(nst_backend *be)
{
    struct nst_graph_standin *g = G(be);
    nst_status s = g->side_status;
    rec_list l = g->side; /* taken off first: an op run here that joined again would find it empty */
    g->side = (rec_list){0};
    g->side_status = NST_OK;
    for (size_t i = 0; s == NST_OK && i < l.n; i++) {
        if (g->recording) {
            rec *r = add(g, l.v[i].op);
            if (!r) s = NST_ENOMEM;
            else *r = l.v[i];
        } else {
            s = replay(be, &l.v[i]);
        }
    }
    l.n = 0;
    if (!g->side.v) g->side = l; /* the list's memory kept for the next */
    else nst_free(l.v);
    return s;
}

static nst_status s_join(nst_backend *be)
{
    if (G(be)->side_open) return off_side("join");
    return side_join(be);
}

/* a free joins first, as the CUDA backend's: the side may still read the buffer */
static void s_free(nst_backend *be, void *ptr)
{
    struct nst_graph_standin *g = G(be);
    if (ptr && g->side.n) {
        nst_status s = side_join(be);
        if (g->side_status == NST_OK) g->side_status = s;
    }
    REAL(be)->free(be, ptr);
}

/* ---- conv1_1 from the image ------------------------------------------------------------------------ */
/* As the CUDA backend has it with NSTBATCH_CUDA_CONV1=own (kernels/backend.h: conv_forward_image):
 * here the CPU's two ops in turn, through a network input of the stand-in's own, so that the
 * render's path without an input pass (net.c) runs on the CPU, recorded and replayed too. Its
 * buffer grows as a GPU's scratch does: never while recording, and the segments held are dropped. */
static int s_conv_reads_image(nst_backend *be, const nst_conv *c)
{
    for (int i = 0; c && i < 8; i++)
        if (G(be)->reads_image[i] == c) return 1;
    return 0;
}

/* the layers conv1_1's own kernels take (kernels/cuda/conv_first_cuda.cu: cuda_conv_first_fits) */
static nst_status s_conv_create(nst_backend *be, int cin, int cout, const float *w, const float *b, nst_conv **out)
{
    NST_TRY(REAL(be)->conv_create(be, cin, cout, w, b, out));
    for (int i = 0; cin == 3 && cout % 8 == 0 && cout > 0 && cout <= 256 && i < 8; i++)
        if (!G(be)->reads_image[i]) {
            G(be)->reads_image[i] = *out;
            break;
        }
    return NST_OK;
}

static void s_conv_destroy(nst_backend *be, nst_conv *c)
{
    for (int i = 0; i < 8; i++)
        if (G(be)->reads_image[i] == c) G(be)->reads_image[i] = NULL;
    REAL(be)->conv_destroy(be, c);
}

static nst_status image_input(nst_backend *be, const nst_tensor *img, nst_tensor *x, const char *op)
{
    struct nst_graph_standin *g = G(be);
    const size_t bytes = (size_t)img->h * img->w * 3 * nst_dtype_size(be->in_dtype);
    if (bytes > g->image_cap) {
        if (g->recording) return refuse(be, op, "grows a scratch buffer");
        g->nseg = 0; /* the segments held address the old buffer */
        NST_TRY(side_join(be));
        REAL(be)->free(be, g->image_in);
        g->image_in = NULL, g->image_cap = 0;
        NST_TRY(REAL(be)->alloc(be, bytes, &g->image_in));
        g->image_cap = bytes;
    }
    *x = (nst_tensor){img->h, img->w, 3, be->in_dtype, g->image_in};
    return NST_OK;
}

static nst_status s_conv_forward_image(nst_backend *be, nst_conv *c, const nst_preproc *p, const nst_tensor *img, nst_tensor *y, int relu)
{
    nst_tensor x;
    if (!s_conv_reads_image(be, c)) return nst_fail(NST_ERUNTIME, "conv_forward_image: the layer does not read the image");
    NST_TRY(image_input(be, img, &x, "conv_forward_image"));
    NST_TRY(s_preprocess(be, p, img, &x));
    return s_conv_forward(be, c, &x, y, relu);
}

static nst_status s_conv_backward_image(nst_backend *be, nst_conv *c, const nst_preproc *p, const nst_tensor *dy, nst_tensor *dimg)
{
    nst_tensor dx;
    if (!s_conv_reads_image(be, c)) return nst_fail(NST_ERUNTIME, "conv_backward_image: the layer does not read the image");
    NST_TRY(image_input(be, dimg, &dx, "conv_backward_image"));
    NST_TRY(s_conv_backward_data(be, c, dy, &dx));
    return s_preprocess_backward(be, p, &dx, dimg);
}

/* ---- waits: they fail a recording ------------------------------------------------------------------ */
static nst_status s_upload(nst_backend *be, void *dst, const float *src, size_t n, nst_dtype dt) { WAITS(be, "upload", REAL(be)->upload(be, dst, src, n, dt)); }
static nst_status s_download(nst_backend *be, float *dst, const void *src, size_t n, nst_dtype dt) { WAITS(be, "download", REAL(be)->download(be, dst, src, n, dt)); }
static nst_status s_sync(nst_backend *be) { WAITS(be, "synchronize", REAL(be)->synchronize(be)); }
static nst_status s_download_rect(nst_backend *be, const nst_tensor *src, nst_rect r, float *host) { WAITS(be, "download_rect", REAL(be)->download_rect(be, src, r, host)); }
static nst_status s_upload_rect(nst_backend *be, const float *host, nst_tensor *dst, nst_rect r) { WAITS(be, "upload_rect", REAL(be)->upload_rect(be, host, dst, r)); }
static nst_status s_dot(nst_backend *be, const float *a, const float *b, size_t n, double *out) { WAITS(be, "dot", REAL(be)->dot(be, a, b, n, out)); }
static nst_status s_read(nst_backend *be, void *host, const void *src, size_t bytes) { WAITS(be, "read", REAL(be)->read(be, host, src, bytes)); }
static nst_status s_write(nst_backend *be, void *dst, const void *host, size_t bytes) { WAITS(be, "write", REAL(be)->write(be, dst, host, bytes)); }
static nst_status s_clocks_read(nst_backend *be, int n, double *sec) { WAITS(be, "clocks_read", REAL(be)->clocks_read(be, n, sec)); }

/* the queued transfers move host memory, which the render never records (they are host steps
 * between ranks: nst/optimise/host_step.h): one inside a recording fails it */
static nst_status s_download_rect_queued(nst_backend *be, const nst_tensor *src, nst_rect r, float *host)
{
    if (G(be)->recording) return refuse(be, "download_rect_queued", "moves host memory");
    NST_TRY(side_join(be)); /* as the CUDA backend's transfers */
    float *copy;
    NST_TRY(pend(G(be), host, (size_t)nst_rect_area(r) * src->c, 0, &copy));
    return REAL(be)->download_rect_queued(be, src, r, copy);
}
static nst_status s_upload_rect_queued(nst_backend *be, const float *host, nst_tensor *dst, nst_rect r)
{
    if (G(be)->recording) return refuse(be, "upload_rect_queued", "moves host memory");
    NST_TRY(side_join(be)); /* as the CUDA backend's transfers */
    float *copy;
    const size_t n = (size_t)nst_rect_area(r) * dst->c;
    NST_TRY(pend(G(be), (float *)host, n, 1, &copy));
    memcpy(copy, host, n * sizeof(float));
    return REAL(be)->upload_rect_queued(be, host, dst, r);
}

/* ---- the graph --------------------------------------------------------------------------------- */
static nst_status s_graph_begin(nst_backend *be, int seg)
{
    struct nst_graph_standin *g = G(be);
    if (g->recording) return nst_fail(NST_ERUNTIME, "graph stand-in: a recording is under way already");
    if (seg < 0 || seg >= NST_GRAPH_SEGMENTS || (seg > 0 && seg != g->nseg)) /* in order, from 0, as on a GPU */
        return nst_fail(NST_ERUNTIME, "graph stand-in: segment %d recorded after %d held", seg, g->nseg);
    if (seg == 0) g->nseg = 0;
    NST_TRY(side_join(be)); /* a capture starts joined, as the CUDA backend's */
    g->recording = 1, g->failed = 0, g->rec.n = 0, g->at = seg;
    return NST_OK;
}

static nst_status s_graph_end(nst_backend *be)
{
    struct nst_graph_standin *g = G(be);
    if (side_join(be) != NST_OK) g->failed = 1; /* a capture ends joined, as the CUDA backend's */
    g->recording = 0;
    if (g->failed) return NST_ERUNTIME; /* the failed op's message stands */
    if (g->rec.n == 0) return NST_OK;   /* nothing recorded: no segment, as on a GPU */
    rec_list t = g->seg[g->at];
    g->seg[g->at] = g->rec, g->rec = t; /* the recording becomes the segment */
    g->nseg = g->at + 1;
    return NST_OK;
}

static nst_status s_graph_launch(nst_backend *be, int seg, int *launched)
{
    struct nst_graph_standin *g = G(be);
    *launched = seg >= 0 && seg < g->nseg;
    for (size_t i = 0; *launched && i < g->seg[seg].n; i++) NST_TRY(replay(be, &g->seg[seg].v[i]));
    return NST_OK;
}

static int s_graph_segments(nst_backend *be) { return G(be)->nseg; }

nst_status nst_graph_standin_attach(nst_backend *be)
{
    if (strcmp(be->name, "cpu") != 0) return nst_fail(NST_ERUNTIME, "the graph stand-in wraps the CPU backend only");
    struct nst_graph_standin *g = nst_calloc(sizeof *g, "the graph stand-in");
    if (!g) return NST_ENOMEM;
    g->real = be->ops;
    g->ops = *be->ops;
    nst_backend_ops *o = &g->ops;
    o->zero = s_zero, o->copy = s_copy, o->copy_rect = s_copy_rect, o->conv_forward = s_conv_forward;
    o->conv_backward_data = s_conv_backward_data, o->relu_backward = s_relu_backward, o->pool_forward = s_pool_forward;
    o->pool_backward = s_pool_backward, o->preprocess = s_preprocess, o->preprocess_backward = s_preprocess_backward;
    o->gram_accumulate = s_gram_accumulate, o->gram_diff = s_gram_diff, o->gram_backward = s_gram_backward, o->mse = s_mse;
    o->tv = s_tv, o->adam = s_adam, o->adam_tick = s_adam_tick, o->sumsq = s_sumsq, o->axpby = s_axpby, o->box_hold = s_box_hold;
    o->box_step = s_box_step, o->stamp = s_stamp;
    o->upload = s_upload, o->download = s_download, o->synchronize = s_sync, o->download_rect = s_download_rect;
    o->upload_rect = s_upload_rect, o->dot = s_dot, o->read = s_read, o->write = s_write, o->clocks_read = s_clocks_read;
    o->gram_fixed = NULL, o->dot_exact = NULL; /* as the CUDA backend: no exact paths that read back */
    o->graph_begin = s_graph_begin, o->graph_end = s_graph_end, o->graph_launch = s_graph_launch;
    o->graph_segments = s_graph_segments;
    o->download_rect_queued = s_download_rect_queued, o->upload_rect_queued = s_upload_rect_queued;
    const char *overlap = getenv("NSTBATCH_CUDA_OVERLAP"); /* the side stream, as the CUDA backend has it */
    if (overlap && strcmp(overlap, "1") == 0) o->side = s_side, o->join = s_join, o->free = s_free;
    const char *conv1 = getenv("NSTBATCH_CUDA_CONV1"); /* conv1_1 from the image, as the CUDA backend's own kernels */
    if (conv1 && strcmp(conv1, "own") == 0)
        o->conv_reads_image = s_conv_reads_image, o->conv_forward_image = s_conv_forward_image, o->conv_backward_image = s_conv_backward_image,
        o->conv_create = s_conv_create, o->conv_destroy = s_conv_destroy;
    be->graph_standin = g;
    be->ops = &g->ops;
    be->tiles_exact = 0; /* fp64 Gram sums, as a GPU's: tiles agree within tolerances */
    return NST_OK;
}

void nst_graph_standin_detach(nst_backend *be)
{
    struct nst_graph_standin *g = be->graph_standin;
    if (!g) return;
    be->ops = g->real;
    be->graph_standin = NULL;
    be->ops->free(be, g->image_in);
    for (size_t i = 0; i < g->npend; i++) nst_free(g->pend[i].copy); /* (their host buffers may be gone) */
    nst_free(g->pend);
    nst_free(g->rec.v);
    nst_free(g->side.v);
    for (int k = 0; k < NST_GRAPH_SEGMENTS; k++) nst_free(g->seg[k].v);
    nst_free(g);
}

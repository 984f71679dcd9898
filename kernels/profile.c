/* kernels/profile.c: where an iteration's time goes, op by op (NSTBATCH_PROFILE=1).
 *
 * The backend's op table is replaced by one whose entries time the real op (after a synchronize,
 * so a GPU's queued work is billed to the op that queued it) and add the seconds to a row named
 * by the op and its channels ("conv_forward 64->128", "pool_backward 256"). The element passes
 * (ReLU, pooling, preprocessing, losses, copies, Adam) also add the bytes they must move at least
 * (each input read once, each output written once), so their rows give a bandwidth to set against
 * the memory's (GB/s; "-" for the convolutions and Gram products, bound by arithmetic). The rows
 * are printed when the backend closes. It costs a clock read per op (and a sync on GPUs): for
 * benchmarks and profiles, not for production runs. */
#include "profile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/mem.h"
#include "../util/timer.h"

#define ROWS 96

typedef struct {
    char name[40];
    long long calls;
    double seconds, bytes;
} prof_row;

struct nst_profile {
    const nst_backend_ops *real;
    nst_backend_ops ops;
    prof_row row[ROWS];
    int nrows;
    double opened;
};

static prof_row *row_of(nst_profile *p, const char *op, int a, int b)
{
    char name[40];
    if (b > 0) snprintf(name, sizeof name, "%s %d->%d", op, a, b);
    else if (a > 0) snprintf(name, sizeof name, "%s %d", op, a);
    else snprintf(name, sizeof name, "%s", op);
    for (int i = 0; i < p->nrows; i++)
        if (strcmp(p->row[i].name, name) == 0) return &p->row[i];
    prof_row *r = &p->row[p->nrows < ROWS ? p->nrows++ : ROWS - 1];
    if (!r->name[0]) snprintf(r->name, sizeof r->name, "%s", name);
    return r;
}

/* time `call` (a real op), moving `bytes` at least (0: an op bound by arithmetic), and bill it to (op, a, b) */
#define TIMED_B(be, op, a, b, nbytes, call)                                                       \
    do {                                                                                          \
        nst_profile *p_ = (be)->profile;                                                          \
        double t0_ = nst_now();                                                                   \
        nst_status s_ = (call);                                                                   \
        if (s_ == NST_OK) s_ = p_->real->synchronize(be);                                        \
        prof_row *r_ = row_of(p_, op, a, b);                                                      \
        r_->calls++;                                                                              \
        r_->seconds += nst_now() - t0_;                                                           \
        r_->bytes += (double)(nbytes);                                                            \
        return s_;                                                                                \
    } while (0)
#define TIMED(be, op, a, b, call) TIMED_B(be, op, a, b, 0, call)

/* a tensor's bytes, and those of a region of it */
static double tb(const nst_tensor *t) { return t ? (double)nst_tensor_elems(t) * nst_dtype_size(t->dt) : 0; }
static double rb(const nst_tensor *t, nst_rect r) { return (double)nst_rect_area(r) * t->c * nst_dtype_size(t->dt); }
#define REAL(be) (((nst_profile *)(be)->profile)->real)

static nst_status p_conv_forward(nst_backend *be, nst_conv *c, const nst_tensor *x, nst_tensor *y, int relu)
{
    TIMED(be, "conv_forward", x->c, y->c, REAL(be)->conv_forward(be, c, x, y, relu));
}
static nst_status p_conv_backward_data(nst_backend *be, nst_conv *c, const nst_tensor *dy, nst_tensor *dx)
{
    TIMED(be, "conv_backward_data", dx->c, dy->c, REAL(be)->conv_backward_data(be, c, dy, dx));
}
static nst_status p_relu_backward(nst_backend *be, const nst_tensor *y, nst_tensor *dy)
{
    TIMED_B(be, "relu_backward", y->c, 0, 3 * tb(y), REAL(be)->relu_backward(be, y, dy)); /* y, dy read; dy written */
}
static nst_status p_pool_forward(nst_backend *be, nst_pool_kind k, const nst_tensor *x, nst_tensor *y)
{
    TIMED_B(be, "pool_forward", x->c, 0, tb(x) + tb(y), REAL(be)->pool_forward(be, k, x, y));
}
static nst_status p_pool_backward(nst_backend *be, nst_pool_kind k, const nst_tensor *x, const nst_tensor *y, const nst_tensor *dy,
                                  nst_tensor *dx, int relu)
{
    TIMED_B(be, relu ? "pool_backward+relu" : "pool_backward", x->c, 0, tb(x) + tb(dy) + tb(dx),
            REAL(be)->pool_backward(be, k, x, y, dy, dx, relu));
}
static nst_status p_preprocess(nst_backend *be, const nst_preproc *pp, const nst_tensor *img, nst_tensor *x)
{
    TIMED_B(be, "preprocess", 0, 0, tb(img) + tb(x), REAL(be)->preprocess(be, pp, img, x));
}
static nst_status p_preprocess_backward(nst_backend *be, const nst_preproc *pp, const nst_tensor *dx, nst_tensor *dimg)
{
    TIMED_B(be, "preprocess_backward", 0, 0, tb(dx) + tb(dimg), REAL(be)->preprocess_backward(be, pp, dx, dimg));
}
static nst_status p_conv_forward_image(nst_backend *be, nst_conv *c, const nst_preproc *pp, const nst_tensor *img, nst_tensor *y, int relu)
{
    TIMED(be, "conv_forward_image", 3, y->c, REAL(be)->conv_forward_image(be, c, pp, img, y, relu));
}
static nst_status p_conv_backward_image(nst_backend *be, nst_conv *c, const nst_preproc *pp, const nst_tensor *dy, nst_tensor *dimg)
{
    TIMED(be, "conv_backward_image", 3, dy->c, REAL(be)->conv_backward_image(be, c, pp, dy, dimg));
}
static nst_status p_gram_accumulate(nst_backend *be, const nst_tensor *f, nst_rect own, const nst_tensor *m, double *g)
{
    TIMED(be, "gram_accumulate", f->c, 0, REAL(be)->gram_accumulate(be, f, own, m, g));
}
static nst_status p_gram_fixed(nst_backend *be, const nst_tensor *f, nst_rect own, const nst_tensor *m, int e, int64_t *acc, int *emax)
{
    TIMED(be, "gram_fixed", f->c, 0, REAL(be)->gram_fixed(be, f, own, m, e, acc, emax));
}
static nst_status p_gram_diff(nst_backend *be, const double *g, const double *gp, double s, const float *a, int c, float *d, double *ss)
{
    TIMED(be, "gram_diff", c, 0, REAL(be)->gram_diff(be, g, gp, s, a, c, d, ss));
}
static nst_status p_gram_backward(nst_backend *be, const nst_tensor *f, nst_rect seed, const nst_tensor *m, const float *d, float scale,
                                  nst_tensor *df)
{
    TIMED(be, "gram_backward", f->c, 0, REAL(be)->gram_backward(be, f, seed, m, d, scale, df));
}
static nst_status p_mse(nst_backend *be, const nst_tensor *f, const nst_tensor *pt, nst_rect own, nst_rect seed, const nst_tensor *m,
                        float scale, nst_xsum *ss, nst_tensor *df)
{
    /* f and p over own; f, p and df read and df written over seed */
    TIMED_B(be, "mse", f->c, 0, 2 * rb(f, own) + (df ? 4 * rb(f, seed) : 0), REAL(be)->mse(be, f, pt, own, seed, m, scale, ss, df));
}
static nst_status p_tv(nst_backend *be, const nst_tensor *img, nst_rect own, nst_rect seed, float scale, nst_xsum *sum, nst_tensor *dimg)
{
    TIMED_B(be, "tv", 0, 0, rb(img, own) + (dimg ? 3 * rb(img, seed) : 0), REAL(be)->tv(be, img, own, seed, scale, sum, dimg));
}
static nst_status p_adam(nst_backend *be, float *x, const float *g, float *m, float *v, size_t n, const nst_adam_params *ap,
                         const nst_adam_step *as)
{
    TIMED_B(be, "adam", 0, 0, 7.0 * 4 * (double)n, REAL(be)->adam(be, x, g, m, v, n, ap, as)); /* x, g, m, v read; x, m, v written */
}
static nst_status p_sumsq(nst_backend *be, const nst_tensor *t, nst_rect own, nst_xsum *out)
{
    TIMED_B(be, "sumsq", t->c, 0, rb(t, own), REAL(be)->sumsq(be, t, own, out));
}
static nst_status p_zero(nst_backend *be, void *ptr, size_t bytes) { TIMED_B(be, "zero", 0, 0, bytes, REAL(be)->zero(be, ptr, bytes)); }
static nst_status p_copy_rect(nst_backend *be, const nst_tensor *src, nst_rect r, nst_tensor *dst, int dx, int dy)
{
    TIMED_B(be, "copy_rect", src->c, 0, 2 * rb(src, r), REAL(be)->copy_rect(be, src, r, dst, dx, dy));
}

nst_status nst_profile_attach(nst_backend *be)
{
    nst_profile *p = nst_calloc(sizeof *p, "the op profile");
    if (!p) return NST_ENOMEM;
    p->real = be->ops;
    p->ops = *be->ops;
    p->ops.conv_forward = p_conv_forward;
    p->ops.conv_backward_data = p_conv_backward_data;
    p->ops.relu_backward = p_relu_backward;
    p->ops.pool_forward = p_pool_forward;
    p->ops.pool_backward = p_pool_backward;
    p->ops.preprocess = p_preprocess;
    p->ops.preprocess_backward = p_preprocess_backward;
    if (p->ops.conv_forward_image) p->ops.conv_forward_image = p_conv_forward_image;
    if (p->ops.conv_backward_image) p->ops.conv_backward_image = p_conv_backward_image;
    p->ops.gram_accumulate = p_gram_accumulate;
    if (p->ops.gram_fixed) p->ops.gram_fixed = p_gram_fixed;
    p->ops.gram_diff = p_gram_diff;
    p->ops.gram_backward = p_gram_backward;
    p->ops.mse = p_mse;
    p->ops.tv = p_tv;
    p->ops.adam = p_adam;
    p->ops.sumsq = p_sumsq;
    p->ops.zero = p_zero;
    p->ops.copy_rect = p_copy_rect;
    p->ops.side = NULL, p->ops.join = NULL; /* op by op, each timed where it ran: no Gram sums beside the layers */
    p->opened = nst_now();
    be->profile = p;
    be->ops = &p->ops;
    return NST_OK;
}

static int by_seconds(const void *a, const void *b)
{
    double x = ((const prof_row *)a)->seconds, y = ((const prof_row *)b)->seconds;
    return x < y ? 1 : x > y ? -1 : 0;
}

void nst_profile_detach(nst_backend *be, FILE *f)
{
    nst_profile *p = be->profile;
    if (!p) return;
    double total = 0, life = nst_now() - p->opened;
    for (int i = 0; i < p->nrows; i++) total += p->row[i].seconds;
    qsort(p->row, (size_t)p->nrows, sizeof *p->row, by_seconds);
    if (f) {
        fprintf(f, "profile: %s; %.2f s in ops of %.2f s since the backend opened\n", be->description, total, life);
        fprintf(f, "  %-28s %9s %10s %7s %9s\n", "op", "calls", "seconds", "share", "GB/s");
        for (int i = 0; i < p->nrows; i++) {
            const prof_row *r = &p->row[i];
            char bw[32] = "-";
            if (r->bytes > 0 && r->seconds > 0) snprintf(bw, sizeof bw, "%.1f", r->bytes / r->seconds / 1e9);
            fprintf(f, "  %-28s %9lld %10.4f %6.1f%% %9s\n", r->name, r->calls, r->seconds, total > 0 ? 100 * r->seconds / total : 0, bw);
        }
    }
    be->ops = p->real;
    be->profile = NULL;
    nst_free(p);
}

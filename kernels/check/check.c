/* kernels/check/check.c: the op harness's infrastructure: tensors on both backends, errors,
 * the report's rows, and the run over every op group (see check.h). */
#include "check_impl.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "../../util/mem.h"
#include "../../util/timer.h"

const int ck_shapes[5][2] = {{1, 1}, {3, 5}, {17, 13}, {32, 32}, {48, 33}};

int ck_regions(int h, int w, nst_rect *r)
{
    int n = 0;
    r[n++] = nst_rect_make(0, 0, w, h);
    if (h > 2) r[n++] = nst_rect_make(0, 1, w, h - 2);
    if (h > 4 && w > 4) r[n++] = nst_rect_make(1, 2, w - 3, h - 4);
    r[n++] = nst_rect_make(w - 1, h - 1, 1, 1);
    r[n++] = nst_rect_make(0, 0, 0, 0);
    return n;
}

float ck_rand(nst_check *c, float lo, float hi)
{
    c->rng = c->rng * 1664525u + 1013904223u;
    return lo + (hi - lo) * (float)(c->rng >> 8) / 16777216.f;
}

static nst_check_row *row_of(nst_check *c, const char *op, nst_tol_class k);

/* A failure of the harness's own set-up on the device (a tensor, a rounding): a failed case of
 * its own row, so cases that could not run are never silently dropped. */
static void fail_msg(nst_check *c, const char *op, const char *msg)
{
    nst_check_row *r = row_of(c, op, NST_TOL_EXACT);
    r->cases++, r->failed++;
    r->err = INFINITY;
    snprintf(r->worst, sizeof r->worst, "%.95s", msg);
    if (c->on_fail) c->on_fail(c->user, r, msg, INFINITY, 0);
}

int ck_pair_make(nst_check *c, ck_pair *p, int h, int w, int ch, int act, float lo, float hi)
{
    return ck_pair_make_dt(c, p, h, w, ch, act ? c->dev->act_dtype : NST_F32, lo, hi);
}

/* The pair's tensors for the host values p->h (h x w x ch): the device's in dt (and p->h then
 * holds what the device stores, rounded), the reference's in fp32. */
static int pair_tensors(nst_check *c, ck_pair *p, int h, int w, int ch, nst_dtype dt)
{
    size_t n = (size_t)h * w * ch;
    nst_status s = nst_tensor_alloc(c->dev, h, w, ch, dt, &p->d);
    if (s == NST_OK) s = nst_tensor_alloc(c->ref, h, w, ch, NST_F32, &p->r);
    if (s == NST_OK && n) s = c->dev->ops->upload(c->dev, p->d.data, p->h, n, dt);
    if (s == NST_OK && n && dt != NST_F32) s = c->dev->ops->download(c->dev, p->h, p->d.data, n, dt);
    if (s == NST_OK && n) s = c->ref->ops->upload(c->ref, p->r.data, p->h, n, NST_F32);
    if (s != NST_OK) {
        fail_msg(c, "tensors", nst_fail_message());
        ck_pair_free(c, p);
        return 0;
    }
    return 1;
}

int ck_pair_make_dt(nst_check *c, ck_pair *p, int h, int w, int ch, nst_dtype dt, float lo, float hi)
{
    memset(p, 0, sizeof *p);
    size_t n = (size_t)h * w * ch;
    p->h = nst_alloc_array(n ? n : 1, sizeof(float), "check values");
    if (!p->h) return 0;
    for (size_t i = 0; i < n; i++) p->h[i] = ck_rand(c, lo, hi);
    return pair_tensors(c, p, h, w, ch, dt);
}

int ck_mask_make(nst_check *c, ck_pair *p, int h, int w, int ones)
{
    memset(p, 0, sizeof *p);
    size_t n = (size_t)h * w;
    p->h = nst_alloc_array(n ? n : 1, sizeof(float), "check mask");
    if (!p->h) return 0;
    for (size_t k = 0; k < n; k++) /* a fixed pattern: 0 and 1 at every 7th pixel, else 16 random bits */
        p->h[k] = ones || k % 7 == 1 ? 1.f : k % 7 == 0 ? 0.f : (float)(((unsigned)k * 2654435761u) >> 16) * 0x1p-16f;
    return pair_tensors(c, p, h, w, 1, NST_F32);
}

void ck_pair_free(nst_check *c, ck_pair *p)
{
    nst_tensor_free(c->dev, &p->d);
    nst_tensor_free(c->ref, &p->r);
    nst_free(p->h);
    memset(p, 0, sizeof *p);
}

double ck_rel_err(const float *ref, const float *got, size_t n)
{
    double m = 0, d = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(ref[i]) || !isfinite(got[i])) return INFINITY;
        if (fabs(ref[i]) > m) m = fabs(ref[i]);
        double e = fabs((double)got[i] - ref[i]);
        if (e > d) d = e;
    }
    return d / (m > 1e-30 ? m : 1e-30);
}

double ck_same_err(const double *a, const double *b, size_t n)
{
    double m = 0, e = 0;
    for (size_t i = 0; i < n; i++) {
        if (fabs(a[i]) > m) m = fabs(a[i]);
        if (a[i] != b[i]) {
            double d = isfinite(a[i]) && isfinite(b[i]) ? fabs(a[i] - b[i]) : INFINITY;
            if (!(d <= e)) e = d;
        }
    }
    return m > 0 ? e / m : e;
}

double ck_same_err_f(const float *a, const float *b, size_t n)
{
    double m = 0, e = 0;
    for (size_t i = 0; i < n; i++) {
        if (fabsf(a[i]) > m) m = fabsf(a[i]);
        if (a[i] != b[i]) {
            double d = isfinite(a[i]) && isfinite(b[i]) ? fabs((double)a[i] - b[i]) : INFINITY;
            if (!(d <= e)) e = d;
        }
    }
    return m > 0 ? e / m : e;
}

double ck_pair_err(nst_check *c, const ck_pair *p)
{
    size_t n = nst_tensor_elems(&p->r);
    if (!n) return 0;
    float *a = nst_alloc_array(n, sizeof(float), "check"), *b = nst_alloc_array(n, sizeof(float), "check");
    double e = INFINITY;
    if (a && b && c->ref->ops->download(c->ref, a, p->r.data, n, NST_F32) == NST_OK &&
        c->dev->ops->download(c->dev, b, p->d.data, n, p->d.dt) == NST_OK)
        e = ck_rel_err(a, b, n);
    nst_free(a), nst_free(b);
    return e;
}

int ck_round_host(nst_check *c, float *v, size_t n)
{
    if (c->dev->act_dtype == NST_F32 || !n) return 1;
    void *buf = NULL;
    nst_status s = c->dev->ops->alloc(c->dev, n * nst_dtype_size(c->dev->act_dtype), &buf);
    if (s == NST_OK) s = c->dev->ops->upload(c->dev, buf, v, n, c->dev->act_dtype);
    if (s == NST_OK) s = c->dev->ops->download(c->dev, v, buf, n, c->dev->act_dtype);
    if (buf) c->dev->ops->free(c->dev, buf);
    if (s != NST_OK) fail_msg(c, "rounding", nst_fail_message());
    return s == NST_OK;
}

static nst_check_row *row_of(nst_check *c, const char *op, nst_tol_class k)
{
    for (int i = 0; i < c->nrows; i++)
        if (strcmp(c->row[i].op, op) == 0) return &c->row[i];
    if (c->nrows == NST_CHECK_ROWS) return &c->row[NST_CHECK_ROWS - 1];
    nst_check_row *r = &c->row[c->nrows++];
    memset(r, 0, sizeof *r);
    snprintf(r->op, sizeof r->op, "%s", op);
    r->tol_class = k;
    return r;
}

void ck_record(nst_check *c, const char *op, nst_tol_class k, double terms, double err, const char *fmt, ...)
{
    nst_check_row *r = row_of(c, op, k);
    double tol = nst_tolerance(k, c->dev->precision, terms);
    char what[96];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    int bad = !(err <= tol); /* NaN fails too */
    r->cases++;
    double q = nst_check_ratio(err, tol), worst = r->cases > 1 ? nst_check_ratio(r->err, r->tol) : -1;
    if (r->cases == 1 || !(q <= worst)) {
        r->err = err;
        r->tol = tol;
        snprintf(r->worst, sizeof r->worst, "%s", what);
    }
    if (bad) {
        r->failed++;
        if (c->on_fail) c->on_fail(c->user, r, what, err, tol);
    }
}

int ck_ran(nst_check *c, const char *op, nst_status ref, nst_status dev)
{
    if (ref == NST_OK && dev == NST_OK) return 1;
    nst_check_row *r = row_of(c, op, NST_TOL_ELEMENT);
    r->cases++, r->failed++;
    r->err = INFINITY;
    snprintf(r->worst, sizeof r->worst, "%s: %.60s", ref != NST_OK ? "reference" : "backend", nst_fail_message());
    if (c->on_fail) c->on_fail(c->user, r, r->worst, INFINITY, r->tol);
    return 0;
}

double nst_check_ratio(double err, double tol) { return tol > 0 ? err / tol : err > 0 ? INFINITY : 0; }

int nst_check_failures(const nst_check *c)
{
    int n = 0;
    for (int i = 0; i < c->nrows; i++) n += c->row[i].failed;
    return n;
}

typedef struct {
    nst_xsum x[2];
    double d;
} dev_sums;

static dev_sums *dev_sums_of(nst_check *c)
{
    nst_backend *D = c->dev;
    if (c->dsum) return c->dsum;
    nst_status s = D->ops->alloc(D, sizeof(dev_sums), &c->dsum);
    if (s == NST_OK) s = D->ops->zero(D, c->dsum, sizeof(dev_sums));
    if (s != NST_OK) {
        ck_ran(c, "loss sums on the device", NST_OK, s);
        if (c->dsum) D->ops->free(D, c->dsum);
        c->dsum = NULL;
    }
    return c->dsum;
}

static void dev_sums_free(nst_check *c)
{
    if (c->dsum) c->dev->ops->free(c->dev, c->dsum);
    c->dsum = NULL;
}

nst_xsum *ck_dev_sum(nst_check *c, int i)
{
    dev_sums *d = dev_sums_of(c);
    return d ? &d->x[i] : NULL;
}

double *ck_dev_double(nst_check *c)
{
    dev_sums *d = dev_sums_of(c);
    return d ? &d->d : NULL;
}

double ck_dev_take(nst_check *c, int i)
{
    nst_backend *D = c->dev;
    nst_xsum h;
    nst_xsum *x = ck_dev_sum(c, i);
    if (!x || D->ops->read(D, &h, x, sizeof h) != NST_OK || D->ops->zero(D, x, sizeof h) != NST_OK) return NAN;
    return nst_xsum_value(&h);
}

double ck_dev_double_read(nst_check *c)
{
    double v;
    double *d = ck_dev_double(c);
    return d && c->dev->ops->read(c->dev, &v, d, sizeof v) == NST_OK ? v : NAN;
}

nst_status nst_check_ops(nst_check *c)
{
    static const struct {
        const char *name;
        void (*run)(nst_check *);
    } groups[] = {{"conv", ck_conv},   {"eltwise", ck_eltwise},     {"gram", ck_gram},
                  {"losses", ck_losses}, {"optimiser", ck_optimiser}, {"contracts", ck_contracts}};
    if (!c->rng) c->rng = 12345;
    c->nrows = 0;
    c->skipped[0] = 0;
    for (size_t g = 0; g < sizeof groups / sizeof *groups; g++) {
        if (c->deadline > 0 && nst_now() > c->deadline) { /* named, never silently dropped */
            size_t len = strlen(c->skipped);
            snprintf(c->skipped + len, sizeof c->skipped - len, "%s%s", len ? ", " : "", groups[g].name);
            continue;
        }
        groups[g].run(c);
    }
    dev_sums_free(c);
    return c->dev->ops->synchronize(c->dev);
}

nst_status nst_check_contracts(nst_check *c)
{
    if (!c->rng) c->rng = 12345;
    c->nrows = 0;
    ck_contracts(c);
    dev_sums_free(c);
    return c->dev->ops->synchronize(c->dev);
}

void nst_check_print(const nst_check *c, FILE *f, const char *indent)
{
    fprintf(f, "%s%-26s %-9s %5s %10s %10s %7s  %-7s %s\n", indent, "op", "precision", "cases", "max error", "tolerance", "err/tol",
            "verdict", "worst case");
    for (int i = 0; i < c->nrows; i++) {
        const nst_check_row *r = &c->row[i];
        double q = nst_check_ratio(r->err, r->tol);
        fprintf(f, "%s%-26s %-9s %5d %10.3g %10.3g %7.3f  %-7s %s\n", indent, r->op, nst_precision_name(c->dev->precision), r->cases,
                r->err, r->tol, q, r->failed ? "FAIL" : "ok", r->worst);
    }
}

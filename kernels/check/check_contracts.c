/* kernels/check/check_contracts.c: the tiling's contracts on the backend under test, where they
 * could break: a conv over a window of every width (and height) against the whole tensor's
 * outputs there, forward and backward-data, for each of VGG-19's channel counts; the Gram backward
 * over bands of every row count, and over part rows, against over the whole.
 *
 * Why sweeps. A library may pick its blocking from the size of a call: oneDNN's AVX2
 * backward-data kernel, for one, summed each output in other groups at 40 px and wider, at 15 to
 * 39 and below 15 px, which made windows round differently from the whole image while a single
 * 29 px window of a 32 px tensor agreed. So every width from 1 to past the last such boundary is
 * taken (the quick table, --self-test's, takes one on each side of every boundary we know of).
 *
 * On a tile-exact backend (backend.h) every comparison must give the same bits; on another each
 * is held to the bound implied by both shapes' agreement with the CPU (tolerance.c). */
#include <math.h>
#include <string.h>

#include "../../util/mem.h"
#include "check_impl.h"

/* VGG-19's conv layers (cin -> cout); the backward-data of each computes cout -> cin */
static const int layers[][2] = {{3, 64}, {64, 64}, {64, 128}, {128, 128}, {128, 256}, {256, 256}, {256, 512}, {512, 512}};
static const int quick_layers[] = {0, 1, 4, 7};
#define SWEEP_W 64 /* past oneDNN AVX2's 40 px class boundary */
#define SWEEP_H 3
static const int quick_widths[] = {1, 2, 3, 5, 8, 13, 14, 15, 16, 24, 38, 39, 40, 41, 64};

/* Over n values: *e = max |a - b| where they differ (infinite at a NaN or Inf that differs),
 * *m = max |b| (the comparison is *e / *m, as the harness's other errors are) */
static void differ(const float *a, const float *b, size_t n, double *e, double *m)
{
    for (size_t i = 0; i < n; i++) {
        *m = fmax(*m, fabs(b[i]));
        if (a[i] != b[i]) *e = fmax(*e, isfinite(a[i]) && isfinite(b[i]) ? fabs((double)a[i] - b[i]) : INFINITY);
    }
}

static double ratio(double e, double m) { return m > 0 ? e / m : e; }

/* A conv op (bwd: backward-data) over window r of `in` (all channels), against the whole op's
 * output `whole` (downloaded, h x w x oc) at the window's positions whose 3x3 neighbourhood is
 * the same in both: away from the window's edges, except where they are the tensor's. */
static double window_err(nst_check *c, nst_conv *cd, const nst_tensor *in, nst_rect r, int oc, nst_dtype odt, const float *whole, int bwd,
                         nst_status *st)
{
    nst_backend *D = c->dev;
    nst_tensor a = {0}, b = {0};
    nst_status s = nst_tensor_alloc(D, r.h, r.w, in->c, in->dt, &a);
    if (s == NST_OK) s = nst_tensor_alloc(D, r.h, r.w, oc, odt, &b);
    if (s == NST_OK) s = D->ops->copy_rect(D, in, r, &a, 0, 0);
    if (s == NST_OK) s = bwd ? D->ops->conv_backward_data(D, cd, &a, &b) : D->ops->conv_forward(D, cd, &a, &b, 1);
    int x0 = r.x > 0, x1 = r.x + r.w < in->w ? r.w - 1 : r.w, y0 = r.y > 0, y1 = r.y + r.h < in->h ? r.h - 1 : r.h;
    double e = 0, m = 0;
    size_t n = (size_t)r.w * r.h * oc;
    float *got = nst_alloc_array(n + 1, sizeof(float), "window");
    if (s == NST_OK && !got) s = NST_ENOMEM;
    if (s == NST_OK && n) s = D->ops->download(D, got, b.data, n, odt);
    for (int y = y0; s == NST_OK && y < y1; y++)
        for (int x = x0; x < x1; x++) {
            const float *g = got + ((size_t)y * r.w + x) * oc, *w = whole + ((size_t)(r.y + y) * in->w + r.x + x) * oc;
            differ(g, w, (size_t)oc, &e, &m);
        }
    nst_free(got);
    nst_tensor_free(D, &a), nst_tensor_free(D, &b);
    *st = s;
    return ratio(e, m);
}

/* The whole op's output of in (h x w), downloaded: forward with ReLU, or backward-data. */
static float *whole_out(nst_check *c, nst_conv *cd, const nst_tensor *in, int oc, nst_dtype odt, int bwd, nst_status *st)
{
    nst_backend *D = c->dev;
    nst_tensor o = {0};
    size_t n = (size_t)in->h * in->w * oc;
    float *h = nst_alloc_array(n + 1, sizeof(float), "whole");
    nst_status s = h ? nst_tensor_alloc(D, in->h, in->w, oc, odt, &o) : NST_ENOMEM;
    if (s == NST_OK) s = bwd ? D->ops->conv_backward_data(D, cd, in, &o) : D->ops->conv_forward(D, cd, in, &o, 1);
    if (s == NST_OK) s = D->ops->download(D, h, o.data, n, odt);
    nst_tensor_free(D, &o);
    *st = s;
    if (s != NST_OK) nst_free(h), h = NULL;
    return h;
}

/* One layer, one direction: windows of every width (all rows) of an SWEEP_H x SWEEP_W tensor,
 * and of every height (all columns) of a taller, narrower one; the worst case recorded. */
static void sweep(nst_check *c, nst_conv *cd, int cin, int cout, int bwd)
{
    const int ic = bwd ? cout : cin, oc = bwd ? cin : cout;
    const nst_dtype idt = !bwd && cin == 3 ? c->dev->in_dtype : c->dev->act_dtype, odt = bwd && cin == 3 ? c->dev->in_dtype : c->dev->act_dtype;
    const char *op = bwd ? "conv_backward_data windows" : "conv_forward windows";
    const nst_tol_class k = nst_contract_class(c->dev, NST_TOL_CONV_SHAPES);
    for (int tall = 0; tall < 2; tall++) {
        const int H = tall ? 24 : SWEEP_H, W = tall ? 5 : SWEEP_W, n = tall ? H : c->quick ? (int)(sizeof quick_widths / sizeof *quick_widths) : W;
        ck_pair x;
        if (!ck_pair_make_dt(c, &x, H, W, ic, idt, -1, 1)) return;
        nst_status s;
        float *whole = whole_out(c, cd, &x.d, oc, odt, bwd, &s);
        double worst = 0;
        char what[96] = "";
        for (int i = 0; s == NST_OK && i < n; i++) {
            int len = tall ? i + 1 : c->quick ? quick_widths[i] : i + 1, span = tall ? H : W;
            int at = (len * 37) % (span - len + 1); /* windows at many offsets, the tensor's edges among them */
            nst_rect r = tall ? nst_rect_make(0, at, W, len) : nst_rect_make(at, 0, len, H);
            double e = window_err(c, cd, &x.d, r, oc, odt, whole, bwd, &s);
            if (s == NST_OK && (i == 0 || !(e <= worst))) {
                worst = e;
                snprintf(what, sizeof what, "%d->%d %dx%d window %dx%d+%d+%d", ic, oc, H, W, r.w, r.h, r.x, r.y);
            }
        }
        if (BOTH(c, NST_OK, s)) ck_record(c, op, k, 9.0 * ic, worst, "%s", what);
        nst_free(whole);
        ck_pair_free(c, &x);
    }
}

static void conv_windows(nst_check *c, int cin, int cout)
{
    nst_backend *D = c->dev;
    size_t nw = (size_t)cout * cin * 9;
    float *wt = nst_alloc_array(nw, sizeof(float), "w"), *b = nst_alloc_array((size_t)cout, sizeof(float), "b");
    nst_conv *cd = NULL;
    const char *op = "conv_create";
    float sc = 1.f / sqrtf(9.f * cin);
    for (size_t i = 0; wt && i < nw; i++) wt[i] = ck_rand(c, -sc, sc);
    for (int i = 0; b && i < cout; i++) b[i] = ck_rand(c, -0.1f, 0.1f);
    if (wt && b && BOTH(c, NST_OK, D->ops->conv_create(D, cin, cout, wt, b, &cd))) {
        sweep(c, cd, cin, cout, 0);
        sweep(c, cd, cin, cout, 1);
        D->ops->conv_destroy(D, cd);
    }
    nst_free(wt), nst_free(b);
}

/* The Gram backward over bands of every row count from 1 to h (at several offsets) and over a
 * region of part rows, against the backward over the whole tensor at those rows. */
static void gram_backward_rows(nst_check *c, int h, int w, int ch)
{
    nst_backend *D = c->dev;
    const size_t n = (size_t)h * w * ch, cc = (size_t)ch * ch;
    const char *op = "gram_backward rows";
    ck_pair f, g0;
    if (!ck_pair_make(c, &f, h, w, ch, 1, 0, 2)) return;
    if (!ck_pair_make(c, &g0, h, w, ch, 1, -1, 1)) {
        ck_pair_free(c, &f);
        return;
    }
    float *hd = nst_alloc_array(cc, sizeof(float), "d"), *whole = nst_alloc_array(n, sizeof(float), "g"), *part = nst_alloc_array(n, sizeof(float), "g"),
          *dd = NULL;
    nst_tensor df = {0};
    nst_status s = hd && whole && part ? D->ops->alloc(D, cc * sizeof(float), (void **)&dd) : NST_ENOMEM;
    for (size_t i = 0; hd && i < cc; i++) hd[i] = ck_rand(c, -1, 1);
    for (int i = 0; hd && i < ch; i++)
        for (int j = 0; j < i; j++) hd[(size_t)i * ch + j] = hd[(size_t)j * ch + i];
    if (s == NST_OK) s = D->ops->write(D, dd, hd, cc * sizeof(float));
    if (s == NST_OK) s = nst_tensor_alloc(D, h, w, ch, f.d.dt, &df);
    /* the whole tensor's backward, from g0's values */
    if (s == NST_OK) s = D->ops->copy(D, df.data, g0.d.data, n * nst_dtype_size(df.dt));
    if (s == NST_OK) s = D->ops->gram_backward(D, &f.d, nst_tensor_rect(&f.d), NULL, dd, 0.25f, &df);
    if (s == NST_OK) s = D->ops->download(D, whole, df.data, n, df.dt);
    double worst = 0;
    char what[96] = "";
    for (int rows = 1; s == NST_OK && rows <= h + 1; rows++) {
        /* rows <= h: a band of whole rows; rows = h + 1: part rows (every row, columns 1 .. w-2) */
        nst_rect r = rows <= h ? nst_rect_make(0, (rows * 13) % (h - rows + 1), w, rows) : nst_rect_make(1, 0, w - 2, h);
        s = D->ops->copy(D, df.data, g0.d.data, n * nst_dtype_size(df.dt));
        if (s == NST_OK) s = D->ops->gram_backward(D, &f.d, r, NULL, dd, 0.25f, &df);
        if (s == NST_OK) s = D->ops->download(D, part, df.data, n, df.dt);
        double e = 0, m = 0;
        for (int y = r.y; s == NST_OK && y < r.y + r.h; y++)
            differ(part + ((size_t)y * w + r.x) * ch, whole + ((size_t)y * w + r.x) * ch, (size_t)r.w * ch, &e, &m);
        e = ratio(e, m);
        if (s == NST_OK && (rows == 1 || !(e <= worst))) {
            worst = e;
            snprintf(what, sizeof what, "c %d %dx%d region %dx%d+%d+%d", ch, h, w, r.w, r.h, r.x, r.y);
        }
    }
    if (BOTH(c, NST_OK, s)) ck_record(c, op, nst_contract_class(D, NST_TOL_GRAM_BACKWARD_SHAPES), ch, worst, "%s", what);
    if (dd) D->ops->free(D, dd);
    nst_tensor_free(D, &df);
    nst_free(hd), nst_free(whole), nst_free(part);
    ck_pair_free(c, &f), ck_pair_free(c, &g0);
}

void ck_contracts(nst_check *c)
{
    const int nl = c->quick ? (int)(sizeof quick_layers / sizeof *quick_layers) : (int)(sizeof layers / sizeof *layers);
    for (int i = 0; i < nl; i++) {
        const int *l = layers[c->quick ? quick_layers[i] : i];
        conv_windows(c, l[0], l[1]);
    }
    gram_backward_rows(c, c->quick ? 20 : 70, 11, 64);
    if (!c->quick) gram_backward_rows(c, 12, 9, 512);
}

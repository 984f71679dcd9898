/* tests/test_ops.c: every op of the CPU backend against a naive double-precision version written
 * here, and a finite-difference check of every op that has a gradient.
 *
 * Bounds: forward ops agree with the naive versions to a relative error of 1e-5 (fp32
 * accumulation over at most 9*64 terms); finite differences (central, in fp32 evaluated sums in
 * double) agree with the analytic gradients to a relative error of 1e-3 along random directions
 * and single coordinates. Inputs of max pooling are made well separated so a step never changes
 * the argmax.
 *
 * The masked ops (kernels/backend.h) likewise, and more: the masked Gram sums equal the naive
 * loop's bits on the portable path and on the AVX-512 path (see t_masked_gram_vs_naive); a
 * mask of ones gives the bits of none in fp32 and bf16; a mask of the wrong shape or dtype is
 * refused.
 *
 *   build/tests/test_ops          (make test builds and runs it)
 */
#include <float.h>
#include <omp.h>

#include "../kernels/backend.h"
#include "../kernels/cpu/cpu.h"
#include "../util/mem.h"
#include "naive.h"
#include "kernel_paths.h"
#include "test.h"

static nst_backend *be;

/* ---- tensors on the backend ------------------------------------------------------------------ */

static nst_tensor tens(int h, int w, int c)
{
    nst_tensor t;
    if (nst_tensor_alloc(be, h, w, c, NST_F32, &t) != NST_OK) {
        printf("alloc failed: %s\n", nst_fail_message());
        exit(1);
    }
    return t;
}

static void put(nst_tensor *t, const float *src) { be->ops->upload(be, t->data, src, nst_tensor_elems(t), NST_F32); }
static void get(const nst_tensor *t, float *dst) { be->ops->download(be, dst, t->data, nst_tensor_elems(t), NST_F32); }

static float *buf(size_t n) { return nst_alloc_array(n ? n : 1, sizeof(float), "test"); }

static double dotd(const float *a, const float *b, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++) s += (double)a[i] * b[i];
    return s;
}

/* ---- naive references ------------------------------------------------------------------------ */

/* fp32 in and out around the double reference of naive.h */
static void conv_naive(const float *x, int h, int w, int ci, const float *wt, const float *b, int co, int relu, float *y)
{
    double *xd = malloc(sizeof(double) * (size_t)h * w * ci), *yd = malloc(sizeof(double) * (size_t)h * w * co);
    to_double(x, xd, (size_t)h * w * ci);
    naive_conv(xd, h, w, ci, wt, b, co, relu, yd);
    for (size_t i = 0; i < (size_t)h * w * co; i++) y[i] = (float)yd[i];
    free(xd);
    free(yd);
}

static void conv_bwd_naive(const float *dy, int h, int w, int ci, const float *wt, int co, float *dx)
{
    for (int i = 0; i < h; i++)
        for (int j = 0; j < w; j++)
            for (int c = 0; c < ci; c++) {
                double s = 0;
                for (int ky = 0; ky < 3; ky++)
                    for (int kx = 0; kx < 3; kx++) {
                        int yy = i - ky + 1, xx = j - kx + 1; /* outputs that read x[i][j] through tap (ky, kx) */
                        if (yy < 0 || yy >= h || xx < 0 || xx >= w) continue;
                        for (int o = 0; o < co; o++)
                            s += (double)dy[((size_t)yy * w + xx) * co + o] * wt[(((size_t)o * ci + c) * 3 + ky) * 3 + kx];
                    }
                dx[((size_t)i * w + j) * ci + c] = (float)s;
            }
}

/* ---- the finite-difference harness --------------------------------------------------------- */

typedef double (*scalar_fn)(void *ctx, const float *x);

/* Worst error between central finite differences and the analytic derivative <grad, v>:
 * along ndir random directions relative to max(|fd|, |analytic|); along ncoord single
 * coordinates relative to the largest gradient entry (a single coordinate's derivative may be
 * ~0, where a relative error means nothing). Central differences are exact for linear and
 * quadratic functions, so those take a large step and only rounding remains; piecewise-linear
 * ones (ReLU, max pool) take a step smaller than any distance to a kink. */
static double fd_worst(void *ctx, scalar_fn f, const float *x, const float *grad, size_t n, float eps, int ndir, int ncoord)
{
    float *xp = buf(n), *v = buf(n);
    double worst = 0, gmax = 0;
    for (size_t i = 0; i < n; i++) gmax = fmax(gmax, fabs(grad[i]));
    for (int d = 0; d < ndir + ncoord; d++) {
        if (d < ndir) {
            test_fill(v, n, 100 + d, -1, 1);
        } else {
            memset(v, 0, n * sizeof(float));
            v[(size_t)(d - ndir) * 7919 % n] = 1;
        }
        /* the step actually taken: x +- eps v rounded to fp32 */
        double an = 0;
        for (size_t i = 0; i < n; i++) xp[i] = x[i] + eps * v[i];
        double fp = f(ctx, xp);
        for (size_t i = 0; i < n; i++) an += (double)grad[i] * xp[i];
        for (size_t i = 0; i < n; i++) xp[i] = x[i] - eps * v[i];
        double fm = f(ctx, xp);
        for (size_t i = 0; i < n; i++) an -= (double)grad[i] * xp[i];
        an /= 2.0 * eps;
        double fd = (fp - fm) / (2.0 * eps);
        double scale = d < ndir ? fmax(fabs(fd), fabs(an)) : fmax(fabs(an), gmax);
        double err = fabs(fd - an) / fmax(scale, 1e-12);
        if (err > worst) worst = err;
    }
    f(ctx, x); /* leave the context evaluated at x */
    nst_free(xp);
    nst_free(v);
    return worst;
}

/* ---- conv ----------------------------------------------------------------------------------- */

static const int conv_shapes[][4] = {{1, 1, 3, 4}, {7, 9, 5, 6}, {16, 16, 3, 64}, {5, 3, 64, 8}, {33, 17, 8, 16}, {2, 40, 16, 3}};

static void t_conv_forward_vs_naive(void)
{
    for (size_t s = 0; s < sizeof conv_shapes / sizeof *conv_shapes; s++) {
        int h = conv_shapes[s][0], w = conv_shapes[s][1], ci = conv_shapes[s][2], co = conv_shapes[s][3];
        float *x = buf((size_t)h * w * ci), *wt = buf((size_t)co * ci * 9), *b = buf(co), *y = buf((size_t)h * w * co),
              *ref = buf((size_t)h * w * co);
        test_fill(x, (size_t)h * w * ci, 1, -1, 1);
        test_fill(wt, (size_t)co * ci * 9, 2, -0.5f, 0.5f);
        test_fill(b, co, 3, -0.2f, 0.2f);
        nst_conv *cv;
        CHECK(be->ops->conv_create(be, ci, co, wt, b, &cv) == NST_OK, "%s", nst_fail_message());
        nst_tensor tx = tens(h, w, ci), ty = tens(h, w, co);
        put(&tx, x);
        for (int relu = 0; relu < 2; relu++) {
            CHECK(be->ops->conv_forward(be, cv, &tx, &ty, relu) == NST_OK, "%s", nst_fail_message());
            get(&ty, y);
            conv_naive(x, h, w, ci, wt, b, co, relu, ref);
            double e = test_rel_err(y, ref, (size_t)h * w * co, 1e-6);
            CHECK(e <= 1e-5, "conv %dx%d %d->%d relu %d: rel err %.3g", h, w, ci, co, relu, e);
        }
        be->ops->conv_destroy(be, cv);
        nst_tensor_free(be, &tx);
        nst_tensor_free(be, &ty);
        nst_free(x), nst_free(wt), nst_free(b), nst_free(y), nst_free(ref);
    }
}

static void t_conv_backward_vs_naive_and_adjoint(void)
{
    for (size_t s = 0; s < sizeof conv_shapes / sizeof *conv_shapes; s++) {
        int h = conv_shapes[s][0], w = conv_shapes[s][1], ci = conv_shapes[s][2], co = conv_shapes[s][3];
        size_t nx = (size_t)h * w * ci, ny = (size_t)h * w * co;
        float *x = buf(nx), *wt = buf((size_t)co * ci * 9), *zero = buf(co), *dy = buf(ny), *dx = buf(nx), *ref = buf(nx),
              *y = buf(ny);
        test_fill(x, nx, 4, -1, 1);
        test_fill(wt, (size_t)co * ci * 9, 5, -0.5f, 0.5f);
        test_fill(dy, ny, 6, -1, 1);
        memset(zero, 0, co * sizeof(float));
        nst_conv *cv;
        CHECK(be->ops->conv_create(be, ci, co, wt, zero, &cv) == NST_OK, "%s", nst_fail_message());
        nst_tensor tx = tens(h, w, ci), ty = tens(h, w, co), tdy = tens(h, w, co), tdx = tens(h, w, ci);
        put(&tdy, dy);
        CHECK(be->ops->conv_backward_data(be, cv, &tdy, &tdx) == NST_OK, "%s", nst_fail_message());
        get(&tdx, dx);
        conv_bwd_naive(dy, h, w, ci, wt, co, ref);
        double e = test_rel_err(dx, ref, nx, 1e-6);
        CHECK(e <= 1e-5, "conv backward %dx%d %d->%d: rel err %.3g", h, w, ci, co, e);
        /* <conv(x), dy> == <x, conv^T(dy)>, to the rounding of y and dx (relative to the sums of
         * |terms|: the two sides cancel, and a path without fused multiply-adds, SSE4.1's, rounds
         * twice per product); a wrong adjoint errs by the order of those sums */
        put(&tx, x);
        be->ops->conv_forward(be, cv, &tx, &ty, 0);
        get(&ty, y);
        double l = dotd(y, dy, ny), r = dotd(x, dx, nx), mag = 0;
        for (size_t i = 0; i < ny; i++) mag += fabs((double)y[i] * dy[i]);
        for (size_t i = 0; i < nx; i++) mag += fabs((double)x[i] * dx[i]);
        CHECK(fabs(l - r) <= 0x1p-20 * mag, "adjoint %dx%d %d->%d: %.9g vs %.9g (sums of |terms| %.3g)", h, w, ci, co, l, r, mag);
        be->ops->conv_destroy(be, cv);
        nst_tensor_free(be, &tx), nst_tensor_free(be, &ty), nst_tensor_free(be, &tdy), nst_tensor_free(be, &tdx);
        nst_free(x), nst_free(wt), nst_free(zero), nst_free(dy), nst_free(dx), nst_free(ref), nst_free(y);
    }
}

/* f(x) = <r, relu(conv(x) + b)>: FD check of conv backward + relu backward */
typedef struct {
    nst_conv *cv;
    nst_tensor tx, ty;
    const float *r;
    float *y;
    int relu;
} conv_ctx;

static double conv_f(void *p, const float *x)
{
    conv_ctx *c = p;
    put(&c->tx, x);
    be->ops->conv_forward(be, c->cv, &c->tx, &c->ty, c->relu);
    get(&c->ty, c->y);
    return dotd(c->y, c->r, nst_tensor_elems(&c->ty));
}

static void t_conv_relu_finite_differences(void)
{
    int h = 9, w = 7, ci = 4, co = 5;
    size_t nx = (size_t)h * w * ci, ny = (size_t)h * w * co;
    float *x = buf(nx), *wt = buf((size_t)co * ci * 9), *b = buf(co), *r = buf(ny), *g = buf(nx), *y = buf(ny);
    test_fill(x, nx, 7, -1, 1);
    test_fill(wt, (size_t)co * ci * 9, 8, -0.5f, 0.5f);
    test_fill(b, co, 9, -0.3f, 0.3f);
    test_fill(r, ny, 10, -1, 1);
    conv_ctx c = {NULL, tens(h, w, ci), tens(h, w, co), r, y, 0};
    be->ops->conv_create(be, ci, co, wt, b, &c.cv);
    nst_tensor tg = tens(h, w, co), tdx = tens(h, w, ci);
    for (int relu = 0; relu < 2; relu++) {
        c.relu = relu;
        conv_f(&c, x); /* ty = forward at x (the ReLU mask) */
        put(&tg, r);
        if (relu) be->ops->relu_backward(be, &c.ty, &tg);
        be->ops->conv_backward_data(be, c.cv, &tg, &tdx);
        get(&tdx, g);
        double e = fd_worst(&c, conv_f, x, g, nx, relu ? 1e-3f : 1e-1f, 4, 16);
        CHECK(e <= 1e-3, "conv%s finite differences: rel err %.3g", relu ? "+relu" : "", e);
    }
    be->ops->conv_destroy(be, c.cv);
    nst_tensor_free(be, &c.tx), nst_tensor_free(be, &c.ty), nst_tensor_free(be, &tg), nst_tensor_free(be, &tdx);
    nst_free(x), nst_free(wt), nst_free(b), nst_free(r), nst_free(g), nst_free(y);
}

/* ---- pooling -------------------------------------------------------------------------------- */

/* Distinct, well-separated values (gaps of 1/n): a small step never changes a max. */
static void fill_separated(float *x, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++) x[i] = (float)((i * 7919 + seed * 104729) % n) / (float)n - 0.5f;
}

typedef struct {
    nst_pool_kind kind;
    nst_tensor tx, ty;
    const float *r;
    float *y;
} pool_ctx;

static double pool_f(void *p, const float *x)
{
    pool_ctx *c = p;
    put(&c->tx, x);
    be->ops->pool_forward(be, c->kind, &c->tx, &c->ty);
    get(&c->ty, c->y);
    return dotd(c->y, c->r, nst_tensor_elems(&c->ty));
}

static void t_pool_vs_naive_and_finite_differences(void)
{
    const int shapes[][3] = {{2, 2, 1}, {7, 9, 3}, {16, 10, 8}, {5, 5, 16}};
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        int h = shapes[s][0], w = shapes[s][1], c = shapes[s][2], oh = h / 2, ow = w / 2;
        size_t nx = (size_t)h * w * c, ny = (size_t)oh * ow * c;
        float *x = buf(nx), *y = buf(ny), *r = buf(ny), *g = buf(nx);
        fill_separated(x, nx, (unsigned)s);
        test_fill(r, ny, 11, -1, 1);
        for (int kind = 0; kind < 2; kind++) {
            pool_ctx pc = {kind ? NST_POOL_AVG : NST_POOL_MAX, tens(h, w, c), tens(oh, ow, c), r, y};
            pool_f(&pc, x);
            for (int i = 0; i < oh; i++)
                for (int j = 0; j < ow; j++)
                    for (int k = 0; k < c; k++) {
                        float a = x[((size_t)(2 * i) * w + 2 * j) * c + k], b = x[((size_t)(2 * i) * w + 2 * j + 1) * c + k];
                        float d = x[((size_t)(2 * i + 1) * w + 2 * j) * c + k], e = x[((size_t)(2 * i + 1) * w + 2 * j + 1) * c + k];
                        double want = kind ? 0.25 * ((double)a + b + d + e) : fmax(fmax(a, b), fmax(d, e));
                        CHECK_NEAR(y[((size_t)i * ow + j) * c + k], want, 1e-6, "pool forward");
                    }
            nst_tensor tdy = tens(oh, ow, c), tdx = tens(h, w, c);
            put(&tdy, r);
            CHECK(be->ops->pool_backward(be, pc.kind, &pc.tx, &pc.ty, &tdy, &tdx, 0) == NST_OK, "%s", nst_fail_message());
            get(&tdx, g);
            double e = fd_worst(&pc, pool_f, x, g, nx, kind ? 1e-1f : 1e-4f, 4, 16);
            CHECK(e <= 1e-3, "%s pool %dx%dx%d finite differences: rel err %.3g", kind ? "avg" : "max", h, w, c, e);
            nst_tensor_free(be, &pc.tx), nst_tensor_free(be, &pc.ty), nst_tensor_free(be, &tdy), nst_tensor_free(be, &tdx);
        }
        nst_free(x), nst_free(y), nst_free(r), nst_free(g);
    }
}

static void t_max_pool_routes_to_first_maximum(void)
{
    /* a window of equal values: the gradient goes to the top-left position only (PyTorch's rule) */
    float x[4] = {0.5f, 0.5f, 0.5f, 0.5f}, dy[1] = {3.f}, dx[4];
    nst_tensor tx = tens(2, 2, 1), ty = tens(1, 1, 1), tdy = tens(1, 1, 1), tdx = tens(2, 2, 1);
    put(&tx, x);
    put(&tdy, dy);
    be->ops->pool_forward(be, NST_POOL_MAX, &tx, &ty);
    be->ops->pool_backward(be, NST_POOL_MAX, &tx, &ty, &tdy, &tdx, 0);
    get(&tdx, dx);
    CHECK(dx[0] == 3.f && dx[1] == 0 && dx[2] == 0 && dx[3] == 0, "dx = %g %g %g %g", dx[0], dx[1], dx[2], dx[3]);
    nst_tensor_free(be, &tx), nst_tensor_free(be, &ty), nst_tensor_free(be, &tdy), nst_tensor_free(be, &tdx);
}

/* The ReLU below folded into the pooling's backward equals the two passes bit for bit: both kinds,
 * fp32 and bf16, odd shapes (the dropped row and column), x with negatives, zeros, ties at 0 and a
 * NaN; on every instruction-set clone the machine runs (kernels/cpu/pool_cpu.c). */
static void t_pool_backward_folds_relu(void)
{
    const int shapes[][3] = {{2, 2, 1}, {7, 9, 3}, {16, 10, 8}, {5, 5, 16}, {9, 6, 33}};
    int bad = 0, cases = 0;
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
        for (int dt = 0; dt < 2; dt++)
            for (int kind = 0; kind < 2; kind++) {
                int h = shapes[s][0], w = shapes[s][1], c = shapes[s][2];
                nst_dtype t = dt ? NST_BF16 : NST_F32;
                size_t nx = (size_t)h * w * c, ny = (size_t)(h / 2) * (w / 2) * c;
                float *x = buf(nx), *r = buf(ny), *a = buf(nx), *b = buf(nx);
                test_fill(x, nx, 40 + (unsigned)s, -1, 1);
                for (size_t i = 0; i < nx; i += 5) x[i] = 0.f; /* ties at 0, and windows whose maximum is 0 */
                x[nx / 2] = NAN;
                test_fill(r, ny, 50 + (unsigned)s, -1, 1);
                nst_tensor tx, ty, tdy, d1, d2;
                nst_pool_kind pk = kind ? NST_POOL_AVG : NST_POOL_MAX;
                nst_status st = nst_tensor_alloc(be, h, w, c, t, &tx);
                if (st == NST_OK) st = nst_tensor_alloc(be, h / 2, w / 2, c, t, &ty);
                if (st == NST_OK) st = nst_tensor_alloc(be, h / 2, w / 2, c, t, &tdy);
                if (st == NST_OK) st = nst_tensor_alloc(be, h, w, c, t, &d1);
                if (st == NST_OK) st = nst_tensor_alloc(be, h, w, c, t, &d2);
                if (st == NST_OK) st = be->ops->upload(be, tx.data, x, nx, t);
                if (st == NST_OK) st = be->ops->upload(be, tdy.data, r, ny, t);
                if (st == NST_OK) st = be->ops->pool_forward(be, pk, &tx, &ty);
                if (st == NST_OK) st = be->ops->pool_backward(be, pk, &tx, &ty, &tdy, &d1, 0);
                if (st == NST_OK) st = be->ops->relu_backward(be, &tx, &d1);
                if (st == NST_OK) st = be->ops->pool_backward(be, pk, &tx, &ty, &tdy, &d2, 1);
                CHECK(st == NST_OK, "%s", nst_fail_message());
                bad += memcmp(d1.data, d2.data, nx * nst_dtype_size(t)) != 0;
                cases++;
                nst_tensor_free(be, &tx), nst_tensor_free(be, &ty), nst_tensor_free(be, &tdy), nst_tensor_free(be, &d1), nst_tensor_free(be, &d2);
                nst_free(x), nst_free(r), nst_free(a), nst_free(b);
            }
    CHECK(bad == 0, "pool_backward with the ReLU folded in differs from the two passes in %d of %d cases", bad, cases);
}

/* ---- preprocessing ---------------------------------------------------------------------------- */

static void t_preprocess_and_adjoint(void)
{
    int h = 5, w = 6;
    size_t n = (size_t)h * w * 3;
    float *img = buf(n), *x = buf(n), *dx = buf(n), *dimg = buf(n);
    test_fill(img, n, 12, 0, 1);
    test_fill(dx, n, 13, -1, 1);
    for (int bgr = 0; bgr < 2; bgr++) {
        nst_preproc p = {bgr, bgr ? 255.f : 1.f, {0.4f, 100.f, 0.5f}, {0.2f, 1.f, 0.3f}};
        nst_tensor ti = tens(h, w, 3), tx = tens(h, w, 3), tdx = tens(h, w, 3), tdi = tens(h, w, 3);
        put(&ti, img);
        be->ops->preprocess(be, &p, &ti, &tx);
        get(&tx, x);
        for (size_t i = 0; i < (size_t)h * w; i++)
            for (int c = 0; c < 3; c++) {
                double want = ((double)img[3 * i + (bgr ? 2 - c : c)] * p.scale - p.mean[c]) / p.std[c];
                CHECK_NEAR(x[3 * i + c], want, 1e-4 * fmax(1, fabs(want)), "preprocess");
            }
        put(&tdx, dx);
        be->ops->preprocess_backward(be, &p, &tdx, &tdi);
        get(&tdi, dimg);
        /* linear part only: <A img, dx> == <img, A^T dx> */
        double l = 0;
        for (size_t i = 0; i < (size_t)h * w; i++)
            for (int c = 0; c < 3; c++) l += (double)img[3 * i + (bgr ? 2 - c : c)] * p.scale / p.std[c] * dx[3 * i + c];
        double r = dotd(img, dimg, n);
        CHECK(fabs(l - r) <= 1e-4 * fmax(1, fabs(l)), "preprocess adjoint bgr %d: %.9g vs %.9g", bgr, l, r);
        nst_tensor_free(be, &ti), nst_tensor_free(be, &tx), nst_tensor_free(be, &tdx), nst_tensor_free(be, &tdi);
    }
    nst_free(img), nst_free(x), nst_free(dx), nst_free(dimg);
}

/* ---- Gram --------------------------------------------------------------------------------------- */

static void gram_naive(const float *f, int w, int c, nst_rect r, double *g)
{
    memset(g, 0, (size_t)c * c * sizeof(double));
    for (int y = r.y; y < r.y + r.h; y++)
        for (int x = r.x; x < r.x + r.w; x++) {
            const float *p = f + ((size_t)y * w + x) * c;
            for (int i = 0; i < c; i++)
                for (int j = 0; j < c; j++) g[(size_t)i * c + j] += (double)p[i] * p[j];
        }
}

typedef struct {
    nst_tensor tf;
    nst_rect own;
    const float *d; /* symmetric c x c */
    double *g;      /* Gram sums: upper triangle */
    int c;
    const nst_tensor *m; /* a mask, or NULL */
} gram_ctx;

/* G[i][j] from the upper triangle the op fills */
static double gsym(const double *g, int c, int i, int j) { return i <= j ? g[(size_t)i * c + j] : g[(size_t)j * c + i]; }

/* f(F) = sum_ij D_ij G_ij(F) over the region */
static double gram_f(void *p, const float *x)
{
    gram_ctx *c = p;
    put(&c->tf, x);
    memset(c->g, 0, (size_t)c->c * c->c * sizeof(double));
    be->ops->gram_accumulate(be, &c->tf, c->own, c->m, c->g);
    double s = 0;
    for (int i = 0; i < c->c; i++)
        for (int j = 0; j < c->c; j++) s += c->d[i * c->c + j] * gsym(c->g, c->c, i, j);
    return s;
}

static void t_gram_regions_and_finite_differences(void)
{
    const int h = 9, w = 11, c = 6;
    const nst_rect regions[] = {{0, 0, 11, 9}, {0, 3, 11, 4}, {2, 1, 5, 6}, {10, 8, 1, 1}, {3, 3, 0, 2}};
    size_t n = (size_t)h * w * c;
    float *f = buf(n), *d = buf((size_t)c * c), *df = buf(n);
    double *g = nst_alloc_array((size_t)c * c, sizeof(double), "test"), *ref = nst_alloc_array((size_t)c * c, sizeof(double), "test");
    test_fill(f, n, 14, -1, 1);
    for (int i = 0; i < c; i++)
        for (int j = 0; j <= i; j++) d[i * c + j] = d[j * c + i] = (float)(0.1 * ((i * 7 + j * 3) % 11) - 0.5);
    gram_ctx gc = {tens(h, w, c), regions[0], d, g, c, NULL};
    nst_tensor tdf = tens(h, w, c);
    for (size_t k = 0; k < sizeof regions / sizeof *regions; k++) {
        nst_rect r = regions[k];
        gc.own = r;
        gram_f(&gc, f);
        gram_naive(f, w, c, r, ref);
        double worst = 0, big = 1e-6;
        for (int i = 0; i < c; i++)
            for (int j = i; j < c; j++) {
                worst = fmax(worst, fabs(g[i * c + j] - ref[i * c + j]));
                big = fmax(big, fabs(ref[i * c + j]));
            }
        /* double accumulation of exact fp32 products: equal to the naive double sums to rounding */
        CHECK(worst / big <= 1e-12, "gram region %d: rel err %.3g", (int)k, worst / big);
        /* accumulate: a second call adds the same sums */
        be->ops->gram_accumulate(be, &gc.tf, r, NULL, g);
        for (int i = 0; i < c; i++)
            for (int j = i; j < c; j++) CHECK_NEAR(g[i * c + j], 2 * ref[i * c + j], 1e-9 * fmax(1, fabs(ref[i * c + j])), "gram accumulates");
        /* backward: gradient of f is 2 F D on the region, 0 elsewhere */
        be->ops->zero(be, tdf.data, n * sizeof(float));
        CHECK(be->ops->gram_backward(be, &gc.tf, r, NULL, d, 2.f, &tdf) == NST_OK, "%s", nst_fail_message());
        get(&tdf, df);
        if (!nst_rect_empty(r)) {
            double e = fd_worst(&gc, gram_f, f, df, n, 1e-1f, 4, 16); /* quadratic */
            CHECK(e <= 1e-3, "gram region %d finite differences: rel err %.3g", (int)k, e);
        }
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++)
                if (!nst_rect_contains(r, nst_rect_make(x, y, 1, 1)))
                    for (int i = 0; i < c; i++) CHECK(df[((size_t)y * w + x) * c + i] == 0, "gradient outside the region");
    }
    /* summed over parts in any order, the Gram rounds to the same fp32 matrix as over the whole */
    memset(g, 0, (size_t)c * c * sizeof(double));
    be->ops->gram_accumulate(be, &gc.tf, nst_rect_make(0, 0, w, h), NULL, g);
    double *g2 = nst_calloc((size_t)c * c * sizeof(double), "test");
    const nst_rect parts[] = {{6, 4, 5, 5}, {0, 0, 6, 4}, {0, 4, 6, 5}, {6, 0, 5, 4}};
    for (int k = 0; k < 4; k++) be->ops->gram_accumulate(be, &gc.tf, parts[k], NULL, g2);
    int differ = 0;
    for (int i = 0; i < c; i++)
        for (int j = i; j < c; j++) differ += (float)g[i * c + j] != (float)g2[i * c + j];
    CHECK(differ == 0, "%d entries of the tiled Gram round differently", differ);
    nst_free(g2);
    /* gram_diff: d = g * s - a from the upper triangle, and the sum of squares */
    double gg[4] = {4, 2, -99, 8};
    float a[4] = {1, 2, 2, 5}, dd[4];
    double ss;
    be->ops->gram_diff(be, gg, NULL, 0.5, a, 2, dd, &ss);
    CHECK(dd[0] == 1 && dd[1] == -1 && dd[2] == -1 && dd[3] == -1 && ss == 4.0, "gram_diff %g %g %g %g ss %g", dd[0], dd[1],
          dd[2], dd[3], ss);
    /* extrapolated from the previous sums: d at 2 g - g_prev, the loss still at g */
    double prev[4] = {2, 2, -99, 4};
    be->ops->gram_diff(be, gg, prev, 0.5, a, 2, dd, &ss);
    CHECK(dd[0] == 2 && dd[1] == -1 && dd[2] == -1 && dd[3] == 1 && ss == 4.0, "extrapolated gram_diff %g %g %g %g ss %g", dd[0],
          dd[1], dd[2], dd[3], ss);
    nst_tensor_free(be, &gc.tf), nst_tensor_free(be, &tdf);
    nst_free(f), nst_free(g), nst_free(d), nst_free(df), nst_free(ref);
}

/* ---- content (mse) and TV ---------------------------------------------------------------------- */

typedef struct {
    nst_tensor tf, tp;
    nst_rect own;
    int tv;
    const nst_tensor *m; /* the content loss's mask, or NULL */
} loss_ctx;

static double loss_f(void *p, const float *x)
{
    loss_ctx *c = p;
    nst_xsum s;
    nst_xsum_zero(&s);
    put(&c->tf, x);
    if (c->tv)
        be->ops->tv(be, &c->tf, c->own, c->own, 1.f, &s, NULL);
    else
        be->ops->mse(be, &c->tf, &c->tp, c->own, c->own, c->m, 1.f, &s, NULL);
    return nst_xsum_value(&s);
}

static void t_mse_and_tv_finite_differences_and_regions(void)
{
    const int h = 8, w = 10, c = 3;
    size_t n = (size_t)h * w * c;
    float *f = buf(n), *p = buf(n), *g = buf(n), *g2 = buf(n);
    test_fill(f, n, 15, 0, 1);
    test_fill(p, n, 16, 0, 1);
    nst_rect whole = {0, 0, w, h};
    for (int tv = 0; tv < 2; tv++) {
        loss_ctx lc = {tens(h, w, c), tens(h, w, c), whole, tv, NULL};
        put(&lc.tp, p);
        nst_tensor tg = tens(h, w, c);
        double naive = 0;
        nst_xsum sx;
        nst_xsum_zero(&sx);
        put(&lc.tf, f);
        if (tv) {
            be->ops->tv(be, &lc.tf, whole, whole, 1.f, &sx, &tg);
            for (int y = 0; y < h; y++)
                for (int x = 0; x < w; x++)
                    for (int k = 0; k < c; k++) {
                        float v = f[((size_t)y * w + x) * c + k];
                        if (x + 1 < w) naive += pow(f[((size_t)y * w + x + 1) * c + k] - v, 2);
                        if (y + 1 < h) naive += pow(f[((size_t)(y + 1) * w + x) * c + k] - v, 2);
                    }
        } else {
            be->ops->mse(be, &lc.tf, &lc.tp, whole, whole, NULL, 2.f, &sx, &tg); /* scale 2: the gradient of the sum */
            for (size_t i = 0; i < n; i++) naive += pow((double)f[i] - p[i], 2);
        }
        const double s = nst_xsum_value(&sx);
        CHECK_NEAR(s, naive, 1e-9 * fmax(1, naive), tv ? "tv value" : "mse value");
        get(&tg, g);
        double e = fd_worst(&lc, loss_f, f, g, n, 1e-1f, 4, 16); /* quadratic */
        CHECK(e <= 1e-3, "%s finite differences: rel err %.3g", tv ? "tv" : "mse", e);

        /* Tiling semantics: values over owned parts add up to the whole, bit for bit (the sums are
         * exact), and the gradient seeded on a part equals the whole gradient there (and is
         * untouched elsewhere). */
        nst_rect left = {0, 0, 4, h}, right = {4, 0, w - 4, h};
        nst_xsum sl, sr;
        nst_xsum_zero(&sl), nst_xsum_zero(&sr);
        nst_tensor tg2 = tens(h, w, c);
        if (tv) {
            be->ops->tv(be, &lc.tf, left, left, 1.f, &sl, &tg2);
            be->ops->tv(be, &lc.tf, right, right, 1.f, &sr, NULL);
        } else {
            be->ops->mse(be, &lc.tf, &lc.tp, left, left, NULL, 2.f, &sl, &tg2);
            be->ops->mse(be, &lc.tf, &lc.tp, right, right, NULL, 2.f, &sr, NULL);
        }
        nst_xsum_merge(&sl, &sr);
        CHECK(nst_xsum_value(&sl) == s, "parts add up to the whole: %.17g against %.17g", nst_xsum_value(&sl), s);
        get(&tg2, g2);
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++)
                for (int k = 0; k < c; k++) {
                    size_t i = ((size_t)y * w + x) * c + k;
                    if (x < 4)
                        CHECK_NEAR(g2[i], g[i], 1e-6, "seeded gradient equals the whole gradient");
                    else
                        CHECK(g2[i] == 0, "gradient outside the seed region");
                }
        nst_tensor_free(be, &lc.tf), nst_tensor_free(be, &lc.tp), nst_tensor_free(be, &tg), nst_tensor_free(be, &tg2);
    }
    nst_free(f), nst_free(p), nst_free(g), nst_free(g2);
}

/* ---- masks ------------------------------------------------------------------------------------- */

/* A mask of n pixels: 0 and 1 at every 7th, else odd multiples of 2^-16 in (0, 1): 16 significant
 * bits, so with fp32 features the products (m f_i) f_j are not exact in double. */
static void mask_fill(float *m, size_t n, int ones)
{
    for (size_t k = 0; k < n; k++)
        m[k] = ones || k % 7 == 1 ? 1.f : k % 7 == 0 ? 0.f : (float)((((unsigned)k * 2654435761u) >> 16) | 1u) * 0x1p-16f;
}

static nst_tensor mask_tensor(int h, int w, int ones)
{
    nst_tensor t = tens(h, w, 1);
    float *m = buf((size_t)h * w);
    mask_fill(m, (size_t)h * w, ones);
    put(&t, m);
    nst_free(m);
    return t;
}

/* G[i][j] (j >= i) = sum over r in row order of (m_p f_p[i]) f_p[j], each product rounded, then
 * added: the CPU's sum, entry by entry */
static void masked_gram_naive(const float *f, const float *m, int w, int c, nst_rect r, double *g)
{
    memset(g, 0, (size_t)c * c * sizeof(double));
    for (int y = r.y; y < r.y + r.h; y++)
        for (int x = r.x; x < r.x + r.w; x++) {
            const float *p = f + ((size_t)y * w + x) * c;
            double mw = m[(size_t)y * w + x];
            for (int i = 0; i < c; i++)
                for (int j = i; j < c; j++) {
                    volatile double prod = (mw * p[i]) * p[j]; /* rounded before the addition */
                    g[(size_t)i * c + j] += prod;
                }
        }
}

/* The masked sums against the naive loop, bit for bit on both paths: m f_i f_j is not exact in
 * double, so the AVX-512 path must round the product by a multiply of its own, as the portable
 * path and the loop do (a fused multiply-add would differ in about a fifth of the entries). */
static void t_masked_gram_vs_naive(void)
{
    const int h = 23, w = 37, cs[] = {6, 64, 77};
    for (int k = 0; k < 3; k++) {
        int c = cs[k];
        size_t n = (size_t)h * w * c, cc = (size_t)c * c;
        float *v = buf(n), *mh = buf((size_t)h * w);
        test_fill(v, n, 70 + k, 0, 3);
        mask_fill(mh, (size_t)h * w, 0);
        nst_tensor f = tens(h, w, c), m = mask_tensor(h, w, 0);
        put(&f, v);
        double *g = nst_calloc(cc * sizeof(double), "test"), *ref = nst_calloc(cc * sizeof(double), "test");
        const nst_rect regions[] = {{0, 0, w, h}, {0, 4, w, 9}, {2, 1, w - 5, h - 3}};
        for (int r = 0; r < 3; r++) {
            masked_gram_naive(v, mh, w, c, regions[r], ref);
            for (int path = 0; path < NPATHS; path++) {
                set_path(path);
                memset(g, 0, cc * sizeof(double));
                CHECK(be->ops->gram_accumulate(be, &f, regions[r], &m, g) == NST_OK, "%s", nst_fail_message());
                set_path(-1);
                double worst = 0, big = 0;
                int differ = 0;
                for (int i = 0; i < c; i++)
                    for (int j = i; j < c; j++) {
                        worst = fmax(worst, fabs(g[i * c + j] - ref[i * c + j]));
                        big = fmax(big, fabs(ref[i * c + j]));
                        differ += g[i * c + j] != ref[i * c + j];
                    }
                CHECK(differ == 0, "c %d region %d, %s path: %d entries differ from the naive loop (rel err %.3g)", c, r,
                      path_names[path], differ, big > 0 ? worst / big : worst);
            }
        }
        nst_tensor_free(be, &f), nst_tensor_free(be, &m);
        nst_free(v), nst_free(mh), nst_free(g), nst_free(ref);
    }
}

/* the masked backward against sum_k (m_p f_p[k] in fp32) (scale d[k][j]), and the masked Gram
 * loss's finite differences: d/dF sum_ij D_ij G_ij = 2 (m F) D */
static void t_masked_gram_backward_vs_naive_and_finite_differences(void)
{
    const int h = 9, w = 11, c = 6;
    const nst_rect regions[] = {{0, 0, 11, 9}, {0, 3, 11, 4}, {2, 1, 5, 6}};
    size_t n = (size_t)h * w * c;
    float *f = buf(n), *d = buf((size_t)c * c), *df = buf(n), *mh = buf((size_t)h * w);
    double *g = nst_alloc_array((size_t)c * c, sizeof(double), "test");
    test_fill(f, n, 80, -1, 1);
    mask_fill(mh, (size_t)h * w, 0);
    for (int i = 0; i < c; i++)
        for (int j = 0; j <= i; j++) d[i * c + j] = d[j * c + i] = (float)(0.1 * ((i * 5 + j * 3) % 11) - 0.5);
    nst_tensor m = mask_tensor(h, w, 0), tdf = tens(h, w, c);
    gram_ctx gc = {tens(h, w, c), regions[0], d, g, c, &m};
    for (size_t k = 0; k < sizeof regions / sizeof *regions; k++) {
        nst_rect r = gc.own = regions[k];
        gram_f(&gc, f);
        be->ops->zero(be, tdf.data, n * sizeof(float));
        CHECK(be->ops->gram_backward(be, &gc.tf, r, &m, d, 2.f, &tdf) == NST_OK, "%s", nst_fail_message());
        get(&tdf, df);
        double worst = 0, big = 1e-6;
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++)
                for (int j = 0; j < c; j++) {
                    size_t o = ((size_t)y * w + x) * c;
                    double want = 0;
                    if (nst_rect_contains(r, nst_rect_make(x, y, 1, 1)))
                        for (int i = 0; i < c; i++) want += (double)(mh[(size_t)y * w + x] * f[o + i]) * (2.f * d[i * c + j]);
                    worst = fmax(worst, fabs(df[o + j] - want));
                    big = fmax(big, fabs(want));
                }
        CHECK(worst <= 1e-6 * big, "masked gram backward region %d: rel err %.3g", (int)k, worst / big);
        double e = fd_worst(&gc, gram_f, f, df, n, 1e-1f, 4, 16); /* quadratic */
        CHECK(e <= 1e-3, "masked gram region %d finite differences: rel err %.3g", (int)k, e);
    }
    nst_tensor_free(be, &gc.tf), nst_tensor_free(be, &tdf), nst_tensor_free(be, &m);
    nst_free(f), nst_free(d), nst_free(df), nst_free(mh), nst_free(g);
}

/* The Gram backward's contract (kernels/cpu/gram_backward_cpu.c): every output is one chain of
 * fused multiply-adds over the channels in order from zero, added to dF once. So it equals that
 * chain computed here with fmaf bit for bit, on every path, in fp32 and bf16, with and without a
 * mask, for every row count of a region (1 to 100 rows of one column and of whole rows, which
 * cross every block and micro-tile boundary) and channel counts that leave partial panels. */
static float flush(float x) { return fabsf(x) < FLT_MIN ? copysignf(0.f, x) : x; }

/* ftz: the AVX512_BF16 path's chain (VDPBF16PS): each partial sum flushed to zero below fp32's
 * normal range, and one more step of 0 x 0 after an odd c */
static inline __attribute__((always_inline)) float chain_body(const float *a, const float *s, int c, int j, int ftz)
{
    float acc = 0.f;
    for (int i = 0; i < c; i++) acc = ftz ? flush(fmaf(a[i], s[(size_t)i * c + j], acc)) : fmaf(a[i], s[(size_t)i * c + j], acc);
    if (ftz && c % 2) acc = flush(acc + 0.f);
    return acc;
}
/* the same chain with fmaf as one instruction where the CPU has FMA (a fused multiply-add is
 * exactly rounded either way; libm's fmaf through a call was half of this suite's time) */
__attribute__((target("fma"))) static float chain_fma(const float *a, const float *s, int c, int j, int ftz)
{
    return chain_body(a, s, c, j, ftz);
}
static float chain(const float *a, const float *s, int c, int j, int ftz)
{
    static int fma = -1;
    if (fma < 0) fma = __builtin_cpu_supports("fma");
    return fma ? chain_fma(a, s, c, j, ftz) : chain_body(a, s, c, j, ftz);
}

/* Whether the path given to set_path runs the bf16 Gram backward on VDPBF16PS. */
static int path_flushes(int path)
{
    set_path(path);
    int ftz = cpu_kernels_isa() == CPU_ISA_AVX512_BF16;
    set_path(-1);
    return ftz;
}

static void gram_backward_expect(const float *f, const float *m, const float *df0, int w, int c, nst_rect r, const float *d, float scale,
                                 int bf, int ftz, float *want)
{
    float *s = buf((size_t)c * c), *a = buf((size_t)c);
    for (size_t k = 0; k < (size_t)c * c; k++) s[k] = bf ? nst_bf16_round((d[k] * scale)) : d[k] * scale;
    for (int y = r.y; y < r.y + r.h; y++)
        for (int x = r.x; x < r.x + r.w; x++) {
            size_t at = (size_t)y * w + x, o = at * c;
            for (int i = 0; i < c; i++) {
                float v = m ? m[at] * f[o + i] : f[o + i];
                a[i] = bf && m ? nst_bf16_round((v)) : v;
            }
            for (int j = 0; j < c; j++) {
                float v = df0[o + j] + chain(a, s, c, j, ftz);
                want[o + j] = bf ? nst_bf16_round((v)) : v;
            }
        }
    nst_free(s), nst_free(a);
}

static void t_gram_backward_is_one_chain_on_every_path(void)
{
    const int w = 7, h = 100, cs[] = {5, 64, 77};
    for (int k = 0; k < 3; k++)
        for (int bf = 0; bf < 2; bf++)
            for (int masked = 0; masked < 2; masked++) {
                const int c = cs[k];
                const nst_dtype dt = bf ? NST_BF16 : NST_F32;
                size_t n = (size_t)h * w * c;
                float *f = buf(n), *df0 = buf(n), *d = buf((size_t)c * c), *want = buf(n), *wantf = buf(n), *got = buf(n), *mh = buf((size_t)h * w);
                test_fill(f, n, 90 + k, -1, 2);
                test_fill(df0, n, 95 + k, -1, 1);
                test_fill(d, (size_t)c * c, 97 + k, -1, 1);
                mask_fill(mh, (size_t)h * w, 0);
                if (bf) /* the values the tensors hold */
                    for (size_t i = 0; i < n; i++)
                        f[i] = nst_bf16_round((f[i])), df0[i] = nst_bf16_round((df0[i]));
                nst_tensor tf, tdf, m = mask_tensor(h, w, 0);
                CHECK(nst_tensor_alloc(be, h, w, c, dt, &tf) == NST_OK && nst_tensor_alloc(be, h, w, c, dt, &tdf) == NST_OK, "tensors");
                be->ops->upload(be, tf.data, f, n, dt);
                int bad = 0, cases = 0;
                for (int rows = 1; rows <= h; rows += rows < 20 ? 1 : 7)
                    for (int shape = 0; shape < 2; shape++) {
                        /* one column (rows positions), or whole rows */
                        nst_rect r = shape ? nst_rect_make(0, h - rows, w, rows) : nst_rect_make(3, 1, 1, rows < h ? rows : h - 1);
                        memcpy(want, df0, n * sizeof(float)), memcpy(wantf, df0, n * sizeof(float));
                        gram_backward_expect(f, masked ? mh : NULL, df0, w, c, r, d, 0.375f, bf, 0, want);
                        gram_backward_expect(f, masked ? mh : NULL, df0, w, c, r, d, 0.375f, bf, 1, wantf);
                        for (int path = 0; path < NPATHS; path++) {
                            const float *expect = bf && path_flushes(path) ? wantf : want;
                            set_path(path);
                            be->ops->upload(be, tdf.data, df0, n, dt);
                            nst_status st = be->ops->gram_backward(be, &tf, r, masked ? &m : NULL, d, 0.375f, &tdf);
                            set_path(-1);
                            be->ops->download(be, got, tdf.data, n, dt);
                            cases++;
                            if (st != NST_OK || memcmp(got, expect, n * sizeof(float)) != 0) {
                                if (!bad)
                                    printf("    c %d %s%s, region %dx%d+%d+%d, %s path: differs from the fma chain\n", c, bf ? "bf16" : "fp32",
                                           masked ? " masked" : "", r.w, r.h, r.x, r.y, path_names[path]);
                                bad++;
                            }
                        }
                    }
                CHECK(bad == 0, "c %d %s%s: %d of %d cases differ from one fma chain per output", c, bf ? "bf16" : "fp32",
                      masked ? " masked" : "", bad, cases);
                nst_tensor_free(be, &tf), nst_tensor_free(be, &tdf), nst_tensor_free(be, &m);
                nst_free(f), nst_free(df0), nst_free(d), nst_free(want), nst_free(wantf), nst_free(got), nst_free(mh);
            }
}

/* The vector paths round dF + acc to bf16 with integer operations of their own (16 or 8 columns at
 * a time): ties, results that fall below bf16's normal range (flushed to signed zero), overflow to
 * infinity, NaN and signed zeros must come out as nst_f32_to_bf16 rounds them. And the
 * AVX512_BF16 path's chain flushes a subnormal partial sum before the next step adds to it, where
 * the others keep it. One position, three channels set to 1, so column j's chain is
 * (x_j + y_j) + v_j, added to z_j: 48 columns, every case reaching the 16- and 8-wide loops and the
 * scalar tail, each path against its own chain. NaNs compare as NaNs (payloads may differ between
 * the library's fmaf and the vector adds); every other value bit for bit. */
static void t_gram_backward_rounds_special_values_on_every_path(void)
{
    const int c = 48;
    const float tiny = 0x1p-126f, inf = INFINITY;
    /* x, y, v (rounded to bf16 by the kernel like every S entry) and z (dF, a bf16 value) */
    const float cases[][4] = {
        {1.f, 0x1p-8f, 0.f, 0.f},          {1.f, 0x1p-8f, 0.f, 0x1p-7f},       {1.f, 0x1.8p-8f, 0.f, 0.f},   {1.f, 0x1p-8f, 0.f, 0x1p-9f},
        {1.5f * tiny, -tiny, 0.f, 0.f},    {-1.5f * tiny, tiny, 0.f, 0.f},     {tiny, -tiny, 0.f, 0.f},      {-0.f, -0.f, -0.f, -0.f},
        {0x1.fep127f, 0x1.fep127f, 0.f, 0.f}, {-0x1.fep127f, -0x1p127f, 0.f, 0.f}, {inf, -inf, 0.f, 0.f},    {0.f, 0.f, 0.f, NAN},
        {inf, 0.f, 0.f, 1.f},              {3.f, 0x1p-7f, 0.f, -3.f},          {0x1.02p0f, 0x1p-9f, 0.f, 0.f}, {-1.f, -0x1p-8f, 0.f, 0.f},
        {1.5f * tiny, -tiny, tiny, 0.f},   {-1.5f * tiny, tiny, -tiny, 0.f},   {1.25f * tiny, -tiny, 2 * tiny, 0.f},
    };
    const int ncases = (int)(sizeof cases / sizeof cases[0]);
    float *f = buf((size_t)c), *d = buf((size_t)c * c), *df0 = buf((size_t)c), *want = buf((size_t)c), *got = buf((size_t)c);
    memset(f, 0, (size_t)c * sizeof(float));
    memset(d, 0, (size_t)c * c * sizeof(float));
    f[0] = f[1] = f[2] = 1.f;
    for (int j = 0; j < c; j++) {
        const float *k = cases[(j * 5) % ncases];
        d[j] = k[0], d[c + j] = k[1], d[2 * c + j] = k[2], df0[j] = nst_bf16_round(k[3]);
    }
    nst_tensor tf, tdf;
    CHECK(nst_tensor_alloc(be, 1, 1, c, NST_BF16, &tf) == NST_OK && nst_tensor_alloc(be, 1, 1, c, NST_BF16, &tdf) == NST_OK, "tensors");
    be->ops->upload(be, tf.data, f, (size_t)c, NST_BF16);
    for (int path = 0; path < NPATHS; path++) {
        const int ftz = path_flushes(path);
        gram_backward_expect(f, NULL, df0, 1, c, nst_rect_make(0, 0, 1, 1), d, 1.f, 1, ftz, want);
        set_path(path);
        be->ops->upload(be, tdf.data, df0, (size_t)c, NST_BF16);
        nst_status st = be->ops->gram_backward(be, &tf, nst_rect_make(0, 0, 1, 1), NULL, d, 1.f, &tdf);
        set_path(-1);
        be->ops->download(be, got, tdf.data, (size_t)c, NST_BF16);
        int bad = st != NST_OK;
        for (int j = 0; j < c && !bad; j++)
            if (isnan(want[j]) ? !isnan(got[j]) : memcmp(&want[j], &got[j], sizeof(float)) != 0) {
                printf("    column %d, %s path%s: %a + ((%a + %a) + %a) rounded to %a, expected %a\n", j, path_names[path],
                       ftz ? " (flushing)" : "", df0[j], d[j], d[c + j], d[2 * c + j], got[j], want[j]);
                bad = 1;
            }
        CHECK(!bad, "%s path: the chain and the bf16 rounding of dF + acc", path_names[path]);
    }
    nst_tensor_free(be, &tf), nst_tensor_free(be, &tdf);
    nst_free(f), nst_free(d), nst_free(df0), nst_free(want), nst_free(got);
}

/* the masked content loss: sum over own of m_p (f - p)^2 and df += (scale m_p) (f - p) over seed,
 * against double loops, and its finite differences */
static void t_masked_mse_vs_naive_and_finite_differences(void)
{
    const int h = 8, w = 10, c = 3;
    size_t n = (size_t)h * w * c;
    float *f = buf(n), *p = buf(n), *g = buf(n), *mh = buf((size_t)h * w);
    test_fill(f, n, 90, 0, 1);
    test_fill(p, n, 91, 0, 1);
    mask_fill(mh, (size_t)h * w, 0);
    nst_tensor m = mask_tensor(h, w, 0), tg = tens(h, w, c);
    const nst_rect regions[] = {{0, 0, w, h}, {1, 2, 6, 5}};
    loss_ctx lc = {tens(h, w, c), tens(h, w, c), regions[0], 0, &m};
    put(&lc.tf, f), put(&lc.tp, p);
    for (int k = 0; k < 2; k++) {
        nst_rect r = lc.own = regions[k];
        double naive = 0, worst = 0;
        nst_xsum sx;
        nst_xsum_zero(&sx);
        be->ops->zero(be, tg.data, n * sizeof(float));
        CHECK(be->ops->mse(be, &lc.tf, &lc.tp, r, r, &m, 2.f, &sx, &tg) == NST_OK, "%s", nst_fail_message());
        const double s = nst_xsum_value(&sx);
        get(&tg, g);
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++)
                for (int i = 0; i < c; i++) {
                    size_t o = ((size_t)y * w + x) * c + i;
                    int in = nst_rect_contains(r, nst_rect_make(x, y, 1, 1));
                    double dd = (double)f[o] - p[o], mw = mh[(size_t)y * w + x];
                    naive += in ? mw * dd * dd : 0;
                    worst = fmax(worst, fabs(g[o] - (in ? 2 * mw * dd : 0)));
                }
        CHECK_NEAR(s, naive, 1e-12 * fmax(1, naive), "masked mse value");
        CHECK(worst <= 1e-6, "masked mse gradient: max |diff| %.3g", worst);
        double e = fd_worst(&lc, loss_f, f, g, n, 1e-1f, 4, 16); /* quadratic */
        CHECK(e <= 1e-3, "masked mse region %d finite differences: rel err %.3g", k, e);
    }
    nst_tensor_free(be, &lc.tf), nst_tensor_free(be, &lc.tp), nst_tensor_free(be, &tg), nst_tensor_free(be, &m);
    nst_free(f), nst_free(p), nst_free(g), nst_free(mh);
}

/* the three masked ops of one dtype with a mask of ones and without, over region r: the same bits
 * (the gradients start from the same nonzero values, so the addition takes part) */
static void ones_vs_none(nst_dtype dt, int h, int w, int c, nst_rect r)
{
    size_t n = (size_t)h * w * c, cc = (size_t)c * c;
    float *v = buf(n), *d = buf(cc), *o[2] = {buf(n), buf(n)};
    double *g[2] = {nst_calloc(cc * sizeof(double), "test"), nst_calloc(cc * sizeof(double), "test")};
    nst_xsum s[2];
    test_fill(v, n, 95, -1, 2);
    test_fill(d, cc, 96, -1, 1);
    for (int i = 0; i < c; i++)
        for (int j = 0; j < i; j++) d[i * c + j] = d[j * c + i];
    nst_tensor f, p, df[2], ones = mask_tensor(h, w, 1);
    CHECK(nst_tensor_alloc(be, h, w, c, dt, &f) == NST_OK && nst_tensor_alloc(be, h, w, c, dt, &p) == NST_OK, "tensors");
    CHECK(nst_tensor_alloc(be, h, w, c, dt, &df[0]) == NST_OK && nst_tensor_alloc(be, h, w, c, dt, &df[1]) == NST_OK, "tensors");
    be->ops->upload(be, f.data, v, n, dt);
    test_fill(v, n, 97, -1, 2);
    be->ops->upload(be, p.data, v, n, dt);
    const char *dn = dt == NST_BF16 ? "bf16" : "fp32";
    for (int op = 0; op < 3; op++) {
        for (int k = 0; k < 2; k++) {
            const nst_tensor *m = k ? &ones : NULL;
            nst_xsum_zero(&s[k]);
            be->ops->upload(be, df[k].data, v, n, dt);
            nst_status st = op == 0   ? be->ops->gram_accumulate(be, &f, r, m, g[k])
                            : op == 1 ? be->ops->gram_backward(be, &f, r, m, d, 0.75f, &df[k])
                                      : be->ops->mse(be, &f, &p, r, r, m, 0.75f, &s[k], &df[k]);
            CHECK(st == NST_OK, "%s", nst_fail_message());
            be->ops->download(be, o[k], df[k].data, n, dt);
        }
        int differ = 0;
        for (size_t i = 0; i < n; i++) differ += memcmp(&o[0][i], &o[1][i], sizeof(float)) != 0;
        if (op == 0) differ = memcmp(g[0], g[1], cc * sizeof(double)) != 0;
        if (op == 2) differ += nst_xsum_value(&s[0]) != nst_xsum_value(&s[1]);
        CHECK(differ == 0, "%s %s region %dx%d+%d+%d: a mask of ones differs from none (%d values)", dn,
              op == 0 ? "gram_accumulate" : op == 1 ? "gram_backward" : "mse", r.w, r.h, r.x, r.y, differ);
    }
    nst_tensor_free(be, &f), nst_tensor_free(be, &p), nst_tensor_free(be, &df[0]), nst_tensor_free(be, &df[1]);
    nst_tensor_free(be, &ones);
    nst_free(v), nst_free(d), nst_free(o[0]), nst_free(o[1]), nst_free(g[0]), nst_free(g[1]);
}

static void t_mask_of_ones_is_no_mask(void)
{
    const int h = 13, w = 17, cs[] = {3, 64, 77};
    const nst_rect regions[] = {{0, 0, w, h}, {0, 2, w, 7}, {3, 1, 9, 10}};
    for (int bf = 0; bf < 2; bf++)
        for (int k = 0; k < 3; k++)
            for (int r = 0; r < 3; r++) ones_vs_none(bf ? NST_BF16 : NST_F32, h, w, cs[k], regions[r]);
}

/* a mask of another height or width, more than one channel, or not fp32: every op refuses it */
static void t_bad_masks_are_refused(void)
{
    const int h = 4, w = 5, c = 3;
    nst_tensor f = tens(h, w, c), p = tens(h, w, c), df = tens(h, w, c), bad[4];
    bad[0] = tens(h, w + 1, 1), bad[1] = tens(h - 1, w, 1), bad[2] = tens(h, w, 2);
    CHECK(nst_tensor_alloc(be, h, w, 1, NST_BF16, &bad[3]) == NST_OK, "tensor");
    float d[9] = {0};
    double g[9] = {0};
    nst_xsum s;
    nst_xsum_zero(&s);
    nst_rect all = nst_tensor_rect(&f);
    const char *what[] = {"wider", "shorter", "2 channels", "bf16"};
    for (int k = 0; k < 4; k++) {
        CHECK(be->ops->gram_accumulate(be, &f, all, &bad[k], g) != NST_OK, "gram_accumulate takes a %s mask", what[k]);
        CHECK(be->ops->gram_backward(be, &f, all, &bad[k], d, 1.f, &df) != NST_OK, "gram_backward takes a %s mask", what[k]);
        CHECK(be->ops->mse(be, &f, &p, all, all, &bad[k], 1.f, &s, &df) != NST_OK, "mse takes a %s mask", what[k]);
        CHECK(be->ops->mse(be, &f, &p, all, all, &bad[k], 1.f, &s, NULL) != NST_OK, "mse (no gradient) takes a %s mask", what[k]);
        nst_tensor_free(be, &bad[k]);
    }
    nst_tensor_free(be, &f), nst_tensor_free(be, &p), nst_tensor_free(be, &df);
}

/* ---- Adam and reductions ----------------------------------------------------------------------- */

static void t_adam_matches_the_formula(void)
{
    const size_t n = 1000;
    float *x = buf(n), *g = buf(n), *m = buf(n), *v = buf(n);
    double *rx = nst_alloc_array(n, sizeof(double), "t"), *rm = nst_alloc_array(n, sizeof(double), "t"),
           *rv = nst_alloc_array(n, sizeof(double), "t");
    test_fill(x, n, 17, 0, 1);
    for (size_t i = 0; i < n; i++) rx[i] = x[i], rm[i] = rv[i] = m[i] = v[i] = 0;
    nst_adam_params p = {0.05f, 0.9f, 0.999f, 1e-8f, 0, 1};
    for (int t = 1; t <= 5; t++) {
        test_fill(g, n, 18 + t, -1, 1);
        p.t = t;
        be->ops->adam(be, x, g, m, v, n, &p, NULL);
        for (size_t i = 0; i < n; i++) {
            rm[i] = 0.9 * rm[i] + 0.1 * g[i];
            rv[i] = 0.999 * rv[i] + 0.001 * (double)g[i] * g[i];
            double mh = rm[i] / (1 - pow(0.9, t)), vh = rv[i] / (1 - pow(0.999, t));
            rx[i] -= 0.05 * mh / (sqrt(vh) + 1e-8);
            rx[i] = rx[i] < 0 ? 0 : rx[i] > 1 ? 1 : rx[i];
        }
    }
    double worst = 0;
    for (size_t i = 0; i < n; i++) worst = fmax(worst, fabs(x[i] - rx[i]));
    CHECK(worst <= 1e-5, "adam: max |diff| %.3g", worst);
    nst_free(x), nst_free(g), nst_free(m), nst_free(v), nst_free(rx), nst_free(rm), nst_free(rv);
}

/* Adam with its step count in backend memory, ticked once a step (as a captured iteration replays
 * it), gives the bits of the steps given one by one */
static void t_adam_tick_is_the_step_given(void)
{
    const size_t n = 777;
    float *x1 = buf(n), *x2 = buf(n), *g = buf(n), *m1 = buf(n), *m2 = buf(n), *v1 = buf(n), *v2 = buf(n);
    test_fill(x1, n, 27, 0, 1);
    memcpy(x2, x1, n * sizeof *x1);
    memset(m1, 0, n * sizeof *m1), memset(m2, 0, n * sizeof *m2), memset(v1, 0, n * sizeof *v1), memset(v2, 0, n * sizeof *v2);
    nst_adam_params p = {0.05f, 0.9f, 0.999f, 1e-8f, 0, 1};
    nst_adam_step s = {2, 0, 0}; /* a level that starts after 2 steps */
    for (int t = 3; t <= 9; t++) {
        test_fill(g, n, 30 + t, -1, 1);
        p.t = t;
        be->ops->adam(be, x1, g, m1, v1, n, &p, NULL);
        p.t = -1; /* not read */
        be->ops->adam_tick(be, &p, &s);
        be->ops->adam(be, x2, g, m2, v2, n, &p, &s);
    }
    CHECK(s.t == 9, "ticked to step %g", s.t);
    CHECK(memcmp(x1, x2, n * sizeof *x1) == 0 && memcmp(m1, m2, n * sizeof *m1) == 0 && memcmp(v1, v2, n * sizeof *v1) == 0,
          "steps 3 to 9 ticked on the backend equal the steps given");
    nst_free(x1), nst_free(x2), nst_free(g), nst_free(m1), nst_free(m2), nst_free(v1), nst_free(v2);
}

static void t_reductions_are_exact_enough_and_thread_independent(void)
{
    const size_t n = 100003;
    float *a = buf(n), *b = buf(n);
    test_fill(a, n, 30, -1, 1);
    test_fill(b, n, 31, -1, 1);
    double d;
    nst_xsum x, x1;
    nst_xsum_zero(&x), nst_xsum_zero(&x1);
    be->ops->dot(be, a, b, n, &d);
    CHECK_NEAR(d, dotd(a, b, n), 1e-9, "dot");
    nst_tensor t = {1, (int)(n / 1), 1, NST_F32, a};
    be->ops->sumsq(be, &t, nst_tensor_rect(&t), &x);
    const double ss = nst_xsum_value(&x);
    CHECK_NEAR(ss, dotd(a, a, n), 1e-8, "sumsq");
    /* the same sums on one thread: bit-identical (dot: chunk partials added in order; sumsq exact) */
    int saved = omp_get_max_threads();
    omp_set_num_threads(1);
    double d1;
    be->ops->dot(be, a, b, n, &d1);
    be->ops->sumsq(be, &t, nst_tensor_rect(&t), &x1);
    const double ss1 = nst_xsum_value(&x1);
    omp_set_num_threads(saved);
    CHECK(d1 == d && ss1 == ss, "1 thread: dot %.17g vs %.17g, sumsq %.17g vs %.17g", d1, d, ss1, ss);
    nst_free(a), nst_free(b);
}

/* The Gram sums: the AVX-512 kernel, the AVX2 one, the portable one (NSTBATCH_CPU_KERNELS) and one
 * thread all give the same bits, in fp32 and bf16 (every entry is one sum in row order of exact
 * products). */
static void t_gram_sums_same_bits_on_every_path(void)
{
    const int h = 23, w = 37, cs[] = {3, 64, 77};
    for (int k = 0; k < 3; k++)
        for (int bf = 0; bf < 2; bf++) {
            int c = cs[k];
            size_t n = (size_t)h * w * c, cc = (size_t)c * c;
            float *v = buf(n);
            test_fill(v, n, 60 + k, 0, 3);
            nst_tensor f;
            double *g[NPATHS + 1];
            CHECK(nst_tensor_alloc(be, h, w, c, bf ? NST_BF16 : NST_F32, &f) == NST_OK, "tensor");
            be->ops->upload(be, f.data, v, n, f.dt);
            nst_rect r = nst_rect_make(2, 1, w - 5, h - 3);
            int saved = omp_get_max_threads();
            for (int path = 0; path <= NPATHS; path++) { /* every path, then the default on one thread */
                g[path] = calloc(cc, sizeof(double));
                set_path(path < NPATHS ? path : -1);
                if (path == NPATHS) omp_set_num_threads(1);
                be->ops->gram_accumulate(be, &f, r, NULL, g[path]);
            }
            set_path(-1);
            omp_set_num_threads(saved);
            for (int p = 1; p <= NPATHS; p++) {
                int diff = 0;
                for (int i = 0; i < c; i++)
                    for (int j = i; j < c; j++) diff += g[0][i * c + j] != g[p][i * c + j];
                CHECK(diff == 0, "c %d %s: %d upper-triangle entries differ between the %s path and %s", c, bf ? "bf16" : "fp32", diff,
                      path_names[0], p < NPATHS ? path_names[p] : "one thread");
            }
            for (int p = 0; p <= NPATHS; p++) free(g[p]);
            nst_tensor_free(be, &f);
            nst_free(v);
        }
}

static void t_axpby(void)
{
    const size_t n = 10007;
    float *x = buf(n), *y = buf(n), *y0 = buf(n);
    test_fill(x, n, 40, -1, 1);
    test_fill(y, n, 41, -1, 1);
    memcpy(y0, y, n * sizeof(float));
    be->ops->axpby(be, y, x, n, 0.75f, -2.5f);
    double worst = 0;
    for (size_t i = 0; i < n; i++) worst = fmax(worst, fabs(y[i] - (0.75 * x[i] - 2.5 * y0[i])));
    CHECK(worst <= 1e-6, "axpby: max |diff| %.3g", worst);
    for (size_t i = 0; i < n; i++) y[i] = NAN; /* b = 0: y's old values are not read */
    be->ops->axpby(be, y, x, n, -1.f, 0.f);
    int bad = 0;
    for (size_t i = 0; i < n; i++) bad += y[i] != -x[i];
    CHECK(bad == 0, "axpby with b = 0: %d values wrong", bad);
    be->ops->axpby(be, x, x, n, 0.f, 2.f); /* in place: x = 2x */
    bad = 0;
    for (size_t i = 0; i < n; i++) bad += x[i] != 2.f * -y[i];
    CHECK(bad == 0, "axpby in place: %d values wrong", bad);
    nst_free(x), nst_free(y), nst_free(y0);
}

int main(void)
{
    if (nst_backend_open("cpu", 0, &be) != NST_OK) {
        printf("cannot open the CPU backend: %s\n", nst_fail_message());
        return 1;
    }
    printf("test_ops: %s; own kernels: %s\n", be->description, cpu_isa_level_name(cpu_kernels_isa()));
    RUN(t_conv_forward_vs_naive);
    RUN(t_conv_backward_vs_naive_and_adjoint);
    RUN(t_conv_relu_finite_differences);
    RUN(t_pool_vs_naive_and_finite_differences);
    RUN(t_max_pool_routes_to_first_maximum);
    RUN(t_pool_backward_folds_relu);
    RUN(t_preprocess_and_adjoint);
    RUN(t_gram_regions_and_finite_differences);
    RUN(t_mse_and_tv_finite_differences_and_regions);
    RUN(t_adam_matches_the_formula);
    RUN(t_adam_tick_is_the_step_given);
    RUN(t_reductions_are_exact_enough_and_thread_independent);
    RUN(t_axpby);
    RUN(t_gram_sums_same_bits_on_every_path);
    RUN(t_masked_gram_vs_naive);
    RUN(t_masked_gram_backward_vs_naive_and_finite_differences);
    RUN(t_gram_backward_is_one_chain_on_every_path);
    RUN(t_gram_backward_rounds_special_values_on_every_path);
    RUN(t_masked_mse_vs_naive_and_finite_differences);
    RUN(t_mask_of_ones_is_no_mask);
    RUN(t_bad_masks_are_refused);
    nst_backend_close(be);
    return test_report("test_ops");
}

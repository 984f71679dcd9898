/* tests/test_cuda_ops.c: every op of the CUDA backend against the CPU backend (the reference), in
 * the manner of ggml's test-backend-ops: a table of shapes (1x1, odd sizes, image edges, regions
 * that are not whole rows, conv1_1's 3 channels), each in every precision (bf16 twice: bias+ReLU fused
 * into cuDNN's call and as a separate kernel), each with a tolerance
 * per op and precision. Inputs are made on the device first and read back, so both backends see
 * the same (rounded) values and the tolerance measures the op, not the input rounding.
 *
 * Without a usable GPU (CI, the development machine) every test SKIPs and says why. */
#include "../kernels/backend.h"
#include "../kernels/cuda/cuda.h"
#include "../util/mem.h"
#include "test.h"

static nst_backend *cpu, *dev;
static char skip_why[256];
static const char *prec_name;

/* max |got - ref| / max(max |ref|, floor): an error relative to the result's scale */
static double rel_err(const float *ref, const float *got, size_t n)
{
    double m = 0, d = 0;
    for (size_t i = 0; i < n; i++) {
        if (fabs(ref[i]) > m) m = fabs(ref[i]);
        double e = fabs((double)got[i] - ref[i]);
        if (e > d || e != e) d = e != e ? INFINITY : e;
    }
    return d / (m > 1e-30 ? m : 1e-30);
}

/* tolerances: [op class][precision fp32, tf32, bf16, fp16] */
enum { TOL_EXACT, TOL_CONV, TOL_GRAM, TOL_SUM };
static double tol(int kind)
{
    static const double t[4][4] = {
        {1e-6, 1e-6, 1e-2, 2e-3},  /* element ops: one rounding to the storage type */
        {2e-5, 4e-3, 2e-2, 4e-3},  /* convolutions: fp32 accumulation over 9 cin products */
        {2e-5, 4e-3, 2e-3, 2e-3},  /* Gram matrix and backward: fp32 accumulation */
        {1e-9, 1e-9, 1e-6, 1e-6},  /* double reductions of identical inputs */
    };
    int p = dev->precision == NST_PREC_FP32 ? 0 : dev->precision == NST_PREC_TF32 ? 1 : dev->precision == NST_PREC_BF16 ? 2 : 3;
    return t[kind][p];
}

static unsigned rng = 12345;
static float frand(float lo, float hi)
{
    rng = rng * 1664525u + 1013904223u;
    return lo + (hi - lo) * (float)(rng >> 8) / 16777216.f;
}

/* a tensor on both backends with the same values: random in [lo, hi], act: in the device's
 * activation dtype (else fp32) */
typedef struct {
    nst_tensor c, d;
    float *h;
} pair;

static int pair_make(pair *p, int h, int w, int c, int act, float lo, float hi)
{
    size_t n = (size_t)h * w * c;
    nst_dtype dt = act ? dev->act_dtype : NST_F32;
    p->h = nst_alloc_array(n ? n : 1, sizeof(float), "test");
    for (size_t i = 0; i < n; i++) p->h[i] = frand(lo, hi);
    if (nst_tensor_alloc(dev, h, w, c, dt, &p->d) != NST_OK || nst_tensor_alloc(cpu, h, w, c, NST_F32, &p->c) != NST_OK) return 0;
    if (n && (dev->ops->upload(dev, p->d.data, p->h, n, dt) != NST_OK || dev->ops->download(dev, p->h, p->d.data, n, dt) != NST_OK))
        return 0;
    return !n || cpu->ops->upload(cpu, p->c.data, p->h, n, NST_F32) == NST_OK;
}

static void pair_free(pair *p)
{
    nst_tensor_free(dev, &p->d);
    nst_tensor_free(cpu, &p->c);
    nst_free(p->h);
}

/* compare a pair's two sides after an op */
static double pair_err(pair *p)
{
    size_t n = nst_tensor_elems(&p->c);
    float *a = nst_alloc_array(n ? n : 1, sizeof(float), "test"), *b = nst_alloc_array(n ? n : 1, sizeof(float), "test");
    double e = 0;
    if (n && cpu->ops->download(cpu, a, p->c.data, n, NST_F32) == NST_OK && dev->ops->download(dev, b, p->d.data, n, p->d.dt) == NST_OK)
        e = rel_err(a, b, n);
    else if (n)
        e = INFINITY;
    nst_free(a), nst_free(b);
    return e;
}

#define NEED_GPU() \
    do {           \
        if (!dev) SKIP("%s", skip_why); \
    } while (0)
#define OK(call) CHECK((call) == NST_OK, "%s: %s", #call, nst_fail_message())
#define CMP(err, kind, ...)                                                                                        \
    do {                                                                                                           \
        double e_ = (err);                                                                                         \
        CHECK(e_ <= tol(kind), "%s: error %.3g > %.3g: ", prec_name, e_, tol(kind));                               \
        if (e_ > tol(kind)) printf(__VA_ARGS__), printf("\n");                                                     \
    } while (0)

static const int shapes[][2] = {{1, 1}, {3, 5}, {17, 13}, {32, 32}, {48, 33}};
#define NSHAPES (int)(sizeof shapes / sizeof *shapes)
static const int chans[][2] = {{3, 64}, {64, 64}, {24, 40}, {128, 96}};
#define NCHANS (int)(sizeof chans / sizeof *chans)

static void t_conv_forward_and_backward_data(void)
{
    NEED_GPU();
    for (int k = 0; k < NCHANS; k++)
        for (int s = 0; s < NSHAPES; s++) {
            int cin = chans[k][0], cout = chans[k][1], h = shapes[s][0], w = shapes[s][1];
            size_t nw = (size_t)cout * cin * 9;
            float *wt = nst_alloc_array(nw, sizeof(float), "w"), *b = nst_alloc_array((size_t)cout, sizeof(float), "b");
            float sc = 1.f / sqrtf(9.f * cin);
            for (size_t i = 0; i < nw; i++) wt[i] = frand(-sc, sc);
            for (int i = 0; i < cout; i++) b[i] = frand(-0.1f, 0.1f);
            /* the device holds its weights rounded: give the CPU the same */
            if (dev->act_dtype != NST_F32) {
                pair wr;
                CHECK(pair_make(&wr, 1, (int)nw, 1, 1, 0, 0), "tensors");
                /* (pair_make rounds what it made; round the weights the same way, scale aside) */
                OK(dev->ops->upload(dev, wr.d.data, wt, nw, dev->act_dtype));
                OK(dev->ops->download(dev, wt, wr.d.data, nw, dev->act_dtype));
                pair_free(&wr);
            }
            nst_conv *cc = NULL, *dc = NULL;
            OK(cpu->ops->conv_create(cpu, cin, cout, wt, b, &cc));
            OK(dev->ops->conv_create(dev, cin, cout, wt, b, &dc));
            pair x, y, dy, dx;
            CHECK(pair_make(&x, h, w, cin, 1, -1, 1) && pair_make(&y, h, w, cout, 1, 0, 0) && pair_make(&dy, h, w, cout, 1, -1, 1) &&
                      pair_make(&dx, h, w, cin, 1, 0, 0),
                  "tensors: %s", nst_fail_message());
            for (int relu = 0; relu < 2 && cc && dc; relu++) {
                OK(cpu->ops->conv_forward(cpu, cc, &x.c, &y.c, relu));
                OK(dev->ops->conv_forward(dev, dc, &x.d, &y.d, relu));
                CMP(pair_err(&y), TOL_CONV, "conv_forward %d->%d %dx%d relu %d", cin, cout, h, w, relu);
            }
            if (cc && dc) {
                OK(cpu->ops->conv_backward_data(cpu, cc, &dy.c, &dx.c));
                OK(dev->ops->conv_backward_data(dev, dc, &dy.d, &dx.d));
                CMP(pair_err(&dx), TOL_CONV, "conv_backward_data %d->%d %dx%d", cin, cout, h, w);
            }
            pair_free(&x), pair_free(&y), pair_free(&dy), pair_free(&dx);
            if (cc) cpu->ops->conv_destroy(cpu, cc);
            if (dc) dev->ops->conv_destroy(dev, dc);
            nst_free(wt), nst_free(b);
        }
}

static void t_relu_pool_preprocess(void)
{
    NEED_GPU();
    nst_preproc pre = {1, 255.f, {103.939f, 116.779f, 123.68f}, {1, 1, 1}};
    for (int s = 0; s < NSHAPES; s++) {
        int h = shapes[s][0], w = shapes[s][1], c = 19;
        pair y, g;
        CHECK(pair_make(&y, h, w, c, 1, -1, 1) && pair_make(&g, h, w, c, 1, -1, 1), "tensors");
        OK(cpu->ops->relu_backward(cpu, &y.c, &g.c));
        OK(dev->ops->relu_backward(dev, &y.d, &g.d));
        CMP(pair_err(&g), TOL_EXACT, "relu_backward %dx%d", h, w);
        for (int kind = 0; kind < 2; kind++) {
            pair x, py, pdy, pdx;
            CHECK(pair_make(&x, h, w, c, 1, -1, 1) && pair_make(&py, h / 2, w / 2, c, 1, 0, 0) && pair_make(&pdy, h / 2, w / 2, c, 1, -1, 1) &&
                      pair_make(&pdx, h, w, c, 1, 0, 0),
                  "tensors");
            nst_pool_kind pk = kind ? NST_POOL_AVG : NST_POOL_MAX;
            OK(cpu->ops->pool_forward(cpu, pk, &x.c, &py.c));
            OK(dev->ops->pool_forward(dev, pk, &x.d, &py.d));
            CMP(pair_err(&py), TOL_EXACT, "pool_forward %s %dx%d", kind ? "avg" : "max", h, w);
            OK(cpu->ops->pool_backward(cpu, pk, &x.c, &py.c, &pdy.c, &pdx.c));
            OK(dev->ops->pool_backward(dev, pk, &x.d, &py.d, &pdy.d, &pdx.d));
            CMP(pair_err(&pdx), TOL_EXACT, "pool_backward %s %dx%d", kind ? "avg" : "max", h, w);
            pair_free(&x), pair_free(&py), pair_free(&pdy), pair_free(&pdx);
        }
        pair img, x, dx, dimg;
        CHECK(pair_make(&img, h, w, 3, 0, 0, 1) && pair_make(&x, h, w, 3, 1, 0, 0) && pair_make(&dx, h, w, 3, 1, -1, 1) &&
                  pair_make(&dimg, h, w, 3, 0, 0, 0),
              "tensors");
        OK(cpu->ops->preprocess(cpu, &pre, &img.c, &x.c));
        OK(dev->ops->preprocess(dev, &pre, &img.d, &x.d));
        CMP(pair_err(&x), TOL_EXACT, "preprocess %dx%d", h, w);
        OK(cpu->ops->preprocess_backward(cpu, &pre, &dx.c, &dimg.c));
        OK(dev->ops->preprocess_backward(dev, &pre, &dx.d, &dimg.d));
        CMP(pair_err(&dimg), TOL_EXACT, "preprocess_backward %dx%d", h, w);
        pair_free(&y), pair_free(&g), pair_free(&img), pair_free(&x), pair_free(&dx), pair_free(&dimg);
    }
}

/* regions: whole, whole rows, an interior block, a one-pixel corner, empty */
static int regions(int h, int w, nst_rect *r)
{
    int n = 0;
    r[n++] = nst_rect_make(0, 0, w, h);
    if (h > 2) r[n++] = nst_rect_make(0, 1, w, h - 2);
    if (h > 4 && w > 4) r[n++] = nst_rect_make(1, 2, w - 3, h - 4);
    r[n++] = nst_rect_make(w - 1, h - 1, 1, 1);
    r[n++] = nst_rect_make(0, 0, 0, 0);
    return n;
}

static void t_gram(void)
{
    NEED_GPU();
    const int cs[] = {3, 64, 77};
    for (int ci = 0; ci < 3; ci++)
        for (int s = 0; s < NSHAPES; s++) {
            int h = shapes[s][0], w = shapes[s][1], c = cs[ci];
            size_t cc = (size_t)c * c;
            pair f;
            CHECK(pair_make(&f, h, w, c, 1, 0, 2), "tensors");
            nst_rect r[5];
            int nr = regions(h, w, r);
            double *gc = NULL, *gd = NULL;
            float *a = NULL, *dc = NULL, *dd = NULL;
            double *dprev = NULL;
            double *hc = nst_alloc_array(cc, sizeof(double), "g"), *hd = nst_alloc_array(cc, sizeof(double), "g");
            float *ha = nst_alloc_array(cc, sizeof(float), "a"), *o1 = nst_alloc_array(cc, sizeof(float), "d"),
                  *o2 = nst_alloc_array(cc, sizeof(float), "d");
            OK(cpu->ops->alloc(cpu, cc * 8, (void **)&gc));
            OK(dev->ops->alloc(dev, cc * 8, (void **)&gd));
            OK(dev->ops->alloc(dev, cc * 8, (void **)&dprev));
            OK(cpu->ops->alloc(cpu, cc * 4, (void **)&a));
            OK(cpu->ops->alloc(cpu, cc * 4, (void **)&dc));
            OK(dev->ops->alloc(dev, cc * 4, (void **)&dd));
            for (int k = 0; k < nr; k++) {
                OK(cpu->ops->zero(cpu, gc, cc * 8));
                OK(dev->ops->zero(dev, gd, cc * 8));
                OK(cpu->ops->gram_accumulate(cpu, &f.c, r[k], gc));
                OK(dev->ops->gram_accumulate(dev, &f.d, r[k], gd));
                OK(dev->ops->gram_accumulate(dev, &f.d, r[k], gd)); /* twice: it accumulates */
                OK(cpu->ops->read(cpu, hc, gc, cc * 8));
                OK(dev->ops->read(dev, hd, gd, cc * 8));
                double m = 0, e = 0;
                for (int i = 0; i < c; i++)
                    for (int j = i; j < c; j++) { /* the upper triangle is the contract */
                        size_t u = (size_t)i * c + j;
                        if (fabs(hc[u]) > m) m = fabs(hc[u]);
                        if (fabs(hd[u] / 2 - hc[u]) > e) e = fabs(hd[u] / 2 - hc[u]);
                    }
                CMP(m > 0 ? e / m : e, TOL_GRAM, "gram_accumulate c %d %dx%d region %dx%d+%d+%d", c, h, w, r[k].w, r[k].h, r[k].x, r[k].y);
            }
            /* gram_diff on the same sums and target, with and without the lagged extrapolation */
            for (size_t i = 0; i < cc; i++) hc[i] = frand(0, 100), ha[i] = frand(0, 1);
            double ssc = 0, ssd = 0;
            OK(cpu->ops->write(cpu, gc, hc, cc * 8));
            OK(dev->ops->write(dev, gd, hc, cc * 8));
            OK(cpu->ops->write(cpu, a, ha, cc * 4));
            float *ad = NULL;
            OK(dev->ops->alloc(dev, cc * 4, (void **)&ad));
            OK(dev->ops->write(dev, ad, ha, cc * 4));
            for (int lag = 0; lag < 2; lag++) {
                for (size_t i = 0; i < cc; i++) hd[i] = hc[i] * 0.9;
                double *pc = NULL;
                if (lag) {
                    OK(dev->ops->write(dev, dprev, hd, cc * 8));
                    OK(cpu->ops->alloc(cpu, cc * 8, (void **)&pc));
                    OK(cpu->ops->write(cpu, pc, hd, cc * 8));
                }
                OK(cpu->ops->gram_diff(cpu, gc, pc, 1.0 / 37, a, c, dc, &ssc));
                OK(dev->ops->gram_diff(dev, gd, lag ? dprev : NULL, 1.0 / 37, ad, c, dd, &ssd));
                OK(cpu->ops->read(cpu, o1, dc, cc * 4));
                OK(dev->ops->read(dev, o2, dd, cc * 4));
                CMP(rel_err(o1, o2, cc), TOL_EXACT, "gram_diff c %d lag %d", c, lag);
                CMP(fabs(ssd - ssc) / (ssc > 0 ? ssc : 1), TOL_SUM, "gram_diff sum c %d lag %d", c, lag);
                if (pc) cpu->ops->free(cpu, pc);
            }
            /* gram_backward into a gradient that already holds values, over each region */
            for (int k = 0; k < nr; k++) {
                pair df;
                CHECK(pair_make(&df, h, w, c, 1, -1, 1), "tensors");
                for (size_t i = 0; i < cc; i++) o1[i] = frand(-1, 1);
                for (int i = 0; i < c; i++) /* symmetric */
                    for (int j = 0; j < i; j++) o1[(size_t)i * c + j] = o1[(size_t)j * c + i];
                OK(cpu->ops->write(cpu, dc, o1, cc * 4));
                OK(dev->ops->write(dev, dd, o1, cc * 4));
                OK(cpu->ops->gram_backward(cpu, &f.c, r[k], dc, 0.25f, &df.c));
                OK(dev->ops->gram_backward(dev, &f.d, r[k], dd, 0.25f, &df.d));
                CMP(pair_err(&df), TOL_GRAM, "gram_backward c %d %dx%d region %dx%d+%d+%d", c, h, w, r[k].w, r[k].h, r[k].x, r[k].y);
                pair_free(&df);
            }
            cpu->ops->free(cpu, gc), cpu->ops->free(cpu, a), cpu->ops->free(cpu, dc);
            dev->ops->free(dev, gd), dev->ops->free(dev, dd), dev->ops->free(dev, dprev), dev->ops->free(dev, ad);
            nst_free(hc), nst_free(hd), nst_free(ha), nst_free(o1), nst_free(o2);
            pair_free(&f);
        }
}

static void t_losses_and_reductions(void)
{
    NEED_GPU();
    for (int s = 0; s < NSHAPES; s++) {
        int h = shapes[s][0], w = shapes[s][1];
        nst_rect r[5];
        int nr = regions(h, w, r);
        for (int k = 0; k < nr; k++) {
            nst_rect own = r[k], seed = r[(k + 1) % nr];
            pair f, p, df, img, dimg;
            CHECK(pair_make(&f, h, w, 21, 1, -1, 1) && pair_make(&p, h, w, 21, 1, -1, 1) && pair_make(&df, h, w, 21, 1, -1, 1) &&
                      pair_make(&img, h, w, 3, 0, 0, 1) && pair_make(&dimg, h, w, 3, 0, -1, 1),
                  "tensors");
            double a = 0, b = 0;
            OK(cpu->ops->mse(cpu, &f.c, &p.c, own, seed, 0.5f, &a, &df.c));
            OK(dev->ops->mse(dev, &f.d, &p.d, own, seed, 0.5f, &b, &df.d));
            CMP(fabs(a - b) / (a > 0 ? a : 1), TOL_SUM, "mse sum %dx%d", h, w);
            CMP(pair_err(&df), TOL_EXACT, "mse gradient %dx%d", h, w);
            OK(cpu->ops->tv(cpu, &img.c, own, seed, 0.3f, &a, &dimg.c));
            OK(dev->ops->tv(dev, &img.d, own, seed, 0.3f, &b, &dimg.d));
            CMP(fabs(a - b) / (a > 0 ? a : 1), TOL_SUM, "tv sum %dx%d", h, w);
            CMP(pair_err(&dimg), TOL_EXACT, "tv gradient %dx%d", h, w);
            OK(cpu->ops->sumsq(cpu, &f.c, own, &a));
            OK(dev->ops->sumsq(dev, &f.d, own, &b));
            CMP(fabs(a - b) / (a > 0 ? a : 1), TOL_SUM, "sumsq %dx%d", h, w);
            /* rectangles: copy, download, upload */
            pair dst;
            CHECK(pair_make(&dst, h, w, 3, 0, 0, 0), "tensors");
            OK(cpu->ops->copy_rect(cpu, &img.c, own, &dst.c, 0, 0));
            OK(dev->ops->copy_rect(dev, &img.d, own, &dst.d, 0, 0));
            CMP(pair_err(&dst), TOL_EXACT, "copy_rect %dx%d", h, w);
            size_t n = (size_t)nst_rect_area(own) * 3;
            float *h1 = nst_alloc_array(n + 1, sizeof(float), "r"), *h2 = nst_alloc_array(n + 1, sizeof(float), "r");
            OK(cpu->ops->download_rect(cpu, &img.c, own, h1));
            OK(dev->ops->download_rect(dev, &img.d, own, h2));
            CMP(rel_err(h1, h2, n), TOL_EXACT, "download_rect %dx%d", h, w);
            for (size_t i = 0; i < n; i++) h1[i] = frand(0, 1);
            OK(cpu->ops->upload_rect(cpu, h1, &dst.c, own));
            OK(dev->ops->upload_rect(dev, h1, &dst.d, own));
            CMP(pair_err(&dst), TOL_EXACT, "upload_rect %dx%d", h, w);
            nst_free(h1), nst_free(h2);
            pair_free(&f), pair_free(&p), pair_free(&df), pair_free(&img), pair_free(&dimg), pair_free(&dst);
        }
    }
}

static void t_optimiser_ops(void)
{
    NEED_GPU();
    const size_t sizes[] = {1, 1000, 262147, 5000011};
    for (int k = 0; k < 4; k++) {
        size_t n = sizes[k];
        pair x, g, m, v, y;
        CHECK(pair_make(&x, 1, (int)n, 1, 0, 0, 1) && pair_make(&g, 1, (int)n, 1, 0, -1, 1) && pair_make(&m, 1, (int)n, 1, 0, -0.1f, 0.1f) &&
                  pair_make(&v, 1, (int)n, 1, 0, 0, 0.01f) && pair_make(&y, 1, (int)n, 1, 0, -1, 1),
              "tensors");
        double a = 0, b = 0;
        OK(cpu->ops->dot(cpu, g.c.data, y.c.data, n, &a));
        OK(dev->ops->dot(dev, g.d.data, y.d.data, n, &b));
        CMP(fabs(a - b) / (fabs(a) > 1 ? fabs(a) : 1), TOL_SUM, "dot n %zu", n);
        OK(cpu->ops->axpby(cpu, y.c.data, g.c.data, n, 0.5f, -2.f));
        OK(dev->ops->axpby(dev, y.d.data, g.d.data, n, 0.5f, -2.f));
        CMP(pair_err(&y), TOL_CONV, "axpby n %zu", n); /* the GPU may fuse a multiply-add */
        nst_adam_params ap = {0.02f, 0.9f, 0.999f, 1e-8f, 7, 1};
        OK(cpu->ops->adam(cpu, x.c.data, g.c.data, m.c.data, v.c.data, n, &ap));
        OK(dev->ops->adam(dev, x.d.data, g.d.data, m.d.data, v.d.data, n, &ap));
        CMP(pair_err(&x), TOL_CONV, "adam x n %zu", n); /* sqrt and division: a few ulp */
        CMP(pair_err(&m), TOL_CONV, "adam m n %zu", n);
        CMP(pair_err(&v), TOL_CONV, "adam v n %zu", n);
        pair_free(&x), pair_free(&g), pair_free(&m), pair_free(&v), pair_free(&y);
    }
}

static void t_reductions_repeat_exactly(void)
{
    NEED_GPU();
    pair a;
    size_t n = 3000017;
    CHECK(pair_make(&a, 1, (int)n, 1, 0, -1, 1), "tensors");
    double r0 = 0, r1 = 1;
    OK(dev->ops->dot(dev, a.d.data, a.d.data, n, &r0));
    OK(dev->ops->dot(dev, a.d.data, a.d.data, n, &r1));
    CHECK(r0 == r1, "dot twice: %.17g then %.17g", r0, r1);
    pair_free(&a);
}

int main(void)
{
    if (nst_backend_open("cpu", 0, &cpu) != NST_OK) {
        printf("cannot open the CPU backend: %s\n", nst_fail_message());
        return 1;
    }
    int ngpu = nst_cuda_probe(skip_why, sizeof skip_why);
    if (ngpu > 0 && !nst_cuda_has_ops()) snprintf(skip_why, sizeof skip_why, "this build has no CUDA backend");
    /* every precision with bias+ReLU fused into cuDNN's call, and bf16 once more without */
    const nst_precision precs[] = {NST_PREC_FP32, NST_PREC_TF32, NST_PREC_BF16, NST_PREC_FP16, NST_PREC_BF16};
    const int fused[] = {1, 1, 1, 1, 0};
    int passes = ngpu > 0 && nst_cuda_has_ops() ? 5 : 1;
    for (int i = 0; i < passes; i++) {
        dev = NULL;
        static char name[32];
        snprintf(name, sizeof name, "%s%s", nst_precision_name(precs[i]), fused[i] ? "" : " unfused");
        prec_name = name;
        setenv("NSTBATCH_CUDA_FUSE", fused[i] ? "1" : "0", 1);
        if (passes > 1) {
            nst_backend_options o = {"cuda", 0, precs[i], 0, 1, 2.0};
            if (nst_backend_open_with(&o, &dev) != NST_OK) {
                printf("cannot open the CUDA backend (%s): %s\n", prec_name, nst_fail_message());
                return 1;
            }
            printf("test_cuda_ops: %s against %s\n", dev->description, cpu->description);
        }
        RUN(t_conv_forward_and_backward_data);
        RUN(t_relu_pool_preprocess);
        RUN(t_gram);
        RUN(t_losses_and_reductions);
        RUN(t_optimiser_ops);
        RUN(t_reductions_repeat_exactly);
        if (dev) {
            CHECK(dev->ops->synchronize(dev) == NST_OK, "the stream ends clean: %s", nst_fail_message());
            nst_backend_close(dev);
        }
    }
    nst_backend_close(cpu);
    return test_report("test_backend_ops");
}

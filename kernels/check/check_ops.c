/* kernels/check/check_ops.c: the op groups of the harness (see check.h): convolutions (conv1_1
 * from the image against the backend's own ops in turn, where it has that path); ReLU,
 * pooling and preprocessing; losses (the content loss with a mask too) and rectangles; the
 * optimiser's ops and repeatable reductions. The Gram ops are in check_gram.c, the tiling's
 * contracts (windows against the whole) in check_contracts.c. */
#include <math.h>
#include <string.h>

#include "../../util/mem.h"
#include "check_impl.h"

static const int chans[][2] = {{3, 64}, {64, 64}, {24, 40}, {128, 96}};
#define NCHANS(c) ((c)->quick ? 2 : (int)(sizeof chans / sizeof *chans))

/* The device's tensors of one shape and dtype, and their values read back (NULL on failure) */
static float *read_back(nst_backend *D, const nst_tensor *t)
{
    const size_t n = nst_tensor_elems(t);
    float *h = nst_alloc_array(n ? n : 1, sizeof(float), "a tensor read back");
    if (h && D->ops->download(D, h, t->data, n, t->dt) != NST_OK) nst_free(h), h = NULL;
    return h;
}

/* Two device tensors of one shape and dtype compared byte for byte (a zero's sign and a NaN's
 * payload too): 0 when equal, else their error (ck_same_err_f, or 1 where the values compare equal
 * as floats); infinite where either cannot be read */
static double same_on_device(nst_backend *D, const nst_tensor *a, const nst_tensor *b)
{
    const size_t bytes = nst_tensor_elems(a) * nst_dtype_size(a->dt);
    unsigned char *ra = nst_alloc_array(bytes ? bytes : 1, 1, "a tensor's bytes"), *rb = nst_alloc_array(bytes ? bytes : 1, 1, "a tensor's bytes");
    double e = INFINITY;
    if (ra && rb && D->ops->read(D, ra, a->data, bytes) == NST_OK && D->ops->read(D, rb, b->data, bytes) == NST_OK) e = memcmp(ra, rb, bytes) ? -1 : 0;
    nst_free(ra), nst_free(rb);
    if (e < 0) { /* they differ: by how much */
        float *x = read_back(D, a), *y = read_back(D, b);
        e = x && y ? ck_same_err_f(x, y, nst_tensor_elems(a)) : INFINITY;
        if (e == 0) e = 1;
        nst_free(x), nst_free(y);
    }
    return e;
}

/* conv1_1 straight from the image (kernels/backend.h: conv_forward_image), where the backend under
 * test takes it: the bits of its own preprocessing and conv ops in turn, forward (with ReLU) and
 * backward, on a BGR mapping with unequal scales */
static void image_case(nst_check *c, nst_conv *cd, int cout, int h, int w)
{
    nst_backend *D = c->dev;
    if (!D->ops->conv_reads_image || !D->ops->conv_reads_image(D, cd)) return;
    const nst_preproc pre = {1, 255.f, {103.939f, 116.779f, 123.68f}, {57.4f, 57.1f, 58.4f}};
    ck_pair img, dy;
    nst_tensor x = {0}, y0 = {0}, y1 = {0}, d0 = {0}, d1 = {0};
    const char *op = "conv_forward_image";
    if (!ck_pair_make(c, &img, h, w, 3, 0, 0, 1)) return;
    if (!ck_pair_make(c, &dy, h, w, cout, 1, -1, 1)) goto out;
    nst_status s = nst_tensor_alloc(D, h, w, 3, D->in_dtype, &x);
    if (s == NST_OK) s = nst_tensor_alloc(D, h, w, cout, D->act_dtype, &y0);
    if (s == NST_OK) s = nst_tensor_alloc(D, h, w, cout, D->act_dtype, &y1);
    if (s == NST_OK) s = nst_tensor_alloc(D, h, w, 3, NST_F32, &d0);
    if (s == NST_OK) s = nst_tensor_alloc(D, h, w, 3, NST_F32, &d1);
    if (s == NST_OK) s = D->ops->preprocess(D, &pre, &img.d, &x);
    if (s == NST_OK) s = D->ops->conv_forward(D, cd, &x, &y0, 1);
    if (ck_ran(c, op, NST_OK, s != NST_OK ? s : D->ops->conv_forward_image(D, cd, &pre, &img.d, &y1, 1)))
        ck_record(c, op, NST_TOL_EXACT, 1, same_on_device(D, &y0, &y1), "3->%d %dx%d, against preprocess and conv_forward", cout, h, w);
    op = "conv_backward_image";
    s = D->ops->conv_backward_data(D, cd, &dy.d, &x);
    if (s == NST_OK) s = D->ops->preprocess_backward(D, &pre, &x, &d0);
    if (ck_ran(c, op, NST_OK, s != NST_OK ? s : D->ops->conv_backward_image(D, cd, &pre, &dy.d, &d1)))
        ck_record(c, op, NST_TOL_EXACT, 1, same_on_device(D, &d0, &d1), "3->%d %dx%d, against conv_backward_data and preprocess_backward", cout,
                  h, w);
    nst_tensor_free(D, &x), nst_tensor_free(D, &y0), nst_tensor_free(D, &y1), nst_tensor_free(D, &d0), nst_tensor_free(D, &d1);
    ck_pair_free(c, &dy);
out:
    ck_pair_free(c, &img);
}

/* one conv layer on both backends, forward (with and without ReLU) and backward-data */
static void conv_case(nst_check *c, int cin, int cout, int h, int w)
{
    nst_backend *R = c->ref, *D = c->dev;
    size_t nw = (size_t)cout * cin * 9;
    float *wt = nst_alloc_array(nw, sizeof(float), "w"), *b = nst_alloc_array((size_t)cout, sizeof(float), "b");
    nst_conv *cr = NULL, *cd = NULL;
    ck_pair x, y, dy, dx;
    const char *op = "conv_create";
    if (!wt || !b) goto out;
    float sc = 1.f / sqrtf(9.f * cin);
    for (size_t i = 0; i < nw; i++) wt[i] = ck_rand(c, -sc, sc);
    for (int i = 0; i < cout; i++) b[i] = ck_rand(c, -0.1f, 0.1f);
    if (!ck_round_host(c, wt, nw)) goto out; /* the device holds its weights rounded: the reference too */
    if (!BOTH(c, R->ops->conv_create(R, cin, cout, wt, b, &cr), D->ops->conv_create(D, cin, cout, wt, b, &cd))) goto out;
    /* conv1_1 (3 channels) reads the network input, which a backend may keep wider (in_dtype) */
    nst_dtype idt = cin == 3 ? c->dev->in_dtype : c->dev->act_dtype;
    if (!ck_pair_make_dt(c, &x, h, w, cin, idt, -1, 1)) goto out;
    if (ck_pair_make(c, &y, h, w, cout, 1, 0, 0)) {
        for (int relu = 0; relu < 2; relu++) {
            op = relu ? "conv_forward relu" : "conv_forward";
            if (BOTH(c, R->ops->conv_forward(R, cr, &x.r, &y.r, relu), D->ops->conv_forward(D, cd, &x.d, &y.d, relu)))
                ck_record(c, op, NST_TOL_CONV, 9.0 * cin, ck_pair_err(c, &y), "%d->%d %dx%d", cin, cout, h, w);
        }
        ck_pair_free(c, &y);
    }
    if (ck_pair_make(c, &dy, h, w, cout, 1, -1, 1)) {
        if (ck_pair_make_dt(c, &dx, h, w, cin, idt, 0, 0)) {
            op = "conv_backward_data";
            if (BOTH(c, R->ops->conv_backward_data(R, cr, &dy.r, &dx.r), D->ops->conv_backward_data(D, cd, &dy.d, &dx.d)))
                ck_record(c, op, NST_TOL_CONV, 9.0 * cout, ck_pair_err(c, &dx), "%d->%d %dx%d", cin, cout, h, w);
            ck_pair_free(c, &dx);
        }
        ck_pair_free(c, &dy);
    }
    ck_pair_free(c, &x);
    if (cin == 3) image_case(c, cd, cout, h, w);
out:
    if (cr) R->ops->conv_destroy(R, cr);
    if (cd) D->ops->conv_destroy(D, cd);
    nst_free(wt), nst_free(b);
}

void ck_conv(nst_check *c)
{
    for (int k = 0; k < NCHANS(c); k++)
        for (int s = 0; s < NSHAPES(c); s++) conv_case(c, chans[k][0], chans[k][1], ck_shapes[s][0], ck_shapes[s][1]);
    /* taller than one band of an fp32 network input (conv_cpu.c: 8 MiB of fp32 output) */
    conv_case(c, 3, 64, 700, 48);
}

static void pool_case(nst_check *c, nst_pool_kind pk, int h, int w, int ch)
{
    nst_backend *R = c->ref, *D = c->dev;
    const char *kind = pk == NST_POOL_AVG ? "avg" : "max";
    ck_pair x, y, dy, dx;
    if (!ck_pair_make(c, &x, h, w, ch, 1, -1, 1)) return;
    if (ck_pair_make(c, &y, h / 2, w / 2, ch, 1, 0, 0)) {
        const char *op = pk == NST_POOL_AVG ? "pool_forward avg" : "pool_forward max";
        if (BOTH(c, R->ops->pool_forward(R, pk, &x.r, &y.r), D->ops->pool_forward(D, pk, &x.d, &y.d)))
            ck_record(c, op, NST_TOL_ELEMENT, 1, ck_pair_err(c, &y), "%s %dx%dx%d", kind, h, w, ch);
        if (ck_pair_make(c, &dy, h / 2, w / 2, ch, 1, -1, 1)) {
            if (ck_pair_make(c, &dx, h, w, ch, 1, 0, 0)) {
                for (int relu = 0; relu < 2; relu++) { /* and with the ReLU below folded in */
                    op = pk == NST_POOL_AVG ? (relu ? "pool_backward avg+relu" : "pool_backward avg")
                                            : (relu ? "pool_backward max+relu" : "pool_backward max");
                    if (BOTH(c, R->ops->pool_backward(R, pk, &x.r, &y.r, &dy.r, &dx.r, relu),
                             D->ops->pool_backward(D, pk, &x.d, &y.d, &dy.d, &dx.d, relu)))
                        ck_record(c, op, NST_TOL_ELEMENT, 1, ck_pair_err(c, &dx), "%s %dx%dx%d", kind, h, w, ch);
                }
                ck_pair_free(c, &dx);
            }
            ck_pair_free(c, &dy);
        }
        ck_pair_free(c, &y);
    }
    ck_pair_free(c, &x);
}

static void preprocess_case(nst_check *c, int h, int w)
{
    nst_backend *R = c->ref, *D = c->dev;
    const nst_preproc pre = {1, 255.f, {103.939f, 116.779f, 123.68f}, {1, 1, 1}};
    ck_pair img, x, dx, dimg;
    const char *op = "preprocess";
    if (!ck_pair_make(c, &img, h, w, 3, 0, 0, 1)) return;
    if (ck_pair_make_dt(c, &x, h, w, 3, c->dev->in_dtype, 0, 0)) {
        if (BOTH(c, R->ops->preprocess(R, &pre, &img.r, &x.r), D->ops->preprocess(D, &pre, &img.d, &x.d)))
            ck_record(c, op, NST_TOL_ELEMENT, 1, ck_pair_err(c, &x), "%dx%d", h, w);
        ck_pair_free(c, &x);
    }
    if (ck_pair_make_dt(c, &dx, h, w, 3, c->dev->in_dtype, -1, 1)) {
        if (ck_pair_make(c, &dimg, h, w, 3, 0, 0, 0)) {
            op = "preprocess_backward";
            if (BOTH(c, R->ops->preprocess_backward(R, &pre, &dx.r, &dimg.r), D->ops->preprocess_backward(D, &pre, &dx.d, &dimg.d)))
                ck_record(c, op, NST_TOL_ELEMENT, 1, ck_pair_err(c, &dimg), "%dx%d", h, w);
            ck_pair_free(c, &dimg);
        }
        ck_pair_free(c, &dx);
    }
    ck_pair_free(c, &img);
}

/* ReLU backward, pooling and the preprocessing; 19 channels and 24 (a multiple of 8: the GPU's
 * 8-channel element passes, kernels/cuda/vec8.cuh) */
void ck_eltwise(nst_check *c)
{
    nst_backend *R = c->ref, *D = c->dev;
    for (int s = 0; s < 2 * NSHAPES(c); s++) {
        int h = ck_shapes[s / 2][0], w = ck_shapes[s / 2][1], ch = s % 2 ? 24 : 19;
        ck_pair y, g;
        const char *op = "relu_backward";
        if (ck_pair_make(c, &y, h, w, ch, 1, -1, 1)) {
            if (ck_pair_make(c, &g, h, w, ch, 1, -1, 1)) {
                if (BOTH(c, R->ops->relu_backward(R, &y.r, &g.r), D->ops->relu_backward(D, &y.d, &g.d)))
                    ck_record(c, op, NST_TOL_ELEMENT, 1, ck_pair_err(c, &g), "%dx%dx%d", h, w, ch);
                ck_pair_free(c, &g);
            }
            ck_pair_free(c, &y);
        }
        pool_case(c, NST_POOL_MAX, h, w, ch);
        pool_case(c, NST_POOL_AVG, h, w, ch);
        if (ch == 19) preprocess_case(c, h, w);
    }
}


/* The queued transfers (backend.h), each followed by the one wait that makes it done */
static nst_status down_queued(nst_backend *be, const nst_tensor *t, nst_rect r, float *host)
{
    NST_TRY(be->ops->download_rect_queued(be, t, r, host));
    return be->ops->synchronize(be);
}

static nst_status up_queued(nst_backend *be, const float *host, nst_tensor *t, nst_rect r)
{
    NST_TRY(be->ops->upload_rect_queued(be, host, t, r));
    return be->ops->synchronize(be);
}

/* download_rect_queued and upload_rect_queued of rect own of s, through each backend's own host
 * memory (host_alloc: page-locked on a GPU, where the copies are truly queued) */
static void queued_case(nst_check *c, const ck_pair *s, ck_pair *dst, nst_rect own, size_t n)
{
    nst_backend *R = c->ref, *D = c->dev;
    const int h = s->r.h, w = s->r.w;
    float *h1 = NULL, *h2 = NULL;
    const char *op = "download_rect_queued";
    if (R->ops->host_alloc(R, (n + 1) * sizeof(float), (void **)&h1) != NST_OK || D->ops->host_alloc(D, (n + 1) * sizeof(float), (void **)&h2) != NST_OK) {
        ck_record(c, op, NST_TOL_ELEMENT, 1, INFINITY, "host_alloc of %zu floats failed", n);
    } else {
        if (BOTH(c, down_queued(R, &s->r, own, h1), down_queued(D, &s->d, own, h2)))
            ck_record(c, op, NST_TOL_ELEMENT, 1, ck_rel_err(h1, h2, n), "fp32 %dx%d region %dx%d+%d+%d", h, w, own.w, own.h, own.x, own.y);
        for (size_t i = 0; i < n; i++) h1[i] = h2[i] = ck_rand(c, 0, 1);
        op = "upload_rect_queued";
        if (BOTH(c, up_queued(R, h1, &dst->r, own), up_queued(D, h2, &dst->d, own)))
            ck_record(c, op, NST_TOL_ELEMENT, 1, ck_pair_err(c, dst), "fp32 %dx%d region %dx%d+%d+%d", h, w, own.w, own.h, own.x, own.y);
    }
    R->ops->host_free(R, h1), D->ops->host_free(D, h2);
}

/* Rectangle own of the fp32 image s: copied to another tensor, downloaded, uploaded, each way
 * queued too. (The host transfers take fp32 tensors, backend.h; activations only move tensor to
 * tensor.) */
static void rect_case(nst_check *c, const ck_pair *s, nst_rect own)
{
    nst_backend *R = c->ref, *D = c->dev;
    const int h = s->r.h, w = s->r.w;
    const char *op = "copy_rect";
    ck_pair dst;
    if (!ck_pair_make(c, &dst, h, w, s->r.c, 0, 0, 0)) return;
    if (BOTH(c, R->ops->copy_rect(R, &s->r, own, &dst.r, 0, 0), D->ops->copy_rect(D, &s->d, own, &dst.d, 0, 0)))
        ck_record(c, op, NST_TOL_ELEMENT, 1, ck_pair_err(c, &dst), "fp32 %dx%d", h, w);
    size_t n = (size_t)nst_rect_area(own) * s->r.c;
    float *h1 = nst_alloc_array(n + 1, sizeof(float), "r"), *h2 = nst_alloc_array(n + 1, sizeof(float), "r");
    op = "download_rect";
    if (h1 && h2 && BOTH(c, R->ops->download_rect(R, &s->r, own, h1), D->ops->download_rect(D, &s->d, own, h2)))
        ck_record(c, op, NST_TOL_ELEMENT, 1, ck_rel_err(h1, h2, n), "fp32 %dx%d region %dx%d+%d+%d", h, w, own.w, own.h, own.x, own.y);
    for (size_t i = 0; h1 && i < n; i++) h1[i] = ck_rand(c, 0, 1);
    op = "upload_rect";
    if (h1 && BOTH(c, R->ops->upload_rect(R, h1, &dst.r, own), D->ops->upload_rect(D, h1, &dst.d, own)))
        ck_record(c, op, NST_TOL_ELEMENT, 1, ck_pair_err(c, &dst), "fp32 %dx%d region %dx%d+%d+%d", h, w, own.w, own.h, own.x, own.y);
    nst_free(h1), nst_free(h2);
    queued_case(c, s, &dst, own, n);
    ck_pair_free(c, &dst);
}

/* Rectangles that are not whole rows and hold more than 2^24 values: the GPU moves them through
 * its scratch in pieces (bands of rows; runs of one row where a row alone is longer). */
static void large_rects(nst_check *c)
{
    ck_pair img;
    if (ck_pair_make(c, &img, 2400, 2400, 3, 0, 0, 1)) {
        rect_case(c, &img, nst_rect_make(1, 1, 2398, 2398));
        ck_pair_free(c, &img);
    }
    if (ck_pair_make(c, &img, 1, 6000000, 3, 0, 0, 1)) {
        rect_case(c, &img, nst_rect_make(1, 0, 5999998, 1));
        ck_pair_free(c, &img);
    }
}

/* An exact sum's value (kernels/xsum.h); the accumulator zeroed for the next call. */
static double take(nst_xsum *x)
{
    double v = nst_xsum_value(x);
    nst_xsum_zero(x);
    return v;
}

static void losses_case(nst_check *c, int h, int w, nst_rect own, nst_rect seed)
{
    nst_backend *R = c->ref, *D = c->dev;
    ck_pair f = {0}, p = {0}, df = {0}, img = {0}, dimg = {0};
    const char *op = "mse";
    int ok = ck_pair_make(c, &f, h, w, 21, 1, -1, 1);
    ok = ok && ck_pair_make(c, &p, h, w, 21, 1, -1, 1);
    ok = ok && ck_pair_make(c, &df, h, w, 21, 1, -1, 1);
    ok = ok && ck_pair_make(c, &img, h, w, 3, 0, 0, 1);
    ok = ok && ck_pair_make(c, &dimg, h, w, 3, 0, -1, 1);
    nst_xsum *xb = ok ? ck_dev_sum(c, 0) : NULL; /* the device's sums in its memory */
    if (ok && xb) {
        double a = 0, b = 0;
        nst_xsum xa;
        nst_xsum_zero(&xa);
        if (BOTH(c, R->ops->mse(R, &f.r, &p.r, own, seed, NULL, 0.5f, &xa, &df.r), D->ops->mse(D, &f.d, &p.d, own, seed, NULL, 0.5f, xb, &df.d))) {
            a = take(&xa), b = ck_dev_take(c, 0);
            ck_record(c, "mse sum", NST_TOL_SUM, 1, fabs(a - b) / (a > 0 ? a : 1), "%dx%d", h, w);
            ck_record(c, "mse gradient", NST_TOL_ELEMENT, 1, ck_pair_err(c, &df), "%dx%d", h, w);
        }
        op = "tv";
        if (BOTH(c, R->ops->tv(R, &img.r, own, seed, 0.3f, &xa, &dimg.r), D->ops->tv(D, &img.d, own, seed, 0.3f, xb, &dimg.d))) {
            a = take(&xa), b = ck_dev_take(c, 0);
            ck_record(c, "tv sum", NST_TOL_SUM, 1, fabs(a - b) / (a > 0 ? a : 1), "%dx%d", h, w);
            ck_record(c, "tv gradient", NST_TOL_F32_MATH, 1, ck_pair_err(c, &dimg), "%dx%d", h, w);
        }
        op = "sumsq";
        if (BOTH(c, R->ops->sumsq(R, &f.r, own, &xa), D->ops->sumsq(D, &f.d, own, xb))) {
            a = take(&xa), b = ck_dev_take(c, 0);
            ck_record(c, op, NST_TOL_SUM, 1, fabs(a - b) / (a > 0 ? a : 1), "%dx%d", h, w);
        }
    }
    ck_pair_free(c, &f), ck_pair_free(c, &p), ck_pair_free(c, &df), ck_pair_free(c, &dimg);
    if (!ok) {
        ck_pair_free(c, &img);
        return;
    }
    rect_case(c, &img, own);
    ck_pair_free(c, &img);
    ck_pair act, dst; /* activations between tensors */
    if (!ck_pair_make(c, &act, h, w, 5, 1, -1, 1)) return;
    op = "copy_rect";
    if (ck_pair_make(c, &dst, h, w, 5, 1, 0, 0)) {
        if (BOTH(c, R->ops->copy_rect(R, &act.r, own, &dst.r, 0, 0), D->ops->copy_rect(D, &act.d, own, &dst.d, 0, 0)))
            ck_record(c, op, NST_TOL_ELEMENT, 1, ck_pair_err(c, &dst), "activations %dx%d", h, w);
        ck_pair_free(c, &dst);
    }
    ck_pair_free(c, &act);
}

/* The content loss with a mask against the reference (its sum over own, its gradient over seed);
 * and with a mask of ones against none on the backend under test: the same bits. */
static void masked_mse_case(nst_check *c, int h, int w, nst_rect own, nst_rect seed)
{
    nst_backend *R = c->ref, *D = c->dev;
    ck_pair f = {0}, p = {0}, df = {0}, m = {0}, ones = {0};
    nst_tensor df1 = {0};
    const char *op = "mse masked";
    int ok = ck_pair_make(c, &f, h, w, 21, 1, -1, 1);
    ok = ok && ck_pair_make(c, &p, h, w, 21, 1, -1, 1);
    ok = ok && ck_pair_make(c, &df, h, w, 21, 1, -1, 1);
    ok = ok && ck_mask_make(c, &m, h, w, 0) && ck_mask_make(c, &ones, h, w, 1);
    const size_t n = (size_t)h * w * 21;
    float *o[2] = {nst_alloc_array(n + 1, sizeof(float), "df"), nst_alloc_array(n + 1, sizeof(float), "df")};
    double a = 0, b = 0;
    nst_xsum xa, *da = ok ? ck_dev_sum(c, 0) : NULL, *db = ok ? ck_dev_sum(c, 1) : NULL; /* the device's sums in its memory */
    nst_xsum_zero(&xa);
    if (ok && o[0] && o[1] && da && db && BOTH(c, R->ops->mse(R, &f.r, &p.r, own, seed, &m.r, 0.5f, &xa, &df.r),
                                               D->ops->mse(D, &f.d, &p.d, own, seed, &m.d, 0.5f, db, &df.d))) {
        a = take(&xa), b = ck_dev_take(c, 1);
        ck_record(c, "mse masked sum", NST_TOL_SUM, 1, fabs(a - b) / (a > 0 ? a : 1), "%dx%d", h, w);
        ck_record(c, "mse masked gradient", NST_TOL_ELEMENT, 1, ck_pair_err(c, &df), "%dx%d", h, w);
        /* df (the device's, holding values) copied: none on one, the ones on the other */
        op = "mask of ones = no mask";
        nst_status s = nst_tensor_alloc(D, h, w, 21, df.d.dt, &df1);
        if (s == NST_OK) s = D->ops->copy(D, df1.data, df.d.data, n * nst_dtype_size(df.d.dt));
        if (s == NST_OK) s = D->ops->mse(D, &f.d, &p.d, own, seed, NULL, 0.5f, da, &df.d);
        if (s == NST_OK) s = D->ops->mse(D, &f.d, &p.d, own, seed, &ones.d, 0.5f, db, &df1);
        a = ck_dev_take(c, 0), b = ck_dev_take(c, 1);
        if (s == NST_OK && n) s = D->ops->download(D, o[0], df.d.data, n, df.d.dt);
        if (s == NST_OK && n) s = D->ops->download(D, o[1], df1.data, n, df1.dt);
        if (BOTH(c, NST_OK, s))
            ck_record(c, op, NST_TOL_EXACT, 1, fmax(ck_same_err(&a, &b, 1), ck_same_err_f(o[0], o[1], n)),
                      "mse %dx%d own %dx%d+%d+%d", h, w, own.w, own.h, own.x, own.y);
    }
    nst_tensor_free(D, &df1);
    nst_free(o[0]), nst_free(o[1]);
    ck_pair_free(c, &f), ck_pair_free(c, &p), ck_pair_free(c, &df), ck_pair_free(c, &m), ck_pair_free(c, &ones);
}

void ck_losses(nst_check *c)
{
    for (int s = 0; s < NSHAPES(c); s++) {
        int h = ck_shapes[s][0], w = ck_shapes[s][1];
        nst_rect r[5];
        int nr = ck_regions(h, w, r);
        for (int k = 0; k < nr; k++) losses_case(c, h, w, r[k], r[(k + 1) % nr]);
        for (int k = 0; k < nr; k++) masked_mse_case(c, h, w, r[k], r[(k + 1) % nr]);
    }
    if (!c->quick) large_rects(c);
}

/* Projected L-BFGS's box ops, on x drawn in [-0.5, 1.5] and clamped by a zero step (exact on
 * both sides: half the values sit on a bound), then held where g pushes out (exact), then a real
 * projected step (x and the step taken, fp32 arithmetic). x, g, m, y: pairs of n values (m, y
 * overwritten). */
static void box_case(nst_check *c, ck_pair *x, ck_pair *g, ck_pair *m, ck_pair *y, size_t n)
{
    nst_backend *R = c->ref, *D = c->dev;
    ck_pair xb = {0}, zero = {0};
    int ok = ck_pair_make(c, &xb, 1, (int)n, 1, 0, -0.5f, 1.5f) && ck_pair_make(c, &zero, 1, (int)n, 1, 0, 0, 0);
    const char *op = "box_step (clamp)";
    if (ok && BOTH(c, R->ops->box_step(R, xb.r.data, zero.r.data, n, 0.f), D->ops->box_step(D, xb.d.data, zero.d.data, n, 0.f)))
        ck_record(c, op, NST_TOL_EXACT, 1, ck_pair_err(c, &xb), "n %zu", n);
    op = "box_hold";
    if (ok && BOTH(c, R->ops->axpby(R, m->r.data, g->r.data, n, 1.f, 0.f), D->ops->axpby(D, m->d.data, g->d.data, n, 1.f, 0.f)) &&
        BOTH(c, R->ops->box_hold(R, m->r.data, xb.r.data, g->r.data, n), D->ops->box_hold(D, m->d.data, xb.d.data, g->d.data, n)))
        ck_record(c, op, NST_TOL_EXACT, 1, ck_pair_err(c, m), "n %zu", n);
    op = "box_step";
    if (ok && BOTH(c, R->ops->box_step(R, x->r.data, y->r.data, n, 0.37f), D->ops->box_step(D, x->d.data, y->d.data, n, 0.37f)))
        ck_record(c, op, NST_TOL_F32_MATH, 1, fmax(ck_pair_err(c, x), ck_pair_err(c, y)), "x and the step; n %zu", n);
    ck_pair_free(c, &xb), ck_pair_free(c, &zero);
}

void ck_optimiser(nst_check *c)
{
    nst_backend *R = c->ref, *D = c->dev;
    const size_t sizes[] = {1, 1000, 262147, 5000011};
    for (int k = 0; k < (c->quick ? 3 : 4); k++) {
        size_t n = sizes[k];
        ck_pair x = {0}, g = {0}, m = {0}, v = {0}, y = {0};
        int ok = ck_pair_make(c, &x, 1, (int)n, 1, 0, 0, 1);
        ok = ok && ck_pair_make(c, &g, 1, (int)n, 1, 0, -1, 1);
        ok = ok && ck_pair_make(c, &m, 1, (int)n, 1, 0, -0.1f, 0.1f);
        ok = ok && ck_pair_make(c, &v, 1, (int)n, 1, 0, 0, 0.01f);
        ok = ok && ck_pair_make(c, &y, 1, (int)n, 1, 0, -1, 1);
        double a = 0, b = 0;
        const char *op = "dot";
        if (ok && BOTH(c, R->ops->dot(R, g.r.data, y.r.data, n, &a), D->ops->dot(D, g.d.data, y.d.data, n, &b)))
            ck_record(c, op, NST_TOL_SUM, 1, fabs(a - b) / (fabs(a) > 1 ? fabs(a) : 1), "n %zu", n);
        op = "axpby";
        if (ok && BOTH(c, R->ops->axpby(R, y.r.data, g.r.data, n, 0.5f, -2.f), D->ops->axpby(D, y.d.data, g.d.data, n, 0.5f, -2.f)))
            ck_record(c, op, NST_TOL_F32_MATH, 1, ck_pair_err(c, &y), "n %zu", n);
        nst_adam_params ap = {0.02f, 0.9f, 0.999f, 1e-8f, 7, 1};
        op = "adam";
        if (ok && BOTH(c, R->ops->adam(R, x.r.data, g.r.data, m.r.data, v.r.data, n, &ap, NULL),
                       D->ops->adam(D, x.d.data, g.d.data, m.d.data, v.d.data, n, &ap, NULL))) {
            double e = ck_pair_err(c, &x), em = ck_pair_err(c, &m), ev = ck_pair_err(c, &v);
            ck_record(c, op, NST_TOL_F32_MATH, 1, fmax(e, fmax(em, ev)), "x, m, v; n %zu", n);
        }
        /* the next step with the device's own step count (adam_tick: 7 -> 8) against step 8 given */
        nst_adam_step at = {7, 0, 0}, *ad = NULL;
        op = "adam_tick";
        if (ok && BOTH(c, NST_OK, D->ops->alloc(D, sizeof at, (void **)&ad))) {
            ap.t = 8;
            nst_status s = D->ops->write(D, ad, &at, sizeof at);
            if (s == NST_OK) s = D->ops->adam_tick(D, &ap, ad);
            if (s == NST_OK) s = D->ops->adam(D, x.d.data, g.d.data, m.d.data, v.d.data, n, &ap, ad);
            if (BOTH(c, R->ops->adam(R, x.r.data, g.r.data, m.r.data, v.r.data, n, &ap, NULL), s)) {
                double e = ck_pair_err(c, &x), em = ck_pair_err(c, &m), ev = ck_pair_err(c, &v);
                ck_record(c, op, NST_TOL_F32_MATH, 1, fmax(e, fmax(em, ev)), "x, m, v; n %zu, step 7 -> 8", n);
            }
            D->ops->free(D, ad);
        }
        box_case(c, &x, &g, &m, &y, n);
        /* reductions repeat exactly: the same dot twice */
        double r0 = 0, r1 = 1;
        op = "dot repeats";
        if (ok && BOTH(c, D->ops->dot(D, x.d.data, x.d.data, n, &r0), D->ops->dot(D, x.d.data, x.d.data, n, &r1)))
            ck_record(c, op, NST_TOL_EXACT, 1, r0 == r1 ? 0 : INFINITY, "n %zu", n);
        ck_pair_free(c, &x), ck_pair_free(c, &g), ck_pair_free(c, &m), ck_pair_free(c, &v), ck_pair_free(c, &y);
    }
}

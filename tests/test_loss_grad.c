/* tests/test_loss_grad.c: finite-difference checks of the whole loss with respect to the image,
 * for each term alone and all together (narrow random VGG-19, width 1/16, 28x24 image; max and
 * average pooling).
 *
 * 1. Against a double-precision evaluation of the same loss written here with naive loops
 *    (tests/naive.h): central differences with a step of 1e-6 per pixel, where rounding (~1e-10)
 *    and ReLU/max-pool kinks (a step that small crosses almost none) vanish. The gradient
 *    nstbatch computes in fp32 agrees to a relative error <= 1e-5 along random directions and
 *    <= 1e-5 of the largest gradient entry for single pixels.
 * 2. Against nstbatch's own fp32 forward: here rounding noise grows as 1/step and kink crossings
 *    as step^2; at the best step (1e-4) they agree to <= 2e-2. (That is the precision limit of
 *    finite differences through an fp32 ReLU network, and why check 1 exists.)
 * 3. The masked loss (nst/optimise/objective.h): two styles guided by a soft ramp and its complement
 *    (the guided Gram sum m f f^T / sum m against each style's own target) and a soft content
 *    mask, the masks taken to each layer by 2x2 averages, in the same double reference; the same
 *    bounds as 1 and 2.
 */
#include "../nst/optimise/objective.h"
#include "../nst/model/random_vgg.h"
#include "../util/mem.h"
#include "naive.h"
#include "test.h"

enum { W = 28, H = 24 };
static nst_backend *be;

typedef struct {
    const nst_weights *w;
    const nst_loss_spec *spec;
    double *P[NST_VGG_NLAYERS], normP[NST_VGG_NLAYERS]; /* by content index */
    double *A[NST_VGG_NLAYERS], normA[NST_VGG_NLAYERS]; /* by style index */
    int guided;                                         /* masks: two styles (A, A2) and a content mask */
    double *A2[NST_VGG_NLAYERS], normA2[NST_VGG_NLAYERS];
    double *mask[3][NST_VGG_NLAYERS];                   /* by layer: style masks 0 and 1, the content's */
} dref;

/* The masks at pixels (one value per pixel, multiples of 2^-16 as the objective takes them): a
 * ramp across for style 0, its complement for style 1, a radial bump for the content. */
static void pixel_masks(float *m0, float *m1, float *mc)
{
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            int i = y * W + x;
            m0[i] = nst_mask_quantise((x - 4.0f) / (W - 8.0f));
            m1[i] = 1 - m0[i];
            mc[i] = nst_mask_quantise(1.2f - 0.004f * ((x - 14.0f) * (x - 14.0f) + (y - 10.0f) * (y - 10.0f)));
        }
}

/* A pixel mask at every layer of the network, in double: a 2x2 average (floor) per pooling. */
static void layer_masks(const float *px, double **out)
{
    int w = W, h = H, stride = 1;
    double *m = malloc(sizeof(double) * W * H);
    for (int i = 0; i < W * H; i++) m[i] = px[i];
    for (int l = 0; l < NST_VGG_NLAYERS; l++) {
        while (stride < nst_vgg_footprint(l).stride) {
            for (int y = 0; y < h / 2; y++)
                for (int x = 0; x < w / 2; x++)
                    m[y * (w / 2) + x] = (m[2 * y * w + 2 * x] + m[2 * y * w + 2 * x + 1] + m[(2 * y + 1) * w + 2 * x] + m[(2 * y + 1) * w + 2 * x + 1]) / 4;
            w /= 2, h /= 2, stride *= 2;
        }
        out[l] = malloc(sizeof(double) * (size_t)w * h);
        memcpy(out[l], m, sizeof(double) * (size_t)w * h);
    }
    free(m);
}

/* Features of every layer up to the deepest in use, in double; outs[l] malloc'ed. */
static void dforward(const dref *r, const double *img, double **outs, int *oh, int *ow, int *oc)
{
    const nst_weights *w = r->w;
    int h = H, wd = W, c = 3;
    double *x = malloc(sizeof(double) * H * W * 3);
    for (int i = 0; i < H * W; i++)
        for (int k = 0; k < 3; k++)
            x[3 * i + k] = (img[3 * i + (w->bgr ? 2 - k : k)] * w->scale - w->mean[k]) / w->std[k];
    double *in = x;
    for (int l = 0; l <= r->spec->deepest; l++) {
        const nst_vgg_layer *L = nst_vgg_layer_at(l);
        double *y;
        if (L->op == NST_OP_CONV) {
            const nst_conv_weights *cw = &w->conv[L->conv];
            y = malloc(sizeof(double) * (size_t)h * wd * cw->cout);
            naive_conv(x, h, wd, c, cw->w, cw->b, cw->cout, 1, y);
            c = cw->cout;
        } else {
            y = malloc(sizeof(double) * (size_t)(h / 2) * (wd / 2) * c);
            naive_pool(x, h, wd, c, r->spec->pool == NST_POOL_AVG, y);
            h /= 2;
            wd /= 2;
        }
        outs[l] = x = y;
        oh[l] = h, ow[l] = wd, oc[l] = c;
    }
    free(in);
}

/* The Gram of m positions, or with a mask the guided Gram sum mask f f^T / sum mask. */
static void dgram(const double *f, int m, int c, const double *mask, double *g)
{
    double den = 0;
    memset(g, 0, sizeof(double) * c * c);
    for (int p = 0; p < m; p++) {
        double wp = mask ? mask[p] : 1;
        den += wp;
        for (int i = 0; i < c; i++)
            for (int j = 0; j < c; j++) g[i * c + j] += wp * f[(size_t)p * c + i] * f[(size_t)p * c + j];
    }
    for (int i = 0; i < c * c; i++) g[i] /= den;
}

/* The style terms of one style (targets A, norms nA), guided by mask (by layer; NULL: none). */
static double dstyle(const dref *r, double **outs, const int *oh, const int *ow, const int *oc, double *const *A, const double *nA,
                     double *const *mask)
{
    const nst_loss_spec *s = r->spec;
    double L = 0;
    for (int k = 0; k < s->nstyle; k++) {
        int l = s->style[k], c = oc[l];
        double *g = malloc(sizeof(double) * c * c), ss = 0;
        dgram(outs[l], oh[l] * ow[l], c, mask ? mask[l] : NULL, g);
        for (int i = 0; i < c * c; i++) ss += pow(g[i] - A[k][i], 2);
        L += s->style_weight * s->style_layer_weight[k] * ss / nA[k];
        free(g);
    }
    return L;
}

static double dloss(const dref *r, const double *img)
{
    const nst_loss_spec *s = r->spec;
    double *outs[NST_VGG_NLAYERS] = {0};
    int oh[NST_VGG_NLAYERS], ow[NST_VGG_NLAYERS], oc[NST_VGG_NLAYERS];
    dforward(r, img, outs, oh, ow, oc);
    double L = 0;
    for (int k = 0; k < s->ncontent; k++) {
        int l = s->content[k];
        double ss = 0;
        for (size_t i = 0; i < (size_t)oh[l] * ow[l] * oc[l]; i++) ss += (r->guided ? r->mask[2][l][i / oc[l]] : 1) * pow(outs[l][i] - r->P[k][i], 2);
        L += s->content_weight * ss / r->normP[k];
    }
    if (r->guided)
        L += dstyle(r, outs, oh, ow, oc, r->A, r->normA, r->mask[0]) + dstyle(r, outs, oh, ow, oc, r->A2, r->normA2, r->mask[1]);
    else
        L += dstyle(r, outs, oh, ow, oc, r->A, r->normA, NULL);
    double tv = 0;
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            for (int k = 0; k < 3; k++) {
                double v = img[(y * W + x) * 3 + k];
                if (x + 1 < W) tv += pow(img[(y * W + x + 1) * 3 + k] - v, 2);
                if (y + 1 < H) tv += pow(img[((y + 1) * W + x) * 3 + k] - v, 2);
            }
    L += s->tv_weight * tv / (3.0 * W * H);
    for (int l = 0; l < NST_VGG_NLAYERS; l++) free(outs[l]);
    return L;
}

/* A (and norms) of a style image of the content's size */
static void dstyle_targets(dref *r, const double *style, double **A, double *nA)
{
    const nst_loss_spec *s = r->spec;
    double *outs[NST_VGG_NLAYERS] = {0};
    int oh[NST_VGG_NLAYERS], ow[NST_VGG_NLAYERS], oc[NST_VGG_NLAYERS];
    dforward(r, style, outs, oh, ow, oc);
    for (int k = 0; k < s->nstyle; k++) {
        int l = s->style[k], c = oc[l];
        A[k] = malloc(sizeof(double) * c * c);
        dgram(outs[l], oh[l] * ow[l], c, NULL, A[k]);
        nA[k] = 0;
        for (int i = 0; i < c * c; i++) nA[k] += A[k][i] * A[k][i];
    }
    for (int l = 0; l < NST_VGG_NLAYERS; l++) free(outs[l]);
}

static void dtargets(dref *r, const double *content, const double *style)
{
    const nst_loss_spec *s = r->spec;
    double *outs[NST_VGG_NLAYERS] = {0};
    int oh[NST_VGG_NLAYERS], ow[NST_VGG_NLAYERS], oc[NST_VGG_NLAYERS];
    dforward(r, content, outs, oh, ow, oc);
    for (int k = 0; k < s->ncontent; k++) {
        int l = s->content[k];
        size_t n = (size_t)oh[l] * ow[l] * oc[l];
        r->P[k] = malloc(sizeof(double) * n);
        memcpy(r->P[k], outs[l], sizeof(double) * n);
        r->normP[k] = 0;
        for (size_t i = 0; i < n; i++) r->normP[k] += r->P[k][i] * r->P[k][i];
    }
    for (int l = 0; l < NST_VGG_NLAYERS; l++) free(outs[l]);
    dstyle_targets(r, style, r->A, r->normA); /* the style image has the same size here */
}

static double fp32_loss(nst_objective *o, nst_tile *t, const float *x)
{
    nst_loss_terms terms;
    be->ops->upload(be, t->img.data, x, (size_t)W * H * 3, NST_F32);
    return nst_objective_eval(o, t, 1, 0, NULL, &terms) == NST_OK ? terms.total : NAN;
}

/* The objective with masks: two styles' own targets (style, style2) guided by the ramp masks, and
 * the content mask; r gets the same in double. */
static void guided_setup(nst_objective *obj, nst_tile *tile, const nst_weights *w, const float *style, const float *style2, dref *r,
                         const double *s2d)
{
    const nst_loss_spec *spec = r->spec;
    float *A[NST_MAX_GRAMS] = {0}, *m[3];
    double nA[NST_MAX_GRAMS];
    CHECK(nst_objective_style_targets(spec, be, w, style, W, H, A, nA) == NST_OK, "%s", nst_fail_message());
    CHECK(nst_objective_style_targets(spec, be, w, style2, W, H, A + spec->nstyle, nA + spec->nstyle) == NST_OK, "%s", nst_fail_message());
    CHECK(nst_objective_set_targets(obj, A, nA) == NST_OK, "%s", nst_fail_message());
    for (int i = 0; i < 3; i++) m[i] = nst_alloc_array((size_t)W * H, sizeof(float), "masks");
    pixel_masks(m[0], m[1], m[2]);
    CHECK(nst_tile_set_masks(obj, tile, m) == NST_OK, "%s", nst_fail_message());
    r->guided = 1;
    dstyle_targets(r, s2d, r->A2, r->normA2);
    for (int i = 0; i < 3; i++) layer_masks(m[i], r->mask[i]), nst_free(m[i]);
    for (int q = 0; q < NST_MAX_GRAMS; q++) nst_free(A[q]);
}

/* The loss of the terms tests: relu4_2's content, the five relu*_1 style layers weighted 1, 1.5,
 * ..., 3, and the given weights and pooling. */
static nst_loss_spec terms_spec(double cw, double sw, double tvw, nst_pool_kind pool)
{
    nst_loss_spec spec = {0};
    spec.ncontent = 1;
    spec.content[0] = nst_vgg_find("relu4_2");
    const char *sl[] = {"relu1_1", "relu2_1", "relu3_1", "relu4_1", "relu5_1"};
    spec.nstyle = 5;
    for (int k = 0; k < 5; k++) spec.style[k] = nst_vgg_find(sl[k]), spec.style_layer_weight[k] = 1.f + 0.5f * k;
    spec.content_weight = cw, spec.style_weight = sw, spec.tv_weight = tvw;
    spec.deepest = nst_vgg_find("relu5_1");
    spec.pool = pool;
    return spec;
}

/* Along direction v: the analytic derivative g . v, returned, and the double-precision central
 * difference of the reference loss at xd with step 1e-6, in *fd. */
static double double_fd(dref *r, const double *xd, const float *g, const float *v, size_t n, double *fd)
{
    const double e = 1e-6;
    double *xs = malloc(sizeof(double) * n), an = 0;
    for (size_t i = 0; i < n; i++) xs[i] = xd[i] + e * v[i], an += (double)g[i] * v[i];
    double fp = dloss(r, xs);
    for (size_t i = 0; i < n; i++) xs[i] = xd[i] - e * v[i];
    *fd = (fp - dloss(r, xs)) / (2 * e);
    free(xs);
    return an;
}

/* Along direction v: the relative error of the analytic derivative against the fp32 central
 * difference through nstbatch's forward, step 1e-4 (xp: scratch pixels). */
static double fp32_fd(nst_objective *obj, nst_tile *tile, const float *x, const float *g, const float *v, float *xp, size_t n)
{
    const float e32 = 1e-4f;
    double a32 = 0;
    for (size_t i = 0; i < n; i++) xp[i] = x[i] + e32 * v[i];
    double f1 = fp32_loss(obj, tile, xp);
    for (size_t i = 0; i < n; i++) a32 += (double)g[i] * xp[i];
    for (size_t i = 0; i < n; i++) xp[i] = x[i] - e32 * v[i];
    double f2 = fp32_loss(obj, tile, xp);
    for (size_t i = 0; i < n; i++) a32 -= (double)g[i] * xp[i];
    a32 /= 2.0 * e32;
    double fd32 = (f1 - f2) / (2.0 * e32);
    return fabs(fd32 - a32) / fmax(fabs(fd32), fabs(a32));
}

static void check_terms(double cw, double sw, double tvw, nst_pool_kind pool, int masked, const char *what)
{
    const size_t n = (size_t)W * H * 3;
    nst_weights w;
    nst_net net;
    nst_objective obj;
    nst_tile tile;
    nst_collectives none = {0};
    nst_loss_spec spec = terms_spec(cw, sw, tvw, pool);
    float *content = nst_alloc_array(n, 4, "t"), *style = nst_alloc_array(n, 4, "t"), *x = nst_alloc_array(n, 4, "t"),
          *g = nst_alloc_array(n, 4, "t"), *xp = nst_alloc_array(n, 4, "t"), *v = nst_alloc_array(n, 4, "t"),
          *style2 = nst_alloc_array(n, 4, "t");
    double *xd = malloc(sizeof(double) * n), *cd = malloc(sizeof(double) * n), *sd = malloc(sizeof(double) * n),
           *s2d = malloc(sizeof(double) * n);
    test_fill(content, n, 1, 0, 1);
    test_fill(style, n, 2, 0, 1);
    test_fill(style2, n, 4, 0, 1);
    test_fill(x, n, 3, 0.1f, 0.9f);
    nst_weights_random(&w, 5, 16);
    nst_net_create(be, &w, spec.deepest, pool, &net);
    const nst_guides guides = {2, {1, 1}, 1};
    nst_objective_init_guided(&obj, &spec, &net, none, NST_GRAM_RESIDENT, NULL, W, H, masked ? &guides : NULL);
    if (!masked) nst_objective_set_style(&obj, style, W, H);
    nst_rect whole = {0, 0, W, H};
    nst_tile_init(&obj, &tile, 0, whole, whole, 0);
    nst_tile_set_content(&obj, &tile, content);
    dref r = {&w, &spec, {0}, {0}, {0}, {0}, 0, {0}, {0}, {{0}}};
    to_double(style2, s2d, n);
    if (masked) guided_setup(&obj, &tile, &w, style, style2, &r, s2d);
    nst_objective_finish_targets(&obj);
    be->ops->upload(be, tile.img.data, x, n, NST_F32);
    nst_loss_terms terms;
    CHECK(nst_objective_eval(&obj, &tile, 1, 1, NULL, &terms) == NST_OK, "%s", nst_fail_message());
    be->ops->download(be, g, tile.dimg.data, n, NST_F32);

    to_double(content, cd, n);
    to_double(style, sd, n);
    dtargets(&r, cd, sd);
    double gmax = 0;
    for (size_t i = 0; i < n; i++) gmax = fmax(gmax, fabs(g[i]));
    to_double(x, xd, n);
    double ld = dloss(&r, xd);
    CHECK(fabs(ld - terms.total) <= 1e-5 * ld, "%s: double loss %.9g vs nstbatch %.9g", what, ld, terms.total);

    double worst_dir = 0, worst_px = 0, worst32 = 0;
    for (int d = 0; d < 4 + 8; d++) {
        if (d < 4) {
            test_fill(v, n, 50 + d, -1, 1);
        } else {
            memset(v, 0, n * sizeof(float));
            v[(size_t)(d - 4) * 1237 % n] = 1;
        }
        double fd, an = double_fd(&r, xd, g, v, n, &fd);
        if (d < 4)
            worst_dir = fmax(worst_dir, fabs(fd - an) / fmax(fabs(fd), fabs(an)));
        else
            worst_px = fmax(worst_px, fabs(fd - an) / gmax);
        if (d < 4) worst32 = fmax(worst32, fp32_fd(&obj, &tile, x, g, v, xp, n));
    }
    CHECK(worst_dir <= 1e-5, "%s: directional rel err %.3g (double FD)", what, worst_dir);
    CHECK(worst_px <= 1e-5, "%s: per-pixel err %.3g of max |grad| (double FD)", what, worst_px);
    CHECK(worst32 <= 2e-2, "%s: directional rel err %.3g (fp32 FD)", what, worst32);
    printf("    %-28s loss %10.4g: double FD %.1e (directions) %.1e (pixels); fp32 FD %.1e\n", what, terms.total, worst_dir,
           worst_px, worst32);
    for (int k = 0; k < NST_VGG_NLAYERS; k++) {
        free(r.P[k]), free(r.A[k]), free(r.A2[k]);
        for (int i = 0; i < 3; i++) free(r.mask[i][k]);
    }
    nst_tile_free(&obj, &tile);
    nst_objective_free(&obj);
    nst_net_destroy(&net);
    nst_weights_free(&w);
    nst_free(content), nst_free(style), nst_free(x), nst_free(g), nst_free(xp), nst_free(v), nst_free(style2);
    free(xd), free(cd), free(sd), free(s2d);
}

static void t_content_only(void) { check_terms(1, 0, 0, NST_POOL_MAX, 0, "content"); }
static void t_style_only(void) { check_terms(0, 1000, 0, NST_POOL_MAX, 0, "style"); }
static void t_tv_only(void) { check_terms(0, 0, 10, NST_POOL_MAX, 0, "tv"); }
static void t_all_terms(void) { check_terms(1, 1000, 10, NST_POOL_MAX, 0, "content+style+tv"); }
static void t_all_terms_average_pooling(void) { check_terms(1, 1000, 10, NST_POOL_AVG, 0, "content+style+tv, avg pool"); }
static void t_masked_style(void) { check_terms(0, 1000, 0, NST_POOL_MAX, 1, "masked: 2 guided styles"); }
static void t_masked_all_terms(void) { check_terms(1, 1000, 10, NST_POOL_MAX, 1, "masked: all terms"); }

int main(void)
{
    if (nst_backend_open("cpu", 0, &be) != NST_OK) return printf("%s\n", nst_fail_message()), 1;
    RUN(t_content_only);
    RUN(t_style_only);
    RUN(t_tv_only);
    RUN(t_all_terms);
    RUN(t_all_terms_average_pooling);
    RUN(t_masked_style);
    RUN(t_masked_all_terms);
    nst_backend_close(be);
    return test_report("test_loss_grad");
}

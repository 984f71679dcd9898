/* tests/test_bf16.c: the whole loss and its image gradient in the CPU's bf16 against fp32, on the
 * demo's pictures (random VGG-19 at width 1/4), and the value ranges behind the feature-scaling
 * policy (kernels/precision.h).
 *
 * What bf16 costs, measured here: without max pooling in the way (the relu1_1 term alone, or
 * average pooling) the gradient agrees with fp32's to a few per cent (bf16 rounding over up to 13
 * layers); with max pooling about a third of it moves, because two values of a 2x2 window that
 * differ in fp32 often round to one bf16 value, and the tie sends the gradient to another pixel.
 * The loss itself agrees to about 1e-4.
 * SKIPs where the CPU has no bf16. */
#include "../io/image/image.h"
#include "../kernels/cpu/backend_cpu.h"
#include "../nst/optimise/objective.h"
#include "../nst/model/random_vgg.h"
#include "../util/mem.h"
#include "test.h"

typedef struct {
    double loss;
    float *grad;
    double act_max, grad_min; /* largest |activation| of any layer; smallest non-zero |image gradient| */
} result;

static float *content, *style;
static int W, H, SW, SH;
static char skip_why[256];

static double tensor_max(nst_backend *be, const nst_tensor *t)
{
    size_t n = nst_tensor_elems(t);
    float *h = nst_alloc_array(n ? n : 1, sizeof(float), "t");
    double m = 0;
    if (h && be->ops->download(be, h, t->data, n, t->dt) == NST_OK)
        for (size_t i = 0; i < n; i++) m = fmax(m, fabs(h[i]));
    nst_free(h);
    return m;
}

/* The loss and gradient at the content image (every term: content 1, style 1000, tv 10) with the
 * style layers `layers` (the first n of relu1_1..relu5_1) and the pooling given. */
static int evaluate(nst_precision prec, int nstyle, nst_pool_kind pool, result *r)
{
    nst_backend_options o = {.device = "cpu", .threads = 0, .precision = prec, .gpu = 0, .gpu_sharers = 1, .memory_gb = 0, .collective_ranks = 1};
    nst_backend *be = NULL;
    if (nst_backend_open_with(&o, &be) != NST_OK) return snprintf(skip_why, sizeof skip_why, "%s", nst_fail_message()), 0;
    nst_weights w;
    nst_weights_random(&w, 1, 4);
    nst_loss_spec spec = {0};
    const char *sl[] = {"relu1_1", "relu2_1", "relu3_1", "relu4_1", "relu5_1"};
    spec.ncontent = nstyle == 5, spec.content[0] = nst_vgg_find("relu4_2");
    spec.nstyle = nstyle;
    for (int k = 0; k < nstyle; k++) spec.style[k] = nst_vgg_find(sl[k]), spec.style_layer_weight[k] = 1;
    spec.content_weight = 1, spec.style_weight = 1000, spec.tv_weight = 10, spec.pool = pool;
    spec.deepest = nst_vgg_find(nstyle == 5 ? "relu5_1" : sl[nstyle - 1]);
    nst_net net;
    nst_objective obj;
    nst_tile t;
    nst_collectives none = {0};
    nst_rect whole = {0, 0, W, H};
    nst_loss_terms terms;
    int ok = nst_net_create(be, &w, spec.deepest, pool, &net) == NST_OK;
    ok = ok && nst_objective_init(&obj, &spec, &net, none, NST_GRAM_RESIDENT, NULL, W, H) == NST_OK;
    ok = ok && nst_objective_set_style(&obj, style, SW, SH) == NST_OK;
    ok = ok && nst_tile_init(&obj, &t, 0, whole, whole, 0) == NST_OK;
    ok = ok && nst_tile_set_content(&obj, &t, content) == NST_OK && nst_objective_finish_targets(&obj) == NST_OK;
    /* a few steps away from the content image, so the content term is not zero */
    for (size_t i = 0; ok && i < (size_t)W * H * 3; i++) r->grad[i] = content[i] + 0.02f * (float)((i * 2654435761u >> 13) % 3) - 0.02f;
    ok = ok && be->ops->upload(be, t.img.data, r->grad, (size_t)W * H * 3, NST_F32) == NST_OK;
    ok = ok && nst_objective_eval(&obj, &t, 1, 1, NULL, &terms) == NST_OK;
    ok = ok && be->ops->download(be, r->grad, t.dimg.data, (size_t)W * H * 3, NST_F32) == NST_OK;
    CHECK(ok, "%s: %s", nst_precision_name(prec), nst_fail_message());
    if (ok) {
        r->loss = terms.total;
        r->act_max = 0;
        for (int l = 0; l < net.nlayers; l++) r->act_max = fmax(r->act_max, tensor_max(be, &t.acts->out[l]));
        r->grad_min = INFINITY;
        for (size_t i = 0; i < (size_t)W * H * 3; i++)
            if (r->grad[i] != 0) r->grad_min = fmin(r->grad_min, fabs(r->grad[i]));
        nst_tile_free(&obj, &t);
        nst_objective_free(&obj);
        nst_net_destroy(&net);
    }
    nst_weights_free(&w);
    nst_backend_close(be);
    return ok;
}

/* bf16 against fp32: the loss's relative difference, the gradient's relative L2 error and cosine */
static void compare(int nstyle, nst_pool_kind pool, const char *what, double loss_tol, double grad_tol, double cos_min)
{
    size_t n = (size_t)W * H * 3;
    result a = {0, nst_alloc_array(n, sizeof(float), "g"), 0, 0}, b = {0, nst_alloc_array(n, sizeof(float), "g"), 0, 0};
    if (!evaluate(NST_PREC_BF16, nstyle, pool, &b)) {
        nst_free(a.grad), nst_free(b.grad);
        SKIP("no bf16 on this CPU: %s", skip_why);
    }
    if (evaluate(NST_PREC_FP32, nstyle, pool, &a)) {
        double d2 = 0, a2 = 0, b2 = 0, ab = 0;
        long flips = 0;
        for (size_t i = 0; i < n; i++) {
            d2 += pow((double)b.grad[i] - a.grad[i], 2), a2 += (double)a.grad[i] * a.grad[i], b2 += (double)b.grad[i] * b.grad[i];
            ab += (double)a.grad[i] * b.grad[i], flips += (a.grad[i] > 0) != (b.grad[i] > 0);
        }
        double dl = fabs(b.loss - a.loss) / a.loss, rel = sqrt(d2 / a2), cosine = ab / sqrt(a2 * b2);
        printf("    %-34s loss %.6g: bf16 off by %.2e; gradient: relative L2 error %.4f, cosine %.5f, sign flips %.2f%%\n", what, a.loss, dl,
               rel, cosine, 100.0 * flips / (double)n);
        CHECK(dl <= loss_tol, "%s: loss differs by %.3g > %.3g", what, dl, loss_tol);
        CHECK(rel <= grad_tol, "%s: gradient error %.3g > %.3g", what, rel, grad_tol);
        CHECK(cosine >= cos_min, "%s: gradient cosine %.5f < %.5f", what, cosine, cos_min);
        /* the scaling policy's premise: bf16's normal range (1.2e-38 .. 3.4e38) holds every value by far */
        printf("    %-34s largest |activation| %.3g, smallest non-zero |image gradient| %.3g\n", "", b.act_max, b.grad_min);
        CHECK(b.act_max < 0x1p64 && b.grad_min > 0x1p-100, "values near the end of bf16's range: %.3g, %.3g", b.act_max, b.grad_min);
    }
    nst_free(a.grad), nst_free(b.grad);
}

/* no pooling on the way: bf16 rounding alone (measured: loss 8e-6, gradient 0.2 %) */
static void t_relu1_1_term(void) { compare(1, NST_POOL_MAX, "relu1_1 only", 2e-4, 0.01, 0.9999); }
/* every term, average pooling: 13 layers of bf16 (measured: loss 1.2e-4, gradient 5 %, cosine 0.9989) */
static void t_all_terms_average_pooling(void) { compare(5, NST_POOL_AVG, "all terms, average pooling", 1e-3, 0.1, 0.995); }
/* every term, max pooling: bf16 ties in 2x2 windows reroute gradients (measured: loss 1.3e-4,
 * gradient 28 %, cosine 0.962, 9 % of the signs) */
static void t_all_terms_max_pooling(void) { compare(5, NST_POOL_MAX, "all terms, max pooling", 1e-3, 0.5, 0.9); }

static float *load(const char *path, int *w, int *h)
{
    nst_image im;
    nst_read_limits lim = nst_default_limits(1024);
    if (nst_image_read(path, &lim, &im, NULL) != NST_OK) return printf("%s\n", nst_fail_message()), NULL;
    *w = im.w, *h = im.h;
    return im.px;
}

/* run.precision = auto's rule on every kind of CPU, whatever this one is: bf16 on AMX and on an
 * AMD core's AVX512_BF16, fp32 on an Intel core's AVX512_BF16 without AMX and below it */
static void t_auto_rule(void)
{
    static const struct {
        nst_cpu_level l;
        nst_precision want;
        const char *why;
    } c[] = {
        {{"AVX512_CORE_AMX", 1, 1, 0}, NST_PREC_BF16, "run on AMX"},
        {{"AVX512_CORE_BF16", 1, 0, 1}, NST_PREC_BF16, "AMD core"},
        {{"AVX512_CORE_BF16", 1, 0, 0}, NST_PREC_FP32, "without AMX are slower"},
        {{"AVX512_CORE", 0, 0, 1}, NST_PREC_FP32, "no native bf16"},
        {{"AVX2", 0, 0, 0}, NST_PREC_FP32, "no native bf16"},
    };
    for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
        char why[200];
        nst_precision p = nst_cpu_auto_precision(&c[i].l, why, sizeof why);
        CHECK(p == c[i].want && strstr(why, c[i].why) && strstr(why, c[i].l.name), "%s (amx %d, amd %d): %s, \"%s\"", c[i].l.name, c[i].l.amx,
              c[i].l.amd, nst_precision_name(p), why);
    }
}

int main(void)
{
    RUN(t_auto_rule);
    content = load("configs/demo/content.png", &W, &H);
    style = load("configs/demo/style.png", &SW, &SH);
    if (!content || !style) return printf("the demo's pictures are missing: make demo-images\n"), 1;
    RUN(t_relu1_1_term);
    RUN(t_all_terms_average_pooling);
    RUN(t_all_terms_max_pooling);
    return test_report("test_bf16");
}

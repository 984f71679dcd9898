/* tests/test_reference.c: nstbatch against PyTorch, through the committed fixtures made by
 * tests/fixtures/make_fixtures.py (float64 PyTorch: conv2d, max_pool2d, autograd, optim.Adam).
 *
 * For a narrow random VGG-19 (width 1/8, regenerated here from its seed and checked by hash) and
 * odd-sized images (content and start 70x50, style 45x40):
 *   features at every loss layer, Gram matrices and style targets   rel. error <= 1e-5
 *   each loss term and the total                                     rel. error <= 1e-5
 *   the input gradient                                               rel. error <= 1e-5
 *   the image after 10 Adam steps (nstbatch's render loop)           max |diff| <= 1e-4
 * ("rel. error" = max |ours - theirs| / max |theirs| over the array.) And the weight readers:
 * the Keras file in both naming styles and a converted torchvision file give PyTorch's features
 * (rel. error <= 1e-5).
 *
 *   build/tests/test_reference [FIXTURE_DIR]     (default tests/fixtures)
 */
#include <hdf5.h>

#include "../io/config/config.h"
#include "../io/weights/weights.h"
#include "../nst/optimise/objective.h"
#include "../nst/model/random_vgg.h"
#include "../nst/render/render.h"
#include "../util/log.h"
#include "../util/mem.h"
#include "test.h"

static const char *dir = "tests/fixtures";
static hid_t ref = -1;
static nst_backend *be;

/* A float dataset of the reference file; *n its element count. */
static float *rd(const char *path, size_t *n)
{
    hid_t d = H5Dopen2(ref, path, H5P_DEFAULT);
    if (d < 0) {
        printf("    missing dataset %s\n", path);
        exit(1);
    }
    hid_t sp = H5Dget_space(d);
    size_t count = (size_t)H5Sget_simple_extent_npoints(sp);
    float *p = nst_alloc_array(count, sizeof(float), "fixture");
    H5Dread(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, p);
    H5Sclose(sp);
    H5Dclose(d);
    if (n) *n = count;
    return p;
}

static double attr_d(const char *obj, const char *name)
{
    double v = 0;
    hid_t a = H5Aopen_by_name(ref, obj, name, H5P_DEFAULT, H5P_DEFAULT);
    H5Aread(a, H5T_NATIVE_DOUBLE, &v);
    H5Aclose(a);
    return v;
}

static void attr_s(const char *obj, const char *name, char *out, size_t cap)
{
    hid_t a = H5Aopen_by_name(ref, obj, name, H5P_DEFAULT, H5P_DEFAULT);
    hid_t t = H5Aget_type(a), mt = H5Tcopy(H5T_C_S1);
    H5Tset_size(mt, cap);
    H5Tset_strpad(mt, H5T_STR_NULLTERM);
    memset(out, 0, cap);
    if (H5Tget_size(t) < cap) H5Aread(a, mt, out);
    H5Tclose(mt);
    H5Tclose(t);
    H5Aclose(a);
}

static nst_image image_of(const char *path)
{
    hid_t d = H5Dopen2(ref, path, H5P_DEFAULT);
    hid_t sp = H5Dget_space(d);
    hsize_t dims[3];
    H5Sget_simple_extent_dims(sp, dims, NULL);
    H5Sclose(sp);
    H5Dclose(d);
    nst_image img = {(int)dims[1], (int)dims[0], rd(path, NULL)};
    return img;
}

static double rel_err_t(const nst_tensor *t, const float *want, size_t n)
{
    float *got = nst_alloc_array(n, sizeof(float), "t");
    if (nst_tensor_elems(t) != n) return INFINITY;
    be->ops->download(be, got, t->data, n, NST_F32);
    double e = test_rel_err(got, want, n, 1e-12);
    nst_free(got);
    return e;
}

/* The config the fixture was made with. */
static void fixture_config(nst_config *cfg)
{
    char buf[256];
    nst_config_defaults(cfg);
    attr_s("/torch", "content_layers", buf, sizeof buf);
    nst_config_set_key(cfg, "content", "layers", buf, "fixture", "");
    attr_s("/torch", "style_layers", buf, sizeof buf);
    nst_config_set_key(cfg, "style", "layers", buf, "fixture", "");
    attr_s("/torch", "style_layer_weights", buf, sizeof buf);
    nst_config_set_key(cfg, "style", "layer_weights", buf, "fixture", "");
    cfg->content_weight = attr_d("/torch", "content_weight");
    cfg->style_weight = attr_d("/torch", "style_weight");
    cfg->tv_weight = attr_d("/torch", "tv_weight");
}

/* The style layers of the fixture's evaluation: features, Gram statistics, targets and losses
 * against PyTorch's; the worst relative errors seen so far in worst_feat and worst_gram. */
static void check_style_layers(const nst_loss_spec *spec, const nst_objective *obj, const nst_tile *tile, const nst_loss_terms *t,
                               double *worst_feat, double *worst_gram)
{
    char path[128];
    size_t n;
    for (int k = 0; k < spec->nstyle; k++) {
        const char *l = nst_vgg_layer_at(spec->style[k])->relu;
        snprintf(path, sizeof path, "/torch/features/%s", l);
        float *f = rd(path, &n);
        double e = rel_err_t(&tile->acts->out[spec->style[k]], f, n);
        *worst_feat = fmax(*worst_feat, e);
        CHECK(e <= 1e-5, "features %s: rel err %.3g", l, e);
        nst_free(f);
        /* G = sums / M, and the style target */
        float *g = rd((snprintf(path, sizeof path, "/torch/gram/%s", l), path), &n);
        float *mine = nst_alloc_array(n, sizeof(float), "t");
        int c = obj->C[k]; /* G holds the upper triangle */
        for (size_t i = 0; i < n; i++) {
            size_t r = i / (size_t)c, q = i % (size_t)c;
            mine[i] = (float)(obj->G[k][r <= q ? r * c + q : q * c + r] / obj->M[k]);
        }
        double eg = test_rel_err(mine, g, n, 1e-12);
        *worst_gram = fmax(*worst_gram, eg);
        CHECK(eg <= 1e-5, "gram %s: rel err %.3g", l, eg);
        float *a = rd((snprintf(path, sizeof path, "/torch/target/%s", l), path), &n);
        double ea = test_rel_err(obj->A[k], a, n, 1e-12);
        CHECK(ea <= 1e-5, "style target %s: rel err %.3g", l, ea);
        snprintf(path, sizeof path, "loss_style_%s", l);
        double want = attr_d("/torch", path);
        CHECK(fabs(t->style_layer[k] - want) <= 1e-5 * fabs(want), "%s: %.9g vs %.9g", path, t->style_layer[k], want);
        nst_free(g), nst_free(mine), nst_free(a);
    }
}

/* The content layers' features and losses against PyTorch's. */
static void check_content_layers(const nst_loss_spec *spec, const nst_tile *tile, const nst_loss_terms *t, double *worst_feat)
{
    char path[128];
    size_t n;
    for (int k = 0; k < spec->ncontent; k++) {
        const char *l = nst_vgg_layer_at(spec->content[k])->relu;
        float *f = rd((snprintf(path, sizeof path, "/torch/features/%s", l), path), &n);
        double e = rel_err_t(&tile->acts->out[spec->content[k]], f, n);
        *worst_feat = fmax(*worst_feat, e);
        CHECK(e <= 1e-5, "features %s: rel err %.3g", l, e);
        nst_free(f);
        snprintf(path, sizeof path, "loss_content_%s", l);
        double want = attr_d("/torch", path);
        CHECK(fabs(t->content_layer[k] - want) <= 1e-5 * fabs(want), "%s: %.9g vs %.9g", path, t->content_layer[k], want);
    }
}

/* 10 Adam steps through the renderer's loop, against PyTorch's image after them. */
static void check_adam_steps(nst_config *cfg, const nst_loss_spec *spec, const nst_weights *w, const nst_image *content,
                             const nst_image *style, const nst_image *x0)
{
    size_t n;
    cfg->optim_iterations = (long long)attr_d("/torch", "adam_steps");
    cfg->optim_lr = attr_d("/torch", "adam_lr");
    cfg->optim_eps = attr_d("/torch", "adam_eps");
    cfg->run_print_every = 0;
    snprintf(cfg->optim_init, sizeof cfg->optim_init, "image");
    snprintf(cfg->optim_method, sizeof cfg->optim_method, "adam"); /* the fixture's optimiser (auto is L-BFGS) */
    nst_image out;
    nst_render_stats st;
    nst_log_set_quiet(1);
    CHECK(nst_render_image(cfg, spec, be, w, content, style, x0, &out, &st, NULL) == NST_OK, "%s", nst_fail_message());
    nst_log_set_quiet(0);
    float *adam = rd("/torch/adam", &n);
    double worst = 0;
    for (size_t i = 0; i < n; i++) worst = fmax(worst, fabs(out.px[i] - adam[i]));
    CHECK(worst <= 1e-4, "image after %lld Adam steps: max |diff| %.3g", cfg->optim_iterations, worst);
    printf("    measured: after %lld Adam steps max |diff| %.2g\n", cfg->optim_iterations, worst);
    nst_free(adam);
    nst_image_free(&out);
}

static void t_torch_loss_features_gradient(void)
{
    char want_hash[32], got_hash[32];
    nst_weights w;
    CHECK(nst_weights_random(&w, (uint64_t)attr_d("/torch", "weights_seed"), (int)attr_d("/torch", "weights_divisor")) == NST_OK,
          "%s", nst_fail_message());
    attr_s("/torch", "weights_hash", want_hash, sizeof want_hash);
    snprintf(got_hash, sizeof got_hash, "%016llx", (unsigned long long)nst_weights_hash(&w));
    CHECK(strcmp(want_hash, got_hash) == 0, "random VGG-19 hash %s, fixture made with %s", got_hash, want_hash);

    nst_config cfg;
    nst_loss_spec spec;
    fixture_config(&cfg);
    CHECK(nst_loss_spec_parse(&cfg, &spec) == NST_OK, "%s", nst_fail_message());
    nst_image content = image_of("/torch/content"), style = image_of("/torch/style"), x0 = image_of("/torch/x0");
    nst_net net;
    nst_objective obj;
    nst_tile tile;
    nst_collectives none = {0};
    CHECK(nst_net_create(be, &w, spec.deepest, spec.pool, &net) == NST_OK, "%s", nst_fail_message());
    CHECK(nst_objective_init(&obj, &spec, &net, none, NST_GRAM_RESIDENT, NULL, content.w, content.h) == NST_OK, "%s",
          nst_fail_message());
    CHECK(nst_objective_set_style(&obj, style.px, style.w, style.h) == NST_OK, "%s", nst_fail_message());
    nst_rect whole = nst_rect_make(0, 0, content.w, content.h);
    CHECK(nst_tile_init(&obj, &tile, 0, whole, whole, 0) == NST_OK, "%s", nst_fail_message());
    CHECK(nst_tile_set_content(&obj, &tile, content.px) == NST_OK, "%s", nst_fail_message());
    nst_objective_finish_targets(&obj);
    be->ops->upload(be, tile.img.data, x0.px, (size_t)content.w * content.h * 3, NST_F32);
    nst_loss_terms t;
    CHECK(nst_objective_eval(&obj, &tile, 1, 1, NULL, &t) == NST_OK, "%s", nst_fail_message());

    size_t n;
    double worst_feat = 0, worst_gram = 0;
    check_style_layers(&spec, &obj, &tile, &t, &worst_feat, &worst_gram);
    check_content_layers(&spec, &tile, &t, &worst_feat);
    double tv = attr_d("/torch", "loss_tv"), total = attr_d("/torch", "loss_total");
    CHECK(fabs(t.tv - tv) <= 1e-5 * tv, "tv: %.9g vs %.9g", t.tv, tv);
    CHECK(fabs(t.total - total) <= 1e-5 * total, "total: %.9g vs %.9g", t.total, total);
    float *grad = rd("/torch/grad", &n);
    double eg = rel_err_t(&tile.dimg, grad, n);
    CHECK(eg <= 1e-5, "input gradient: rel err %.3g", eg);
    printf("    measured: features %.2g, grams %.2g, loss %.2g, gradient %.2g (relative)\n", worst_feat, worst_gram,
           fabs(t.total - total) / total, eg);
    nst_free(grad);
    nst_tile_free(&obj, &tile);
    nst_objective_free(&obj);
    nst_net_destroy(&net);

    check_adam_steps(&cfg, &spec, &w, &content, &style, &x0);
    nst_image_free(&content), nst_image_free(&style), nst_image_free(&x0);
    nst_weights_free(&w);
}

/* Features of a weight file on the group's image at the group's layers. */
static void check_weight_file(const char *file, const char *group, int bgr, float scale)
{
    char path[4096];
    nst_weights w;
    snprintf(path, sizeof path, "%s/%s", dir, file);
    nst_status s = nst_weights_read(path, &w);
    CHECK(s == NST_OK, "%s", nst_fail_message());
    if (s != NST_OK) return;
    CHECK(w.nconv == 16, "%s: %d conv layers", file, w.nconv);
    CHECK(w.bgr == bgr && w.scale == scale, "%s: preprocessing bgr %d scale %g", file, w.bgr, w.scale);
    snprintf(path, sizeof path, "/%s/image", group);
    nst_image img = image_of(path);
    nst_net net;
    nst_acts acts;
    nst_tensor t;
    int deepest = nst_vgg_find("relu5_1");
    CHECK(nst_net_create(be, &w, deepest, NST_POOL_MAX, &net) == NST_OK, "%s", nst_fail_message());
    CHECK(nst_acts_alloc(&net, img.h, img.w, &acts) == NST_OK, "%s", nst_fail_message());
    nst_tensor_alloc(be, img.h, img.w, 3, NST_F32, &t);
    be->ops->upload(be, t.data, img.px, (size_t)img.w * img.h * 3, NST_F32);
    CHECK(nst_net_forward(&net, &t, &acts) == NST_OK, "%s", nst_fail_message());
    const char *layers[] = {"relu1_1", "relu2_1", "relu3_1", "relu4_1", "relu4_2", "relu5_1"};
    double worst = 0;
    for (int k = 0; k < 6; k++) {
        size_t n;
        snprintf(path, sizeof path, "/%s/features/%s", group, layers[k]);
        float *f = rd(path, &n);
        double e = rel_err_t(&acts.out[nst_vgg_find(layers[k])], f, n);
        worst = fmax(worst, e);
        CHECK(e <= 1e-5, "%s %s: rel err %.3g", file, layers[k], e);
        nst_free(f);
    }
    printf("    %s: features rel err %.2g\n", file, worst);
    nst_tensor_free(be, &t);
    nst_acts_free(&net, &acts);
    nst_net_destroy(&net);
    nst_image_free(&img);
    nst_weights_free(&w);
}

static void t_keras_original_naming(void) { check_weight_file("keras_w1.h5", "keras", 1, 255.f); }
static void t_keras_kernel_naming_under_model_weights(void) { check_weight_file("keras_kernel.h5", "keras", 1, 255.f); }
static void t_torchvision_converted(void) { check_weight_file("tv_vgg19_w16.h5", "torchvision", 0, 1.f); }

int main(int argc, char **argv)
{
    if (argc > 1) dir = argv[1];
    char path[4096];
    snprintf(path, sizeof path, "%s/reference.h5", dir);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    ref = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (ref < 0) {
        printf("cannot open %s (run from the repository root, or pass the fixture directory)\n", path);
        return 1;
    }
    if (nst_backend_open("cpu", 0, &be) != NST_OK) {
        printf("cannot open the CPU backend: %s\n", nst_fail_message());
        return 1;
    }
    RUN(t_torch_loss_features_gradient);
    RUN(t_keras_original_naming);
    RUN(t_keras_kernel_naming_under_model_weights);
    RUN(t_torchvision_converted);
    nst_backend_close(be);
    H5Fclose(ref);
    return test_report("test_reference");
}

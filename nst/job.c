/* nst/job.c: one render job from a resolved config: semantic checks, the network, the inputs at
 * the working resolution, the render, the output (see job.h). */
#include "job.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../io/atomic_file.h"
#include "../io/resample.h"
#include "../util/log.h"
#include "../util/mem.h"
#include "random_vgg.h"

static nst_status require_path(const nst_config *cfg, int key, const char *value)
{
    if (*value) return NST_OK;
    const nst_key_info *k = &nst_config_keys(NULL)[key];
    return nst_fail(NST_EINPUT, "%s is not set: give it in the config ([%s] %s = FILE) or with --set %s=FILE", k->full,
                    k->section, k->name, k->full);
}

nst_status nst_job_check(const nst_config *cfg, nst_loss_spec *spec)
{
    NST_TRY(nst_loss_spec_parse(cfg, spec));
    NST_TRY(require_path(cfg, NST_K_content_path, cfg->content_path));
    if (spec->nstyle > 0) NST_TRY(require_path(cfg, NST_K_style_path, cfg->style_path));
    NST_TRY(require_path(cfg, NST_K_output_path, cfg->output_path));
    if (strcmp(cfg->optim_init, "image") == 0) {
        if (!cfg->optim_init_path[0])
            return nst_fail(NST_EINPUT, "%s: optim.init = image needs optim.init_path", nst_config_origin(cfg, NST_K_optim_init));
    }
    if (nst_format_from_name(cfg->output_path) == NST_FMT_UNKNOWN)
        return nst_fail(NST_EINPUT, "%s: output.path = '%s': unknown format; valid extensions: .png, .tif, .tiff",
                        nst_config_origin(cfg, NST_K_output_path), cfg->output_path);
    if (cfg->output_size > 0 && (cfg->output_width > 0 || cfg->output_height > 0))
        return nst_fail(NST_EINPUT, "%s: output.size cannot be combined with output.width or output.height (%s)",
                        nst_config_origin(cfg, NST_K_output_size),
                        nst_config_origin(cfg, cfg->output_width > 0 ? NST_K_output_width : NST_K_output_height));
    nst_status s = nst_atomic_check_target(cfg->output_path, cfg->output_overwrite);
    if (s != NST_OK) return nst_fail_context(s, "%s: output.path", nst_config_origin(cfg, NST_K_output_path));
    return NST_OK;
}

/* Output size from output.width/height/size and the content's aspect. */
static void output_size(const nst_config *cfg, int cw, int ch, int *w, int *h)
{
    if (cfg->output_width > 0 && cfg->output_height > 0) {
        *w = (int)cfg->output_width;
        *h = (int)cfg->output_height;
    } else if (cfg->output_width > 0) {
        *w = (int)cfg->output_width;
        *h = (int)lround((double)ch * *w / cw);
    } else if (cfg->output_height > 0) {
        *h = (int)cfg->output_height;
        *w = (int)lround((double)cw * *h / ch);
    } else if (cfg->output_size > 0) {
        nst_fit_long_side(cw, ch, (int)cfg->output_size, w, h);
    } else {
        *w = cw;
        *h = ch;
    }
    if (*w < 1) *w = 1;
    if (*h < 1) *h = 1;
}

static nst_status read_input(const nst_config *cfg, int key, const char *path, nst_image *img, nst_image_info *info)
{
    nst_read_limits lim = nst_default_limits(cfg->input_max_megapixels);
    nst_status s = nst_image_read(path, &lim, img, info);
    if (s != NST_OK) return nst_fail_context(s, "%s", nst_config_keys(NULL)[key].full);
    return NST_OK;
}

/* Read `path` and resize it to w x h, in place of img. */
static nst_status read_resized(const nst_config *cfg, int key, const char *path, int w, int h, nst_image *out,
                               nst_image_info *info, int *src_w, int *src_h)
{
    nst_image raw;
    NST_TRY(read_input(cfg, key, path, &raw, info));
    *src_w = raw.w;
    *src_h = raw.h;
    nst_status s = nst_image_resize(&raw, w, h, out);
    nst_image_free(&raw);
    return s;
}

static nst_status check_min_side(const nst_loss_spec *spec, const char *what, int w, int h)
{
    int m = nst_loss_spec_min_side(spec);
    if (w < m || h < m)
        return nst_fail(NST_EINPUT, "%s is %dx%d; the deepest layer in use (%s) needs at least %dx%d pixels", what, w, h,
                        nst_vgg_layer_at(spec->deepest)->relu, m, m);
    return NST_OK;
}

nst_status nst_job_load_weights(const nst_config *cfg, nst_weights *w)
{
    if (cfg->model_weights[0]) {
        nst_status s = nst_weights_read(cfg->model_weights, w);
        if (s != NST_OK) return nst_fail_context(s, "model.weights");
        return NST_OK;
    }
    NST_TRY(nst_weights_random(w, (uint64_t)cfg->model_random_seed, (int)cfg->model_random_width_divisor));
    nst_notice("model.weights is not set: using the built-in %s. Random features transfer texture; ImageNet weights "
               "give the real look: run `make weights` (downloads the Keras VGG-19 file) and set model.weights = "
               "models/vgg19_weights_tf_dim_ordering_tf_kernels_notop.h5\n",
               w->description);
    return NST_OK;
}

nst_status nst_job_run(const nst_config *cfg, nst_backend *be, nst_reducer red, nst_job_result *res)
{
    nst_loss_spec spec;
    nst_weights weights;
    nst_image content = {0}, style = {0}, init = {0}, out = {0};
    nst_image_info ci, si, ii;
    char *desc = NULL;
    size_t desc_len = 0;
    int sw, sh;
    memset(res, 0, sizeof *res);
    memset(&weights, 0, sizeof weights);

    NST_TRY(nst_job_check(cfg, &spec));
    nst_status s = nst_job_load_weights(cfg, &weights);
    if (s == NST_OK) {
        /* the content fixes the output size; it is read whole, then resized */
        nst_image raw;
        s = read_input(cfg, NST_K_content_path, cfg->content_path, &raw, &ci);
        if (s == NST_OK) {
            output_size(cfg, raw.w, raw.h, &res->width, &res->height);
            nst_info("content: %s (%dx%d, %s) -> %dx%d\n", cfg->content_path, raw.w, raw.h, ci.detail, res->width,
                     res->height);
            s = check_min_side(&spec, "the output", res->width, res->height);
            if (s == NST_OK) s = nst_image_resize(&raw, res->width, res->height, &content);
            nst_image_free(&raw);
        }
    }
    if (s == NST_OK && spec.nstyle > 0) {
        nst_image raw;
        s = read_input(cfg, NST_K_style_path, cfg->style_path, &raw, &si);
        if (s == NST_OK) {
            int long_side = (int)lround(cfg->style_scale * (res->width > res->height ? res->width : res->height));
            nst_fit_long_side(raw.w, raw.h, long_side < 1 ? 1 : long_side, &sw, &sh);
            if ((double)sw * sh > cfg->input_max_megapixels * 1e6)
                s = nst_fail(NST_EINPUT, "%s: style.scale = %g makes the style image %dx%d, above input.max_megapixels = %g",
                             nst_config_origin(cfg, NST_K_style_scale), cfg->style_scale, sw, sh, cfg->input_max_megapixels);
            if (s == NST_OK) s = check_min_side(&spec, "the style image at style.scale", sw, sh);
            if (s == NST_OK) {
                nst_info("style:   %s (%dx%d, %s) -> %dx%d\n", cfg->style_path, raw.w, raw.h, si.detail, sw, sh);
                s = nst_image_resize(&raw, sw, sh, &style);
            }
            nst_image_free(&raw);
        }
    }
    if (s == NST_OK && strcmp(cfg->optim_init, "image") == 0) {
        int iw, ih;
        s = read_resized(cfg, NST_K_optim_init_path, cfg->optim_init_path, res->width, res->height, &init, &ii, &iw, &ih);
        if (s == NST_OK) nst_info("init:    %s (%dx%d) -> %dx%d\n", cfg->optim_init_path, iw, ih, res->width, res->height);
    }
    if (s == NST_OK) {
        char loss[512];
        nst_loss_spec_describe(&spec, loss, sizeof loss);
        nst_info("model:   %s, %d conv layers, hash %016llx\n", weights.description, weights.nconv,
                 (unsigned long long)nst_weights_hash(&weights));
        nst_info("loss:    %s\n", loss);
        nst_info("optim:   %s, %lld iterations, lr %g, init %s\n", cfg->optim_method, cfg->optim_iterations, cfg->optim_lr,
                 cfg->optim_init);
        nst_render_ctx ctx = {cfg, &spec, be, &weights, red};
        s = nst_render(&ctx, &content, spec.nstyle > 0 ? &style : &content, &init, &out, &res->stats);
    }
    if (s == NST_OK) {
        FILE *f = open_memstream(&desc, &desc_len);
        if (f) {
            nst_config_write(cfg, f);
            fclose(f);
        }
        s = nst_image_write(cfg->output_path, &out, atoi(cfg->output_bits), cfg->output_overwrite, desc);
    }
    free(desc);
    nst_image_free(&content);
    nst_image_free(&style);
    nst_image_free(&init);
    nst_image_free(&out);
    nst_weights_free(&weights);
    return s;
}

/* nst/inputs.c: inputs at the working resolution, by region where the format allows (see inputs.h). */
#include "inputs.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../io/resample.h"
#include "../mpi/comm.h"
#include "../util/log.h"
#include "../util/mem.h"
#include "../util/timer.h"

void nst_output_size(const nst_config *cfg, int cw, int ch, int *w, int *h)
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

static nst_source_limits limits(const nst_config *cfg)
{
    return nst_source_default_limits(cfg->input_max_megapixels, cfg->input_max_whole_megapixels);
}

static nst_status open_input(const nst_config *cfg, int key, const char *path, nst_source **src)
{
    nst_source_limits lim = limits(cfg);
    nst_status s = nst_source_open(path, &lim, src);
    if (s != NST_OK) return nst_fail_context(s, "%s", nst_config_keys(NULL)[key].full);
    return NST_OK;
}

static nst_status check_min_side(const nst_loss_spec *spec, const char *what, int w, int h)
{
    int m = nst_loss_spec_min_side(spec);
    if (w < m || h < m)
        return nst_fail(NST_EINPUT, "%s is %dx%d; the deepest layer in use (%s) needs at least %dx%d pixels", what, w, h,
                        nst_vgg_layer_at(spec->deepest)->relu, m, m);
    return NST_OK;
}

/* Rank 0: the style image at style.scale of the output's long side, whole. */
static nst_status read_style(const nst_config *cfg, const nst_loss_spec *spec, nst_inputs *in)
{
    nst_source *src;
    int sw, sh;
    NST_TRY(open_input(cfg, NST_K_style_path, cfg->style_path, &src));
    int long_side = (int)lround(cfg->style_scale * (in->W > in->H ? in->W : in->H));
    nst_fit_long_side(src->w, src->h, long_side < 1 ? 1 : long_side, &sw, &sh);
    nst_status s = NST_OK;
    if ((double)sw * sh > cfg->input_max_whole_megapixels * 1e6)
        s = nst_fail(NST_EINPUT, "%s: style.scale = %g makes the style image %dx%d, above input.max_whole_megapixels = %g (the style image is held whole)",
                     nst_config_origin(cfg, NST_K_style_scale), cfg->style_scale, sw, sh, cfg->input_max_whole_megapixels);
    if (s == NST_OK) s = check_min_side(spec, "the style image at style.scale", sw, sh);
    if (s == NST_OK) {
        nst_info("style:   %s (%dx%d, %s) -> %dx%d\n", cfg->style_path, src->w, src->h, src->info.detail, sw, sh);
        s = nst_image_alloc(&in->style, sw, sh);
    }
    if (s == NST_OK) s = nst_resample_rect(src, sw, sh, nst_rect_make(0, 0, sw, sh), in->style.px);
    nst_source_close(src);
    if (s != NST_OK) nst_image_free(&in->style);
    return s;
}

nst_status nst_inputs_open(const nst_config *cfg, const nst_loss_spec *spec, nst_inputs *in)
{
    memset(in, 0, sizeof *in);
    double t0 = nst_now();
    int info[4] = {0, 0, 0, 0}; /* W, H, content random access, init random access */
    nst_status s = NST_OK;
    if (nst_comm_rank() == 0) {
        s = open_input(cfg, NST_K_content_path, cfg->content_path, &in->content);
        if (s == NST_OK) {
            nst_output_size(cfg, in->content->w, in->content->h, &in->W, &in->H);
            nst_info("content: %s (%dx%d, %s%s) -> %dx%d\n", cfg->content_path, in->content->w, in->content->h,
                     in->content->info.detail, in->content->random_access ? ", read by region" : "", in->W, in->H);
            s = check_min_side(spec, "the output", in->W, in->H);
        }
        if (s == NST_OK && strcmp(cfg->optim_init, "image") == 0) { /* is the initial image random access? */
            nst_source *init;
            s = open_input(cfg, NST_K_optim_init_path, cfg->optim_init_path, &init);
            if (s == NST_OK) {
                nst_info("init:    %s (%dx%d, %s) -> %dx%d\n", cfg->optim_init_path, init->w, init->h, init->info.detail, in->W, in->H);
                info[3] = init->random_access;
                nst_source_close(init);
            }
        }
        info[0] = in->W;
        info[1] = in->H;
        info[2] = s == NST_OK && in->content->random_access;
    }
    s = nst_comm_agree(s);
    if (s == NST_OK) s = nst_comm_bcast(info, sizeof info, 0);
    in->W = info[0];
    in->H = info[1];
    in->content_random = info[2];
    in->init_random = info[3];
    in->seconds += nst_now() - t0;
    return s;
}

nst_status nst_inputs_style(const nst_config *cfg, const nst_loss_spec *spec, nst_inputs *in, int *style_w, int *style_h)
{
    double t0 = nst_now();
    nst_status s = NST_OK;
    /* the style image is only for the style targets: no optimisation, no targets */
    if (nst_comm_rank() == 0 && spec->nstyle > 0 && cfg->optim_iterations > 0) s = read_style(cfg, spec, in);
    s = nst_comm_agree(s);
    int dims[2] = {in->style.w, in->style.h};
    if (s == NST_OK) s = nst_comm_bcast(dims, sizeof dims, 0);
    *style_w = dims[0];
    *style_h = dims[1];
    in->seconds += nst_now() - t0;
    return s;
}

/* One window, resampled from the source; a failure names the config key (the file names itself). */
static nst_status window(nst_source *src, const nst_inputs *in, int key, nst_rect w, float *out)
{
    nst_status s = nst_resample_rect(src, in->W, in->H, w, out);
    return s == NST_OK ? s : nst_fail_context(s, "%s", nst_config_keys(NULL)[key].full);
}

/* The windows of one input: every rank from its own source (random access), or rank 0 resamples
 * every window and sends it to its owner (then every window is sent, even after a failure, so
 * no owner waits for one that will not come; the failure follows in the agreement). */
static nst_status windows_of(const nst_config *cfg, nst_inputs *in, const nst_layout *L, int key, const char *path,
                             nst_source *have, int random, float **out)
{
    const int rank = nst_comm_rank();
    nst_source *src = have;
    nst_status s = NST_OK;
    if (!src && (random || rank == 0)) s = open_input(cfg, key, path, &src);
    s = nst_comm_agree(s); /* a rank that cannot open the file (not on a shared file system?) stops everyone */
    if (s != NST_OK) {
        if (src && src != have) nst_source_close(src);
        return s;
    }
    float *tmp = NULL;
    for (int t = 0, li = 0; t < L->grid.ntiles && (s == NST_OK || !random); t++) {
        nst_rect w = nst_grid_window(&L->grid, t);
        size_t n = (size_t)nst_rect_area(w) * 3;
        int owner = L->owner[t];
        if (owner == rank) {
            out[li] = nst_alloc_array(n, sizeof(float), "a tile window");
            if (!out[li] && !random && rank != 0) nst_comm_abort(1, "out of memory receiving a tile window");
            if (!out[li]) s = NST_ENOMEM;
        }
        float *dst = owner == rank ? out[li] : NULL;
        if (random) {
            if (dst && s == NST_OK) s = window(src, in, key, w, dst);
        } else if (rank == 0) {
            if (!dst) {
                float *bigger = realloc(tmp, n * sizeof(float));
                if (!bigger) nst_comm_abort(1, "out of memory sending tile windows");
                dst = tmp = bigger;
            }
            nst_status r = s == NST_OK ? window(src, in, key, w, dst) : s;
            if (r != NST_OK) memset(dst, 0, n * sizeof(float));
            if (s == NST_OK) s = r;
            if (owner != 0) {
                nst_status m = nst_comm_send(dst, n * sizeof(float), owner);
                if (s == NST_OK) s = m;
            }
        } else if (dst) {
            nst_status m = nst_comm_recv(dst, n * sizeof(float), 0);
            if (s == NST_OK) s = m;
        }
        if (owner == rank) li++;
    }
    free(tmp);
    if (src) {
        in->read_seconds += src->read_seconds;
        in->read_pixels += src->read_pixels;
        src->read_seconds = 0;
        src->read_pixels = 0;
    }
    if (src && src != have) nst_source_close(src);
    return nst_comm_agree(s);
}

nst_status nst_inputs_windows(const nst_config *cfg, nst_inputs *in, const nst_layout *L, float **content, float **init)
{
    double t0 = nst_now();
    nst_status s = windows_of(cfg, in, L, NST_K_content_path, cfg->content_path, in->content, in->content_random, content);
    nst_source_close(in->content); /* rank 0's decoded PNG/JPEG goes here */
    in->content = NULL;
    if (s == NST_OK && strcmp(cfg->optim_init, "image") == 0)
        s = windows_of(cfg, in, L, NST_K_optim_init_path, cfg->optim_init_path, NULL, in->init_random, init);
    in->seconds += nst_now() - t0;
    return s;
}

void nst_inputs_close(nst_inputs *in)
{
    nst_source_close(in->content);
    in->content = NULL;
    nst_image_free(&in->style);
}

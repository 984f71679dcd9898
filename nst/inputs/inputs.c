/* nst/inputs/inputs.c: inputs at a working resolution, by region where the format allows (see
 * inputs.h). */
#include "inputs.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../io/image/resample.h"
#include "../../mpi/comm.h"
#include "../../util/log.h"
#include "../../util/mem.h"
#include "../../util/timer.h"

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

void nst_output_aspect(const nst_config *cfg, int cw, int ch, int *aw, int *ah)
{
    const int both = cfg->output_width > 0 && cfg->output_height > 0;
    *aw = both ? (int)cfg->output_width : cw;
    *ah = both ? (int)cfg->output_height : ch;
}

static nst_source_limits limits(const nst_config *cfg)
{
    return nst_source_default_limits(cfg->input_max_megapixels, cfg->input_max_whole_megapixels);
}

nst_status nst_open_input(const nst_config *cfg, int key, const char *path, nst_source **src)
{
    nst_source_limits lim = limits(cfg);
    nst_status s = nst_source_open(path, &lim, src);
    if (s != NST_OK) {
        char where[NST_CFG_ORIGIN_MAX + 64];
        nst_config_where(cfg, key, where, sizeof where);
        return nst_fail_context(s, "%s", where);
    }
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

nst_status nst_inputs_open(const nst_config *cfg, const nst_loss_spec *spec, nst_inputs *in)
{
    memset(in, 0, sizeof *in);
    double t0 = nst_now();
    int info[6] = {0, 0, 0, 0, 0, 0}; /* W, H, content random access, init random access, AW, AH */
    nst_status s = NST_OK;
    if (nst_comm_rank() == 0) {
        s = nst_open_input(cfg, NST_K_content_path, cfg->content_path, &in->content);
        if (s == NST_OK) {
            nst_output_size(cfg, in->content->w, in->content->h, &in->W, &in->H);
            nst_output_aspect(cfg, in->content->w, in->content->h, &in->AW, &in->AH);
            nst_info("content: %s (%dx%d, %s%s) -> %dx%d\n", cfg->content_path, in->content->w, in->content->h,
                     in->content->info.detail, in->content->random_access ? ", read by region" : "", in->W, in->H);
            s = check_min_side(spec, "the output", in->W, in->H);
        }
        if (s == NST_OK && strcmp(cfg->optim_init, "image") == 0) { /* is the initial image random access? */
            nst_source *init;
            s = nst_open_input(cfg, NST_K_optim_init_path, cfg->optim_init_path, &init);
            if (s == NST_OK) {
                nst_info("init:    %s (%dx%d, %s) -> %dx%d\n", cfg->optim_init_path, init->w, init->h, init->info.detail, in->W, in->H);
                info[3] = init->random_access;
                nst_source_close(init);
            }
        }
        info[0] = in->W;
        info[1] = in->H;
        info[2] = s == NST_OK && in->content->random_access;
        info[4] = in->AW;
        info[5] = in->AH;
    }
    s = nst_comm_agree(s);
    if (s == NST_OK) s = nst_comm_bcast(info, sizeof info, 0);
    in->W = info[0];
    in->H = info[1];
    in->content_random = info[2];
    in->init_random = info[3];
    in->AW = info[4];
    in->AH = info[5];
    in->seconds += nst_now() - t0;
    return s;
}

nst_status nst_bcast_keeping_sources(nst_status s, void *obj, size_t bytes, nst_source **src, int n)
{
    nst_source *mine[64];
    if (n > 64) return nst_fail(NST_ERUNTIME, "broadcasting %d sources (at most 64)", n);
    s = nst_comm_agree(s);
    memcpy(mine, src, sizeof(nst_source *) * (size_t)n);
    if (s == NST_OK) s = nst_comm_bcast(obj, bytes, 0);
    if (nst_comm_rank() == 0)
        memcpy(src, mine, sizeof(nst_source *) * (size_t)n);
    else
        memset(src, 0, sizeof(nst_source *) * (size_t)n);
    return s;
}

/* One window, resampled from the source; a failure names the config key (the file names itself). */
static nst_status window(nst_source *src, int W, int H, int key, nst_rect w, float *out)
{
    nst_status s = nst_resample_rect(src, W, H, w, out);
    return s == NST_OK ? s : nst_fail_context(s, "%s", nst_config_keys(NULL)[key].full);
}

nst_status nst_read_rects(const nst_config *cfg, int key, const char *path, nst_source **src, int random, int W, int H,
                          const nst_rect *rects, const int *owner, int n, float **out, double *read_seconds,
                          unsigned long long *read_pixels)
{
    const int rank = nst_comm_rank();
    nst_status s = NST_OK;
    if (!*src && (random || rank == 0)) s = nst_open_input(cfg, key, path, src);
    s = nst_comm_agree(s); /* a rank that cannot open the file (not on a shared file system?) stops everyone */
    if (s != NST_OK) return s;
    double r0 = *src ? (*src)->read_seconds : 0;
    unsigned long long p0 = *src ? (*src)->read_pixels : 0;
    float *tmp = NULL;
    for (int t = 0, li = 0; t < n && (s == NST_OK || !random); t++) {
        nst_rect w = rects[t];
        size_t np = (size_t)nst_rect_area(w) * 3;
        if (owner[t] == rank) {
            out[li] = nst_alloc_array(np, sizeof(float), "a window of pixels");
            if (!out[li] && !random && rank != 0) nst_comm_abort(1, "out of memory receiving a window of pixels");
            if (!out[li]) s = NST_ENOMEM;
        }
        float *dst = owner[t] == rank ? out[li] : NULL;
        if (random) {
            if (dst && s == NST_OK) s = window(*src, W, H, key, w, dst);
        } else if (rank == 0) { /* rank 0 resamples every window; every one is sent, even after a failure */
            if (!dst) {
                float *bigger = realloc(tmp, np * sizeof(float));
                if (!bigger) nst_comm_abort(1, "out of memory sending windows of pixels");
                dst = tmp = bigger;
            }
            nst_status r = s == NST_OK ? window(*src, W, H, key, w, dst) : s;
            if (r != NST_OK) memset(dst, 0, np * sizeof(float));
            if (s == NST_OK) s = r;
            if (owner[t] != 0) {
                nst_status m = nst_comm_send(dst, np * sizeof(float), owner[t]);
                if (s == NST_OK) s = m;
            }
        } else if (dst) {
            nst_status m = nst_comm_recv(dst, np * sizeof(float), 0);
            if (s == NST_OK) s = m;
        }
        if (owner[t] == rank) li++;
    }
    free(tmp);
    if (*src && read_seconds) *read_seconds += (*src)->read_seconds - r0;
    if (*src && read_pixels) *read_pixels += (*src)->read_pixels - p0;
    return nst_comm_agree(s);
}

nst_status nst_inputs_windows(const nst_config *cfg, nst_inputs *in, const nst_layout *L, int W, int H, float **content,
                              float **init)
{
    double t0 = nst_now();
    const nst_grid *g = &L->grid;
    nst_rect *rects = nst_alloc_array((size_t)g->ntiles + 1, sizeof(nst_rect), "window rectangles");
    if (!rects) return NST_ENOMEM;
    for (int t = 0; t < g->ntiles; t++) rects[t] = nst_grid_window(g, t);
    nst_status s = nst_read_rects(cfg, NST_K_content_path, cfg->content_path, &in->content, in->content_random, W, H, rects, L->owner,
                                  g->ntiles, content, &in->read_seconds, &in->read_pixels);
    if (s == NST_OK && init)
        s = nst_read_rects(cfg, NST_K_optim_init_path, cfg->optim_init_path, &in->init, in->init_random, W, H, rects, L->owner, g->ntiles,
                           init, &in->read_seconds, &in->read_pixels);
    nst_free(rects);
    in->seconds += nst_now() - t0;
    return s;
}

void nst_inputs_close(nst_inputs *in)
{
    nst_source_close(in->content);
    nst_source_close(in->init);
    in->content = in->init = NULL;
}

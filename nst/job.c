/* nst/job.c: one render job from a resolved config: semantic checks, the network, the inputs at
 * the working resolution, the render, the output (see job.h). */
#include "job.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../io/atomic_file.h"
#include "../mpi/comm.h"
#include "../io/resample.h"
#include "../util/log.h"
#include "../util/mem.h"
#include "../util/version.h"
#include "layout.h"
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

/* ---- rank 0: the inputs at the working resolution -------------------------------------------- */

typedef struct {
    nst_image content, style, init;
    int has_init;
} inputs;

static void inputs_free(inputs *in)
{
    nst_image_free(&in->content);
    nst_image_free(&in->style);
    nst_image_free(&in->init);
}

static nst_status read_inputs(const nst_config *cfg, const nst_loss_spec *spec, inputs *in, int *W, int *H)
{
    nst_image raw;
    nst_image_info info;
    memset(in, 0, sizeof *in);
    NST_TRY(read_input(cfg, NST_K_content_path, cfg->content_path, &raw, &info));
    output_size(cfg, raw.w, raw.h, W, H);
    nst_info("content: %s (%dx%d, %s) -> %dx%d\n", cfg->content_path, raw.w, raw.h, info.detail, *W, *H);
    nst_status s = check_min_side(spec, "the output", *W, *H);
    if (s == NST_OK) s = nst_image_resize(&raw, *W, *H, &in->content);
    nst_image_free(&raw);
    NST_TRY(s);
    if (spec->nstyle > 0) {
        int sw, sh;
        NST_TRY(read_input(cfg, NST_K_style_path, cfg->style_path, &raw, &info));
        int long_side = (int)lround(cfg->style_scale * (*W > *H ? *W : *H));
        nst_fit_long_side(raw.w, raw.h, long_side < 1 ? 1 : long_side, &sw, &sh);
        if ((double)sw * sh > cfg->input_max_megapixels * 1e6)
            s = nst_fail(NST_EINPUT, "%s: style.scale = %g makes the style image %dx%d, above input.max_megapixels = %g",
                         nst_config_origin(cfg, NST_K_style_scale), cfg->style_scale, sw, sh, cfg->input_max_megapixels);
        if (s == NST_OK) s = check_min_side(spec, "the style image at style.scale", sw, sh);
        if (s == NST_OK) {
            nst_info("style:   %s (%dx%d, %s) -> %dx%d\n", cfg->style_path, raw.w, raw.h, info.detail, sw, sh);
            s = nst_image_resize(&raw, sw, sh, &in->style);
        }
        nst_image_free(&raw);
        NST_TRY(s);
    }
    if (strcmp(cfg->optim_init, "image") == 0) {
        int iw, ih;
        NST_TRY(read_resized(cfg, NST_K_optim_init_path, cfg->optim_init_path, *W, *H, &in->init, &info, &iw, &ih));
        nst_info("init:    %s (%dx%d) -> %dx%d\n", cfg->optim_init_path, iw, ih, *W, *H);
        in->has_init = 1;
    }
    return NST_OK;
}

/* ---- weights to every rank --------------------------------------------------------------------- */

static nst_status share_weights(const nst_config *cfg, nst_weights *w)
{
    int rank = nst_comm_rank();
    unsigned char *buf = NULL;
    size_t len = 0;
    nst_status s = NST_OK;
    memset(w, 0, sizeof *w);
    if (rank == 0) {
        s = nst_job_load_weights(cfg, w);
        if (s == NST_OK && nst_comm_size() > 1) s = nst_weights_pack(w, &buf, &len);
    }
    NST_TRY(nst_comm_agree(s));
    if (nst_comm_size() > 1) {
        s = nst_comm_bcast_alloc(&buf, &len, 0);
        if (s == NST_OK && rank != 0) s = nst_weights_unpack(buf, len, w);
        nst_free(buf);
    }
    return nst_comm_agree(s);
}

/* ---- windows out, cores back ------------------------------------------------------------------- */

/* Rank 0 sends every tile's window of img to its owner (tile order); every rank receives its
 * own tiles' windows into win[] (allocated here). */
static nst_status scatter_windows(const nst_layout *L, const nst_image *img, float **win)
{
    nst_status s = NST_OK;
    float *tmp = NULL;
    for (int t = 0, li = 0; t < L->grid.ntiles; t++) {
        nst_rect w = nst_grid_window(&L->grid, t);
        size_t n = (size_t)nst_rect_area(w) * 3;
        int owner = L->owner[t];
        if (L->rank == 0 && owner == 0) {
            win[li] = nst_alloc_array(n, sizeof(float), "a tile window");
            if (!win[li]) return NST_ENOMEM;
            nst_image_extract(img, w, win[li]);
        } else if (L->rank == 0) {
            float *bigger = realloc(tmp, n * sizeof(float));
            if (!bigger) nst_comm_abort(1, "out of memory sending tile windows");
            tmp = bigger;
            nst_image_extract(img, w, tmp);
            s = nst_comm_send(tmp, n * sizeof(float), owner);
        } else if (owner == L->rank) {
            win[li] = nst_alloc_array(n, sizeof(float), "a tile window");
            if (!win[li]) nst_comm_abort(1, "out of memory receiving a tile window");
            s = nst_comm_recv(win[li], n * sizeof(float), 0);
        }
        if (owner == L->rank) li++;
        if (s != NST_OK) break;
    }
    free(tmp);
    return s;
}

/* Every rank sends its tiles' cores to rank 0 (tile order), which places them into out. */
static nst_status gather_cores(const nst_layout *L, float **cores, nst_image *out)
{
    nst_status s = NST_OK;
    float *tmp = NULL;
    for (int t = 0, li = 0; s == NST_OK && t < L->grid.ntiles; t++) {
        nst_rect c = nst_grid_core(&L->grid, t);
        size_t n = (size_t)nst_rect_area(c) * 3;
        int owner = L->owner[t];
        if (L->rank == 0 && owner == 0) {
            nst_image_place(out, c, cores[li]);
        } else if (L->rank == 0) {
            float *bigger = realloc(tmp, n * sizeof(float));
            if (!bigger) nst_comm_abort(1, "out of memory receiving the result");
            tmp = bigger;
            s = nst_comm_recv(tmp, n * sizeof(float), owner);
            if (s == NST_OK) nst_image_place(out, c, tmp);
        } else if (owner == L->rank) {
            s = nst_comm_send(cores[li], n * sizeof(float), 0);
        }
        if (owner == L->rank) li++;
    }
    free(tmp);
    return s;
}

/* ---- the report ---------------------------------------------------------------------------------- */

static void describe_layout(const nst_layout *L, const nst_loss_spec *spec, int W, int H)
{
    const nst_grid *g = &L->grid;
    int deepest = spec->deepest < 0 ? 0 : spec->deepest;
    nst_info("tiling:  %s mode, %dx%d = %d tile%s of %dx%d px, halo %d px%s, windows %.2fx the image; %d rank%s\n",
             L->cheap ? "cheap" : "exact", g->nx, g->ny, g->ntiles, g->ntiles == 1 ? "" : "s", g->tile_w, g->tile_h, g->halo,
             g->halo >= L->halo_exact ? " (exact)" : "", 1.0 + nst_grid_halo_overhead(g), L->nranks, L->nranks == 1 ? "" : "s");
    nst_info("         exact halo for %s: %d px; %s%s\n", nst_vgg_layer_at(deepest)->relu, L->halo_exact, L->why,
             L->cheap ? "" : "");
    if (L->cheap) nst_info("         halos refreshed and overlaps blended every %d iterations\n", L->exchange_every);
    (void)W;
    (void)H;
}

/* Per-phase min/mean/max over ranks, per iteration; and the run record. */
static nst_status report(const nst_config *cfg, const nst_layout *L, const nst_job_result *res)
{
    const nst_render_stats *st = &res->stats;
    double mn[NST_T_COUNT], mx[NST_T_COUNT], sum[NST_T_COUNT];
    double mem[3] = {(double)L->mem_peak, (double)st->bytes_peak,
                     L->mem_peak ? (double)st->bytes_peak / (double)L->mem_peak : 0}, mem_mn[3], mem_mx[3], mem_sum[3];
    NST_TRY(nst_comm_stats(st->timers.t, mn, mx, sum, NST_T_COUNT));
    NST_TRY(nst_comm_stats(mem, mem_mn, mem_mx, mem_sum, 3));
    int n = nst_comm_size();
    double it = st->iterations > 0 ? (double)st->iterations : 1;
    double mp = (double)res->width * res->height / 1e6;
    if (st->iterations > 0) {
        nst_info("done: %lld iterations in %.2f s (%.4f s/iteration, %.3f megapixel-iterations/s); setup %.2f s\n",
                 st->iterations, st->seconds, st->seconds / it, mp * it / st->seconds, st->setup_seconds);
        nst_info("%-16s %11s %11s %11s   (seconds per iteration over %d rank%s)\n", "phase", "min", "mean", "max", n,
                 n == 1 ? "" : "s");
        for (int p = 0; p < NST_T_COUNT; p++)
            nst_info("%-16s %11.5f %11.5f %11.5f\n", nst_timer_name(p), mn[p] / it, sum[p] / n / it, mx[p] / it);
    }
    nst_info("memory:  peak %.1f MiB of backend buffers on the busiest rank; the model says %.1f MiB (peak/model %.3f)\n",
             mem_mx[1] / (1 << 20), mem_mx[0] / (1 << 20), mem_mx[2]);
    if (st->first.style > 0)
        nst_info("style loss: %.5e -> %.5e (%.1fx lower)\n", st->first.style, st->last.style,
                 st->last.style > 0 ? st->first.style / st->last.style : 0.0);
    if (!cfg->run_record[0] || nst_comm_rank() != 0) return NST_OK;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) return nst_fail(NST_ENOMEM, "out of memory writing the run record");
    fprintf(f, "{\n  \"nstbatch\": \"%s\",\n  \"ranks\": %d,\n  \"threads\": %d,\n  \"width\": %d,\n  \"height\": %d,\n",
            NST_VERSION, n, res->threads, res->width, res->height);
    fprintf(f, "  \"tiling\": {\"mode\": \"%s\", \"tiles\": %d, \"nx\": %d, \"ny\": %d, \"tile_w\": %d, \"tile_h\": %d, \"halo\": %d, "
               "\"halo_exact\": %d, \"halo_overhead\": %.6f, \"gram\": \"%s\", \"exchange_every\": %d, \"max_rank_load_px\": %lld},\n",
            L->cheap ? "cheap" : "exact", L->grid.ntiles, L->grid.nx, L->grid.ny, L->grid.tile_w, L->grid.tile_h, L->grid.halo, L->halo_exact,
            nst_grid_halo_overhead(&L->grid), nst_gram_strategy_name(L->gram), L->exchange_every, (long long)L->max_load);
    fprintf(f, "  \"iterations\": %lld,\n  \"seconds\": %.6f,\n  \"setup_seconds\": %.6f,\n  \"seconds_per_iteration\": %.6f,\n",
            st->iterations, st->seconds, st->setup_seconds, st->seconds / it);
    fprintf(f, "  \"megapixel_iterations_per_second\": %.6f,\n", st->seconds > 0 ? mp * it / st->seconds : 0.0);
    fprintf(f, "  \"phases_seconds_per_iteration\": {");
    for (int p = 0; p < NST_T_COUNT; p++)
        fprintf(f, "%s\n    \"%s\": {\"min\": %.7f, \"mean\": %.7f, \"max\": %.7f}", p ? "," : "", nst_timer_key(p), mn[p] / it,
                sum[p] / n / it, mx[p] / it);
    fprintf(f, "\n  },\n  \"memory\": {\"model_peak_bytes_max\": %.0f, \"peak_bytes_max\": %.0f, \"peak_over_model_max\": %.6f, "
               "\"peak_over_model_min\": %.6f},\n",
            mem_mx[0], mem_mx[1], mem_mx[2], mem_mn[2]);
    fprintf(f, "  \"loss\": {\"first\": {\"total\": %.9g, \"content\": %.9g, \"style\": %.9g, \"tv\": %.9g}, "
               "\"last\": {\"total\": %.9g, \"content\": %.9g, \"style\": %.9g, \"tv\": %.9g}}\n}\n",
            st->first.total, st->first.content, st->first.style, st->first.tv, st->last.total, st->last.content, st->last.style,
            st->last.tv);
    fclose(f);
    nst_status s = nst_atomic_write_text(cfg->run_record, text);
    free(text);
    return s;
}

/* ---- the job ------------------------------------------------------------------------------------- */

nst_status nst_job_run(const nst_config *cfg, nst_backend *be, nst_collectives coll, nst_job_result *res)
{
    const int rank = nst_comm_rank(), nranks = nst_comm_size();
    nst_loss_spec spec;
    nst_weights weights;
    inputs in;
    nst_layout L;
    int dims[4] = {0, 0, 0, 0}; /* output W, H; style w, h */
    memset(res, 0, sizeof *res);
    res->threads = be->threads;
    memset(&in, 0, sizeof in);
    memset(&L, 0, sizeof L);

    /* rank 0 checks (and reports); the spec itself is parsed identically everywhere */
    nst_status s = rank == 0 ? nst_job_check(cfg, &spec) : nst_loss_spec_parse(cfg, &spec);
    NST_TRY(nst_comm_agree(s));
    NST_TRY(share_weights(cfg, &weights));
    if (rank == 0) {
        s = read_inputs(cfg, &spec, &in, &dims[0], &dims[1]);
        dims[2] = in.style.w;
        dims[3] = in.style.h;
    }
    s = nst_comm_agree(s);
    if (s == NST_OK) s = nst_comm_bcast(dims, sizeof dims, 0);
    res->width = dims[0];
    res->height = dims[1];

    /* the layout: the same on every rank, so the budget is the smallest of them */
    nst_net shapes;
    if (s == NST_OK) s = nst_net_shapes(be, &weights, spec.deepest, spec.pool, &shapes);
    if (s == NST_OK) {
        double b = (double)nst_memory_budget(cfg->run_memory_gb, nst_comm_local_size()), bmin, bmax, bsum;
        s = nst_comm_stats(&b, &bmin, &bmax, &bsum, 1);
        if (s == NST_OK) s = nst_layout_plan(cfg, &spec, &shapes, dims[0], dims[1], dims[2], dims[3], nranks, rank, (size_t)bmin, &L);
    }
    s = nst_comm_agree(s);
    if (s == NST_OK) {
        char loss[512];
        nst_loss_spec_describe(&spec, loss, sizeof loss);
        nst_info("model:   %s, %d conv layers, hash %016llx\n", weights.description, weights.nconv,
                 (unsigned long long)nst_weights_hash(&weights));
        nst_info("loss:    %s\n", loss);
        nst_info("optim:   %s, %lld iterations, lr %g, init %s\n", cfg->optim_method, cfg->optim_iterations, cfg->optim_lr,
                 cfg->optim_init);
        describe_layout(&L, &spec, dims[0], dims[1]);
    }

    /* windows out */
    float **bufs = NULL;
    if (s == NST_OK) {
        bufs = nst_calloc(sizeof(float *) * 3 * (size_t)(L.nlocal + 1), "tile windows");
        if (!bufs) s = NST_ENOMEM;
    }
    s = nst_comm_agree(s);
    float **cw = bufs, **iw = bufs ? bufs + L.nlocal + 1 : NULL, **cores = bufs ? bufs + 2 * (L.nlocal + 1) : NULL;
    int has_init = strcmp(cfg->optim_init, "image") == 0;
    if (s == NST_OK) s = scatter_windows(&L, &in.content, cw);
    if (s == NST_OK && has_init) s = scatter_windows(&L, &in.init, iw);
    s = nst_comm_agree(s);
    if (rank == 0) { /* rank 0 keeps only the style image from here on */
        nst_image_free(&in.content);
        nst_image_free(&in.init);
    }

    /* the render */
    if (s == NST_OK) {
        nst_render_ctx ctx = {cfg, &spec, be, &weights, &L, coll, dims[0], dims[1], rank == 0 && spec.nstyle ? in.style.px : NULL,
                              dims[2], dims[3]};
        s = nst_render(&ctx, cw, has_init ? iw : NULL, cores, &res->stats);
    }
    s = nst_comm_agree(s);
    nst_image_free(&in.style);

    /* cores back, the output written by rank 0 */
    nst_image out = {0};
    if (s == NST_OK && rank == 0) s = nst_image_alloc(&out, dims[0], dims[1]);
    s = nst_comm_agree(s);
    if (s == NST_OK) s = gather_cores(&L, cores, &out);
    s = nst_comm_agree(s);
    if (s == NST_OK && rank == 0) {
        char *desc = NULL;
        size_t desc_len = 0;
        FILE *f = open_memstream(&desc, &desc_len);
        if (f) {
            nst_config_write(cfg, f);
            fclose(f);
        }
        s = nst_image_write(cfg->output_path, &out, atoi(cfg->output_bits), cfg->output_overwrite, desc);
        free(desc);
    }
    s = nst_comm_agree(s);
    if (s == NST_OK) s = nst_comm_agree(report(cfg, &L, res));
    if (s == NST_OK) nst_info("wrote %s (%dx%d, %s-bit)\n", cfg->output_path, dims[0], dims[1], cfg->output_bits);
    nst_image_free(&out);
    for (int i = 0; bufs && i < 3 * (L.nlocal + 1); i++) nst_free(bufs[i]);
    nst_free(bufs);
    inputs_free(&in);
    nst_layout_free(&L);
    nst_weights_free(&weights);
    return s;
}

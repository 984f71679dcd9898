/* nst/run/job.c: one render job from a resolved config: semantic checks, the network, the inputs at
 * the working resolution, the render, the output, the report (see job.h). */
#include "job.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>

#include "../../io/atomic_file.h"
#include "../../io/video/video.h"
#include "../../mpi/comm.h"
#include "../../util/log.h"
#include "../../util/mem.h"
#include "../../util/timer.h"
#include "../../util/text.h"
#include "../../util/version.h"
#include "../../viewer/page.h"
#include "../../io/versions.h"
#include <unistd.h>
#include "../state/checkpoint.h"
#include "../report/progress.h"
#include "../inputs/inputs.h"
#include "dryrun.h"
#include "../render/levels.h"
#include "../plan/layout.h"
#include "../output/output.h"
#include "../model/random_vgg.h"

/* room for rank 0's device diagnostics in the run record (a GPU's per-shape algorithms run to a few KiB) */
#define DIAG_BYTES 65536

static nst_status require_path(const nst_config *cfg, int key, const char *value)
{
    if (*value) return NST_OK;
    const nst_key_info *k = &nst_config_keys(NULL)[key];
    return nst_fail(NST_EINPUT, "%s is not set: give it in the config ([%s] %s = FILE) or with --set %s=FILE", k->full,
                    k->section, k->name, k->full);
}

nst_status nst_job_check(const nst_config *cfg, nst_loss_spec *spec, nst_output_spec *out)
{
    NST_TRY(nst_loss_spec_parse(cfg, spec));
    NST_TRY(require_path(cfg, NST_K_content_path, cfg->content_path));
    if (nst_clip_is_video_name(cfg->content_path) || nst_clip_is_pattern(cfg->content_path)) /* main renders a lone clip itself */
        return nst_fail(NST_EINPUT, "%s: content.path = %s is a clip: a clip renders on its own (nstbatch CLIP.ini; docs/VIDEO.md), "
                        "not as a job of a batch", nst_config_origin(cfg, NST_K_content_path), cfg->content_path);
    if (spec->nstyle > 0) NST_TRY(require_path(cfg, NST_K_style_path, cfg->style_path));
    NST_TRY(require_path(cfg, NST_K_output_path, cfg->output_path));
    if (strcmp(cfg->optim_init, "image") == 0) {
        if (!cfg->optim_init_path[0])
            return nst_fail(NST_EINPUT, "%s: optim.init = image needs optim.init_path", nst_config_origin(cfg, NST_K_optim_init));
    }
    if (cfg->output_size > 0 && (cfg->output_width > 0 || cfg->output_height > 0))
        return nst_fail(NST_EINPUT, "%s: output.size cannot be combined with output.width or output.height (%s)",
                        nst_config_origin(cfg, NST_K_output_size),
                        nst_config_origin(cfg, cfg->output_width > 0 ? NST_K_output_width : NST_K_output_height));
    return nst_output_spec_parse(cfg, out);
}

nst_status nst_job_load_weights(const nst_config *cfg, nst_weights *w)
{
    if (cfg->model_weights[0]) {
        char where[NST_CFG_ORIGIN_MAX + 64];
        nst_config_where(cfg, NST_K_model_weights, where, sizeof where);
        if (access(cfg->model_weights, R_OK) != 0) /* the usual first-hour case: the file was never fetched */
            return nst_fail(NST_EINPUT, "%s: %s: cannot open: %s; run `make weights` (it downloads the Keras VGG-19 file to "
                            "models/), or leave model.weights empty for the built-in random VGG-19",
                            where, cfg->model_weights, strerror(errno));
        nst_status s = nst_weights_read(cfg->model_weights, w);
        if (s != NST_OK) return nst_fail_context(s, "%s", where);
        return NST_OK;
    }
    return nst_weights_random(w, (uint64_t)cfg->model_random_seed, (int)cfg->model_random_width_divisor);
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

/* ---- the report ---------------------------------------------------------------------------------- */

static const char *const format_keys[NST_OUT_NFORMATS] = {"tiff", "hdf5", "png", "jpeg", "dzi"};

/* The output phase on the log: per file its size, rank 0's time in it and the rates. */
static void describe_output(const nst_output_spec *o, const nst_output_stats *os, const double *total, const double *exch,
                            const double *fmt, const double *fmt_io, int W, int H)
{
    double raw = (double)W * H * 3 * (o->bits / 8);
    nst_info("output:  %d level%s, %.2f s (moving and halving tiles: %.2f s on the slowest rank)\n", os->levels,
             os->levels == 1 ? "" : "s", *total, *exch);
    for (int f = 0; f < NST_OUT_NFORMATS; f++) {
        if (!o->want[f]) continue;
        double t = fmt[f], io = fmt_io[f];
        nst_info("         %-5s %s: %.1f MB, %.2f s (%.1f MB/s of level-0 pixels; %.2f s in the writing calls)\n", format_keys[f],
                 o->path[f], (double)os->bytes[f] / 1e6, t, t > 0 ? raw / 1e6 / t : 0.0, io);
    }
}

/* Per-phase min/mean/max over ranks, per iteration; and the run record. */
/* One rank's line of the run record's map. */
typedef struct {
    char host[64];
    char device[160];
    int world_rank, local_rank;
} rank_entry;

/* Every rank's host, node-local rank and device, on every rank. Collective. */
static nst_status rank_map(const nst_backend *be, const nst_job_env *env, rank_entry **out)
{
    const int n = nst_comm_size();
    rank_entry *m = nst_calloc(sizeof *m * (size_t)n, "the rank map");
    NST_TRY(nst_comm_agree(m ? NST_OK : NST_ENOMEM));
    rank_entry *me = &m[nst_comm_rank()];
    gethostname(me->host, sizeof me->host - 1);
    me->world_rank = nst_comm_world_rank();
    me->local_rank = nst_comm_local_rank();
    char dev[64] = "";
    if (be->gpu_stream) snprintf(dev, sizeof dev, " GPU %d (%.31s) %s", be->gpu_index, be->gpu_bus_id, nst_precision_name(be->precision));
    else snprintf(dev, sizeof dev, " %s", nst_precision_name(be->precision));
    if (env->progress && env->progress->gpu) {
        int idx;
        char name[64];
        nst_gpu_monitor_identity(env->progress->gpu, &idx, name, sizeof name);
        snprintf(me->device, sizeof me->device, "%.15s%.63s; monitoring NVML GPU %d (%.40s)", be->name, dev, idx, name);
    } else {
        snprintf(me->device, sizeof me->device, "%s%s", be->name, dev);
    }
    nst_status s = nst_comm_merge_bytes(m, sizeof *m * (size_t)n);
    if (s != NST_OK) {
        nst_free(m);
        return s;
    }
    *out = m;
    return NST_OK;
}

/* "done": every level's iterations and seconds (resumed levels count what this run did); the
 * last level's rate */
static void job_totals(const nst_job_result *res, double mp, const nst_render_stats *st)
{
    long long its = 0;
    double secs = 0;
    for (int k = 0; k < res->nlevels; k++) its += res->levels[k].stats.iterations, secs += res->levels[k].stats.seconds;
    if (res->nlevels <= 1 || its <= 0) its = st->iterations, secs = st->seconds;
    double it = st->iterations > 0 ? (double)st->iterations : 1;
    if (res->nlevels > 1)
        nst_info("done: %lld iterations over %d levels in %.2f s; the last level %.4f s/iteration, %.3f megapixel-iterations/s; setup %.2f s\n",
                 its, res->nlevels, secs, st->seconds / it, mp * it / st->seconds, st->setup_seconds);
    else
        nst_info("done: %lld iterations in %.2f s (%.4f s/iteration, %.3f megapixel-iterations/s); setup %.2f s\n", its, secs, secs / it,
                 mp * it / secs, st->setup_seconds);
}

/* The I/O figures, gathered in one call. */
enum { IO_OUT, IO_EXCH, IO_FMT, IO_FMTIO = IO_FMT + NST_OUT_NFORMATS, IO_IN = IO_FMTIO + NST_OUT_NFORMATS, IO_READ, IO_READPX,
       IO_OUTPEAK, IO_RSS, NIO };

/* The report's figures over the ranks. */
typedef struct {
    double mn[NST_T_COUNT], mx[NST_T_COUNT], sum[NST_T_COUNT]; /* the phase timers */
    double mem_mn[3], mem_mx[3], mem_sum[3];                   /* modelled peak, backend peak, their ratio */
    double io_mn[NIO], io_mx[NIO], io_sum[NIO];
    double quiet_mn[3], quiet_mx[3], quiet_sum[3];             /* iterations that read no loss, their waits, staged ones */
    int n;     /* ranks */
    double it; /* the last level's iterations (at least 1) */
    double mp; /* megapixels */
} report_figures;

/* Every rank's timers, memory and I/O figures: min, max and sum. Collective. */
static nst_status report_gather(const nst_layout *L, const nst_job_result *res, report_figures *fg)
{
    const nst_render_stats *st = &res->stats;
    const nst_output_stats *os = &res->output;
    /* the model: the layout's, and the halo exchange's buffers where they are in backend memory */
    const double model = (double)L->mem_peak + (double)st->exchange_bytes;
    double mem[3] = {model, (double)st->bytes_peak, model > 0 ? (double)st->bytes_peak / model : 0};
    double io[NIO];
    io[IO_OUT] = os->seconds;
    io[IO_EXCH] = os->exchange_seconds;
    for (int f = 0; f < NST_OUT_NFORMATS; f++) {
        io[IO_FMT + f] = os->format_seconds[f];
        io[IO_FMTIO + f] = os->io_seconds[f];
    }
    io[IO_IN] = res->input_seconds;
    io[IO_READ] = res->input_read_seconds;
    io[IO_READPX] = (double)res->input_read_pixels;
    io[IO_OUTPEAK] = (double)os->peak_bytes;
    io[IO_RSS] = (double)nst_peak_rss();
    NST_TRY(nst_comm_stats(st->timers.t, fg->mn, fg->mx, fg->sum, NST_T_COUNT));
    NST_TRY(nst_comm_stats(mem, fg->mem_mn, fg->mem_mx, fg->mem_sum, 3));
    NST_TRY(nst_comm_stats(io, fg->io_mn, fg->io_mx, fg->io_sum, NIO));
    double quiet[3] = {(double)st->quiet_iterations, (double)st->quiet_waits, (double)st->quiet_staged};
    NST_TRY(nst_comm_stats(quiet, fg->quiet_mn, fg->quiet_mx, fg->quiet_sum, 3));
    fg->n = nst_comm_size();
    fg->it = st->iterations > 0 ? (double)st->iterations : 1;
    fg->mp = (double)res->width * res->height / 1e6;
    return NST_OK;
}

/* The log's report: totals, per-phase times, memory, input, output, rss, and each level's loss
 * against its own start (a finer level starts higher). */
static void report_log(const nst_output_spec *o, const nst_job_result *res, const report_figures *fg)
{
    const nst_render_stats *st = &res->stats;
    const int n = fg->n;
    const double it = fg->it;
    if (st->iterations > 0) {
        job_totals(res, fg->mp, st);
        nst_info("%-16s %11s %11s %11s   (seconds per iteration over %d rank%s%s)\n", "phase", "min", "mean", "max", n, n == 1 ? "" : "s",
                 res->nlevels > 1 ? ", the last level" : "");
        for (int p = 0; p < NST_T_COUNT; p++)
            nst_info("%-16s %11.5f %11.5f %11.5f\n", nst_timer_name(p), fg->mn[p] / it, fg->sum[p] / n / it, fg->mx[p] / it);
        nst_info("memory:  peak %.1f MiB of backend buffers on the busiest rank; the model says %.1f MiB (peak/model %.3f)\n",
                 fg->mem_mx[1] / (1 << 20), fg->mem_mx[0] / (1 << 20), fg->mem_mx[2]);
    }
    nst_info("input:   %.2f s reading and resampling (slowest rank), %.2f s of it decoding; %.1f megapixels decoded by all ranks\n",
             fg->io_mx[IO_IN], fg->io_mx[IO_READ], fg->io_sum[IO_READPX] / 1e6);
    describe_output(o, &res->output, fg->io_mx + IO_OUT, fg->io_mx + IO_EXCH, fg->io_mx + IO_FMT, fg->io_mx + IO_FMTIO, res->width, res->height);
    nst_info("rss:     peak %.1f MiB on the largest rank (%.1f MiB on the smallest)\n", fg->io_mx[IO_RSS] / (1 << 20), fg->io_mn[IO_RSS] / (1 << 20));
    for (int k = 0; k < res->nlevels; k++) {
        const nst_level_report *r = &res->levels[k];
        const nst_loss_terms *a = res->nlevels > 1 ? &r->first : &st->first, *b = res->nlevels > 1 ? &r->last : &st->last;
        if (a->style <= 0 && a->total <= 0) continue;
        char lv[48] = "";
        if (res->nlevels > 1) snprintf(lv, sizeof lv, " (level %d, %dx%d)", k + 1, r->w, r->h);
        if (a->style > 0)
            nst_info("style loss%s: %.5e -> %.5e (%.1fx lower)\n", lv, a->style, b->style, b->style > 0 ? a->style / b->style : 0.0);
        else
            nst_info("loss%s: %.5e -> %.5e\n", lv, a->total, b->total);
    }
}

/* The run record's head: the run, the build, the job, the rank map, the checkpoint. */
static void record_head(FILE *f, const nst_job_result *res, const nst_backend *be, const nst_job_env *env, const rank_entry *map, int n)
{
    fprintf(f, "{\n  \"nstbatch\": \"%s\",\n  \"ranks\": %d,\n  \"threads\": %d,\n  \"precision\": \"%s\",\n  \"width\": %d,\n  \"height\": %d,\n",
            NST_VERSION, n, res->threads, nst_precision_name(be->precision), res->width, res->height);
    char libs[256], mpi[256];
    nst_io_versions(libs, sizeof libs);
    nst_comm_library_version(mpi, sizeof mpi);
    fprintf(f, "  \"build\": {\"version\": \"%s\", \"compiler\": ", NST_VERSION);
    nst_json_string(f, __VERSION__);
    fprintf(f, ", \"flags\": ");
    nst_json_string(f, NST_BUILD_FLAGS);
    fprintf(f, ", \"libraries\": ");
    nst_json_string(f, libs);
    fprintf(f, ", \"mpi\": ");
    nst_json_string(f, mpi);
    fprintf(f, ", \"backend\": ");
    nst_json_string(f, be->description);
    fprintf(f, "},\n  \"job\": ");
    nst_json_string(f, env->name ? env->name : "");
    fprintf(f, ",\n  \"rank_map\": [");
    for (int r = 0; r < n; r++) {
        fprintf(f, "%s\n    {\"rank\": %d, \"world_rank\": %d, \"host\": ", r ? "," : "", r, map[r].world_rank);
        nst_json_string(f, map[r].host);
        fprintf(f, ", \"local_rank\": %d, \"device\": ", map[r].local_rank);
        nst_json_string(f, map[r].device);
        fputc('}', f);
    }
    fprintf(f, "\n  ],\n  \"checkpoint\": {\"path\": ");
    nst_json_string(f, env->checkpoint_dir ? env->checkpoint_dir : "");
    fprintf(f, ", \"written\": %d, \"resumed_level\": %d, \"resumed_iteration\": %lld},\n", res->checkpoints, res->resumed_level,
            res->resumed_iteration);
}

/* The run record's render: the tiling, the times, the phases, memory, every level. */
static void record_render(FILE *f, const nst_layout *L, const nst_job_result *res, const report_figures *fg)
{
    const nst_render_stats *st = &res->stats;
    const double it = fg->it, mp = fg->mp;
    fprintf(f, "  \"tiling\": {\"mode\": \"%s\", \"tiles\": %d, \"nx\": %d, \"ny\": %d, \"tile_w\": %d, \"tile_h\": %d, \"halo\": %d, "
               "\"halo_exact\": %d, \"halo_overhead\": %.6f, \"gram\": \"%s\", \"exchange_every\": %d, \"blend_width\": %d, "
               "\"max_rank_load_px\": %lld, \"max_rank_core_px\": %lld},\n",
            L->cheap ? "cheap" : "exact", L->grid.ntiles, L->grid.nx, L->grid.ny, L->grid.tile_w, L->grid.tile_h, L->grid.halo, L->halo_exact,
            nst_grid_halo_overhead(&L->grid), nst_gram_strategy_name(L->gram), L->exchange_every, L->blend_width, (long long)L->max_load,
            (long long)res->max_core_px);
    fprintf(f, "  \"iterations\": %lld,\n  \"seconds\": %.6f,\n  \"setup_seconds\": %.6f,\n  \"seconds_per_iteration\": %.6f,\n",
            st->iterations, st->seconds, st->setup_seconds, st->seconds / it);
    fprintf(f, "  \"megapixel_iterations_per_second\": %.6f,\n", st->seconds > 0 ? mp * it / st->seconds : 0.0);
    fprintf(f, "  \"phases_seconds_per_iteration\": {");
    for (int p = 0; p < NST_T_COUNT; p++)
        fprintf(f, "%s\n    \"%s\": {\"min\": %.7f, \"mean\": %.7f, \"max\": %.7f}", p ? "," : "", nst_timer_key(p), fg->mn[p] / it,
                fg->sum[p] / fg->n / it, fg->mx[p] / it);
    /* the host's waits for the backend in iterations between reports: 0 by design (render.h) */
    fprintf(f, "\n  },\n  \"host_waits\": {\"quiet_iterations\": %.0f, \"waits_max\": %.0f, \"staged_max\": %.0f},", fg->quiet_mx[0],
            fg->quiet_mx[1], fg->quiet_mx[2]);
    fprintf(f, "\n  \"cuda_graphs\": {\"recorded\": %lld, \"replayed\": %lld, \"segments\": %d},", res->stats.graph_records,
            res->stats.graph_replays, res->stats.graph_segments);
    fprintf(f, "\n  \"memory\": {\"model_peak_bytes_max\": %.0f, \"peak_bytes_max\": %.0f, \"peak_over_model_max\": %.6f, "
               "\"peak_over_model_min\": %.6f, \"rss_peak_bytes_max\": %.0f, \"rss_peak_bytes_min\": %.0f, "
               "\"output_buffers_peak_bytes_max\": %.0f},\n",
            fg->mem_mx[0], fg->mem_mx[1], fg->mem_mx[2], fg->mem_mn[2], fg->io_mx[IO_RSS], fg->io_mn[IO_RSS], fg->io_mx[IO_OUTPEAK]);
    fprintf(f, "  \"weights_bytes\": %zu,\n", res->weights_bytes);
    fprintf(f, "  \"seconds_total\": %.6f,\n  \"levels\": [", res->seconds);
    char n[2][NST_JSON_NUM];
    for (int k = 0; k < res->nlevels; k++) {
        const nst_level_report *lr = &res->levels[k];
        fprintf(f, "%s\n    {\"width\": %d, \"height\": %d, \"iterations\": %lld, \"iterations_planned\": %lld, \"stopped\": %s, "
                   "\"tiles\": %d, \"tile_w\": %d, \"tile_h\": %d, \"tile_halvings\": %d, \"ranks\": %d, \"seconds\": %.6f, "
                   "\"style_seconds\": %.6f, \"style_tiles\": %d, \"style_from_cache\": %d, \"previews\": %d, \"loss_first\": %s, "
                   "\"loss_last\": %s}",
                k ? "," : "", lr->w, lr->h, lr->iterations, lr->planned, lr->iterations < lr->planned ? "true" : "false", lr->tiles,
                lr->tile_w, lr->tile_h, lr->halvings, lr->ranks, lr->seconds, lr->style_seconds, lr->style_tiles, lr->style_cached,
                lr->stats.previews, nst_json_num(n[0], "%.17g", lr->first.total), nst_json_num(n[1], "%.17g", lr->last.total));
    }
    fprintf(f, "\n  ],\n");
}

/* The run record's tail: input, output files, the loss. */
static void record_tail(FILE *f, const nst_output_spec *o, const nst_job_result *res, const report_figures *fg)
{
    const nst_render_stats *st = &res->stats;
    const nst_output_stats *os = &res->output;
    fprintf(f, "  \"input\": {\"seconds_max\": %.6f, \"read_seconds_max\": %.6f, \"source_pixels_decoded\": %.0f},\n", fg->io_mx[IO_IN],
            fg->io_mx[IO_READ], fg->io_sum[IO_READPX]);
    fprintf(f, "  \"output\": {\"levels\": %d, \"bits\": %d, \"tile_size\": %d, \"seconds_max\": %.6f, \"exchange_seconds_max\": %.6f, "
               "\"files\": {",
            os->levels, o->bits, o->tiff.tile, fg->io_mx[IO_OUT], fg->io_mx[IO_EXCH]);
    for (int fm = 0, k = 0; fm < NST_OUT_NFORMATS; fm++) {
        if (!o->want[fm]) continue;
        fprintf(f, "%s\n    \"%s\": {\"path\": ", k++ ? "," : "", format_keys[fm]);
        nst_json_string(f, o->path[fm]); /* a user's file name: quotes, backslashes, any bytes */
        fprintf(f, ", \"bytes\": %llu, \"seconds_max\": %.6f, \"io_seconds_max\": %.6f}", os->bytes[fm], fg->io_mx[IO_FMT + fm],
                fg->io_mx[IO_FMTIO + fm]);
    }
    fprintf(f, "\n  }},\n");
    const nst_loss_terms *lt[2] = {&st->first, &st->last};
    char n[4][NST_JSON_NUM];
    for (int i = 0; i < 2; i++)
        fprintf(f, "%s\"%s\": {\"total\": %s, \"content\": %s, \"style\": %s, \"tv\": %s}", i ? ", " : "  \"loss\": {", i ? "last" : "first",
                nst_json_num(n[0], "%.9g", lt[i]->total), nst_json_num(n[1], "%.9g", lt[i]->content), nst_json_num(n[2], "%.9g", lt[i]->style),
                nst_json_num(n[3], "%.9g", lt[i]->tv));
    fprintf(f, "}\n}\n");
}

/* The run record (rank 0), written whole or not at all; it frees the rank map. */
static nst_status record_write(const nst_config *cfg, const nst_layout *L, const nst_output_spec *o, const nst_job_result *res,
                               const nst_backend *be, const nst_job_env *env, rank_entry *map, const report_figures *fg)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) {
        nst_free(map);
        return nst_fail(NST_ENOMEM, "out of memory writing the run record");
    }
    record_head(f, res, be, env, map, fg->n);
    nst_free(map);
    char *conf = nst_config_text(cfg);
    fprintf(f, "  \"config\": ");
    nst_json_string(f, conf ? conf : "");
    free(conf);
    /* rank 0's device: memory at each phase, and on a GPU the libraries loaded and the algorithms chosen */
    char *diag = nst_alloc_array(DIAG_BYTES, 1, "the device diagnostics");
    if (diag) nst_backend_diagnostics(be, diag, DIAG_BYTES, "");
    fprintf(f, ",\n  \"device_diagnostics\": ");
    nst_json_string(f, diag ? diag : "");
    nst_free(diag);
    fprintf(f, ",\n");
    record_render(f, L, res, fg);
    record_tail(f, o, res, fg);
    fclose(f);
    nst_status s = nst_atomic_write_text(cfg->run_record, text);
    free(text);
    return s;
}

/* The closing report: the log on rank 0, the run record if asked for. Collective. */
static nst_status report(const nst_config *cfg, const nst_layout *L, const nst_output_spec *o, const nst_job_result *res, const nst_backend *be,
                         const nst_job_env *env)
{
    rank_entry *map = NULL;
    if (cfg->run_record[0]) NST_TRY(rank_map(be, env, &map));
    report_figures fg;
    nst_status s = report_gather(L, res, &fg);
    if (s != NST_OK) {
        nst_free(map);
        return s;
    }
    report_log(o, res, &fg);
    if (!cfg->run_record[0] || nst_comm_rank() != 0) {
        nst_free(map);
        return NST_OK;
    }
    return record_write(cfg, L, o, res, be, env, map, &fg);
}

/* ---- the job ------------------------------------------------------------------------------------- */

/* The resolved config as text: stored in every output file. */

nst_status nst_job_weights(const nst_config *cfg, nst_weights *w) { return share_weights(cfg, w); }

/* ---- the job, phase by phase --------------------------------------------------------------------- */

/* What one job holds between its phases. */
typedef struct {
    const nst_config *cfg;
    nst_backend *be;
    nst_collectives coll;
    const nst_job_env *env;
    nst_job_result *res;
    const nst_weights *weights;
    nst_loss_spec spec;
    nst_output_spec out;
    nst_ckpt ck;
    nst_inputs in;
    nst_styles styles;
    nst_masks masks;
    nst_level_plan plan;
    nst_net shapes; /* the network's shapes, for planning */
    int have_shapes;
    double bmin;    /* the smallest rank's memory budget */
    nst_layout L;   /* the last level's layout and its result's cores */
    float **cores;
    double t_start;
} job_run;

/* Finished by an earlier run (a requeued job, a batch run again): *done, the outputs in res. */
static nst_status job_done_before(job_run *j, int *done)
{
    const nst_job_env *env = j->env;
    nst_job_result *res = j->res;
    *done = 0;
    if (nst_comm_rank() == 0 && !env->restart) *done = nst_ckpt_is_done(j->cfg, env->checkpoint_dir, res->outputs, sizeof res->outputs);
    NST_TRY(nst_comm_bcast(done, sizeof *done, 0));
    if (*done) {
        NST_TRY(nst_comm_bcast(res->outputs, sizeof res->outputs, 0));
        res->skipped = 1;
        nst_info("already rendered by an earlier run (checkpoint %s says done): %s\n", env->checkpoint_dir, res->outputs);
    }
    return NST_OK;
}

/* The checks (every rank; the output files are checked where they will be written; rank 0
 * reports) and the checkpoint, opened. */
static nst_status job_checks(job_run *j)
{
    const nst_weights *weights = j->weights;
    nst_job_result *res = j->res;
    NST_TRY(nst_comm_agree(nst_job_check(j->cfg, &j->spec, &j->out)));
    NST_TRY(nst_ckpt_open(&j->ck, j->cfg, j->env->checkpoint_dir, j->env->restart, j->env->name));
    if (j->ck.done) /* done, but an output is gone (or its name changed): render again */
        nst_notice("checkpoint %s: the finished render's outputs (%s) are not all there: rendering again\n", j->ck.dir, j->ck.outputs);
    if (j->ck.resume) res->resumed_level = j->ck.level + 1, res->resumed_iteration = j->ck.iteration;
    for (int k = 0; k < weights->nconv; k++)
        res->weights_bytes += sizeof(float) * ((size_t)weights->conv[k].cout * weights->conv[k].cin * 9 + (size_t)weights->conv[k].cout);
    return NST_OK;
}

/* The inputs: the content (its size is the job's), the output size against it, the styles. */
static nst_status job_inputs(job_run *j)
{
    const nst_config *cfg = j->cfg;
    nst_status s = nst_inputs_open(cfg, &j->spec, &j->in);
    if (s == NST_OK) s = nst_comm_agree(nst_output_spec_check_size(cfg, &j->out, j->in.W, j->in.H));
    if (s == NST_OK && j->spec.nstyle > 0 && cfg->optim_iterations + (cfg->pyramid_iterations[0] ? 1 : 0) > 0) s = nst_styles_open(cfg, &j->styles);
    if (s == NST_OK) /* (the content's file size: rank 0's, where the masks are checked) */
        s = nst_masks_open(cfg, j->styles.n, j->in.content ? j->in.content->w : 0, j->in.content ? j->in.content->h : 0, &j->masks);
    j->res->width = j->in.W;
    j->res->height = j->in.H;
    return s;
}

/* The levels, each planned the same on every rank, within the smallest rank's budget. */
static nst_status job_plan(job_run *j, nst_status s)
{
    const nst_config *cfg = j->cfg;
    nst_backend *be = j->be;
    nst_level_plan *plan = &j->plan;
    const int W = j->in.W, H = j->in.H;
    if (s == NST_OK) s = nst_comm_agree(nst_levels_plan(cfg, &j->spec, W, H, j->in.AW, j->in.AH, plan));
    if (s == NST_OK) nst_progress_job(j->env->progress, j->env->name, plan->n, plan->w, plan->h, plan->iterations);
    if (s == NST_OK && j->styles.n > 0)
        s = nst_comm_agree(nst_styles_check(cfg, &j->spec, &j->styles, plan->w[0] > plan->h[0] ? plan->w[0] : plan->h[0], W > H ? W : H));
    if (s == NST_OK) {
        s = nst_net_shapes(be, j->weights, j->spec.deepest, j->spec.pool, &j->shapes);
        j->have_shapes = s == NST_OK;
    }
    if (s == NST_OK && !be->capacity) s = nst_comm_agree(nst_memory_check(cfg, nst_comm_local_size()));
    if (s == NST_OK) {
        double b = (double)nst_memory_budget(be, cfg->run_memory_gb, nst_comm_local_size()), bmax, bsum;
        s = nst_comm_stats(&b, &j->bmin, &bmax, &bsum, 1);
    }
    return nst_comm_agree(s);
}

/* The job on the log: the model, the loss, the optimiser, the pyramid, the outputs. */
static void job_describe(const job_run *j)
{
    const nst_config *cfg = j->cfg;
    const nst_weights *weights = j->weights;
    const nst_level_plan *plan = &j->plan;
    const nst_output_spec *out = &j->out;
    char loss[512], files[1024];
    nst_loss_spec_describe(&j->spec, loss, sizeof loss);
    nst_output_describe(out, files, sizeof files);
    nst_info("model:   %s, %d conv layers, hash %016llx%s\n", weights->description, weights->nconv,
             (unsigned long long)nst_weights_hash(weights),
             cfg->model_weights[0] ? "" : " (random features give texture; `make weights` gives the real look)");
    nst_info("loss:    %s\n", loss);
    long long total_its = 0;
    for (int k = 0; k < plan->n; k++) total_its += plan->iterations[k];
    const char *method = nst_optim_method(cfg);
    const int lbfgs = strcmp(method, "lbfgs") == 0;
    nst_info("optim:   %s%s, %lld iterations%s, %s %g, init %s%s%s\n", method, strcmp(cfg->optim_method, "auto") ? "" : " (auto)", total_its,
             plan->n > 1 ? " over the levels" : "", lbfgs ? "step" : "lr", lbfgs ? cfg->optim_lbfgs_step : cfg->optim_lr, cfg->optim_init,
             strcmp(cfg->color_mode, "none") ? "; color " : "", strcmp(cfg->color_mode, "none") ? cfg->color_mode : "");
    if (plan->n > 1) {
        char sizes[512];
        size_t n = 0;
        for (int k = 0; k < plan->n && n < sizeof sizes; k++)
            n += (size_t)snprintf(sizes + n, sizeof sizes - n, "%s%dx%d (%lld)", k ? ", " : "", plan->w[k], plan->h[k], plan->iterations[k]);
        nst_info("pyramid: %d levels, factor %g: %s; Adam state at a level change: %s\n", plan->n, cfg->pyramid_factor, sizes,
                 lbfgs ? "a new L-BFGS history" : cfg->pyramid_state);
    }
    nst_info("output:  %s (%d-bit%s, %d px tiles)%s%s\n", files, out->bits,
             out->want[NST_OUT_TIFF] ? (out->tiff.codec == NST_TC_JPEG ? ", TIFF jpeg" : out->tiff.codec == NST_TC_NONE ? ", TIFF uncompressed" : "") : "",
             out->tiff.tile, out->preview_path[0] ? "; preview " : "", out->preview_path);
}

/* The inputs, the styles and the shapes, closed. */
static void job_close_inputs(job_run *j)
{
    nst_inputs_close(&j->in);
    nst_styles_close(&j->styles);
    nst_masks_close(&j->masks);
    if (j->have_shapes) nst_net_destroy(&j->shapes);
}

/* --dry-run: the plan and its estimate, no render; the job ends here. */
static nst_status job_dry_run(job_run *j)
{
    nst_levels_ctx lc = {j->cfg, &j->spec, j->be, j->weights, &j->shapes, j->coll, &j->in, j->spec.nstyle ? &j->styles : NULL, j->env->cache,
                         (size_t)j->bmin, NULL, NULL, NULL, 0, 0, &j->masks, NULL};
    nst_status s = nst_dry_run(&lc, &j->plan, &j->out, j->in.W, j->in.H);
    job_close_inputs(j);
    nst_ckpt_free(&j->ck);
    j->res->skipped = 1;
    return s;
}

/* The render, coarse to fine: the last level's layout and cores in j, every level's report in res. */
static nst_status job_levels(job_run *j)
{
    const nst_job_env *env = j->env;
    nst_job_result *res = j->res;
    j->ck.done = 0;
    nst_levels_ctx lc = {j->cfg, &j->spec, j->be, j->weights, &j->shapes, j->coll, &j->in, j->spec.nstyle ? &j->styles : NULL, env->cache,
                         (size_t)j->bmin, &j->ck, env->progress, j->out.preview_path, j->out.preview_side, j->out.save_every, &j->masks, NULL};
    nst_status s = nst_levels_run(&lc, &j->plan, &j->L, &j->cores, res->levels);
    res->nlevels = j->plan.n;
    if (s == NST_OK) {
        res->stats = res->levels[j->plan.n - 1].stats;
        res->stats.first = res->levels[0].first;
    }
    return s;
}

/* The inputs' figures, and the largest rank's share of the result (collective when s is NST_OK). */
static nst_status job_render_figures(job_run *j, nst_status s)
{
    nst_job_result *res = j->res;
    const nst_layout *L = &j->L;
    res->input_seconds = j->in.seconds;
    res->input_read_seconds = j->in.read_seconds;
    res->input_read_pixels = j->in.read_pixels;
    if (s == NST_OK) {
        for (int i = 0; i < L->nlocal; i++) res->max_core_px += nst_rect_area(nst_grid_core(&L->grid, L->local[i]));
        double c = (double)res->max_core_px, cmn, cmx, csum;
        s = nst_comm_stats(&c, &cmn, &cmx, &csum, 1);
        res->max_core_px = (long long)cmx;
    }
    return s;
}

/* Rank 0, beside a Deep Zoom output: the viewer page (viewer/page.h) with the config and the
 * losses. The pyramid is complete without it, so a page that cannot be written (no OpenSeadragon
 * installed) is a warning, not a failed render. */
static void job_viewer_page(const job_run *j, const char *desc)
{
    if (!j->out.want[NST_OUT_DZI] || nst_comm_rank() != 0) return;
    const nst_loss_terms *a = &j->res->stats.first, *b = &j->res->stats.last;
    nst_viewer_page pg = {j->out.path[NST_OUT_DZI], j->out.dzi_content[0] ? j->out.dzi_content : NULL, j->in.W, j->in.H, desc, NST_VERSION, 1,
                          {a->total, a->content, a->style, a->tv}, {b->total, b->content, b->style, b->tv}};
    if (nst_viewer_write(&pg) == NST_OK)
        nst_info("output:  the viewer page beside %s: nstbatch-view %s serves it\n", j->out.path[NST_OUT_DZI], j->out.path[NST_OUT_DZI]);
    else
        nst_warn("%s: the viewer page was not written (the Deep Zoom pyramid is complete): %s\n", j->out.path[NST_OUT_DZI], nst_fail_message());
}

/* The output, written by the ranks that own it, with the config in every file. */
static nst_status job_output(job_run *j, nst_status s)
{
    char *desc = s == NST_OK ? nst_config_text(j->cfg) : NULL;
    if (s == NST_OK && !desc) s = nst_fail(NST_ENOMEM, "out of memory describing the config");
    s = nst_comm_agree(s);
    if (s == NST_OK) s = nst_output_write(&j->out, &j->L, j->cores, j->in.W, j->in.H, desc, &j->res->output);
    if (s == NST_OK) nst_backend_mark(j->be, "the output written");
    if (s == NST_OK && j->out.dzi_content[0]) { /* the content beside a Deep Zoom output, for the viewer */
        nst_output_stats cst;
        s = nst_output_content_dzi(j->cfg, &j->out, &j->L, j->in.W, j->in.H, j->in.content_random, &cst);
        if (s == NST_OK) nst_info("output:  %s (the content, for the viewer): %.1f MB, %.2f s\n", j->out.dzi_content, (double)cst.bytes[NST_OUT_DZI] / 1e6, cst.seconds);
    }
    if (s == NST_OK) job_viewer_page(j, desc);
    free(desc);
    return s;
}

/* The files on the log and in the result, the checkpoint marked done (when s is NST_OK); then
 * everything the job still holds, freed. */
static nst_status job_finish(job_run *j, nst_status s)
{
    nst_job_result *res = j->res;
    if (s == NST_OK) {
        char files[1024];
        nst_output_describe(&j->out, files, sizeof files);
        snprintf(res->outputs, sizeof res->outputs, "%s", files);
        nst_info("wrote %s (%dx%d, %d-bit)\n", files, j->in.W, j->in.H, j->out.bits);
        s = nst_comm_agree(nst_ckpt_finish(&j->ck, files));
    }
    res->checkpoints = j->ck.written;
    nst_ckpt_free(&j->ck);
    nst_progress_job_end(j->env->progress, s == NST_OK ? "done" : s == NST_EINTERRUPTED ? "stopped" : "failed", nst_now() - j->t_start);
    if (j->cores) {
        for (int i = 0; i < j->L.nlocal; i++) nst_free(j->cores[i]);
        nst_free(j->cores);
    }
    nst_layout_free(&j->L);
    return s;
}

nst_status nst_job_run(const nst_config *cfg, nst_backend *be, nst_collectives coll, const nst_job_env *env, nst_job_result *res)
{
    job_run j;
    memset(&j, 0, sizeof j);
    j.cfg = cfg, j.be = be, j.coll = coll, j.env = env, j.res = res, j.weights = env->weights;
    memset(res, 0, sizeof *res);
    res->threads = be->threads;
    j.t_start = nst_now();

    int done;
    NST_TRY(job_done_before(&j, &done));
    if (done) return NST_OK;
    NST_TRY(job_checks(&j));
    nst_status s = job_inputs(&j);
    s = job_plan(&j, s);
    if (s == NST_OK) job_describe(&j);
    if (s == NST_OK && env->dry_run) return job_dry_run(&j);
    if (s == NST_OK) s = job_levels(&j);
    s = job_render_figures(&j, s);
    job_close_inputs(&j);
    s = job_output(&j, s);
    res->seconds = nst_now() - j.t_start;
    if (s == NST_OK) s = nst_comm_agree(report(cfg, &j.L, &j.out, res, be, env));
    return job_finish(&j, s);
}

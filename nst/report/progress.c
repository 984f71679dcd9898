/* nst/report/progress.c: the live line, the rows, JSON lines, the Prometheus file, GPU warnings (see
 * progress.h). */
#define _GNU_SOURCE
#include "progress.h"

#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "../../io/atomic_file.h"
#include "../../mpi/comm.h"
#include "../../util/log.h"
#include "../../util/mem.h"
#include "../../util/text.h"
#include "../../util/timer.h"

enum { WARN_UTIL = 1, WARN_MEM = 2, WARN_TEMP = 4, WARN_POWER = 8 };

nst_status nst_progress_open(nst_progress *p, const nst_config *cfg, int quiet, int launched, const char *gpu_bus_id)
{
    memset(p, 0, sizeof *p);
    p->jsonl_fd = -1;
    p->quiet = quiet;
    p->print_every = cfg->run_print_every;
    p->run_t0 = nst_now();
    /* auto: live on a terminal, but not under a launcher: mpirun gives ranks a pseudo-terminal
     * even when its own output goes to a file, so a rank cannot tell (run.progress = live can) */
    p->live = strcmp(cfg->run_progress, "live") == 0 || (strcmp(cfg->run_progress, "auto") == 0 && !launched && isatty(STDOUT_FILENO));
    snprintf(p->jsonl, sizeof p->jsonl, "%s", cfg->metrics_path);
    snprintf(p->prom, sizeof p->prom, "%s", cfg->metrics_prometheus);
    p->metrics = p->jsonl[0] || p->prom[0];
    nst_status s = NST_OK;
    if (p->jsonl[0] && nst_comm_world_rank() == 0) { /* a new log per run; batch groups append to it */
        p->jsonl_fd = open(p->jsonl, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
        if (p->jsonl_fd < 0)
            s = nst_fail(NST_EINPUT, "%s: metrics.path %s: cannot create it: %m", nst_config_origin(cfg, NST_K_metrics_path), p->jsonl);
    }
    NST_TRY(nst_comm_agree(s));
    /* GPU monitoring: every rank decides the same (the config), each samples its own GPU */
    p->gpu_wanted = strcmp(cfg->metrics_gpu, "on") == 0 || (strcmp(cfg->metrics_gpu, "auto") == 0 && gpu_bus_id && *gpu_bus_id);
    if (p->gpu_wanted) {
        char why[256];
        if (nst_gpu_monitor_start(nst_comm_local_rank(), gpu_bus_id, cfg->metrics_gpu_interval, &p->gpu, why, sizeof why) != 0) {
            p->gpu = NULL; /* this rank contributes nothing to the GPU rows; the others still do */
            if (nst_comm_rank() == 0) nst_notice("metrics.gpu = %s: no GPU monitoring on rank 0: %s\n", cfg->metrics_gpu, why);
        }
        p->metrics = 1; /* GPU warnings need the rows' reductions */
    }
    return NST_OK;
}

void nst_progress_close(nst_progress *p)
{
    if (p->jsonl_fd >= 0) close(p->jsonl_fd);
    p->jsonl_fd = -1;
    nst_gpu_monitor_stop(p->gpu);
    p->gpu = NULL;
}

/* ---- JSON lines ---------------------------------------------------------------------------------- */

static void write_line(nst_progress *p, const char *line, size_t n)
{
    if (!p->jsonl[0] || !nst_log_is_root()) return;
    if (p->jsonl_fd < 0) p->jsonl_fd = open(p->jsonl, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (p->jsonl_fd < 0) return;
    /* one write() per line: groups appending to the same log do not interleave within a line */
    if (write(p->jsonl_fd, line, n) != (ssize_t)n) nst_warn("metrics.path %s: write failed: %m\n", p->jsonl);
}

static FILE *line_begin(nst_progress *p, char **buf, size_t *len, const char *event)
{
    FILE *f = open_memstream(buf, len);
    if (!f) return NULL;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    fprintf(f, "{\"time\": %.3f, \"elapsed_s\": %.3f, \"event\": \"%s\", \"job\": ", ts.tv_sec + ts.tv_nsec * 1e-9, nst_now() - p->run_t0, event);
    nst_json_string(f, p->job);
    return f;
}

/* (buf and len are open_memstream's: valid only after fclose) */
static void line_end(nst_progress *p, FILE *f, char **buf, size_t *len)
{
    fputs("}\n", f);
    fclose(f);
    write_line(p, *buf, *len);
    free(*buf);
}

void nst_progress_event(nst_progress *p, const char *event, const char *fields)
{
    if (!p || !p->jsonl[0] || !nst_log_is_root()) return;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = line_begin(p, &buf, &len, event);
    if (!f) return;
    if (fields && *fields) fprintf(f, ", %s", fields);
    line_end(p, f, &buf, &len);
}

/* ---- the job and its levels ---------------------------------------------------------------------- */

void nst_progress_job(nst_progress *p, const char *name, int nlevels, const int *w, const int *h, const long long *iters)
{
    if (!p) return;
    snprintf(p->job, sizeof p->job, "%s", name ? name : "");
    p->job_t0 = nst_now();
    p->nlevels = nlevels < NST_PROGRESS_MAX_LEVELS ? nlevels : NST_PROGRESS_MAX_LEVELS;
    p->work_total = 0;
    p->warned = 0;
    for (int k = 0; k < p->nlevels; k++) {
        p->w[k] = w[k], p->h[k] = h[k], p->iters[k] = iters[k];
        p->work_total += (double)w[k] * h[k] * (double)iters[k];
    }
    char fields[256];
    snprintf(fields, sizeof fields, "\"levels\": %d, \"width\": %d, \"height\": %d, \"pixel_iterations\": %.0f", p->nlevels, w[nlevels - 1],
             h[nlevels - 1], p->work_total);
    nst_progress_event(p, "job_start", fields);
}

void nst_progress_job_end(nst_progress *p, const char *status, double seconds)
{
    if (!p) return;
    char fields[128];
    snprintf(fields, sizeof fields, "\"status\": \"%s\", \"seconds\": %.3f", status, seconds);
    nst_progress_event(p, "job_end", fields);
}

void nst_progress_level(nst_progress *p, int k, long long it0)
{
    if (!p) return;
    p->level = k;
    p->work_before = 0;
    for (int j = 0; j < k && j < p->nlevels; j++) p->work_before += (double)p->w[j] * p->h[j] * (double)p->iters[j];
    p->level_t0 = p->mark_t = nst_now();
    if (!p->fenced) nst_gpu_monitor_fence(p->gpu); /* once: the start-up before the first level */
    p->fenced = 1;
    p->last_live = 0;
    p->level_it0 = p->mark_it = it0;
    memset(&p->mark_tm, 0, sizeof p->mark_tm);
    nst_info("%10s %12s %12s %12s %12s %9s %9s %9s\n", "iteration", "loss", "content", "style", "tv", "s/iter", "MPit/s", "ETA");
    char fields[160];
    snprintf(fields, sizeof fields, "\"level\": %d, \"levels\": %d, \"width\": %d, \"height\": %d, \"iterations\": %lld, \"from_iteration\": %lld",
             k + 1, p->nlevels, p->w[k], p->h[k], p->iters[k], it0);
    nst_progress_event(p, "level_start", fields);
}

static void fmt_eta(double s, char *out, size_t cap)
{
    if (!(s >= 0) || s > 1e8) {
        snprintf(out, cap, "-");
    } else if (s < 60) {
        snprintf(out, cap, "%.0fs", s);
    } else if (s < 3600) {
        snprintf(out, cap, "%dm%02ds", (int)(s / 60), (int)s % 60);
    } else {
        snprintf(out, cap, "%dh%02dm", (int)(s / 3600), (int)(s / 60) % 60);
    }
}

void nst_progress_fmt_spi(double s, char *out, size_t cap)
{
    int decimals = 3;
    if (s > 0 && s < 1) decimals = 3 - (int)floor(log10(s));
    snprintf(out, cap, "%.*f", decimals > 6 ? 6 : decimals, s); /* 8 characters at most below 1 s */
}

/* ---- rows and metrics ----------------------------------------------------------------------------- */

enum { G_HAS, G_UTIL_MEAN, G_UTIL_MIN, G_UTIL_SETTLED, G_MEM, G_MEM_FRAC, G_TEMP, G_POWER, G_POWER_MAX, G_POWER_FRAC, G_SM, G_MEMCLK, G_N };

typedef struct {
    double tmin[NST_T_COUNT], tmax[NST_T_COUNT], tsum[NST_T_COUNT];
    double mmin[2], mmax[2], msum[2];
    double gmin[G_N], gmax[G_N], gsum[G_N];
    int ranks, have_phases, gpus;
    char gpu_name[96];
} reduced;

/* The ranks' interval: phase seconds per iteration, memory, GPU, in one reduction. Collective. */
static nst_status reduce(nst_progress *p, long long it, const nst_timers *tm, size_t bytes_in_use, reduced *r)
{
    enum { PH = 0, MEM = PH + NST_T_COUNT, GMIN = MEM + 2, GMAX = GMIN + G_N, GSUM = GMAX + G_N, N = GSUM + G_N };
    double in[N], mn[N], mx[N], sum[N];
    memset(r, 0, sizeof *r);
    r->ranks = nst_comm_size();
    long long n = it - p->mark_it;
    for (int k = 0; k < NST_T_COUNT; k++) in[PH + k] = n > 0 ? (tm->t[k] - p->mark_tm.t[k]) / (double)n : 0;
    r->have_phases = n > 0;
    in[MEM] = (double)bytes_in_use, in[MEM + 1] = (double)nst_peak_rss();
    nst_gpu_sample smp;
    memset(&smp, 0, sizeof smp);
    if (p->gpu) nst_gpu_monitor_take(p->gpu, &smp);
    const int has = smp.samples > 0;
    double g[G_N];
    g[G_HAS] = has;
    g[G_UTIL_MEAN] = smp.util_mean, g[G_UTIL_MIN] = smp.util_min, g[G_UTIL_SETTLED] = smp.util_settled_mean;
    g[G_MEM] = smp.mem_used, g[G_MEM_FRAC] = smp.mem_total > 0 ? smp.mem_used / smp.mem_total : 0;
    g[G_TEMP] = smp.temp_max, g[G_POWER] = smp.power_w, g[G_POWER_MAX] = smp.power_max_w;
    g[G_POWER_FRAC] = smp.power_limit_w > 0 ? smp.power_max_w / smp.power_limit_w : 0;
    g[G_SM] = smp.sm_clock_mhz, g[G_MEMCLK] = smp.mem_clock_mhz;
    for (int k = 0; k < G_N; k++) { /* ranks without samples are neutral in min, max and sum */
        in[GMIN + k] = has ? g[k] : 1e300;
        in[GMAX + k] = has ? g[k] : -1e300;
        in[GSUM + k] = has ? g[k] : 0;
    }
    if (!smp.util_settled) in[GMIN + G_UTIL_SETTLED] = 1e300, in[GMAX + G_UTIL_SETTLED] = -1e300; /* nothing to judge yet */
    NST_TRY(nst_comm_stats(in, mn, mx, sum, p->gpu_wanted ? (size_t)N : (size_t)GMIN));
    memcpy(r->tmin, mn + PH, sizeof r->tmin), memcpy(r->tmax, mx + PH, sizeof r->tmax), memcpy(r->tsum, sum + PH, sizeof r->tsum);
    memcpy(r->mmin, mn + MEM, sizeof r->mmin), memcpy(r->mmax, mx + MEM, sizeof r->mmax), memcpy(r->msum, sum + MEM, sizeof r->msum);
    if (!p->gpu_wanted) return NST_OK;
    memcpy(r->gmin, mn + GMIN, sizeof r->gmin), memcpy(r->gmax, mx + GMAX, sizeof r->gmax), memcpy(r->gsum, sum + GSUM, sizeof r->gsum);
    r->gpus = (int)r->gsum[G_HAS];
    snprintf(r->gpu_name, sizeof r->gpu_name, "%s", smp.name);
    return NST_OK;
}

static void gpu_warnings(nst_progress *p, const reduced *r, int first_row)
{
    if (!r->gpus || !nst_log_is_root()) return;
    char fields[256];
    struct { int bit, hit; const char *what; double v; } w[] = {
        /* judged only on samples whose NVML window lies after the first level's start
         * (nst_gpu_monitor_fence): a fast GPU's short level was read as 2% busy from the idle
         * start-up before it */
        {WARN_UTIL, !first_row && r->gmin[G_UTIL_SETTLED] < 70, "utilisation under 70%: the least busy GPU averaged %.0f%%", r->gmin[G_UTIL_SETTLED]},
        {WARN_MEM, r->gmax[G_MEM_FRAC] > 0.95, "memory over 95%%: %.1f%% used on the fullest GPU", 100 * r->gmax[G_MEM_FRAC]},
        {WARN_TEMP, r->gmax[G_TEMP] > 85, "temperature over 85 C: %.0f C", r->gmax[G_TEMP]},
        {WARN_POWER, r->gmax[G_POWER_FRAC] >= 0.98, "power at its limit: %.0f%% of the enforced limit", 100 * r->gmax[G_POWER_FRAC]},
    };
    for (size_t i = 0; i < sizeof w / sizeof *w; i++) {
        if (!w[i].hit || (p->warned & w[i].bit)) continue;
        p->warned |= w[i].bit;
        char msg[160];
        snprintf(msg, sizeof msg, w[i].what, w[i].v);
        nst_warn("GPU %s (level %d; warned once per job)\n", msg, p->level + 1);
        snprintf(fields, sizeof fields, "\"warning\": ");
        FILE *f = fmemopen(fields + strlen(fields), sizeof fields - strlen(fields), "w");
        if (f) {
            nst_json_string(f, msg);
            fclose(f);
        }
        nst_progress_event(p, "warning", fields);
    }
}

/* The Prometheus job label: a batch job's name; a lone render is named by its file, e.g. "print1"
 * for DIR/print1.prom. A label's value is UTF-8 in quotes: quotes, backslashes, newlines and the
 * bytes of an invalid sequence (a Latin-1 file name, a name cut at cap - 1 bytes) become '_'. */
static void prom_job_label(const nst_progress *p, char *job, size_t cap)
{
    if (p->job[0]) {
        snprintf(job, cap, "%s", p->job);
    } else {
        const char *base = strrchr(p->prom, '/') ? strrchr(p->prom, '/') + 1 : p->prom;
        snprintf(job, cap, "%.*s", (int)strcspn(base, "."), base);
    }
    for (unsigned char *c = (unsigned char *)job; *c;) {
        size_t n = nst_utf8_length(c);
        if (n == 0 || *c == '"' || *c == '\\' || *c == '\n')
            *c++ = '_';
        else
            c += n;
    }
}

/* A sample's value in the text format: NaN, +Inf and -Inf as it spells them (printf's "-nan", the
 * sign of a NaN made on x86, is refused by Prometheus and promtool). */
static const char *prom_num(char b[32], const char *fmt, double v)
{
    if (isnan(v)) return "NaN";
    if (isinf(v)) return v > 0 ? "+Inf" : "-Inf";
    snprintf(b, 32, fmt, v);
    return b;
}

static void write_prometheus(nst_progress *p, long long it, const nst_loss_terms *t, double rate, double eta, const reduced *r)
{
    if (!p->prom[0] || nst_comm_world_rank() != 0) return;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return;
    char job[96];
    prom_job_label(p, job, sizeof job);
#define GAUGE(name, help) fprintf(f, "# HELP nstbatch_%s %s\n# TYPE nstbatch_%s gauge\n", name, help, name)
    GAUGE("level", "Pyramid level being rendered (1 = coarsest).");
    fprintf(f, "nstbatch_level{job=\"%s\"} %d\n", job, p->level + 1);
    GAUGE("iteration", "Iteration within the level.");
    fprintf(f, "nstbatch_iteration{job=\"%s\"} %lld\n", job, it);
    GAUGE("loss", "Loss terms at the last row.");
    char n[2][32];
    fprintf(f, "nstbatch_loss{job=\"%s\",term=\"total\"} %s\n", job, prom_num(n[0], "%.9g", t->total));
    fprintf(f, "nstbatch_loss{job=\"%s\",term=\"content\"} %s\n", job, prom_num(n[0], "%.9g", t->content));
    fprintf(f, "nstbatch_loss{job=\"%s\",term=\"style\"} %s\nnstbatch_loss{job=\"%s\",term=\"tv\"} %s\n", job,
            prom_num(n[0], "%.9g", t->style), job, prom_num(n[1], "%.9g", t->tv));
    if (p->video) {
        fprintf(f, "nstbatch_loss{job=\"%s\",term=\"temporal\"} %s\n", job, prom_num(n[0], "%.9g", t->temporal));
        GAUGE("video_frames_done", "Frames of the clip finished by this run (rank 0's group).");
        fprintf(f, "nstbatch_video_frames_done{job=\"%s\"} %lld\n", job, p->frames_done);
        GAUGE("video_frames", "Frames of the clip to render.");
        fprintf(f, "nstbatch_video_frames{job=\"%s\"} %lld\n", job, p->frames_total);
        GAUGE("video_warping_error", "Temporal warping error of the last frame finished against the previous one (NaN: not measured).");
        static const char *const what[4][2] = {{"result", "ruder"}, {"result", "lai"}, {"input", "ruder"}, {"input", "lai"}};
        for (int k = 0; k < 4; k++)
            fprintf(f, "nstbatch_video_warping_error{job=\"%s\",clip=\"%s\",normalisation=\"%s\"} %s\n", job, what[k][0], what[k][1],
                    prom_num(n[0], "%.9g", p->flicker[k]));
    }
    GAUGE("megapixel_iterations_per_second", "Throughput over the last interval.");
    fprintf(f, "nstbatch_megapixel_iterations_per_second{job=\"%s\"} %.6g\n", job, rate);
    GAUGE("eta_seconds", "Estimated seconds left in the job (NaN before anything was measured).");
    if (eta >= 0)
        fprintf(f, "nstbatch_eta_seconds{job=\"%s\"} %.3f\n", job, eta);
    else
        fprintf(f, "nstbatch_eta_seconds{job=\"%s\"} NaN\n", job); /* nothing measured yet */
    if (r->have_phases) {
        GAUGE("phase_seconds_per_iteration", "Seconds per iteration in each phase over the ranks.");
        for (int k = 0; k < NST_T_COUNT; k++)
            fprintf(f, "nstbatch_phase_seconds_per_iteration{job=\"%s\",phase=\"%s\",stat=\"min\"} %.7g\n"
                       "nstbatch_phase_seconds_per_iteration{job=\"%s\",phase=\"%s\",stat=\"mean\"} %.7g\n"
                       "nstbatch_phase_seconds_per_iteration{job=\"%s\",phase=\"%s\",stat=\"max\"} %.7g\n",
                    job, nst_timer_key(k), r->tmin[k], job, nst_timer_key(k), r->tsum[k] / r->ranks, job, nst_timer_key(k), r->tmax[k]);
    }
    GAUGE("rss_bytes_max", "Largest peak resident set size over the ranks.");
    fprintf(f, "nstbatch_rss_bytes_max{job=\"%s\"} %.0f\n", job, r->mmax[1]);
    if (r->gpus) {
        GAUGE("gpu_utilization_percent", "GPU utilisation over the interval (min and mean over the ranks' GPUs).");
        fprintf(f, "nstbatch_gpu_utilization_percent{job=\"%s\",stat=\"min\"} %.1f\n", job, r->gmin[G_UTIL_MEAN]);
        fprintf(f, "nstbatch_gpu_utilization_percent{job=\"%s\",stat=\"mean\"} %.1f\n", job, r->gsum[G_UTIL_MEAN] / r->gpus);
        GAUGE("gpu_memory_used_bytes_max", "Largest GPU memory in use.");
        fprintf(f, "nstbatch_gpu_memory_used_bytes_max{job=\"%s\"} %.0f\n", job, r->gmax[G_MEM]);
        GAUGE("gpu_temperature_celsius_max", "Hottest GPU.");
        fprintf(f, "nstbatch_gpu_temperature_celsius_max{job=\"%s\"} %.0f\n", job, r->gmax[G_TEMP]);
        GAUGE("gpu_power_watts_max", "Largest power draw.");
        fprintf(f, "nstbatch_gpu_power_watts_max{job=\"%s\"} %.1f\n", job, r->gmax[G_POWER_MAX]);
    }
    GAUGE("last_update_timestamp_seconds", "When this file was written.");
    fprintf(f, "nstbatch_last_update_timestamp_seconds{job=\"%s\"} %.3f\n", job, (double)time(NULL));
#undef GAUGE
    fclose(f);
    if (nst_atomic_write_text(p->prom, buf) != NST_OK) {
        nst_warn("metrics.prometheus: %s\n", nst_fail_message());
        nst_fail_clear();
    }
    free(buf);
}

static void write_row_json(nst_progress *p, long long it, int final, const nst_loss_terms *t, double rate, double eta, const reduced *r)
{
    if (!p->jsonl[0] || !nst_log_is_root()) return;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = line_begin(p, &buf, &len, final ? "level_end" : "iteration");
    if (!f) return;
    const int k = p->level;
    fprintf(f, ", \"level\": %d, \"levels\": %d, \"width\": %d, \"height\": %d, \"iteration\": %lld, \"iterations\": %lld", k + 1, p->nlevels,
            p->w[k], p->h[k], it, p->iters[k]);
    char n[6][NST_JSON_NUM];
    fprintf(f, ", \"loss\": {\"total\": %s, \"content\": %s, \"style\": %s, \"tv\": %s", nst_json_num(n[0], "%.9g", t->total),
            nst_json_num(n[1], "%.9g", t->content), nst_json_num(n[2], "%.9g", t->style), nst_json_num(n[3], "%.9g", t->tv));
    if (p->video) fprintf(f, ", \"temporal\": %s", nst_json_num(n[4], "%.9g", t->temporal));
    fputc('}', f);
    fprintf(f, ", \"megapixel_iterations_per_second\": %s, \"eta_s\": ", nst_json_num(n[5], "%.6g", rate));
    if (eta >= 0)
        fprintf(f, "%.3f", eta);
    else
        fprintf(f, "null"); /* nothing measured yet */
    fprintf(f, ", \"ranks\": %d", r->ranks);
    if (r->have_phases) {
        fprintf(f, ", \"phases_s_per_iteration\": {");
        for (int q = 0; q < NST_T_COUNT; q++)
            fprintf(f, "%s\"%s\": {\"min\": %.7g, \"mean\": %.7g, \"max\": %.7g}", q ? ", " : "", nst_timer_key(q), r->tmin[q], r->tsum[q] / r->ranks,
                    r->tmax[q]);
        fprintf(f, "}");
    }
    fprintf(f, ", \"memory\": {\"backend_bytes_max\": %.0f, \"rss_peak_bytes_max\": %.0f}", r->mmax[0], r->mmax[1]);
    if (r->gpus) {
        fprintf(f, ", \"gpu\": {\"gpus\": %d, \"name\": ", r->gpus);
        nst_json_string(f, r->gpu_name); /* as the driver names it */
        fprintf(f, ", \"util_percent_min\": %.1f, \"util_percent_mean\": %.1f, \"memory_used_bytes_max\": "
                   "%.0f, \"memory_fraction_max\": %.4f, \"temperature_c_max\": %.0f, \"power_w_mean\": %.1f, \"power_w_max\": %.1f, "
                   "\"power_limit_fraction_max\": %.3f, \"sm_clock_mhz_min\": %.0f, \"memory_clock_mhz_min\": %.0f}",
                r->gmin[G_UTIL_MEAN], r->gsum[G_UTIL_MEAN] / r->gpus, r->gmax[G_MEM], r->gmax[G_MEM_FRAC], r->gmax[G_TEMP],
                r->gsum[G_POWER] / r->gpus, r->gmax[G_POWER_MAX], r->gmax[G_POWER_FRAC], r->gmin[G_SM], r->gmin[G_MEMCLK]);
    }
    line_end(p, f, &buf, &len);
}

/* The status line, cut to the terminal's width (a wrapped line could not be redrawn in place):
 * the loss terms go first when it is narrow. */
static void live_line(const nst_progress *p, int k, long long it, const nst_loss_terms *t, double rate, const char *eta)
{
    char head[160], terms[96], tail[64], line[400];
    snprintf(head, sizeof head, "%s%slevel %d/%d  iteration %lld/%lld  loss %.4e", p->job, p->job[0] ? ": " : "", k + 1, p->nlevels, it,
             p->iters[k], t->total);
    snprintf(terms, sizeof terms, " (content %.3e style %.3e tv %.3e)", t->content, t->style, t->tv);
    snprintf(tail, sizeof tail, "  %.3f MPit/s  ETA %s", rate / 1e6, eta);
    struct winsize ws;
    size_t cols = ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 ? ws.ws_col : 160;
    if (strlen(head) + strlen(terms) + strlen(tail) >= cols) terms[0] = 0;
    snprintf(line, sizeof line, "%s%s%s", head, terms, tail);
    if (strlen(line) >= cols) line[cols > 1 ? cols - 1 : 0] = 0;
    printf("\r\033[K%s", line);
}

nst_status nst_progress_iter(nst_progress *p, long long it, const nst_loss_terms *t, const nst_timers *tm, size_t bytes_in_use, int final,
                             double loop_spi)
{
    const int k = p->level;
    const double px = (double)p->w[k] * p->h[k];
    const double now = nst_now();
    const int row = final || it == p->level_it0 || (p->print_every > 0 && it % p->print_every == 0);
    /* the rate over the level so far (before its first measurement: the last level's), the ETA of
     * the whole job at that rate; -1 only before anything was measured, 0 only at the job's end */
    double done_level = (double)(it - p->level_it0), el = now - p->level_t0;
    double rate_level = done_level > 0 && el > 0 ? done_level * px / el : 0;
    if (rate_level > 0) p->last_rate = rate_level;
    double rate_eta = rate_level > 0 ? rate_level : p->last_rate;
    double left = p->work_total - p->work_before - (double)it * px;
    int job_done = final && k == p->nlevels - 1;
    double eta = job_done ? 0 : rate_eta > 0 ? left / rate_eta : -1;
    char etas[32];
    if (row && !t) return nst_fail(NST_ERUNTIME, "progress: the row of iteration %lld without its loss terms", it);
    if (!t) t = &p->last_terms;
    p->last_terms = *t;
    if (!row) { /* the live line, at most 5 times a second */
        if (p->live && !p->quiet && nst_log_is_root() && now - p->last_live >= 0.2) {
            fmt_eta(eta, etas, sizeof etas);
            live_line(p, k, it, t, rate_level, etas);
            fflush(stdout);
            p->last_live = now;
            p->live_shown = 1;
        }
        return NST_OK;
    }
    /* a row's s/iter: since the previous row; the final row's is one more forward, not an
     * iteration, so it shows the loop's mean, as a plain render's final row does */
    double n = (double)(it - p->mark_it), dt = now - p->mark_t;
    if (final && done_level > 0 && loop_spi > 0) n = done_level, dt = loop_spi * done_level;
    double rate = n > 0 && dt > 0 ? n * px / dt / 1e6 : rate_level / 1e6;
    reduced r;
    memset(&r, 0, sizeof r);
    r.ranks = 1;
    if (p->metrics) NST_TRY(reduce(p, it, tm, bytes_in_use, &r));
    if (nst_log_is_root() && p->live_shown && !p->quiet) {
        printf("\r\033[K");
        fflush(stdout);
        p->live_shown = 0;
    }
    char spi[32] = "-", mps[32] = "-";
    fmt_eta(eta, etas, sizeof etas);
    if (n > 0) nst_progress_fmt_spi(dt / n, spi, sizeof spi), snprintf(mps, sizeof mps, "%.3f", rate);
    nst_info("%10lld %12.5e %12.5e %12.5e %12.5e %9s %9s %9s\n", it, t->total, t->content, t->style, t->tv, spi, mps, job_done ? "-" : etas);
    if (p->metrics) {
        write_row_json(p, it, final, t, rate, eta, &r);
        write_prometheus(p, it, t, rate, eta, &r);
        gpu_warnings(p, &r, it == p->level_it0);
    }
    p->mark_t = now;
    p->mark_it = it;
    if (tm) p->mark_tm = *tm;
    return NST_OK;
}

void nst_progress_frame(nst_progress *p, long long done, long long total, const double *flicker)
{
    if (!p) return;
    p->video = 1;
    p->frames_done = done, p->frames_total = total;
    for (int k = 0; k < 4; k++) p->flicker[k] = flicker ? flicker[k] : NAN;
}

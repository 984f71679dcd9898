/* nst/report/progress.h: what a running render tells its users, and the metrics it leaves.
 *
 * Rank 0 (of a batch group: the group's rank 0) shows the level, iteration, loss terms,
 * megapixel-iterations per second and the ETA of the whole job (pixel-iterations left over all
 * levels at the current level's rate): a live status line redrawn in place on a terminal, and a
 * table row every run.print_every iterations (run.progress: auto | live | lines; --quiet: none).
 *
 * At every row, when metrics are on, the ranks of the level reduce their per-phase times of the
 * interval (min, mean, max), memory and GPU samples (util/gpu_monitor.h) and rank 0 appends one
 * JSON object to metrics.path (JSON lines; also events: job, level, checkpoint, warnings, end)
 * and rewrites metrics.prometheus atomically (world rank 0). GPU warnings, once per job each:
 * utilisation under 70 %, memory over 95 %, temperature over 85 C, power at its limit.
 */
#ifndef NST_PROGRESS_H
#define NST_PROGRESS_H

#include "../../io/config/config.h"
#include "../../util/gpu_monitor.h"
#include "../optimise/objective.h"
#include "../optimise/timers.h"

#define NST_PROGRESS_MAX_LEVELS 16

typedef struct nst_progress {
    /* the run */
    int quiet, live;
    long long print_every;
    int metrics;                  /* JSON lines or Prometheus wanted: the rows reduce over ranks */
    int gpu_wanted;               /* GPU samples take part in the reductions (same on every rank) */
    nst_gpu_monitor *gpu;         /* this rank's (NULL: none) */
    int fenced;                   /* utilisation judged from a window after the first level's start */
    char jsonl[4096], prom[4096];
    int jsonl_fd;
    double run_t0;
    /* the job */
    char job[64];
    double job_t0, work_total, work_before;
    int nlevels, level, w[NST_PROGRESS_MAX_LEVELS], h[NST_PROGRESS_MAX_LEVELS];
    long long iters[NST_PROGRESS_MAX_LEVELS];
    int warned;                   /* GPU warnings given in this job (bits) */
    /* the level's interval */
    double level_t0, mark_t, last_live;
    double last_rate;       /* pixel-iterations per second last measured (a new level starts from it) */
    long long level_it0, mark_it;
    nst_timers mark_tm;
    nst_loss_terms last_terms;    /* the last row's: the live line between rows shows them */
    int live_shown;
    /* a clip render (video/): the last frame finished and its flicker */
    int video;
    long long frames_done, frames_total;
    double flicker[4];            /* warping error of the result and of the input, Ruder's and Lai's normalisation; NaN: not measured */
} nst_progress;

/* Collective on the world (after the backend is open): the metrics files (world rank 0 truncates
 * metrics.path), GPU monitoring per metrics.gpu (backend_on_gpu: the render runs on a GPU). */
/* launched: a launcher (mpirun, srun) started this process, as its environment said before MPI
 * started (a singleton's MPI start sets PMIX_RANK too) */
nst_status nst_progress_open(nst_progress *p, const nst_config *cfg, int quiet, int launched, const char *gpu_bus_id);
void nst_progress_close(nst_progress *p);

/* A job's levels (sizes and iterations), for the ETA; the name is "" outside a batch. */
void nst_progress_job(nst_progress *p, const char *name, int nlevels, const int *w, const int *h, const long long *iters);
/* The job ended (status text: "done", "failed", "stopped"). */
void nst_progress_job_end(nst_progress *p, const char *status, double seconds);
/* Level k starts its loop at iteration it0 (a resumed level: the checkpoint's). Prints the header. */
void nst_progress_level(nst_progress *p, int k, long long it0);
/* After iteration it's objective (terms at the image before its step), on every rank of the
 * level: the live line, and at a row (it == it0, every print_every, final) the row, the
 * reductions and the metrics. t: the iteration's loss terms, NULL where they were not read (not a
 * row: the live line shows the last row's). final: the result's terms after the last step. Collective at rows
 * when metrics are on. loop_spi: on the final row, the loop's own seconds per iteration (no
 * checkpoints or previews), shown as its s/iter (that row times one more forward, not an
 * iteration); 0 on other rows. */
nst_status nst_progress_iter(nst_progress *p, long long it, const nst_loss_terms *t, const nst_timers *tm, size_t bytes_in_use, int final,
                             double loop_spi);
/* A row's s/iter to 4 significant digits in fixed point (0.006321, 0.02230, 1.420): a GPU's
 * milliseconds are not rounded to 0.006 (the benches read this column), and it stays a plain
 * decimal for awk and the tests. */
void nst_progress_fmt_spi(double s, char *out, size_t cap);
/* A clip render's frame finished on this group's rank 0: the frame series of the next Prometheus
 * rewrite (frames done, the frame's warping errors: result Ruder, result Lai, input Ruder, input
 * Lai; NULL when not measured). */
void nst_progress_frame(nst_progress *p, long long done, long long total, const double *flicker);
/* One JSON-lines event from this group's rank 0: fields is a JSON object's inside ("" for none). */
void nst_progress_event(nst_progress *p, const char *event, const char *fields);

#endif

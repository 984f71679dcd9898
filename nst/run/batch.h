/* nst/run/batch.h: many jobs in one run (io/config/jobs.h: [job.NAME] sections and batch.manifest).
 *
 * 1. Probe (world rank 0): each job's config (base, then the job's overrides, then --set) is
 *    checked and its content's header read for the output size; a job with bad input is marked
 *    failed here, before anything renders. Two jobs writing the same output or run record are a
 *    config error. The cost of a job is its pixel-iterations summed over its pyramid levels.
 * 2. Large jobs (output above batch.pack_megapixels) render one after another on every rank.
 * 3. Small jobs are packed: the world splits into groups of batch.group_ranks ranks
 *    (nst_comm_split), the jobs go to groups longest first, each to the least loaded group (LPT),
 *    and every group renders its jobs side by side with the others. A job rendered by a group of
 *    R ranks is bit-identical to the same job run alone on R ranks.
 * 4. The network is loaded once (main); style targets are computed once per (styles, size,
 *    colour transform) and kept in the shared cache (nst/inputs/style_cache.h).
 * 5. A failed job is reported and the others go on (batch.on_error = continue); with stop, no
 *    job starts after a failure is known (other groups learn of it by a notice, mpi/notice.h).
 * 6. The summary table (every job: status, ranks, size, time, loss, output or message) is printed
 *    by world rank 0 and, with batch.summary, written as JSON.
 * 7. With checkpoint.path each job checkpoints into checkpoint.path/NAME; a finished job leaves a
 *    done record there and a later run (a requeued batch) reports it as "earlier" without
 *    rendering it. A signal stops every group at its next iteration boundary with a checkpoint;
 *    no job starts after it.
 * The status is NST_OK when every job rendered, NST_EINTERRUPTED after a signal, else the first
 * failed job's. */
#ifndef NST_BATCH_H
#define NST_BATCH_H

#include "../../io/config/jobs.h"
#include "job.h"

typedef struct {
    const nst_config *base;      /* the config file and --set, without jobs */
    const nst_jobset *jobs;
    const char *const *sets;     /* the command line's --set assignments, applied over each job */
    int nsets;
    int restart;                 /* --restart: render every job again, ignoring checkpoints and done records */
    const char *restart_jobs;    /* --restart=JOB,...: those jobs only (NULL: none) */
} nst_batch;

/* --restart=JOB,...: every name is a job of this batch (else one line listing them). */
nst_status nst_batch_check_restart(const nst_jobset *jobs, const char *list);

/* Collective on the world. */
nst_status nst_batch_run(const nst_batch *b, nst_backend *be, nst_collectives coll, const nst_job_env *env);

#endif

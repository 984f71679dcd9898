/* nst/job.h: one render job, from a resolved config to a written image, on all ranks.
 *
 * Rank 0 checks the config, reads the weights and the images and broadcasts what the others
 * need (weights, sizes); every rank plans the same layout; rank 0 sends each tile's window of the
 * content (and start image) to its owner; every rank renders its tiles; the cores come back to
 * rank 0, which writes the output. (Inputs small enough to read whole are read by rank 0 and
 * scattered; reading and writing by region is the streaming I/O's business.) Every failure ends
 * with all ranks agreeing on the status and rank 0 printing one message. */
#ifndef NST_JOB_H
#define NST_JOB_H

#include "../io/config.h"
#include "../kernels/backend.h"
#include "render.h"
#include "spec.h"

typedef struct {
    int width, height; /* output size */
    int threads;       /* CPU threads per rank */
    nst_render_stats stats;
} nst_job_result;

/* Semantic checks of a config before anything is read: loss layers, required paths, output
 * format and size keys, and that the output may be written. Errors name the config line. */
nst_status nst_job_check(const nst_config *cfg, nst_loss_spec *spec);
/* model.weights, or the built-in random network (with a notice saying how to get real weights). */
nst_status nst_job_load_weights(const nst_config *cfg, nst_weights *w);
/* Check, read inputs, render, write the output, report. Collective: every rank calls it. */
nst_status nst_job_run(const nst_config *cfg, nst_backend *be, nst_collectives coll, nst_job_result *res);

#endif

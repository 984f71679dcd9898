/* nst/job.h: one render job, from a resolved config to a written image. */
#ifndef NST_JOB_H
#define NST_JOB_H

#include "../io/config.h"
#include "../kernels/backend.h"
#include "render.h"
#include "spec.h"

typedef struct {
    int width, height; /* output size */
    nst_render_stats stats;
} nst_job_result;

/* Semantic checks of a config before anything is read: loss layers, required paths, output
 * format and size keys, and that the output may be written. Errors name the config line. */
nst_status nst_job_check(const nst_config *cfg, nst_loss_spec *spec);
/* model.weights, or the built-in random network (with a notice saying how to get real weights). */
nst_status nst_job_load_weights(const nst_config *cfg, nst_weights *w);
/* Check, read inputs, render, write the output. */
nst_status nst_job_run(const nst_config *cfg, nst_backend *be, nst_reducer red, nst_job_result *res);

#endif

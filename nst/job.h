/* nst/job.h: one render job, from a resolved config to written images, on all ranks.
 *
 * Every rank checks the config; rank 0 reads the weights and broadcasts them, opens the content
 * (its size sets the output's) and reads the style; every rank plans the same layout, reads the
 * windows of its tiles (nst/inputs.h: by region from a TIFF, from rank 0 otherwise), renders
 * them (nst/render.h) and writes the output tiles it owns (nst/output.h). No rank holds the whole
 * image. Every failure ends with all ranks agreeing on the status and rank 0 printing one
 * message. */
#ifndef NST_JOB_H
#define NST_JOB_H

#include "../io/config.h"
#include "../kernels/backend.h"
#include "output.h"
#include "render.h"
#include "spec.h"

typedef struct {
    int width, height; /* output size */
    int threads;       /* CPU threads per rank */
    long long max_core_px; /* the most pixels any rank owns */
    size_t weights_bytes;  /* the network every rank holds */
    double input_seconds, input_read_seconds; /* reading and resampling; of it, decoding */
    unsigned long long input_read_pixels;
    nst_render_stats stats;
    nst_output_stats output;
} nst_job_result;

/* Semantic checks of a config before anything is read: loss layers, required paths, output
 * formats, codecs and size keys, and that the outputs may be written. Errors name the config line. */
nst_status nst_job_check(const nst_config *cfg, nst_loss_spec *spec, nst_output_spec *out);
/* model.weights, or the built-in random network (with a notice saying how to get real weights). */
nst_status nst_job_load_weights(const nst_config *cfg, nst_weights *w);
/* Check, read inputs, render, write the output, report. Collective: every rank calls it. */
nst_status nst_job_run(const nst_config *cfg, nst_backend *be, nst_collectives coll, nst_job_result *res);

#endif

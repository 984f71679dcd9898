/* nst/run/job.h: one render job, from a resolved config to written images, on all ranks.
 *
 * Every rank checks the config; rank 0 reads the weights and broadcasts them, opens the content
 * (its size sets the output's) and reads the style; every rank plans the same layout, reads the
 * windows of its tiles (nst/inputs/inputs.h: by region from a TIFF, from rank 0 otherwise), renders
 * them (nst/render/render.h) and writes the output tiles it owns (nst/output/output.h). No rank holds the whole
 * image. Every failure ends with all ranks agreeing on the status and rank 0 printing one
 * message. */
#ifndef NST_JOB_H
#define NST_JOB_H

#include "../../io/config/config.h"
#include "../../kernels/backend.h"
#include "../output/output.h"
#include "../render/levels.h"
#include "../render/render.h"
#include "../model/spec.h"

typedef struct {
    const nst_weights *weights;     /* the network (a batch loads it once for its jobs) */
    struct nst_style_cache *cache;  /* style targets kept across levels and jobs (may be NULL) */
    const char *checkpoint_dir;     /* this job's checkpoints ("" or NULL: none) */
    int restart;                    /* --restart: do not resume, start over */
    struct nst_progress *progress;  /* progress and metrics (NULL: none) */
    const char *name;               /* the batch job's name ("" or NULL outside a batch) */
    int dry_run;                    /* --dry-run: plan, estimate and describe; render and write nothing */
} nst_job_env;

typedef struct {
    int width, height; /* output size */
    int threads;       /* CPU threads per rank */
    long long max_core_px; /* the most pixels any rank owns */
    size_t weights_bytes;  /* the network every rank holds */
    double input_seconds, input_read_seconds; /* reading and resampling; of it, decoding */
    unsigned long long input_read_pixels;
    nst_render_stats stats;         /* the last level's, with the first level's initial loss */
    int nlevels;
    nst_level_report levels[NST_MAX_LEVELS];
    nst_output_stats output;
    double seconds;                 /* the whole job */
    char outputs[1024];             /* the files written */
    int skipped;                    /* finished by an earlier run (its checkpoint manifest says done) */
    int checkpoints;                /* written by this run */
    int resumed_level;              /* 1-based level resumed from a checkpoint, 0: a fresh start */
    long long resumed_iteration;
} nst_job_result;

/* Semantic checks of a config before anything is read: loss layers, required paths, output
 * formats, codecs and size keys, and that the outputs may be written. Errors name the config line. */
nst_status nst_job_check(const nst_config *cfg, nst_loss_spec *spec, nst_output_spec *out);
/* model.weights, or the built-in random network (with a notice saying how to get real weights). */
nst_status nst_job_load_weights(const nst_config *cfg, nst_weights *w);
/* Rank 0 loads the network (model.weights or the random VGG-19), every rank receives it. Collective. */
nst_status nst_job_weights(const nst_config *cfg, nst_weights *w);
/* Check, read inputs, render every level, write the outputs, report. Collective on the current
 * group: every rank of it calls it. */
nst_status nst_job_run(const nst_config *cfg, nst_backend *be, nst_collectives coll, const nst_job_env *env, nst_job_result *res);

#endif

/* nst/render.h: the optimisation of one image: targets, initialisation, the iteration loop with
 * Adam, progress on rank 0. Inputs arrive already at the working resolution. */
#ifndef NST_RENDER_H
#define NST_RENDER_H

#include "../io/config.h"
#include "../io/image.h"
#include "../io/weights.h"
#include "objective.h"

typedef struct {
    long long iterations;
    nst_loss_terms first, last; /* at the initial image and at the result */
    double seconds;             /* the iteration loop */
    double setup_seconds;       /* network, targets */
} nst_render_stats;

typedef struct {
    const nst_config *cfg;
    const nst_loss_spec *spec;
    nst_backend *be;
    const nst_weights *weights;
    nst_reducer red;
} nst_render_ctx;

/* content, style, init (may be NULL unless optim.init = image): host images; content and init
 * are at the output size. out receives the result (allocated here). */
nst_status nst_render(const nst_render_ctx *ctx, const nst_image *content, const nst_image *style, const nst_image *init,
                      nst_image *out, nst_render_stats *stats);

/* Fill x (w x h x 3) with the noise initialisation: uniform in [0,1], a function of (seed, pixel). */
void nst_noise_init(float *x, int w, int h, unsigned long long seed);

#endif

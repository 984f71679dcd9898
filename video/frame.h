/* video/frame.h: one frame of a clip rendered on the current rank group, with the machinery of a
 * still image (nst/render/levels.h: layout, tiles over the group's ranks, style targets from the
 * cache, the render) fed from memory instead of files: the group's rank 0 holds the frame, the
 * initial image and the temporal term's inputs whole, every rank receives its tiles' windows of
 * them, and the result comes back to rank 0 whole (a video frame, unlike a gigapixel still, fits
 * one process). The temporal term is per pixel and its inputs are the same whatever the tiling,
 * so a frame is bit-identical on any number of ranks, as a still is.
 */
#ifndef NST_VIDEO_FRAME_H
#define NST_VIDEO_FRAME_H

#include "../nst/render/levels.h"
#include "../nst/report/progress.h"

/* What every frame of a group shares. */
typedef struct {
    const nst_config *cfg;
    const nst_loss_spec *spec;      /* temporal_weight: the clip's (a cold frame renders without it) */
    nst_backend *be;
    const nst_weights *weights;
    const nst_net *shapes;
    nst_collectives coll;
    nst_styles *styles;             /* NULL without style layers */
    nst_masks *masks;               /* NULL: none */
    struct nst_style_cache *cache;
    size_t budget;
    nst_progress *progress;
    int W, H;
} nst_frame_env;

/* Rank 0's inputs (NULL elsewhere). A cold frame has no init and no temporal term. */
typedef struct {
    const nst_image *content;
    const nst_image *init;          /* the warped previous result (NULL: optim.init) */
    const nst_image *target, *c;    /* the temporal term's (NULL: none); c gray in RGB */
    long long iterations;           /* a warm frame's (one level); a cold frame follows the config's pyramid */
} nst_frame_inputs;

typedef struct {
    nst_loss_terms first, last;
    long long iterations;
    double seconds;
} nst_frame_stats;

/* Render one frame; rank 0 receives the result whole in *out (allocated here). Collective on the
 * current group. */
nst_status nst_frame_render(const nst_frame_env *e, const nst_frame_inputs *fi, nst_image *out, nst_frame_stats *st);

#endif

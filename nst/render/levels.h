/* nst/render/levels.h: one job, coarse to fine.
 *
 * Level sizes: the output, and each coarser level pyramid.factor times smaller, pyramid.levels of
 * them (auto: as many as keep the coarsest short side at least pyramid.min_size). Per level:
 *   1. a layout of the level's image over the job's ranks (nst/plan/layout.h);
 *   2. its windows of the content, resized to the level by region (nst/inputs/inputs.h), and of
 *      the masks (nst/inputs/masks.h);
 *   3. the initial pixels: optim.init at the coarsest level; at the others the previous level's
 *      result upsampled: its cores move to the ranks whose windows' resampling footprints they
 *      cover (nst/plan/move.h), and each rank resamples its windows from what it received; with
 *      pyramid.state = carry Adam's moments go the same way (L-BFGS starts a new history);
 *   4. the style targets for the level's size: the style images keep their scale in output
 *      pixels, so each level sees them resized like the content (nst/inputs/style.h, cached;
 *      with style.masks each image's own);
 *   5. the render, on the ranks that own tiles: a coarse level that fits in fewer tiles than
 *      there are ranks runs on a group of just those ranks, and the others wait without spinning
 *      (nst_comm_idle_barrier) instead of taking part in every iteration's collectives.
 * A render whose buffers do not fit (an allocation refused before any optimiser step, on any
 * rank) is tried again from step 1 with tiles of half the side, at most 4 times, with a warning;
 * the tile size used is in the level's report (the run record) and its checkpoints.
 * With color.mode, the content's colour statistics at each level (over the whole image) set the
 * style's transform; luminance mode renders luminance and gives the result the content's chroma
 * at the end.
 */
#ifndef NST_LEVELS_H
#define NST_LEVELS_H

#include "../inputs/inputs.h"
#include "../inputs/masks.h"
#include "render.h"
#include "../inputs/style.h"

#define NST_MAX_LEVELS 16

/* The video mode's temporal term (video/): rank 0's images at the output size, in memory, read
 * by window like the content: the warped earlier result, and its consistency weights (gray: the
 * same value in R, G and B). Used when spec->temporal_weight > 0. */
typedef struct {
    nst_source *target, *c;
} nst_temporal_sources;

typedef struct {
    int n;
    int w[NST_MAX_LEVELS], h[NST_MAX_LEVELS];   /* coarse to fine; the last is the output */
    long long iterations[NST_MAX_LEVELS];
} nst_level_plan;

/* The levels for a W x H output whose aspect before rounding is aw x ah (nst_output_aspect; a
 * clip's frames pass W, H). Errors name pyramid.levels / pyramid.iterations. */
nst_status nst_levels_plan(const nst_config *cfg, const nst_loss_spec *spec, int W, int H, int aw, int ah, nst_level_plan *p);

typedef struct {
    int w, h, tiles, ranks, tile_w, tile_h, halo;
    int halvings;            /* times the tiles were halved after an allocation failure */
    long long iterations;    /* the steps taken: the plan's, or fewer where the stopping rule ended the level */
    long long planned;       /* the plan's */
    const char *gram;
    nst_loss_terms first, last;
    double seconds;          /* the level, from layout to result */
    double style_seconds;
    int style_tiles, style_cached;
    nst_render_stats stats;
} nst_level_report;

typedef struct {
    const nst_config *cfg;
    const nst_loss_spec *spec;
    nst_backend *be;
    const nst_weights *weights;
    const nst_net *shapes;           /* channel widths, for the planner */
    nst_collectives coll;
    nst_inputs *in;
    nst_styles *styles;              /* NULL without style layers */
    struct nst_style_cache *cache;
    size_t budget;                   /* memory per rank */
    struct nst_ckpt *ckpt;           /* checkpoints (a resume starts at its level); NULL: none */
    struct nst_progress *progress;   /* NULL: none */
    const char *preview_path;        /* output.save_every's preview ("" or NULL: none) */
    int preview_side;
    long long save_every;
    nst_masks *masks;                /* style.masks and content.mask (NULL: none) */
    nst_temporal_sources *temporal;  /* the video mode's temporal term, at the last level (NULL: none) */
} nst_levels_ctx;

/* Every level; with a checkpoint to resume, the levels before its level are skipped (their
 * reports come from the manifest) and its level starts from the checkpoint's state and tiling.
 * On success *L is the last level's layout over the job's ranks and *cores its
 * local tiles' result (allocated) for the output; rep[k] reports level k. Collective. */
nst_status nst_levels_run(const nst_levels_ctx *c, const nst_level_plan *p, nst_layout *L, float ***cores, nst_level_report *rep);
/* Level k's layout within the budget, as its render would plan it (pure geometry). Collective. */
nst_status nst_levels_plan_layout(const nst_levels_ctx *c, const nst_level_plan *p, int k, nst_layout *L);

#endif

/* nst/inputs/style.h: the style targets A_l of one or several style images, blended, computed over the
 * ranks of the current group with the global-Gram arithmetic.
 *
 * Each style image is resized so that its long side is style.scale times the output's (at a
 * pyramid level, the level's output: the style keeps its scale in output pixels across levels),
 * cut into tiles whose windows reach far enough for every feature a tile owns to be exact (the
 * deepest style layer's footprint), and spread over the ranks like a render: every rank reads its
 * windows (by region from a TIFF), runs the forward, and sums f f^T over the positions it owns, in
 * double; the sums are added over ranks and divided by the whole image's position count. Small
 * style images come out as one tile. With several images, A_l = sum_k b_k A_l(k) with the blend
 * weights b normalised to sum 1 (style.blend_weights), and ||A_l||^2 of the blend; with
 * style.masks each image keeps its own targets instead (nst_style_targets_each).
 *
 * The targets depend on the images, their sizes, the layers, the network and any colour
 * transform: that key names them in the cache (nst/inputs/style_cache.h), so a batch computes each set
 * once and a later run can load it.
 */
#ifndef NST_STYLE_H
#define NST_STYLE_H

#include "../../io/config/config.h"
#include "../../io/image/source.h"
#include "../../io/weights/weights.h"
#include "color.h"
#include "../optimise/objective.h"

/* The style images of a job (style.path, a list), opened once. */
typedef struct {
    int n;
    char path[NST_MAX_STYLES][NST_CFG_STR_MAX];
    double blend[NST_MAX_STYLES];        /* normalised to sum 1 */
    int w0[NST_MAX_STYLES], h0[NST_MAX_STYLES]; /* the files' sizes */
    int random[NST_MAX_STYLES];          /* TIFF: every rank reads its own tiles */
    nst_source *src[NST_MAX_STYLES];     /* open where needed (rank 0, or every rank when random) */
    char key[1024];                      /* paths, sizes and modification times, blend weights */
    char key1[NST_MAX_STYLES][1024];     /* the same of each image alone (blend 1): its own targets (style.masks) */
} nst_styles;

typedef struct {
    int n;                               /* the spec's style layers */
    int C[NST_VGG_NLAYERS];
    float *A[NST_VGG_NLAYERS];           /* host, C x C each */
    double normA[NST_VGG_NLAYERS];
    int from_cache;                      /* 1: loaded (memory or file), not computed */
    int tiles;                           /* tiles the computation used (largest over the images) */
    double seconds;
} nst_style_targets;

/* Rank 0 opens every style image (headers) and checks style.blend_weights; every rank learns
 * the sizes. Collective. */
nst_status nst_styles_open(const nst_config *cfg, nst_styles *st);
void nst_styles_close(nst_styles *st);
/* Working size of style image k for an output of long side `long_side`. */
void nst_style_size(const nst_config *cfg, const nst_styles *st, int k, int long_side, int *w, int *h);
/* Before rendering: every style image at style.scale fits input.max_megapixels at the finest
 * level (long side long_max) and the deepest layer at the coarsest (long_min). Errors name
 * style.scale. */
nst_status nst_styles_check(const nst_config *cfg, const nst_loss_spec *spec, const nst_styles *st, int long_min, int long_max);

struct nst_style_cache;
/* The targets for an output of long side `long_side`, tiled over the group so that each rank's
 * windows and activations stay within `budget` bytes (the same on every rank). With a colour
 * mode, each style image's pixels are transformed to take the content's statistics `content`
 * (nst/inputs/color.h) first. From the cache when it holds them (cache may be NULL). Collective. */
nst_status nst_style_targets_compute(const nst_config *cfg, const nst_loss_spec *spec, const nst_weights *weights, nst_backend *be,
                                     nst_collectives coll, nst_styles *st, int long_side, size_t budget, nst_color_mode mode,
                                     const nst_color_stats *content, struct nst_style_cache *cache, nst_style_targets *out);
void nst_style_targets_free(nst_style_targets *t);
/* With style.masks: each style image's own targets, out[i] for image i (as a job with that image
 * alone computes and caches them). Collective. */
nst_status nst_style_targets_each(const nst_config *cfg, const nst_loss_spec *spec, const nst_weights *weights, nst_backend *be,
                                  nst_collectives coll, nst_styles *st, int long_side, size_t budget, nst_color_mode mode,
                                  const nst_color_stats *content, struct nst_style_cache *cache, nst_style_targets *out);
/* The style targets' work on the busiest rank at an output of long side `long_side` (the dry
 * run's estimate): its window pixels over all style images, and the largest window's activations. */
nst_status nst_style_plan(const nst_config *cfg, const nst_loss_spec *spec, const nst_net *net, const nst_styles *st, int long_side,
                          size_t budget, double *busiest_px, size_t *acts_bytes);

#endif

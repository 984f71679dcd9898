/* nst/objective.h: the Gatys objective over a whole image, evaluated tile by tile with ONE global
 * style statistic.
 *
 *   L = content_weight * sum_l ||F_l - P_l||^2 / ||P_l||^2          (content layers l)
 *     + style_weight   * sum_l w_l ||G_l - A_l||_F^2 / ||A_l||_F^2   (style layers l)
 *     + tv_weight      * sum (x_q - x_p)^2 / (3 H W)                 (right and lower neighbours)
 *
 * G_l = (1/M_l) sum over ALL positions p of the image of f_p f_p^T, M_l the WHOLE image's position
 * count at layer l: each tile sums f_p f_p^T over the positions it owns, the sums are added over
 * tiles (and ranks, through the reducer), and only then divided by M_l. A_l is the same statistic
 * of the style image. The norms ||P_l||^2 and ||A_l||^2 are constants fixed by the targets: they
 * make each term a relative error, so one set of weights suits any network's activation scale.
 * (Gatys et al.'s 1/(4 N^2 M^2) normalisation cancels in this relative form.)
 *
 * Gradients: dL/dF_l = (4 style_weight w_l / (||A_l||^2 M_l)) F_l (G_l - A_l) for style and
 * 2 content_weight (F_l - P_l) / ||P_l||^2 for content, seeded on a tile's seed region.
 */
#ifndef NST_OBJECTIVE_H
#define NST_OBJECTIVE_H

#include "../tiler/rect.h"
#include "net.h"
#include "spec.h"

/* Sums across ranks (or nothing, for one rank). The only way the algorithm talks to mpi/. */
typedef struct {
    void *ctx;
    nst_status (*sum_floats)(void *ctx, float *buf, size_t n);   /* buf may be backend memory */
    nst_status (*sum_doubles)(void *ctx, double *buf, size_t n); /* host memory */
} nst_reducer;

/* A tile: its core (owned pixels) and window (core + halo), in image coordinates, with the
 * per-layer regions derived from them, its activations and content targets. */
typedef struct {
    nst_rect core, window;
    nst_rect own[NST_VGG_NLAYERS], seed[NST_VGG_NLAYERS]; /* layer coordinates, relative to the window */
    nst_rect own_px, seed_px;                             /* image level, relative to the window */
    nst_tensor img;  /* the window's pixels (fp32, backend memory) */
    nst_tensor dimg; /* gradient of L over the window (valid on the core) */
    nst_tensor target[NST_VGG_NLAYERS]; /* content targets at content layers */
    nst_acts acts;
} nst_tile;

typedef struct {
    double content, style, tv, total;
    double content_layer[NST_VGG_NLAYERS], style_layer[NST_VGG_NLAYERS]; /* weighted, in spec order */
} nst_loss_terms;

typedef struct {
    const nst_loss_spec *spec;
    nst_net *net;
    nst_reducer red;
    int img_w, img_h;                 /* the whole image being optimised */
    double M[NST_VGG_NLAYERS];        /* its position count at each style layer */
    int C[NST_VGG_NLAYERS];           /* channels at each style layer */
    float *A[NST_VGG_NLAYERS];        /* style targets (C x C, backend memory), by style index */
    float *G[NST_VGG_NLAYERS], *D[NST_VGG_NLAYERS];
    double normA[NST_VGG_NLAYERS];    /* ||A||^2 */
    double normP[NST_VGG_NLAYERS];    /* ||P||^2 over the whole image, by content index */
    double content_pending[NST_VGG_NLAYERS], tv_pending;
} nst_objective;

nst_status nst_objective_init(nst_objective *o, const nst_loss_spec *spec, nst_net *net, nst_reducer red, int img_w,
                              int img_h);
void nst_objective_free(nst_objective *o);

/* Style targets from a whole style image (fp32 h x w x 3 in [0,1], host memory). */
nst_status nst_objective_set_style(nst_objective *o, const float *style, int w, int h);

/* Set up a tile over `core` with `window` (image coordinates; window contains core) and allocate
 * its buffers. Regions per layer: own = the core's positions, seed = positions whose footprint
 * reaches the core, both clipped to the layer's extent within the window. */
nst_status nst_tile_init(nst_objective *o, nst_tile *t, nst_rect core, nst_rect window);
void nst_tile_free(nst_objective *o, nst_tile *t);
/* Content targets of a tile from the content image's window pixels (host fp32), and their
 * contribution to ||P||^2 (added over tiles by nst_objective_finish_targets). */
nst_status nst_tile_set_content(nst_objective *o, nst_tile *t, const float *window_px);
nst_status nst_objective_finish_targets(nst_objective *o, nst_tile *tiles, int ntiles);

/* Evaluate L at the tiles' current pixels; with grad, each tile's dimg holds dL/dx on its core. */
nst_status nst_objective_eval(nst_objective *o, nst_tile *tiles, int ntiles, int grad, nst_loss_terms *terms);

#endif

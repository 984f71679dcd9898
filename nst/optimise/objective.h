/* nst/optimise/objective.h: the Gatys objective over a whole image, evaluated tile by tile with
 * ONE global style statistic.
 *
 *   L = content_weight * sum_l ||F_l - P_l||^2 / ||P_l||^2          (content layers l)
 *     + style_weight   * sum_l w_l ||G_l - A_l||_F^2 / ||A_l||_F^2   (style layers l)
 *     + tv_weight      * sum (x_q - x_p)^2 / (3 H W)                 (right and lower neighbours)
 *     + temporal_weight * sum c_p (x_p - w_p)^2 / (3 H W)            (video: w the warped earlier result)
 *
 * G_l = (1/M_l) sum over ALL positions p of the image of f_p f_p^T, M_l the WHOLE image's position
 * count at layer l: each tile sums f_p f_p^T over the positions it owns, the sums are added over
 * tiles and ranks, and only then divided by M_l. A_l is the same statistic of the style image.
 * The norms ||P_l||^2 and ||A_l||^2 are constants fixed by the targets: they make each term a
 * relative error, so one set of weights suits any network's activation scale. (Gatys et al.'s
 * 1/(4 N^2 M^2) normalisation cancels in this relative form.)
 *
 * Gradients: dL/dF_l = (4 style_weight w_l / (||A_l||^2 M_l)) F_l (G_l - A_l) for style and
 * 2 content_weight (F_l - P_l) / ||P_l||^2 for content, seeded on a tile's seed region: the
 * positions whose footprint reaches the tile's core (exact mode), or the whole window (when the
 * window is optimised, cheap mode). Loss values and Gram sums count owned positions only.
 *
 * Masks (guided Gram, nst_guides): with one mask m^g per style image g, style g has its own
 * statistic at each style layer, G_l^g = sum_p m_p^g f_p f_p^T / sum_p m_p^g, compared with its
 * own target A_l^g; numerator and denominator are sums over owned positions, added over tiles and
 * ranks like the plain Gram's (M_l^g = sum_p m_p^g). Its gradient is the plain one with M_l^g
 * and weighted by m_p^g. A content mask weights the content term per position (the norm ||P_l||^2
 * stays the unmasked one: the mask is a per-pixel multiplier of content.weight). The masks reach
 * each layer by 2x2 averages, one per pooling (nst_tile_set_masks), values multiples of 2^-16
 * at the pixels, so every average and every denominator is exact in any tiling.
 *
 * The temporal term (Ruder et al., the video mode: video/) pulls each pixel towards the previous
 * frame's result warped onto this frame, w, with Ruder's per-pixel consistency weight c in [0,1]
 * (0 at disocclusions and motion boundaries). It is a sum over pixels with a pixel-local gradient
 * 2 temporal_weight c_p (x_p - w_p) / (3 H W): a tile takes it over the pixels it owns, so it is
 * exact in any tiling like the TV term. Several earlier frames (long-term terms) arrive already
 * combined into one target and weight (video/temporal.h).
 *
 * The global Gram must be complete before any tile's backward; three strategies reconcile that
 * with memory (nst_gram_strategy). Resident and two-pass are exact; lagged runs one pass and
 * uses the Gram known so far for the backward: the last iteration's, linearly extrapolated one
 * step (2 G(t-1) - G(t-2)). Without the extrapolation a stale Gram under Adam overshoots and
 * oscillates (measured: final loss 4x the exact run's after 200 iterations; 1.5x with it).
 */
#ifndef NST_OBJECTIVE_H
#define NST_OBJECTIVE_H

#include "../../io/weights/weights.h"
#include "../../tiler/rect.h"
#include "../model/net.h"
#include "../model/spec.h"
#include "host_step.h"
#include "timers.h"

/* A message between this rank and rank peer (of the current group): bytes at buf */
typedef struct {
    int peer;
    void *buf;
    size_t bytes;
} nst_peer_msg;

/* What the algorithm needs from the other ranks (mpi/ provides it; NULL members: one process). */
typedef struct {
    void *ctx;
    nst_status (*sum_doubles)(void *ctx, double *buf, size_t n); /* scalars in host memory */
    nst_status (*sum_grams)(void *ctx, double *buf, size_t n);   /* Gram sums in backend memory (NCCL, or MPI via the host) */
    nst_status (*check)(void *ctx, nst_status mine);             /* the worst status of all ranks */
    nst_status (*bcast)(void *ctx, void *buf, size_t bytes);     /* from rank 0, host memory */
    nst_status (*sum_int64)(void *ctx, int64_t *buf, size_t n);  /* fixed-point Gram sums (host memory): exact */
    nst_status (*max_ints)(void *ctx, int *buf, size_t n);       /* their bounds */
    nst_status (*agree)(void *ctx, nst_status mine);             /* as check, with the failing rank's message on every rank */
    /* The halo exchange's messages between buffers in backend memory, sends and receives together
     * (NCCL between distinct GPUs), or NULL: the exchange goes through host memory */
    nst_status (*exchange)(void *ctx, const nst_peer_msg *sends, int nsend, const nst_peer_msg *recvs, int nrecv);
} nst_collectives;

typedef enum { NST_GRAM_RESIDENT, NST_GRAM_TWO_PASS, NST_GRAM_LAGGED } nst_gram_strategy;

/* The doubles a Gram slot of c channels takes in the objective's block of sums (G_all): c^2, to a
 * multiple of 32 (256 bytes), the gap 0. The memory model (nst/plan/layout.c) counts the same. */
static inline size_t nst_gram_slot_doubles(int c) { return ((size_t)c * c + 31) / 32 * 32; }

#define NST_MAX_STYLES 16
#define NST_MAX_GRAMS (NST_MAX_STYLES * NST_VGG_NLAYERS)

/* The masks of a render (see above). */
typedef struct {
    int n;                         /* style masks, one per style image (0: none, one blended target per layer) */
    double weight[NST_MAX_STYLES]; /* each style's factor on style.weight (1 when the blend is even) */
    int content;                   /* content.mask weights the content term */
} nst_guides;

const char *nst_gram_strategy_name(nst_gram_strategy s);

/* A tile: its core (owned pixels) and window (core + halo), in image coordinates, with the
 * per-layer regions derived from them, its pixels, gradient and content targets. */
typedef struct {
    int index; /* in the grid */
    nst_rect core, window;
    nst_rect own[NST_VGG_NLAYERS], seed[NST_VGG_NLAYERS]; /* layer coordinates, relative to the window */
    nst_rect own_px, seed_px;                             /* image level, relative to the window */
    nst_tensor img;  /* the window's pixels (fp32, backend memory) */
    nst_tensor dimg; /* gradient of L over the window (valid on the seed region) */
    nst_tensor target[NST_VGG_NLAYERS]; /* content targets at content layers */
    nst_tensor temporal_target, temporal_c; /* the temporal term's w (3 channels) and c (1), window-sized; empty without */
    nst_tensor *mask; /* with masks: [g * NST_VGG_NLAYERS + l] style g's at style layer l; [n * NST_VGG_NLAYERS + l] the content's */
    nst_acts *acts;  /* its own (resident) or shared (two-pass, lagged) */
    nst_acts own_acts;
} nst_tile;

typedef struct {
    double content, style, tv, temporal, total;
    double content_layer[NST_VGG_NLAYERS], style_layer[NST_VGG_NLAYERS]; /* weighted, in spec order */
} nst_loss_terms;

/* An evaluation's loss sums, in backend memory: the ops add into them there with no wait for the
 * device (kernels/backend.h), and an iteration reads them to the host only when its terms are
 * asked for (nst_objective_eval). */
typedef struct {
    /* this rank's tiles' sums: each content layer's, then TV's and the temporal term's; exact
     * (kernels/xsum.h), so their total over tiles and ranks is the whole image's */
    nst_xsum pending[NST_VGG_NLAYERS + 2];
    nst_xsum normP[NST_VGG_NLAYERS]; /* ||P||^2's over this rank's tiles, until they are added over ranks */
    double ss[NST_MAX_GRAMS];        /* each Gram slot's sum of squares of G/M - A at the current image */
} nst_loss_sums;

typedef struct {
    const nst_loss_spec *spec;
    nst_net *net;
    nst_collectives coll;
    nst_gram_strategy strategy;
    nst_acts *shared;                 /* the one set of activations of two-pass and lagged */
    int img_w, img_h;                 /* the whole image being optimised */
    nst_guides guides;
    int ngram;                        /* Gram statistics: slot q = g * nstyle + k for guide g (0 without masks), style layer k */
    double M[NST_MAX_GRAMS];          /* the denominators: the whole image's position count, or sum of the mask */
    int C[NST_VGG_NLAYERS];           /* channels at each style layer */
    float *A[NST_MAX_GRAMS];          /* style targets (C x C, backend memory), by slot */
    double *G[NST_MAX_GRAMS];         /* Gram sums (upper triangle, double: see gram_accumulate), by slot in G_all */
    double *G_all;                    /* every slot's, one block of G_n doubles (0 between slots) */
    size_t G_n;
    double *Gprev[NST_MAX_GRAMS];     /* lagged: the previous iteration's sums, for the extrapolation */
    int have_prev;
    float *D[NST_MAX_GRAMS];          /* G/M - A */
    int have_D;                       /* lagged: D holds the previous iteration's G/M - A */
    double normA[NST_MAX_GRAMS];      /* ||A||^2 */
    double normP[NST_VGG_NLAYERS];    /* ||P||^2 over the whole image, by content index */
    nst_loss_sums *sums;              /* backend memory (above) */
    nst_loss_sums *host;              /* their copy as last read */
    long long staged_waits;           /* host waits of the collectives staged through the host (the Gram sums' MPI path) */
    nst_host_hook *host_steps;        /* the Gram sums added over ranks go through it (NULL: at once; host_step.h) */
    /* Resident and two-pass on a backend with fixed-point Gram sums (the CPU: gram_fixed): the
     * sums as integers, exact in any order, so a tiled image's global Gram is the whole image's
     * bits by construction. Each slot's features are bounded by 2^gram_e (the last iteration's
     * largest exponent over all ranks, one more; NST_GRAM_EMIN before the first); a pass whose
     * features reach past it runs again with the bound it found (nst_objective_eval). */
    int fixed;
    int64_t *Gx[NST_MAX_GRAMS];
    int gram_e[NST_MAX_GRAMS], emax[NST_MAX_GRAMS];
    long regrams; /* passes run again for a bound (the first of every objective included) */
} nst_objective;

/* shared: the activations tiles share under two-pass and lagged (NULL for resident). */
nst_status nst_objective_init(nst_objective *o, const nst_loss_spec *spec, nst_net *net, nst_collectives coll,
                              nst_gram_strategy strategy, nst_acts *shared, int img_w, int img_h);
/* The same with masks (guides NULL: none). */
nst_status nst_objective_init_guided(nst_objective *o, const nst_loss_spec *spec, nst_net *net, nst_collectives coll,
                                     nst_gram_strategy strategy, nst_acts *shared, int img_w, int img_h, const nst_guides *guides);
void nst_objective_free(nst_objective *o);

/* Style targets from a whole style image (fp32 h x w x 3 in [0,1], host memory), on one process
 * (tests, nst_render_image; a job computes them tiled over its ranks: nst/inputs/style.h). */
nst_status nst_objective_set_style(nst_objective *o, const float *style, int w, int h);
/* The style targets of a whole style image on this process, downloaded (A[k] allocated: host
 * C x C per style layer, nst_free them). */
nst_status nst_objective_style_targets(const nst_loss_spec *spec, nst_backend *be, const nst_weights *w, const float *style, int sw, int sh,
                                       float **A, double *normA);
/* Style targets given (host C x C per slot, and their squared norms), e.g. from nst/inputs/style.h. */
nst_status nst_objective_set_targets(nst_objective *o, float *const *A, const double *normA);
/* Give every rank rank 0's style targets (after rank 0 alone called set_style). */
nst_status nst_objective_share_style(nst_objective *o);

/* Per layer, the positions a tile owns (own: features whose aligned block starts in the core) and
 * the positions its gradient is seeded on (seed: whose footprint reaches the core, or the whole
 * window), relative to the window at each layer. */
void nst_layer_regions(const nst_net *net, nst_rect core, nst_rect window, int seed_window, nst_rect *own, nst_rect *seed);

/* Set up a tile over `core` with `window` (image coordinates; window contains core) and allocate
 * its buffers (its own activations if resident). Regions per layer: own = the core's positions;
 * seed = positions whose footprint reaches the core, or the whole window if seed_window. */
nst_status nst_tile_init(nst_objective *o, nst_tile *t, int index, nst_rect core, nst_rect window, int seed_window);
void nst_tile_free(nst_objective *o, nst_tile *t);
/* Content targets of a tile from the content image's window pixels (host fp32), and their
 * contribution to ||P||^2 (added over tiles and ranks by nst_objective_finish_targets). */
nst_status nst_tile_set_content(nst_objective *o, nst_tile *t, const float *window_px);
/* A tile's masks from their window pixels (host, one value per pixel in [0,1]: px[g] style g's,
 * px[guides.n] the content's), taken to each layer that uses them, and their owned sums added to
 * the denominators (added over ranks by nst_objective_finish_targets). */
nst_status nst_tile_set_masks(nst_objective *o, nst_tile *t, float *const *px);
/* The temporal term's target w (3 floats per pixel) and weight c (1 per pixel, in [0,1]) over the
 * tile's window (host): uploaded when spec->temporal_weight > 0. */
nst_status nst_tile_set_temporal(nst_objective *o, nst_tile *t, const float *target_px, const float *c_px);
/* A mask value as the objective takes it: clamped to [0,1] (NaN: 0), rounded to a multiple of 2^-16. */
float nst_mask_quantise(float v);
nst_status nst_objective_finish_targets(nst_objective *o);

/* Evaluate L at the tiles' current pixels; with grad, each tile's dimg holds dL/dx on its seed
 * region. tm (may be NULL) accumulates per-phase times. terms: the loss terms, read from the
 * device and added over ranks; NULL: left on the device, and no wait for them (an iteration
 * that neither reports nor decides anything). Collective: every rank calls it, with terms NULL
 * on all ranks or on none. */
nst_status nst_objective_eval(nst_objective *o, nst_tile *tiles, int ntiles, int grad, nst_timers *tm,
                              nst_loss_terms *terms);

/* The state the lagged Gram keeps between iterations (the sums, the previous sums, D), to a
 * checkpoint file or back from one (io's direction); nothing for the exact strategies. */
struct nst_ckpt_io;
nst_status nst_objective_state(nst_objective *o, const struct nst_ckpt_io *io);

#endif

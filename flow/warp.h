/* flow/warp.h: images moved along optical flow, Ruder et al.'s consistency weights, and the
 * temporal warping error that measures flicker: the CPU truth of the video mode's flow
 * arithmetic (Ruder, Dosovitskiy and Brox, "Artistic style transfer for videos", GCPR 2016; Lai et
 * al., "Learning blind video temporal consistency", ECCV 2018). Images are packed float RGB in
 * [0, 1]; flows are io/video/flo.h's (pixels, x right, y down; NaN unknown). */
#ifndef NST_FLOW_WARP_H
#define NST_FLOW_WARP_H

#include "../io/video/flo.h"

/* Backward warp: out(p) = img(p + f(p)), bilinear, for a w x h img and flow. valid(p) = 0 (and
 * out(p) = 0) where f(p) is unknown or p + f(p) leaves the image [0, w - 1] x [0, h - 1]. To move
 * frame i - 1 onto frame i, f is the flow from i back to i - 1. */
void nst_warp_backward(const float *img, const nst_flow *f, float *out, unsigned char *valid);

/* Ruder et al.'s per-pixel weights c in frame i's coordinates, from the flow forward (i - 1 -> i,
 * w) and backward (i -> i - 1, w^): with w~(p) = w(p + w^(p)) (bilinear), c(p) = 0 where
 *   |w~ + w^|^2 > 0.01 (|w~|^2 + |w^|^2) + 0.5          (a disocclusion: the check fails)
 *   |grad u^|^2 + |grad v^|^2 > 0.01 |w^|^2 + 0.002     (a motion boundary)
 * or where either flow is unknown or p + w^(p) leaves the image; 1 elsewhere. Central
 * differences inside, one-sided at the border. */
void nst_flow_consistency(const nst_flow *fwd, const nst_flow *bwd, float *c);

typedef struct {
    double ruder;  /* sum of c |x - w(x')|^2 over pixels and channels, / (3 w h) (Ruder et al.) */
    double lai;    /* sum of M |x - w(x')|^2 over pixels and channels, / sum of M (Lai et al.) */
    double kept;   /* the share of pixels with M = 1 */
} nst_flicker;

/* The warping error of frame x (w x h) against the earlier frame already warped onto it (warped,
 * with valid from nst_warp_backward) under weights c: M = c where valid, else 0. */
nst_flicker nst_flicker_error(const float *x, const float *warped, const unsigned char *valid, const float *c, int w, int h);

/* The same from the flows: out[k] is the error of frame cur[k] against prev[k] warped along bwd,
 * under the consistency weights of (fwd, bwd), computed once for the n pairs (a clip's result and
 * its input share one motion). */
nst_status nst_flicker_along(const nst_flow *fwd, const nst_flow *bwd, int n, const float *const *cur, const float *const *prev,
                             nst_flicker *out);

#endif

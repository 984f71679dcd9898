/* video/temporal.h: the temporal term's inputs for one frame, from the results of earlier frames
 * and the optical flow between them and it (Ruder, Dosovitskiy and Brox, "Artistic style transfer
 * for videos", GCPR 2016): the CPU truth, computed whole on the group's rank 0, so every tiling
 * of the frame receives the same values.
 *
 * For each earlier frame i - j: its result warped onto frame i (backward warp along the flow
 * i -> i - j) and the consistency weights c_j (flow/warp.h: 0 at disocclusions and motion
 * boundaries). With several (the long-term terms), frame i - j counts only where no nearer frame
 * is consistent: c_j' = max(c_j - sum of the nearer c_l, 0). Their terms, sum_j c_j' (x - w_j)^2,
 * combine into one, C (x - W)^2 plus a constant, with C = sum_j c_j' and W = sum_j c_j' w_j / C:
 * the same gradient, so the objective holds one target and one weight per pixel.
 *
 * The initial image is the previous result warped (the nearest frame, j = 1), kept in float;
 * where the warp leaves the previous frame there is nothing to carry and the content frame
 * stands in, as it does for a cold start.
 */
#ifndef NST_VIDEO_TEMPORAL_H
#define NST_VIDEO_TEMPORAL_H

#include "../io/video/flo.h"

typedef struct {
    int j;               /* how many frames back (1: the previous) */
    const float *result; /* its result, packed float RGB */
    const nst_flow *fwd; /* the flow from it to the current frame */
    const nst_flow *bwd; /* the flow from the current frame back to it */
} nst_temporal_prev;

/* prev[0 .. n) nearest first (prev[0].j = 1); content: the current frame. Out, w x h each:
 * target (3 per pixel), c (1 per pixel, in [0, 1]), init (3 per pixel); kept: the share of pixels
 * with C > 0 (may be NULL). */
nst_status nst_temporal_build(int w, int h, const nst_temporal_prev *prev, int n, const float *content, float *target, float *c,
                              float *init, double *kept);
/* The weights as the frame's sources take them, gray RGB: rgb holds np pixels, the weights (one
 * per pixel) in its last third (as nst_temporal_build wrote them there); spread in place, front to
 * back, every write landing at or before the value it reads. */
void nst_temporal_weights_rgb(float *rgb, size_t np);

#endif

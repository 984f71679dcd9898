/* video/cuts.h: scene cuts from colour histograms. A frame's signature is its histogram of 16
 * levels per channel (R, G, B), normalised; two frames differ by half the L1 distance of their
 * signatures averaged over the channels: 0 for the same colours, 1 for disjoint ones. A cut is
 * where consecutive frames differ by more than video.cut_threshold. Motion within a shot moves
 * pixels but keeps most colours, so it stays far below a change of scene. */
#ifndef NST_VIDEO_CUTS_H
#define NST_VIDEO_CUTS_H

#define NST_CUT_BINS 16

typedef struct {
    float h[3][NST_CUT_BINS];
} nst_cut_signature;

/* The signature of a w x h frame (packed float RGB in [0, 1]). */
void nst_cut_signature_of(const float *px, int w, int h, nst_cut_signature *out);
/* The difference of two signatures, in [0, 1]. */
double nst_cut_distance(const nst_cut_signature *a, const nst_cut_signature *b);

#endif

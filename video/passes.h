/* video/passes.h: the multi-pass mode (video.passes > 1), after Ruder et al.'s: once a unit's
 * forward pass is done, it is gone over again, backward, then forward, ..., so that a frame is held
 * to its neighbours on both sides, not to the earlier ones alone. In a pass, frame i (after the
 * pass's first, which keeps its result) starts from its last result moved video.pass_blend of the
 * way towards its neighbour's new result warped onto it, where the flow between them is consistent,
 * and is held to that warped result by the temporal term for video.pass_iterations. The frames,
 * the flows and every pass's results are kept in the work directory (video/store.h) until the last
 * pass is done, so a pass resumes at its first frame without a result, with the same bits.
 */
#ifndef NST_VIDEO_PASSES_H
#define NST_VIDEO_PASSES_H

#include "unit.h"

/* Passes 2 .. u->passes over the unit, then its frames' images. Collective on the current group. */
nst_status nst_passes_run(const nst_unit_ctx *u, const nst_clip_unit *unit);

#endif

/* video/unit.h: one unit of a clip (a shot, or a chunk of one) rendered frame after frame on the
 * current group: the first frame cold, each later one from the previous result warped and held
 * to it by the temporal term; every finished frame into the work directory; the flicker of the
 * result (and of the input, its floor) measured as it goes.
 */
#ifndef NST_VIDEO_UNIT_H
#define NST_VIDEO_UNIT_H

#include "feeder.h"
#include "frame.h"
#include "plan.h"
#include "store.h"

/* A group's running totals (its rank 0's). */
typedef struct {
    long long frames;              /* rendered by this run */
    double render_seconds, flow_seconds, decode_seconds;
    double flicker_ruder, flicker_lai, floor_ruder, floor_lai; /* sums over the frames measured */
    long long measured;
} nst_clip_totals;

typedef struct {
    const nst_frame_env *fe;
    const nst_feeder_spec *fs;     /* fs->nj: the distances held (0: no flow) */
    const nst_clip_store *store;
    int temporal;                  /* frames after a unit's first start warm and hold to the earlier results */
    long long warm_iterations;
    long long total_frames;        /* the range's, for the log */
    int passes;                    /* video.passes: more than 1 keeps every frame's inputs and results for video/passes.h */
    long long pass_iterations;
    double pass_blend;
    nst_clip_totals *tot;          /* rank 0's */
} nst_unit_ctx;

/* NST_EINTERRUPTED (with its one line) when this group is to stop at a frame boundary: a signal on
 * its rank 0 or another group's notice. Collective on the current group. */
nst_status nst_unit_stop_asked(void);
/* Render the unit's frames not yet done. Stops with NST_EINTERRUPTED at a frame boundary after a
 * signal or another group's notice. Collective on the current group. */
nst_status nst_unit_render(const nst_unit_ctx *u, const nst_clip_unit *unit);

#endif

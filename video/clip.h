/* video/clip.h: a clip render, from content.path (a video file or an image sequence) to
 * output.path (a video file or frames), on every rank (docs/VIDEO.md).
 *
 *   1. World rank 0 checks the settings (video/setup.h), opens the clip's header and, with
 *      video.detect_cuts, finds the scene cuts (video/cuts.h); every rank plans the same shots
 *      and chunks (video/plan.h).
 *   2. The world splits into rank groups (video.group_ranks); each group renders its units one
 *      after another (video/unit.h), the frames of a unit in order, each frame tiled over the
 *      group's ranks. Finished frames go to the work directory (video/store.h).
 *   3. When every frame is done, world rank 0 encodes the output from them (video/encode.h) with
 *      the source's rate and audio, and removes the work directory.
 * A signal stops every group at its next frame boundary (exit 75): the same command resumes at
 * each unit's first unfinished frame, with the same bits as an uninterrupted render.
 */
#ifndef NST_VIDEO_CLIP_H
#define NST_VIDEO_CLIP_H

#include "../io/config/config.h"
#include "../io/weights/weights.h"
#include "../kernels/backend.h"
#include "../nst/optimise/objective.h"

struct nst_progress;
struct nst_style_cache;

typedef struct {
    const nst_weights *weights;
    struct nst_style_cache *cache;
    struct nst_progress *progress;
    int restart;                 /* --restart: discard the work directory's frames */
} nst_clip_env;

/* Collective on the world. */
nst_status nst_clip_run(const nst_config *cfg, nst_backend *be, nst_collectives coll, const nst_clip_env *env);

#endif

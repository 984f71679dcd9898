/* video/encode.h: the output of a clip render, written by world rank 0 from the finished frames
 * in the work directory once all are done: a video file (the codec, the exact rate, the source's
 * audio over the frames' span) or one image per frame, each under a temporary name until
 * complete (io/video/video.h). */
#ifndef NST_VIDEO_ENCODE_H
#define NST_VIDEO_ENCODE_H

#include "setup.h"
#include "store.h"

nst_status nst_clip_encode(const nst_config *cfg, const nst_clip_setup *su, const nst_clip_store *store, double *seconds);

#endif

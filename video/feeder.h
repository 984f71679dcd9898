/* video/feeder.h: the frames of one unit (a shot or a chunk) and the optical flow between them,
 * prepared one frame ahead on a thread of the group's rank 0 while the current frame renders.
 *
 * The feeder opens its own reader of the clip (io/video/video.h), decodes the unit's frames in order,
 * resizes them to the render size, and for each frame i computes the flows both ways between it
 * and every earlier frame i - j the temporal term holds (j in the distances, within the unit):
 * with OpenCV's DIS (flow/dis.h), or read from .flo files (video.flow = files: the previous frame
 * only). A resumed unit starts decoding far enough back to have those earlier frames. Its time
 * (decoding, flow) is reported so that flow's share of a render can be seen.
 */
#ifndef NST_VIDEO_FEEDER_H
#define NST_VIDEO_FEEDER_H

#include "../io/video/flo.h"
#include "../io/video/video.h"

#define NST_MAX_TEMPORAL 8 /* earlier frames a temporal term holds: the previous and 7 long-term */

typedef struct {
    const char *path;           /* content.path */
    int fps_num, fps_den;       /* a sequence's rate */
    nst_clip_limits lim;
    long long first, step;      /* range index r is clip frame first + r * step */
    int W, H;                   /* the render size */
    int nj, j[NST_MAX_TEMPORAL]; /* distances, ascending, j[0] = 1 (nj = 0: no flows) */
    int files;                  /* flows from .flo files (fwd_pattern, bwd_pattern) instead of DIS */
    const char *dis_preset;
    const char *fwd_pattern, *bwd_pattern;
} nst_feeder_spec;

typedef struct {
    long long r;                       /* its range index */
    nst_image frame;                   /* at W x H */
    int nflows;                        /* earlier frames of the unit with flows: j[0 .. nflows) of the spec */
    nst_flow fwd[NST_MAX_TEMPORAL];    /* frame r - j -> frame r */
    nst_flow bwd[NST_MAX_TEMPORAL];    /* frame r -> frame r - j */
    double decode_seconds, flow_seconds;
} nst_fed_frame;

typedef struct nst_feeder nst_feeder;

/* Frames [from, to) of the unit starting at unit_start (from >= unit_start). */
nst_status nst_feeder_start(const nst_feeder_spec *s, long long unit_start, long long from, long long to, nst_feeder **out);
/* The next frame (blocks until it is ready); *out is the caller's (nst_fed_frame_free). */
nst_status nst_feeder_next(nst_feeder *f, nst_fed_frame **out);
void nst_fed_frame_free(nst_fed_frame *fr);
/* Stop the thread (at any point) and free everything. */
void nst_feeder_stop(nst_feeder *f);

#endif

/* video/setup.h: a clip render's settings, checked and resolved once by world rank 0 from the
 * config and the clip's header, then the same on every rank (a plain struct, broadcast). Every
 * error names the key, its config line and the valid values. */
#ifndef NST_VIDEO_SETUP_H
#define NST_VIDEO_SETUP_H

#include "../io/config/config.h"
#include "../io/video/video.h"
#include "../nst/model/spec.h"
#include "feeder.h"

typedef struct {
    nst_clip_info clip;            /* the source */
    int fps_num, fps_den;          /* a sequence input's rate (video.fps) */
    long long first, step, n;      /* the range: clip frames first + r step, r < n */
    int W, H;                      /* the render size */
    int out_fps_num, out_fps_den;  /* the output's rate: the clip's over the step */
    int out_video;                 /* output.path is a video file (else a pattern) */
    int codec;                     /* nst_vcodec */
    int temporal;                  /* video.temporal_weight > 0 */
    long long warm_iterations;
    int passes;                    /* video.passes */
    long long pass_iterations;
    int nj, j[NST_MAX_TEMPORAL];   /* the distances the flows are computed for (the metric's 1 even without the term) */
    int flows;                     /* flows are computed (DIS available, or files) */
    int ncuts;
    long long cuts[256];           /* video.cuts as range indices */
    char work[4096];               /* the work directory */
    char key[512];                 /* what render this is (video/store.h) */
} nst_clip_setup;

/* 1 when content.path names a clip (a video file by its extension, or a pattern). */
int nst_clip_wanted(const nst_config *cfg);
/* World rank 0 only: check the config and open the clip's header. */
nst_status nst_clip_setup_make(const nst_config *cfg, nst_clip_setup *su);
/* The limits every reader of content.path opens it with (input.max_whole_megapixels a frame). */
nst_clip_limits nst_clip_input_limits(const nst_config *cfg);
/* The feeder's spec from a setup (pointers into cfg). */
void nst_clip_feeder_spec(const nst_config *cfg, const nst_clip_setup *su, nst_feeder_spec *fs);

#endif

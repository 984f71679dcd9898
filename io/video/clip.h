/* io/video/clip.h: what every part of the clip I/O shares: video.c (the dispatch, video.h),
 * video_seq.c (image sequences), video_read.c and video_write.c or video_none.c (video files).
 * What a clip is (its info, the limits it is read under, an output's spec and codec), the names
 * a path may take (a printf pattern, a video file's extension), and small helpers for the parts.
 * video.h and video_parts.h both include it and not each other: the arrows point one way. */
#ifndef NST_CLIP_H
#define NST_CLIP_H

#include "../image/image.h"

typedef struct {
    int w, h;
    int fps_num, fps_den;  /* the exact frame rate (a sequence: the rate it was opened with) */
    long long frames;      /* the frame count, exact (counted, not estimated from a duration) */
    int has_audio;         /* a video file with an audio stream (copied to a video output) */
    int bits;              /* bits per sample of the source (8, 10, 12, 16) */
    int is_video;          /* 1: a video file; 0: an image sequence */
    char detail[192];      /* for messages and the run record: "H.264 (High), yuv420p, 1920x1080, 30000/1001 fps, 300 frames, aac audio" */
} nst_clip_info;

typedef struct {
    double max_pixels;     /* per frame */
    int max_side;
    long long max_frames;
    const char *key;       /* the config key the clip came from, for messages (content.path) */
} nst_clip_limits;

typedef enum { NST_VCODEC_H264, NST_VCODEC_H264_10, NST_VCODEC_PRORES, NST_VCODEC_FFV1 } nst_vcodec;

/* "h264", "h264-10", "prores", "ffv1" (the video.codec values); -1 when unknown. */
int nst_vcodec_parse(const char *name);
const char *nst_vcodec_name(nst_vcodec c);

typedef struct {
    const char *path;        /* .mp4 .mov .mkv: a video; a pattern: frames */
    int w, h;
    int fps_num, fps_den;
    nst_vcodec codec;        /* video only */
    int crf;                 /* H.264's quality, 0..51 (lower is better; 0 lossless) */
    int bits;                /* a sequence's 8 or 16 */
    long long first;         /* a sequence's number of the first frame written */
    const char *audio_from;  /* the clip whose audio is copied ("" or NULL: none) */
    double audio_start;      /* the span of it, in seconds from the start of its video */
    double audio_seconds;
    int threads;             /* the encoder's threads (0: FFmpeg's choice) */
    int overwrite;
    const char *comment;     /* stored in the file's metadata (the resolved config); may be NULL */
} nst_clip_out_spec;

/* 1 where path is a printf pattern with one integer conversion (%d, %05d, ...). */
int nst_clip_is_pattern(const char *path);
/* 1 where path names a video file by its extension (.mp4 .mov .mkv .avi .webm .m4v .mpg .mpeg .ts .mxf .y4m). */
int nst_clip_is_video_name(const char *path);
/* 1 where video files can be read and written: nstbatch was built with FFmpeg's libraries and
 * its video plugin loads (video_load.c; video_none.c without FFmpeg). */
int nst_video_available(void);

/* ---- for the parts ------------------------------------------------------------------------------ */

/* A pattern's one integer conversion: the offset of its '%' in path, or -1 when there is not
 * exactly one (or another '%' than "%%"); and the length of a conversion after its '%' (0: not
 * an integer one). */
long nst_clip_pattern_at(const char *path);
size_t nst_clip_int_conversion(const char *p);

/* A growing list of numbers (frame numbers, timestamps): append doubles its room as needed. */
typedef struct {
    long long *v;
    size_t n, cap;
} nst_ll_list;
nst_status nst_ll_append(nst_ll_list *l, long long x, const char *what);
int nst_ll_cmp(const void *a, const void *b); /* for qsort */

/* "PATH (KEY)", or PATH alone without a key: how messages name a clip. */
void nst_clip_display_name(char *buf, size_t cap, const char *path, const char *key);

#endif

/* io/video/video.h: clips in and out, for the video mode: video files through FFmpeg's libraries
 * (libavformat, libavcodec, libswscale: Debian's FFmpeg 5.1; never a subprocess) and image
 * sequences named by a printf pattern (frames/%05d.png).
 *
 * A clip is frames 0 .. frames - 1, each an nst_image (float RGB in [0, 1]). A video file's frame
 * rate must be constant: its exact rational rate is kept (30000/1001 stays 30000/1001), and a
 * variable rate is refused. Sequences are numbered by their pattern from the lowest of 0 and 1
 * that exists; a gap (a missing frame) or a frame of another size is refused. Input is
 * untrusted: sizes and counts are checked against the limits before anything is allocated.
 *
 * Output: a path ending in .mp4, .mov or .mkv writes a video (H.264 8- or 10-bit, ProRes 422 HQ,
 * FFV1 16-bit lossless), with the source's audio stream copied through (the span of the frames
 * rendered); a pattern writes one image per frame (PNG or TIFF by the pattern's extension, 8 or
 * 16 bits). A video is written under a temporary name and renamed only when complete; each
 * frame of a sequence is written that way. Where nstbatch was built without FFmpeg, video files
 * are refused with a message saying how to get it; sequences still work.
 */
#ifndef NST_VIDEO_H
#define NST_VIDEO_H

#include "clip.h"

typedef struct nst_clip_reader nst_clip_reader;

/* Open a video file or an image sequence. fps_num/fps_den: a sequence's rate (ignored for files).
 * Errors name the file (and lim->key) and say what to do. */
nst_status nst_clip_open(const char *path, int fps_num, int fps_den, const nst_clip_limits *lim, nst_clip_reader **out,
                         nst_clip_info *info);
/* A video file held in memory (the fuzzer's entry point); buf must outlive the reader. */
nst_status nst_clip_open_memory(const char *name, const unsigned char *buf, size_t len, const nst_clip_limits *lim,
                                nst_clip_reader **out, nst_clip_info *info);
/* Frame `index` into out (allocated here, nst_image_free it). Indices must not decrease from one
 * call to the next (a video decodes forward; a skipped frame is decoded and dropped). */
nst_status nst_clip_read(nst_clip_reader *r, long long index, nst_image *out);
void nst_clip_close(nst_clip_reader *r);

typedef struct nst_clip_writer nst_clip_writer;

/* Before any rendering: the container takes the codec (FFV1 needs .mkv or .mov; ProRes .mov or
 * .mkv), the encoder exists in this FFmpeg, the directory is writable, and an existing output is
 * refused without overwrite. Errors name the key (output.path, video.codec) and the valid values. */
nst_status nst_clip_check_target(const nst_clip_out_spec *s);
nst_status nst_clip_writer_open(const nst_clip_out_spec *s, nst_clip_writer **out);
/* The next frame, in order (w x h). */
nst_status nst_clip_writer_put(nst_clip_writer *w, const nst_image *frame);
/* Flush, copy the audio, write the trailer, sync and rename into place; frees w. */
nst_status nst_clip_writer_finish(nst_clip_writer *w);
/* Remove the temporary file; frees w. */
void nst_clip_writer_abort(nst_clip_writer *w);

#endif

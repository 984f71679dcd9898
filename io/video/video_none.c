/* io/video/video_none.c: video files in a build without FFmpeg's libraries (the Makefile compiles
 * this instead of video_read.c and video_write.c): every video file is refused with a message
 * saying how to get them. Image sequences (video_seq.c) work without FFmpeg. */
#include "video_parts.h"

int nst_video_available(void) { return 0; }

static nst_status refuse(const char *path)
{
    return nst_fail(NST_EINPUT, "%s: this nstbatch was built without FFmpeg's libraries: install libavformat-dev libavcodec-dev libswscale-dev "
                                "(scripts/install-deps.sh) and rebuild",
                    path);
}

nst_status nst_vfile_open(const char *path, const unsigned char *buf, size_t len, const nst_clip_limits *lim, nst_vfile_reader **out,
                          nst_clip_info *info)
{
    *out = NULL;
    return refuse(path);
}

nst_status nst_vfile_read(nst_vfile_reader *r, long long index, nst_image *out) { return refuse("a video"); }

void nst_vfile_close(nst_vfile_reader *r) {}

nst_status nst_vfile_check_target(const nst_clip_out_spec *s) { return refuse(s->path); }

nst_status nst_vfile_writer_open(const nst_clip_out_spec *s, nst_vfile_writer **out)
{
    *out = NULL;
    return refuse(s->path);
}

nst_status nst_vfile_writer_put(nst_vfile_writer *w, const nst_image *frame) { return refuse("a video"); }

nst_status nst_vfile_writer_finish(nst_vfile_writer *w) { return refuse("a video"); }

void nst_vfile_writer_abort(nst_vfile_writer *w) {}

/* io/video/video.c: the clip interface (see video.h): the dispatch between image sequences
 * (video_seq.c) and video files (video_read.c and video_write.c or, without FFmpeg,
 * video_none.c). Names and codecs are in clip.c. */
#include "video.h"

#include <string.h>

#include "../../util/mem.h"
#include "video_parts.h"

struct nst_clip_reader {
    nst_seq_reader *seq; /* one of the two */
    nst_vfile_reader *vid;
};

struct nst_clip_writer {
    nst_seq_writer *seq;
    nst_vfile_writer *vid;
};

/* ---- reading ----------------------------------------------------------------------------------- */

static nst_status open_either(const char *path, const unsigned char *buf, size_t len, int fps_num, int fps_den,
                              const nst_clip_limits *lim, nst_clip_reader **out, nst_clip_info *info)
{
    *out = NULL;
    memset(info, 0, sizeof *info);
    nst_clip_reader *r = nst_calloc(sizeof *r, "a clip reader");
    if (!r) return NST_ENOMEM;
    /* a pattern is a sequence; anything else is opened by FFmpeg, which knows a video by its bytes */
    nst_status s = !buf && nst_clip_is_pattern(path) ? nst_seq_open(path, fps_num, fps_den, lim, &r->seq, info)
                                                     : nst_vfile_open(path, buf, len, lim, &r->vid, info);
    if (s != NST_OK) {
        nst_free(r);
        return s;
    }
    *out = r;
    return NST_OK;
}

nst_status nst_clip_open(const char *path, int fps_num, int fps_den, const nst_clip_limits *lim, nst_clip_reader **out,
                         nst_clip_info *info)
{
    return open_either(path, NULL, 0, fps_num, fps_den, lim, out, info);
}

nst_status nst_clip_open_memory(const char *name, const unsigned char *buf, size_t len, const nst_clip_limits *lim,
                                nst_clip_reader **out, nst_clip_info *info)
{
    static const unsigned char empty[1];
    return open_either(name, buf ? buf : empty, len, 0, 0, lim, out, info);
}

nst_status nst_clip_read(nst_clip_reader *r, long long index, nst_image *out)
{
    memset(out, 0, sizeof *out);
    return r->seq ? nst_seq_read(r->seq, index, out) : nst_vfile_read(r->vid, index, out);
}

void nst_clip_close(nst_clip_reader *r)
{
    if (!r) return;
    if (r->seq) nst_seq_close(r->seq);
    if (r->vid) nst_vfile_close(r->vid);
    nst_free(r);
}

/* ---- writing ----------------------------------------------------------------------------------- */

nst_status nst_clip_check_target(const nst_clip_out_spec *s)
{
    if (!s->path || !*s->path) return nst_fail(NST_EINPUT, "output.path is empty: give a .mp4, .mov or .mkv name, or a pattern such as frames/%%05d.png");
    if (s->w < 1 || s->h < 1) return nst_fail(NST_EINPUT, "%s: frames of %dx%d cannot be written", s->path, s->w, s->h);
    return nst_clip_is_pattern(s->path) ? nst_seq_check_target(s) : nst_vfile_check_target(s);
}

nst_status nst_clip_writer_open(const nst_clip_out_spec *s, nst_clip_writer **out)
{
    *out = NULL;
    NST_TRY(nst_clip_check_target(s));
    nst_clip_writer *w = nst_calloc(sizeof *w, "a clip writer");
    if (!w) return NST_ENOMEM;
    nst_status st = nst_clip_is_pattern(s->path) ? nst_seq_writer_open(s, &w->seq) : nst_vfile_writer_open(s, &w->vid);
    if (st != NST_OK) {
        nst_free(w);
        return st;
    }
    *out = w;
    return NST_OK;
}

nst_status nst_clip_writer_put(nst_clip_writer *w, const nst_image *frame)
{
    return w->seq ? nst_seq_writer_put(w->seq, frame) : nst_vfile_writer_put(w->vid, frame);
}

nst_status nst_clip_writer_finish(nst_clip_writer *w)
{
    nst_status s = NST_OK;
    if (w->seq) nst_seq_writer_close(w->seq); /* each frame is in place already */
    if (w->vid) s = nst_vfile_writer_finish(w->vid);
    nst_free(w);
    return s;
}

void nst_clip_writer_abort(nst_clip_writer *w)
{
    if (!w) return;
    if (w->seq) nst_seq_writer_close(w->seq);
    if (w->vid) nst_vfile_writer_abort(w->vid);
    nst_free(w);
}

/* io/video/video_load.c: video files in a build with FFmpeg. video_read.c and video_write.c live
 * in nstbatch-video.so (util/plugin.h), so that a process that reads no video never loads
 * FFmpeg's hundred libraries; these calls go through its table, the first one loading it. */
#include "video_parts.h"

/* the table, loaded at the first call; what names the file for the message */
/* (kept: the program links and exports what the plugin calls back, util/plugin.h) */
__attribute__((used)) static void *const *const calls_back = nst_plugin_calls;

static nst_status table(const char *what, const nst_vfile_table **t)
{
    return nst_plugin_table(NST_VFILE_SYMBOL, what, sizeof **t, (const void **)t);
}

int nst_video_available(void) { return nst_plugin_has(NST_VFILE_SYMBOL, sizeof(nst_vfile_table)); }

nst_status nst_vfile_open(const char *path, const unsigned char *buf, size_t len, const nst_clip_limits *lim, nst_vfile_reader **out,
                          nst_clip_info *info)
{
    const nst_vfile_table *t;
    *out = NULL;
    NST_TRY(table(path, &t));
    return t->open(path, buf, len, lim, out, info);
}

/* (a reader or writer exists only where the table loaded: these find it loaded) */
nst_status nst_vfile_read(nst_vfile_reader *r, long long index, nst_image *out)
{
    const nst_vfile_table *t;
    NST_TRY(table("a video", &t));
    return t->read(r, index, out);
}

void nst_vfile_close(nst_vfile_reader *r)
{
    const nst_vfile_table *t;
    if (r && table("a video", &t) == NST_OK) t->close(r);
}

nst_status nst_vfile_check_target(const nst_clip_out_spec *s)
{
    const nst_vfile_table *t;
    NST_TRY(table(s->path, &t));
    return t->check_target(s);
}

nst_status nst_vfile_writer_open(const nst_clip_out_spec *s, nst_vfile_writer **out)
{
    const nst_vfile_table *t;
    *out = NULL;
    NST_TRY(table(s->path, &t));
    return t->writer_open(s, out);
}

nst_status nst_vfile_writer_put(nst_vfile_writer *w, const nst_image *frame)
{
    const nst_vfile_table *t;
    NST_TRY(table("a video", &t));
    return t->writer_put(w, frame);
}

nst_status nst_vfile_writer_finish(nst_vfile_writer *w)
{
    const nst_vfile_table *t;
    NST_TRY(table("a video", &t));
    return t->writer_finish(w);
}

void nst_vfile_writer_abort(nst_vfile_writer *w)
{
    const nst_vfile_table *t;
    if (w && table("a video", &t) == NST_OK) t->writer_abort(w);
}

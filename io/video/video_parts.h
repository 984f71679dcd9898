/* io/video/video_parts.h: the two halves video.c dispatches to, behind video.h. Image sequences
 * (video_seq.c) need nothing but the image reader and writer; video files go through FFmpeg
 * (video_read.c, video_write.c) or, in a build without it, video_none.c, which refuses them with
 * a message saying how to get it. In a build with FFmpeg the two files live in the video plugin
 * (util/plugin.h): video_entry.c publishes their table there and video_load.c calls through it.
 * What the halves share with video.c is in clip.h. Not for use outside io/video/.
 */
#ifndef NST_VIDEO_PARTS_H
#define NST_VIDEO_PARTS_H

#include "../../util/plugin.h"
#include "clip.h"

/* ---- image sequences (video_seq.c) ------------------------------------------------------------- */
typedef struct nst_seq_reader nst_seq_reader;
typedef struct nst_seq_writer nst_seq_writer;

nst_status nst_seq_open(const char *pattern, int fps_num, int fps_den, const nst_clip_limits *lim, nst_seq_reader **out,
                        nst_clip_info *info);
nst_status nst_seq_read(nst_seq_reader *r, long long index, nst_image *out);
void nst_seq_close(nst_seq_reader *r);

nst_status nst_seq_check_target(const nst_clip_out_spec *s);
nst_status nst_seq_writer_open(const nst_clip_out_spec *s, nst_seq_writer **out);
nst_status nst_seq_writer_put(nst_seq_writer *w, const nst_image *frame);
void nst_seq_writer_close(nst_seq_writer *w);

/* ---- video files (video_read.c and video_write.c, or video_none.c) ------------------------------ */
typedef struct nst_vfile_reader nst_vfile_reader;
typedef struct nst_vfile_writer nst_vfile_writer;

/* buf == NULL: the file at path; else len bytes in memory that path names in messages. */
nst_status nst_vfile_open(const char *path, const unsigned char *buf, size_t len, const nst_clip_limits *lim,
                          nst_vfile_reader **out, nst_clip_info *info);
nst_status nst_vfile_read(nst_vfile_reader *r, long long index, nst_image *out);
void nst_vfile_close(nst_vfile_reader *r);

nst_status nst_vfile_check_target(const nst_clip_out_spec *s);
nst_status nst_vfile_writer_open(const nst_clip_out_spec *s, nst_vfile_writer **out);
nst_status nst_vfile_writer_put(nst_vfile_writer *w, const nst_image *frame);
nst_status nst_vfile_writer_finish(nst_vfile_writer *w);
void nst_vfile_writer_abort(nst_vfile_writer *w);

/* ---- the same, as the video plugin's table (video_entry.c, video_load.c) ------------------------- */
#define NST_VFILE_SYMBOL "nst_plugin_vfile"
typedef struct {
    nst_plugin_head head;
    nst_status (*open)(const char *, const unsigned char *, size_t, const nst_clip_limits *, nst_vfile_reader **, nst_clip_info *);
    nst_status (*read)(nst_vfile_reader *, long long, nst_image *);
    void (*close)(nst_vfile_reader *);
    nst_status (*check_target)(const nst_clip_out_spec *);
    nst_status (*writer_open)(const nst_clip_out_spec *, nst_vfile_writer **);
    nst_status (*writer_put)(nst_vfile_writer *, const nst_image *);
    nst_status (*writer_finish)(nst_vfile_writer *);
    void (*writer_abort)(nst_vfile_writer *);
} nst_vfile_table;

#endif

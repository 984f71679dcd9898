/* io/video/video_parts.h: the two halves io/video/video.c dispatches to, behind io/video/video.h. Image sequences
 * (io/video/video_seq.c) need nothing but the image reader and writer; video files go through FFmpeg
 * (io/video/video_read.c, io/video/video_write.c) or, in a build without it, io/video/video_none.c, which refuses
 * them with a message saying how to get it. Not for use outside io/video*.c.
 */
#ifndef NST_VIDEO_PARTS_H
#define NST_VIDEO_PARTS_H

#include "video.h"

/* ---- image sequences (io/video/video_seq.c) ---------------------------------------------------------- */
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

/* ---- video files (io/video/video_read.c and io/video/video_write.c, or io/video/video_none.c) ---------------------- */
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

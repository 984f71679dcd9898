/* io/video/video_seq.c: image sequences named by a printf pattern (frames/%05d.png), read and written
 * with the image reader and writer (see video.h). Independent of FFmpeg: a build without it
 * still reads and writes sequences.
 *
 * The frames are found by listing the pattern's directory once: every name the pattern prints
 * for some number is a frame. The sequence starts at the lowest of 0 and 1 present and runs
 * while the numbers are consecutive; a frame present after a gap is refused (a missing frame
 * would shift the clip silently), and so is a frame of another size than the first. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../util/mem.h"
#include "../atomic_file.h"
#include "video_parts.h"

struct nst_seq_reader {
    char pattern[4096];
    char name[4200];       /* for messages: the pattern and the config key */
    char key[64];
    nst_read_limits lim;
    long long start, frames;
    int w, h;
};

struct nst_seq_writer {
    char pattern[4096];
    int w, h, bits, overwrite;
    long long next;
    char *comment;
};

/* The name of frame number n (validated patterns only: one integer conversion). */
static int frame_path(char *buf, size_t cap, const char *pattern, long long n)
{
    int len = snprintf(buf, cap, pattern, (int)n);
    return len >= 0 && (size_t)len < cap;
}

/* ---- finding the frames ------------------------------------------------------------------------- */

/* The number the pattern's file name `base` gives entry `name`, or -1: the digits between the
 * fixed prefix and suffix, accepted only where printing that number gives the name back. */
static long long match_entry(const char *base, size_t prefix, size_t suffix, const char *name)
{
    size_t len = strlen(name);
    if (len <= prefix + suffix || strncmp(name, base, prefix) || strcmp(name + len - suffix, base + strlen(base) - suffix)) return -1;
    char *end;
    errno = 0;
    long long n = strtoll(name + prefix, &end, 10);
    if (errno || end != name + len - suffix || n < 0 || n > 2147483647) return -1;
    char again[512];
    return frame_path(again, sizeof again, base, n) && !strcmp(again, name) ? n : -1;
}

/* Every number with a file in the pattern's directory, sorted. */
static nst_status list_numbers(const char *name, const char *pattern, long long max, nst_ll_list *ns)
{
    char dir[4096];
    const char *slash = strrchr(pattern, '/');
    const char *base = slash ? slash + 1 : pattern;
    if (slash) snprintf(dir, sizeof dir, "%.*s", slash == pattern ? 1 : (int)(slash - pattern), pattern);
    else snprintf(dir, sizeof dir, ".");
    long at = nst_clip_pattern_at(base);
    if (at < 0) return nst_fail(NST_EINPUT, "%s: the frame number must be in the file name, not in a folder's", name);
    size_t prefix = (size_t)at, suffix = strlen(base) - at - 1 - nst_clip_int_conversion(base + at + 1);
    DIR *d = opendir(dir);
    if (!d) return nst_fail(NST_EINPUT, "%s: cannot list the folder %s: %s", name, dir, strerror(errno));
    nst_status s = NST_OK;
    for (struct dirent *e; s == NST_OK && (e = readdir(d));) {
        long long n = match_entry(base, prefix, suffix, e->d_name);
        if (n < 0) continue;
        if ((long long)ns->n > max)
            s = nst_fail(NST_EINPUT, "%s: more than %lld frames, the limit for a clip", name, max);
        else
            s = nst_ll_append(ns, n, "a list of frame numbers");
    }
    closedir(d);
    if (s == NST_OK && ns->n) qsort(ns->v, ns->n, sizeof *ns->v, nst_ll_cmp);
    return s;
}

/* From the sorted numbers: the first frame, the count, or the gap that breaks them. */
static nst_status find_run(const char *name, const char *pattern, const nst_ll_list *ns, long long *start, long long *count)
{
    char a[4200], b[4200];
    frame_path(a, sizeof a, pattern, 0), frame_path(b, sizeof b, pattern, 1);
    if (!ns->n) return nst_fail(NST_EINPUT, "%s: no frames: neither %s nor %s exists", name, a, b);
    if (ns->v[0] > 1)
        return nst_fail(NST_EINPUT, "%s: neither %s nor %s exists (the lowest number found is %lld): number the frames from 0 or 1", name, a,
                        b, ns->v[0]);
    *start = ns->v[0];
    size_t i = 1;
    while (i < ns->n && ns->v[i] == *start + (long long)i) i++;
    *count = (long long)i;
    if (i == ns->n) return NST_OK;
    size_t j = i + 1;
    while (j < ns->n && ns->v[j] == ns->v[i] + (long long)(j - i)) j++;
    /* the missing number as the pattern prints it (00012 for %05d) */
    char conv[64], missing[64];
    long at = nst_clip_pattern_at(pattern);
    snprintf(conv, sizeof conv, "%.*s", (int)(1 + nst_clip_int_conversion(pattern + at + 1)), pattern + at);
    frame_path(missing, sizeof missing, conv, *start + *count);
    return nst_fail(NST_EINPUT, "%s: frame %s is missing (frames %lld-%lld and %lld-%lld%s exist): a clip's frames are consecutive", name,
                    missing, *start, *start + *count - 1, ns->v[i], ns->v[j - 1], j < ns->n ? ", and more after another gap," : "");
}

/* ---- reading ----------------------------------------------------------------------------------- */

nst_status nst_seq_open(const char *pattern, int fps_num, int fps_den, const nst_clip_limits *lim, nst_seq_reader **out,
                        nst_clip_info *info)
{
    *out = NULL;
    nst_seq_reader *r = nst_calloc(sizeof *r, "a sequence reader");
    if (!r) return NST_ENOMEM;
    snprintf(r->pattern, sizeof r->pattern, "%s", pattern);
    snprintf(r->key, sizeof r->key, "%s", lim->key ? lim->key : "");
    nst_clip_display_name(r->name, sizeof r->name, pattern, lim->key);
    r->lim = (nst_read_limits){lim->max_pixels, lim->max_side, *r->key ? r->key : NULL, NULL};
    nst_ll_list ns = {0};
    nst_status s = strlen(pattern) < sizeof r->pattern ? NST_OK : nst_fail(NST_EINPUT, "%s: path too long", r->name);
    if (s == NST_OK) s = list_numbers(r->name, pattern, lim->max_frames, &ns);
    if (s == NST_OK) s = find_run(r->name, pattern, &ns, &r->start, &r->frames);
    nst_free(ns.v);
    if (s == NST_OK && r->frames > lim->max_frames)
        s = nst_fail(NST_EINPUT, "%s: %lld frames, above the limit of %lld", r->name, r->frames, lim->max_frames);
    /* the first frame gives the size every other must have */
    nst_image first = {0};
    nst_image_info ii = {0};
    char path[4200];
    if (s == NST_OK) {
        frame_path(path, sizeof path, pattern, r->start);
        s = nst_image_read(path, &r->lim, &first, &ii);
    }
    if (s != NST_OK) {
        nst_free(r);
        return s;
    }
    r->w = first.w, r->h = first.h;
    nst_image_free(&first);
    *info = (nst_clip_info){.w = r->w, .h = r->h, .fps_num = fps_num, .fps_den = fps_den, .frames = r->frames, .bits = ii.bits};
    snprintf(info->detail, sizeof info->detail, "%s, %dx%d, %lld frames (numbers %lld-%lld), %d/%d fps", ii.detail, r->w, r->h, r->frames,
             r->start, r->start + r->frames - 1, fps_num, fps_den);
    *out = r;
    return NST_OK;
}

nst_status nst_seq_read(nst_seq_reader *r, long long index, nst_image *out)
{
    if (index < 0 || index >= r->frames)
        return nst_fail(NST_EINPUT, "%s: frame %lld asked of a clip of %lld frames", r->name, index, r->frames);
    char path[4200], first[4200];
    frame_path(path, sizeof path, r->pattern, r->start + index);
    NST_TRY(nst_image_read(path, &r->lim, out, NULL));
    if (out->w == r->w && out->h == r->h) return NST_OK;
    frame_path(first, sizeof first, r->pattern, r->start);
    nst_status s = nst_fail(NST_EINPUT, "%s: %s is %dx%d but %s is %dx%d: every frame of a sequence has the first frame's size", r->name, path,
                            out->w, out->h, first, r->w, r->h);
    nst_image_free(out);
    return s;
}

void nst_seq_close(nst_seq_reader *r) { nst_free(r); }

/* ---- writing ----------------------------------------------------------------------------------- */

nst_status nst_seq_check_target(const nst_clip_out_spec *s)
{
    nst_format f = nst_format_from_name(s->path);
    if (f != NST_FMT_PNG && f != NST_FMT_TIFF)
        return nst_fail(NST_EINPUT, "output.path = %s: a frame pattern ends in .png, .tif or .tiff (or give a .mp4, .mov or .mkv video)",
                        s->path);
    if (s->bits != 8 && s->bits != 16) return nst_fail(NST_EINPUT, "output.path = %s: frames are written with 8 or 16 bits, not %d", s->path, s->bits);
    if (s->first < 0 || s->first > 2147483647)
        return nst_fail(NST_EINPUT, "output.path = %s: the first frame's number %lld is not in 0..2147483647", s->path, s->first);
    char path[4200];
    if (!frame_path(path, sizeof path, s->path, s->first)) return nst_fail(NST_EINPUT, "output.path = %s: path too long", s->path);
    return nst_atomic_check_target(path, s->overwrite);
}

nst_status nst_seq_writer_open(const nst_clip_out_spec *s, nst_seq_writer **out)
{
    *out = NULL;
    nst_seq_writer *w = nst_calloc(sizeof *w, "a sequence writer");
    if (!w) return NST_ENOMEM;
    snprintf(w->pattern, sizeof w->pattern, "%s", s->path);
    w->w = s->w, w->h = s->h, w->bits = s->bits, w->overwrite = s->overwrite, w->next = s->first;
    if (s->comment) { /* kept: the spec's strings need not outlive the writer */
        size_t n = strlen(s->comment) + 1;
        w->comment = nst_alloc(n, "the output's comment");
        if (!w->comment) {
            nst_free(w);
            return NST_ENOMEM;
        }
        memcpy(w->comment, s->comment, n);
    }
    *out = w;
    return NST_OK;
}

nst_status nst_seq_writer_put(nst_seq_writer *w, const nst_image *frame)
{
    char path[4200];
    if (frame->w != w->w || frame->h != w->h)
        return nst_fail(NST_ERUNTIME, "%s: a %dx%d frame given to a %dx%d clip", w->pattern, frame->w, frame->h, w->w, w->h);
    if (w->next > 2147483647 || !frame_path(path, sizeof path, w->pattern, w->next))
        return nst_fail(NST_EINPUT, "output.path = %s: no name for frame number %lld", w->pattern, w->next);
    NST_TRY(nst_image_write(path, frame, w->bits, w->overwrite, w->comment)); /* atomic, file by file */
    w->next++;
    return NST_OK;
}

void nst_seq_writer_close(nst_seq_writer *w)
{
    if (!w) return;
    nst_free(w->comment);
    nst_free(w);
}

/* io/video/clip.c: clip names, codecs, the pattern grammar and the parts' helpers (see clip.h). */
#include "clip.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "../../util/mem.h"

static const char *const video_ext[] = {".mp4", ".mov", ".mkv", ".avi", ".webm", ".m4v", ".mpg", ".mpeg", ".ts", ".mxf", ".y4m"};
static const char *const codec_names[] = {"h264", "h264-10", "prores", "ffv1"};

int nst_clip_is_video_name(const char *path)
{
    const char *dot = strrchr(path, '.');
    if (!dot || strchr(dot, '/')) return 0;
    for (size_t i = 0; i < sizeof video_ext / sizeof *video_ext; i++)
        if (!strcasecmp(dot, video_ext[i])) return 1;
    return 0;
}

int nst_vcodec_parse(const char *name)
{
    for (int i = 0; i < (int)(sizeof codec_names / sizeof *codec_names); i++)
        if (!strcmp(name, codec_names[i])) return i;
    return -1;
}

const char *nst_vcodec_name(nst_vcodec c)
{
    return (unsigned)c < sizeof codec_names / sizeof *codec_names ? codec_names[c] : "unknown";
}

void nst_clip_display_name(char *buf, size_t cap, const char *path, const char *key)
{
    if (key && *key) snprintf(buf, cap, "%s (%s)", path, key);
    else snprintf(buf, cap, "%s", path);
}

nst_status nst_ll_append(nst_ll_list *l, long long x, const char *what)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 256;
        long long *v = nst_alloc_array(cap, sizeof *v, what);
        if (!v) return NST_ENOMEM;
        if (l->n) memcpy(v, l->v, l->n * sizeof *v);
        nst_free(l->v);
        l->v = v, l->cap = cap;
    }
    l->v[l->n++] = x;
    return NST_OK;
}

int nst_ll_cmp(const void *a, const void *b)
{
    long long x = *(const long long *)a, y = *(const long long *)b;
    return (x > y) - (x < y);
}

/* ---- the pattern --------------------------------------------------------------------------------- */

/* Length of the conversion at p (just after its '%') when it is an integer one (%d, %05d, %-3i,
 * %.4u: flags, width, precision, no length modifier), else 0. */
size_t nst_clip_int_conversion(const char *p)
{
    size_t k = strspn(p, "-+ 0");
    k += strspn(p + k, "0123456789");
    if (p[k] == '.') k += 1 + strspn(p + k + 1, "0123456789");
    return p[k] == 'd' || p[k] == 'i' || p[k] == 'u' ? k + 1 : 0;
}

/* Offset of the one integer conversion's '%' in path, or -1 when there is not exactly one or
 * any other '%' than "%%". */
long nst_clip_pattern_at(const char *path)
{
    long at = -1;
    for (const char *p = path; *p; p++) {
        if (*p != '%') continue;
        if (p[1] == '%') {
            p++;
            continue;
        }
        size_t n = nst_clip_int_conversion(p + 1);
        if (!n || at >= 0) return -1;
        at = p - path;
        p += n;
    }
    return at;
}

int nst_clip_is_pattern(const char *path) { return path && nst_clip_pattern_at(path) >= 0; }

/* io/image/source.c: opening images as region sources, by their first bytes (the formats in
 * png_read.h, jpeg_read.h, tiff_read.h); sources over images in memory (see source.h). */
#include "source.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../util/mem.h"
#include "../../util/timer.h"
#include "jpeg_read.h"
#include "png_read.h"
#include "tiff_read.h"

nst_source_limits nst_source_default_limits(double max_megapixels, double max_whole_megapixels)
{
    nst_source_limits l = {max_megapixels * 1e6, max_whole_megapixels * 1e6, NST_MAX_SIDE, "input.max_megapixels",
                           "input.max_whole_megapixels"};
    return l;
}

nst_status nst_source_read(nst_source *s, nst_rect r, float *out)
{
    double t0 = nst_now();
    nst_status st = s->read(s, r, out);
    s->read_seconds += nst_now() - t0;
    s->read_pixels += (unsigned long long)nst_rect_area(r);
    return st;
}

void nst_source_close(nst_source *s)
{
    if (s) s->close(s);
}

/* ---- in memory ------------------------------------------------------------------------------------ */

typedef struct {
    const nst_image *img; /* borrowed, or &own: the pixels of `have` */
    nst_image own;
    nst_rect have;        /* the part of the image in memory (the whole image, or a region of it) */
} mem_source;

static nst_status mem_read(nst_source *s, nst_rect r, float *out)
{
    const mem_source *m = s->impl;
    const nst_image *img = m->img;
    if (r.w < 1 || r.h < 1 || !nst_rect_contains(m->have, r))
        return nst_fail(NST_ERUNTIME, "%s: region %dx%d+%d+%d outside the %dx%d+%d+%d in memory", s->name, r.w, r.h, r.x, r.y, m->have.w,
                        m->have.h, m->have.x, m->have.y);
    for (int y = 0; y < r.h; y++)
        memcpy(out + (size_t)y * r.w * 3, img->px + ((size_t)(r.y - m->have.y + y) * img->w + (r.x - m->have.x)) * 3,
               (size_t)r.w * 3 * sizeof(float));
    return NST_OK;
}

static void mem_close(nst_source *s)
{
    mem_source *m = s->impl;
    nst_image_free(&m->own);
    nst_free(m);
    nst_free(s);
}

static nst_status mem_make(const char *name, nst_source **out, mem_source **m)
{
    nst_source *s = nst_calloc(sizeof *s, "an image source");
    *m = nst_calloc(sizeof **m, "an image source");
    if (!s || !*m) {
        nst_free(s);
        nst_free(*m);
        return NST_ENOMEM;
    }
    snprintf(s->name, sizeof s->name, "%s", name);
    s->impl = *m;
    s->read = mem_read;
    s->close = mem_close;
    s->band = 64;
    *out = s;
    return NST_OK;
}

nst_status nst_source_wrap(const nst_image *img, const char *name, nst_source **out)
{
    mem_source *m;
    NST_TRY(mem_make(name, out, &m));
    m->img = img;
    m->have = nst_rect_make(0, 0, img->w, img->h);
    (*out)->w = img->w;
    (*out)->h = img->h;
    (*out)->info.channels = 3;
    return NST_OK;
}

nst_status nst_source_wrap_region(const nst_image *region, nst_rect have, int w, int h, const char *name, nst_source **out)
{
    mem_source *m;
    NST_TRY(mem_make(name, out, &m));
    m->img = region;
    m->have = have;
    (*out)->band = 1; /* reads start where asked: rows above `have` are not here */
    (*out)->w = w;
    (*out)->h = h;
    (*out)->info.channels = 3;
    return NST_OK;
}

nst_status nst_source_own(nst_image *img, const char *name, const nst_image_info *info, nst_source **out)
{
    mem_source *m;
    NST_TRY(mem_make(name, out, &m));
    m->own = *img;
    m->img = &m->own;
    m->have = nst_rect_make(0, 0, img->w, img->h);
    memset(img, 0, sizeof *img);
    (*out)->w = m->own.w;
    (*out)->h = m->own.h;
    if (info) (*out)->info = *info;
    return NST_OK;
}

/* ---- files ---------------------------------------------------------------------------------------- */

/* PNG or JPEG bytes decoded whole, within the whole-image limit. */
static nst_status open_whole(const char *name, nst_format f, const unsigned char *buf, size_t len, const nst_source_limits *lim,
                             nst_source **out)
{
    /* the smaller of the two limits, named by its key */
    int whole = lim->max_whole_pixels < lim->max_pixels;
    nst_read_limits rl = {whole ? lim->max_whole_pixels : lim->max_pixels, lim->max_side, whole ? lim->whole_key : lim->key,
                          whole ? "; PNG and JPEG are decoded whole: convert it to a tiled TIFF, which is read by region "
                                  "(vips tiffsave IN OUT.tif --tile --bigtiff), or raise the limit"
                                : NULL};
    nst_image img;
    nst_image_info info;
    memset(&img, 0, sizeof img);
    memset(&info, 0, sizeof info);
    nst_status s = f == NST_FMT_PNG ? nst_png_read(name, buf, len, &rl, &img, &info) : nst_jpeg_read(name, buf, len, &rl, &img, &info);
    if (s != NST_OK) return s;
    return nst_source_own(&img, name, &info, out);
}

nst_status nst_source_open_memory(const char *name, const unsigned char *buf, size_t len, const nst_source_limits *lim,
                                  nst_source **out)
{
    *out = NULL;
    nst_format f = nst_format_sniff(buf, len);
    if (f == NST_FMT_TIFF) {
        nst_read_limits rl = {lim->max_pixels, lim->max_side, lim->key, NULL};
        return nst_tiff_source_open(name, buf, len, -1, &rl, out);
    }
    if (f == NST_FMT_PNG || f == NST_FMT_JPEG) return open_whole(name, f, buf, len, lim, out);
    return nst_fail(NST_EINPUT, "%s: not a PNG, JPEG or TIFF file (unrecognised first bytes)", name);
}

nst_status nst_source_open(const char *path, const nst_source_limits *lim, nst_source **out)
{
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return nst_fail(NST_EINPUT, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return nst_fail(NST_EINPUT, "%s: not a regular file", path);
    }
    unsigned char head[16];
    ssize_t got = pread(fd, head, sizeof head, 0);
    nst_format f = nst_format_sniff(head, got > 0 ? (size_t)got : 0);
    if (f == NST_FMT_TIFF) { /* random access: libtiff reads what it needs from the descriptor */
        nst_read_limits rl = {lim->max_pixels, lim->max_side, lim->key, NULL};
        return nst_tiff_source_open(path, NULL, (size_t)st.st_size, fd, &rl, out);
    }
    nst_status s;
    if (f == NST_FMT_UNKNOWN) {
        s = nst_fail(NST_EINPUT, "%s: not a PNG, JPEG or TIFF file (unrecognised first bytes)", path);
    } else {
        /* PNG and JPEG are decoded from memory; their compressed size is bounded by the largest image
         * we decode whole (8 bytes per pixel is far above any real compression ratio) */
        double cap = lim->max_whole_pixels * 8.0 + (64 << 20);
        if ((double)st.st_size > cap) {
            s = nst_fail(NST_EINPUT, "%s: file of %lld bytes is larger than any %s of at most %g megapixels (%s)", path,
                         (long long)st.st_size, nst_format_name(f), lim->max_whole_pixels / 1e6,
                         lim->whole_key ? lim->whole_key : "input.max_whole_megapixels");
        } else {
            unsigned char *buf = nst_alloc((size_t)st.st_size + 1, "an image file");
            if (!buf) {
                s = NST_ENOMEM;
            } else {
                size_t done = 0;
                while (done < (size_t)st.st_size) {
                    ssize_t r = pread(fd, buf + done, (size_t)st.st_size - done, (off_t)done);
                    if (r <= 0) break;
                    done += (size_t)r;
                }
                s = done == (size_t)st.st_size ? open_whole(path, f, buf, done, lim, out)
                                               : nst_fail(NST_EINPUT, "%s: read error: %s", path, strerror(errno));
                nst_free(buf);
            }
        }
    }
    close(fd);
    return s;
}

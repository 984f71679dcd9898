/* io/image/image.c: image allocation, format recognition, dimension checks, sample conversion and
 * the read/write dispatch (see image.h). */
#include "image.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../../util/checked.h"
#include "../../util/mem.h"
#include "../atomic_file.h"
#include "source.h"

nst_read_limits nst_default_limits(double max_megapixels)
{
    nst_read_limits l = {max_megapixels * 1e6, NST_MAX_SIDE, "input.max_megapixels", NULL};
    return l;
}

nst_status nst_image_alloc(nst_image *img, int w, int h)
{
    img->w = w;
    img->h = h;
    img->px = nst_alloc_array((size_t)w * (size_t)h, 3 * sizeof(float), "an image");
    return img->px ? NST_OK : NST_ENOMEM;
}

void nst_image_free(nst_image *img)
{
    nst_free(img->px);
    img->px = NULL;
    img->w = img->h = 0;
}

nst_format nst_format_sniff(const unsigned char *h, size_t n)
{
    if (n >= 8 && memcmp(h, "\x89PNG\r\n\x1a\n", 8) == 0) return NST_FMT_PNG;
    if (n >= 3 && h[0] == 0xFF && h[1] == 0xD8 && h[2] == 0xFF) return NST_FMT_JPEG;
    if (n >= 4 && ((h[0] == 'I' && h[1] == 'I' && (h[2] == 42 || h[2] == 43) && h[3] == 0) ||
                   (h[0] == 'M' && h[1] == 'M' && h[2] == 0 && (h[3] == 42 || h[3] == 43))))
        return NST_FMT_TIFF;
    return NST_FMT_UNKNOWN;
}

nst_format nst_format_from_name(const char *path)
{
    const char *dot = strrchr(path, '.');
    const char *slash = strrchr(path, '/');
    if (!dot || (slash && dot < slash)) return NST_FMT_UNKNOWN;
    if (strcasecmp(dot, ".png") == 0) return NST_FMT_PNG;
    if (strcasecmp(dot, ".tif") == 0 || strcasecmp(dot, ".tiff") == 0) return NST_FMT_TIFF;
    if (strcasecmp(dot, ".jpg") == 0 || strcasecmp(dot, ".jpeg") == 0) return NST_FMT_JPEG;
    return NST_FMT_UNKNOWN;
}

const char *nst_format_name(nst_format f)
{
    switch (f) {
    case NST_FMT_PNG: return "PNG";
    case NST_FMT_JPEG: return "JPEG";
    case NST_FMT_TIFF: return "TIFF";
    default: return "unknown";
    }
}

nst_status nst_image_check_dims(const char *name, uint64_t w, uint64_t h, const nst_read_limits *lim)
{
    if (w == 0 || h == 0)
        return nst_fail(NST_EINPUT, "%s: image has zero width or height (%llux%llu)", name,
                        (unsigned long long)w, (unsigned long long)h);
    if (w > (uint64_t)lim->max_side || h > (uint64_t)lim->max_side)
        return nst_fail(NST_EINPUT, "%s: image is %llux%llu; the longest side allowed is %d pixels", name,
                        (unsigned long long)w, (unsigned long long)h, lim->max_side);
    double px = (double)w * (double)h;
    if (px > lim->max_pixels)
        return nst_fail(NST_EINPUT,
                        "%s: image is %llux%llu = %.1f megapixels, above %s = %g%s",
                        name, (unsigned long long)w, (unsigned long long)h, px / 1e6,
                        lim->key ? lim->key : "input.max_megapixels", lim->max_pixels / 1e6, lim->hint ? lim->hint : "");
    return NST_OK;
}

void nst_image_put_row(nst_image *img, int y, int x0, int n, const void *samples, int channels, int bits)
{
    nst_samples_to_rgb(img->px + ((size_t)y * (size_t)img->w + (size_t)x0) * 3, n, samples, channels, bits);
}

void nst_samples_to_rgb(float *dst, int n, const void *samples, int channels, int bits)
{
    const float scale = bits == 16 ? 1.0f / 65535.0f : 1.0f / 255.0f;
    const unsigned char *s8 = samples;
    const uint16_t *s16 = samples;
    for (int x = 0; x < n; x++) {
        float v[4];
        for (int c = 0; c < channels && c < 4; c++)
            v[c] = (bits == 16 ? (float)s16[(size_t)x * channels + c] : (float)s8[(size_t)x * channels + c]) * scale;
        if (channels <= 2) { /* gray (+ alpha, dropped) */
            dst[3 * x] = dst[3 * x + 1] = dst[3 * x + 2] = v[0];
        } else { /* RGB (+ alpha, dropped) */
            dst[3 * x] = v[0];
            dst[3 * x + 1] = v[1];
            dst[3 * x + 2] = v[2];
        }
    }
}

void nst_image_get_row(const nst_image *img, int y, int bits, void *samples)
{
    nst_rgb_to_samples(samples, img->px + (size_t)y * img->w * 3, img->w, bits);
}

void nst_rgb_to_samples(void *samples, const float *src, int n, int bits)
{
    for (size_t i = 0; i < (size_t)n * 3; i++) {
        float v = src[i] < 0.f ? 0.f : (src[i] > 1.f ? 1.f : src[i]);
        if (bits == 16)
            ((uint16_t *)samples)[i] = (uint16_t)(v * 65535.f + 0.5f);
        else
            ((unsigned char *)samples)[i] = (unsigned char)(v * 255.f + 0.5f);
    }
}

static nst_status read_whole(nst_source *src, nst_image *out, nst_image_info *info)
{
    if (info) *info = src->info;
    nst_status s = nst_image_alloc(out, src->w, src->h);
    if (s == NST_OK) s = nst_source_read(src, nst_rect_make(0, 0, src->w, src->h), out->px);
    nst_source_close(src);
    if (s != NST_OK) nst_image_free(out);
    return s;
}

static nst_source_limits whole_limits(const nst_read_limits *lim)
{
    nst_source_limits l = {lim->max_pixels, lim->max_pixels, lim->max_side, lim->key, lim->key};
    return l;
}

nst_status nst_image_read_memory(const char *name, const unsigned char *buf, size_t len,
                                 const nst_read_limits *lim, nst_image *out, nst_image_info *info)
{
    nst_source *src;
    nst_source_limits l = whole_limits(lim);
    memset(out, 0, sizeof *out);
    NST_TRY(nst_source_open_memory(name, buf, len, &l, &src));
    return read_whole(src, out, info);
}

nst_status nst_image_read(const char *path, const nst_read_limits *lim, nst_image *out, nst_image_info *info)
{
    nst_source *src;
    nst_source_limits l = whole_limits(lim);
    memset(out, 0, sizeof *out);
    NST_TRY(nst_source_open(path, &l, &src));
    return read_whole(src, out, info);
}

nst_status nst_image_write(const char *path, const nst_image *img, int bits, int overwrite,
                           const char *description)
{
    nst_format f = nst_format_from_name(path);
    if (f == NST_FMT_UNKNOWN)
        return nst_fail(NST_EINPUT, "%s: unknown output format: use a .png, .tif, .tiff, .jpg or .jpeg name", path);
    if (bits != 8 && bits != 16) return nst_fail(NST_EINPUT, "%s: bits must be 8 or 16", path);
    nst_atomic_file af;
    NST_TRY(nst_atomic_begin(&af, path, overwrite));
    nst_status s = f == NST_FMT_PNG    ? nst_png_write(af.tmp, img, bits, description)
                   : f == NST_FMT_JPEG ? nst_jpeg_write(af.tmp, img, 90, description)
                                       : nst_tiff_write(af.tmp, img, bits, description);
    if (s != NST_OK) {
        nst_atomic_abort(&af);
        return nst_fail_context(s, "%s", path);
    }
    return nst_atomic_commit(&af);
}

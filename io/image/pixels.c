/* io/image/pixels.c: images in memory, format recognition, dimension checks and sample
 * conversion (see pixels.h). */
#include "pixels.h"

#include <string.h>
#include <strings.h>

#include "../../util/mem.h"

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

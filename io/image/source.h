/* io/image/source.h: input images read by region.
 *
 * A source is an open image that hands out any rectangle of its pixels as RGB float in [0, 1]
 * (gray replicated, alpha dropped). TIFF and BigTIFF sources are random access: every rank opens
 * the file itself and decodes only the strips or tiles under the rectangles it asks for, so no
 * rank ever holds a gigapixel input whole. PNG and JPEG cannot be read by region: they are decoded
 * whole, once, within input.max_whole_megapixels, and the rank that decoded them serves regions
 * from memory. A source over an image already in memory serves the same interface (resizing,
 * tests).
 */
#ifndef NST_SOURCE_H
#define NST_SOURCE_H

#include "source_type.h"

/* Limits for opening: TIFF (by region) up to max_pixels, PNG and JPEG (decoded whole) up to
 * max_whole_pixels; no side above max_side. */
typedef struct {
    double max_pixels, max_whole_pixels;
    int max_side;
    const char *key, *whole_key; /* the config keys behind them, for messages */
} nst_source_limits;

nst_source_limits nst_source_default_limits(double max_megapixels, double max_whole_megapixels);

/* Open a file; the format comes from its first bytes. Errors name the file. */
nst_status nst_source_open(const char *path, const nst_source_limits *lim, nst_source **out);
/* The same from memory (fuzzers, tests); buf must outlive the source. */
nst_status nst_source_open_memory(const char *name, const unsigned char *buf, size_t len, const nst_source_limits *lim,
                                  nst_source **out);
/* A source over img (borrowed: img must outlive it). */
nst_status nst_source_wrap(const nst_image *img, const char *name, nst_source **out);
/* A source for a w x h image of which only `have` is in memory, as `region` (have.w x have.h
 * pixels, borrowed): reads must lie inside `have` (resampling a rectangle whose footprint it is). */
nst_status nst_source_wrap_region(const nst_image *region, nst_rect have, int w, int h, const char *name, nst_source **out);

/* Pixels of r (inside the image) into out: r.w * r.h * 3 floats, row-major. */
nst_status nst_source_read(nst_source *s, nst_rect r, float *out);
void nst_source_close(nst_source *s);

/* A source that owns img (moved in: img is emptied): how the formats decoded whole are served. */
nst_status nst_source_own(nst_image *img, const char *name, const nst_image_info *info, nst_source **out);

#endif

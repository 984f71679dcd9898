/* io/image/resample.h: resizing images to the working resolution with a proper filter, by region.
 *
 * Separable Lanczos-3. When shrinking, the kernel is stretched by the scale factor so that it
 * low-passes (anti-aliases) like an area filter would; when enlarging it interpolates. Results
 * are clamped to [0,1] (Lanczos rings slightly at hard edges). An axis whose size does not
 * change is copied exactly.
 *
 * Any rectangle of the resized image is computed from a source (source.h) without reading more
 * of it than the filter's footprint under that rectangle, streaming: source rows are read in
 * bands, filtered horizontally into a ring of rows and filtered vertically as soon as an
 * output row has all its taps, so memory is a few bands of the rectangle's width whatever the
 * scale. Every output pixel is the same arithmetic in the same order whichever rectangle it is
 * computed in: tiles of a resized image equal the whole resized image, bit for bit.
 */
#ifndef NST_RESAMPLE_H
#define NST_RESAMPLE_H

#include "image.h"
#include "source.h"

/* Rectangle r of src resized to W x H, into out (r.w * r.h * 3 floats). */
nst_status nst_resample_rect(nst_source *src, int W, int H, nst_rect r, float *out);
/* The same without the clamp to [0,1] (values that are not pixels: optimiser state). */
nst_status nst_resample_rect_raw(nst_source *src, int W, int H, nst_rect r, float *out);
/* The source pixels rectangle r of an sw x sh image resized to W x H reads: the union of its
 * filter taps. A source needs only these to resample r. */
nst_rect nst_resample_footprint(int sw, int sh, int W, int H, nst_rect r);

/* The whole image resized (dst allocated here). */
nst_status nst_image_resize(const nst_image *src, int w, int h, nst_image *dst);

/* Output size for a long side of `long_side` pixels keeping src's aspect (at least 1x1). */
void nst_fit_long_side(int src_w, int src_h, int long_side, int *w, int *h);

/* The output pyramid's halving, in integer samples (8-bit, or native 16-bit with sample_bytes 2):
 * rect r of level k + 1 into dst (rows `stride` bytes apart), each sample the rounded mean of its
 * 2 x 2 level-k samples, fewer at an odd edge of the W x H level k. src holds level k's rect
 * `have` (packed rows of have.w), which must cover r's footprint. The same arithmetic wherever it
 * runs, so a tile halved by its owner equals the whole level halved. */
void nst_halve_rect(const void *src, nst_rect have, int W, int H, int sample_bytes, nst_rect r, unsigned char *dst, size_t stride);

#endif

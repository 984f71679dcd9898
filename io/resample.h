/* io/resample.h: resizing images to the working resolution with a proper filter.
 *
 * Separable Lanczos-3. When shrinking, the kernel is stretched by the scale factor so that it
 * low-passes (anti-aliases) like an area filter would; when enlarging it interpolates. Results
 * are clamped to [0,1] (Lanczos rings slightly at hard edges).
 */
#ifndef NST_RESAMPLE_H
#define NST_RESAMPLE_H

#include "image.h"

nst_status nst_image_resize(const nst_image *src, int w, int h, nst_image *dst);

/* Output size for a long side of `long_side` pixels keeping src's aspect (at least 1x1). */
void nst_fit_long_side(int src_w, int src_h, int long_side, int *w, int *h);

#endif

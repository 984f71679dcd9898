/* io/image/icc.h: the colour profile of nstbatch's pixels. The renderer works on sRGB-encoded values
 * (what the content image holds and VGG was trained on), so every output is sRGB: TIFFs carry the
 * profile itself, PNGs the sRGB chunk, so that colour-managed viewers and print shops show it as
 * the renderer meant it. */
#ifndef NST_ICC_H
#define NST_ICC_H

#include <stddef.h>
#include <stdint.h>

#define NST_ICC_SRGB_MAX 4096

/* The sRGB ICC profile (v2.1, about 2.5 kB) written to out; its size, or 0 if cap is too small.
 * The same bytes on every call. */
size_t nst_icc_srgb(unsigned char *out, size_t cap);

#endif

/* io/video/flo.h: optical flow fields in the Middlebury .flo format, the format of user-supplied
 * flow and of ground-truth flow for the video mode (its flicker metric and its test clips).
 *
 * A .flo file: the 4 bytes "PIEH" (the float 202021.25, little-endian), the width and height as
 * little-endian int32, then width x height pairs (u, v) of little-endian float32, row by row: the
 * displacement in pixels from this frame to the other, x to the right and y down. Values above
 * 1e9 in magnitude mark unknown flow (Middlebury's convention); they, and NaN or infinities, read
 * as NaN. The reader trusts nothing: the header, the size against the file's length and the
 * caller's limit are checked before anything is allocated. */
#ifndef NST_FLO_H
#define NST_FLO_H

#include <stddef.h>

#include "../../util/status.h"

typedef struct {
    int w, h;
    float *uv; /* 2 w h floats: (u, v) per pixel, row by row; NaN where unknown */
} nst_flow;

/* Parse a .flo held in memory; name is for messages. want_w, want_h > 0: the size it must have
 * (the clip's frames); max_pixels caps w x h otherwise. */
nst_status nst_flo_parse(const char *name, const unsigned char *buf, size_t len, int want_w, int want_h, double max_pixels,
                         nst_flow *out);
/* Read path (see nst_flo_parse). */
nst_status nst_flo_read(const char *path, int want_w, int want_h, double max_pixels, nst_flow *out);
/* Write path atomically (temporary name, then rename); NaN is written as 1e10 (unknown). */
nst_status nst_flo_write(const char *path, const nst_flow *f);
void nst_flow_free(nst_flow *f);

#endif

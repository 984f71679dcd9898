/* tiler/rect.h: rectangles of pixels or feature positions, and their algebra. Pure geometry:
 * no I/O, no MPI, no CUDA. A rect is half-open: columns [x, x + w), rows [y, y + h). */
#ifndef NST_RECT_H
#define NST_RECT_H

#include <stdint.h>

typedef struct {
    int x, y, w, h;
} nst_rect;

static inline nst_rect nst_rect_make(int x, int y, int w, int h)
{
    nst_rect r = {x, y, w, h};
    return r;
}

static inline int nst_rect_empty(nst_rect r) { return r.w <= 0 || r.h <= 0; }
static inline int64_t nst_rect_area(nst_rect r) { return nst_rect_empty(r) ? 0 : (int64_t)r.w * r.h; }

nst_rect nst_rect_intersect(nst_rect a, nst_rect b);
/* 1 if inner lies entirely in outer (an empty inner is contained everywhere). */
int nst_rect_contains(nst_rect outer, nst_rect inner);
int nst_rect_equal(nst_rect a, nst_rect b);
/* Grown by m on every side (shrunk for m < 0). */
nst_rect nst_rect_grow(nst_rect r, int m);
nst_rect nst_rect_translate(nst_rect r, int dx, int dy);
/* The positions at stride s covered by r: [floor(x/s), ceil((x+w)/s)). */
nst_rect nst_rect_downscale_cover(nst_rect r, int s);

#endif

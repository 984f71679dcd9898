/* tiler/rect.c: rectangle algebra (see rect.h). */
#include "rect.h"

static int imin(int a, int b) { return a < b ? a : b; }
static int imax(int a, int b) { return a > b ? a : b; }

static int floor_div(int a, int s) { return a >= 0 ? a / s : -((-a + s - 1) / s); }

nst_rect nst_rect_intersect(nst_rect a, nst_rect b)
{
    int x0 = imax(a.x, b.x), y0 = imax(a.y, b.y);
    int x1 = imin(a.x + a.w, b.x + b.w), y1 = imin(a.y + a.h, b.y + b.h);
    nst_rect r = {x0, y0, imax(0, x1 - x0), imax(0, y1 - y0)};
    return r;
}

int nst_rect_contains(nst_rect outer, nst_rect inner)
{
    if (nst_rect_empty(inner)) return 1;
    return inner.x >= outer.x && inner.y >= outer.y && inner.x + inner.w <= outer.x + outer.w &&
           inner.y + inner.h <= outer.y + outer.h;
}

int nst_rect_equal(nst_rect a, nst_rect b) { return a.x == b.x && a.y == b.y && a.w == b.w && a.h == b.h; }

nst_rect nst_rect_grow(nst_rect r, int m)
{
    nst_rect g = {r.x - m, r.y - m, imax(0, r.w + 2 * m), imax(0, r.h + 2 * m)};
    return g;
}

nst_rect nst_rect_translate(nst_rect r, int dx, int dy)
{
    nst_rect t = {r.x + dx, r.y + dy, r.w, r.h};
    return t;
}

nst_rect nst_rect_downscale_cover(nst_rect r, int s)
{
    int x0 = floor_div(r.x, s), y0 = floor_div(r.y, s);
    int x1 = -floor_div(-(r.x + r.w), s), y1 = -floor_div(-(r.y + r.h), s);
    nst_rect d = {x0, y0, x1 - x0, y1 - y0};
    return d;
}

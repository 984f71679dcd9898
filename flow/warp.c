/* flow/warp.c: warping, consistency weights and the warping error (see warp.h). */
#include "warp.h"

#include <math.h>
#include <string.h>

#include "../util/mem.h"

/* Bilinear sample of n interleaved channels of a w x h field at (x, y), which must lie in
 * [0, w - 1] x [0, h - 1]. */
static void bilinear(const float *f, int w, int h, int n, double x, double y, float *out)
{
    int x0 = (int)floor(x), y0 = (int)floor(y);
    if (x0 > w - 2) x0 = w > 1 ? w - 2 : 0;
    if (y0 > h - 2) y0 = h > 1 ? h - 2 : 0;
    int x1 = x0 + (w > 1), y1 = y0 + (h > 1);
    double ax = x - x0, ay = y - y0;
    for (int c = 0; c < n; c++) {
        double a = f[((size_t)y0 * w + x0) * n + c], b = f[((size_t)y0 * w + x1) * n + c];
        double d = f[((size_t)y1 * w + x0) * n + c], e = f[((size_t)y1 * w + x1) * n + c];
        out[c] = (float)((a * (1 - ax) + b * ax) * (1 - ay) + (d * (1 - ax) + e * ax) * ay);
    }
}

/* p + f(p) for pixel i at (x, y): 1 and the point when the flow is known and the point is inside. */
static int target(const nst_flow *f, size_t i, int x, int y, double *tx, double *ty)
{
    float u = f->uv[2 * i], v = f->uv[2 * i + 1];
    if (isnan(u) || isnan(v)) return 0;
    *tx = x + (double)u, *ty = y + (double)v;
    return *tx >= 0 && *ty >= 0 && *tx <= f->w - 1 && *ty <= f->h - 1;
}

void nst_warp_backward(const float *img, const nst_flow *f, float *out, unsigned char *valid)
{
    for (int y = 0; y < f->h; y++)
        for (int x = 0; x < f->w; x++) {
            size_t i = (size_t)y * f->w + x;
            double tx, ty;
            valid[i] = (unsigned char)target(f, i, x, y, &tx, &ty);
            if (valid[i]) bilinear(img, f->w, f->h, 3, tx, ty, out + 3 * i);
            else out[3 * i] = out[3 * i + 1] = out[3 * i + 2] = 0;
        }
}

/* d/dx and d/dy of channel ch of the flow at (x, y): central inside, one-sided at the border. */
static void gradient(const nst_flow *f, int x, int y, int ch, double *gx, double *gy)
{
    int xl = x > 0 ? x - 1 : x, xr = x < f->w - 1 ? x + 1 : x, yu = y > 0 ? y - 1 : y, yd = y < f->h - 1 ? y + 1 : y;
    const float *uv = f->uv;
    *gx = xr > xl ? (uv[2 * ((size_t)y * f->w + xr) + ch] - uv[2 * ((size_t)y * f->w + xl) + ch]) / (double)(xr - xl) : 0;
    *gy = yd > yu ? (uv[2 * ((size_t)yd * f->w + x) + ch] - uv[2 * ((size_t)yu * f->w + x) + ch]) / (double)(yd - yu) : 0;
}

void nst_flow_consistency(const nst_flow *fwd, const nst_flow *bwd, float *c)
{
    for (int y = 0; y < bwd->h; y++)
        for (int x = 0; x < bwd->w; x++) {
            size_t i = (size_t)y * bwd->w + x;
            double tx, ty;
            c[i] = 0;
            if (!target(bwd, i, x, y, &tx, &ty)) continue;
            float wt[2];
            bilinear(fwd->uv, fwd->w, fwd->h, 2, tx, ty, wt); /* w~(p) = w(p + w^(p)) */
            double bu = bwd->uv[2 * i], bv = bwd->uv[2 * i + 1];
            if (isnan(wt[0]) || isnan(wt[1])) continue;
            double sum = (wt[0] + bu) * (wt[0] + bu) + (wt[1] + bv) * (wt[1] + bv);
            double mag = wt[0] * wt[0] + wt[1] * wt[1] + bu * bu + bv * bv;
            if (sum > 0.01 * mag + 0.5) continue; /* disoccluded */
            double ux, uy, vx, vy;
            gradient(bwd, x, y, 0, &ux, &uy);
            gradient(bwd, x, y, 1, &vx, &vy);
            double grad = ux * ux + uy * uy + vx * vx + vy * vy; /* (NaN neighbours: the comparison fails, c stays 0) */
            if (!(grad <= 0.01 * (bu * bu + bv * bv) + 0.002)) continue; /* a motion boundary */
            c[i] = 1;
        }
}

nst_flicker nst_flicker_error(const float *x, const float *warped, const unsigned char *valid, const float *c, int w, int h)
{
    double sum = 0, m = 0; /* the two differ only in what divides the sum */
    for (size_t i = 0; i < (size_t)w * h; i++) {
        if (!valid[i]) continue;
        double d = 0;
        for (int ch = 0; ch < 3; ch++) d += ((double)x[3 * i + ch] - warped[3 * i + ch]) * ((double)x[3 * i + ch] - warped[3 * i + ch]);
        sum += c[i] * d;
        m += c[i];
    }
    nst_flicker r = {sum / (3.0 * w * h), m > 0 ? sum / m : 0, m / ((double)w * h)};
    return r;
}

nst_status nst_flicker_along(const nst_flow *fwd, const nst_flow *bwd, int n, const float *const *cur, const float *const *prev,
                             nst_flicker *out)
{
    const int w = bwd->w, h = bwd->h;
    const size_t np = (size_t)w * h;
    float *warped = nst_alloc_array(np * 3, sizeof(float), "a warped frame"), *c = nst_alloc_array(np, sizeof(float), "consistency weights");
    unsigned char *valid = nst_alloc_array(np, 1, "a warp's validity");
    nst_status s = warped && c && valid ? NST_OK : NST_ENOMEM;
    if (s == NST_OK) nst_flow_consistency(fwd, bwd, c);
    for (int k = 0; s == NST_OK && k < n; k++) {
        nst_warp_backward(prev[k], bwd, warped, valid);
        out[k] = nst_flicker_error(cur[k], warped, valid, c, w, h);
    }
    nst_free(warped), nst_free(c), nst_free(valid);
    return s;
}

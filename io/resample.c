/* io/resample.c: separable Lanczos-3 resizing (see resample.h). Each output pixel's weights are
 * computed once per axis and normalised to sum to 1, so a constant image stays constant. */
#include "resample.h"

#include <math.h>
#include <string.h>

#include "../util/mem.h"

typedef struct {
    int first, count; /* source taps [first, first + count) */
    float *w;         /* count weights */
} taps;

static double sinc(double x)
{
    if (fabs(x) < 1e-9) return 1.0;
    x *= M_PI;
    return sin(x) / x;
}

static double lanczos3(double x) { return fabs(x) < 3.0 ? sinc(x) * sinc(x / 3.0) : 0.0; }

/* Weights for resizing n_in samples to n_out along one axis. */
static nst_status make_taps(int n_in, int n_out, taps **out, float **pool)
{
    double scale = (double)n_in / n_out;
    double support = 3.0 * (scale > 1.0 ? scale : 1.0);
    double stretch = scale > 1.0 ? scale : 1.0;
    int max_taps = (int)ceil(2 * support) + 2;
    taps *t = nst_alloc_array((size_t)n_out, sizeof(taps), "resampling taps");
    float *w = nst_alloc_array((size_t)n_out * max_taps, sizeof(float), "resampling weights");
    if (!t || !w) {
        nst_free(t);
        nst_free(w);
        return NST_ENOMEM;
    }
    for (int o = 0; o < n_out; o++) {
        double center = (o + 0.5) * scale; /* in input coordinates, pixel centres at i + 0.5 */
        int lo = (int)floor(center - support), hi = (int)ceil(center + support);
        if (lo < 0) lo = 0;
        if (hi > n_in) hi = n_in;
        if (hi - lo > max_taps) hi = lo + max_taps;
        double sum = 0;
        float *wo = w + (size_t)o * max_taps;
        for (int i = lo; i < hi; i++) {
            double v = lanczos3((i + 0.5 - center) / stretch);
            wo[i - lo] = (float)v;
            sum += v;
        }
        if (sum == 0) { /* degenerate: nearest sample */
            lo = (int)center < n_in ? (int)center : n_in - 1;
            hi = lo + 1;
            wo[0] = 1.f;
            sum = 1;
        }
        for (int i = 0; i < hi - lo; i++) wo[i] = (float)(wo[i] / sum);
        t[o].first = lo;
        t[o].count = hi - lo;
        t[o].w = wo;
    }
    *out = t;
    *pool = w;
    return NST_OK;
}

nst_status nst_image_resize(const nst_image *src, int w, int h, nst_image *dst)
{
    memset(dst, 0, sizeof *dst);
    if (w < 1 || h < 1) return nst_fail(NST_EINPUT, "cannot resize to %dx%d", w, h);
    NST_TRY(nst_image_alloc(dst, w, h));
    if (w == src->w && h == src->h) {
        memcpy(dst->px, src->px, (size_t)w * h * 3 * sizeof(float));
        return NST_OK;
    }
    taps *tx = NULL, *ty = NULL;
    float *px = NULL, *py = NULL, *mid = NULL;
    nst_status s = make_taps(src->w, w, &tx, &px);
    if (s == NST_OK) s = make_taps(src->h, h, &ty, &py);
    if (s == NST_OK) {
        mid = nst_alloc_array((size_t)src->h * w, 3 * sizeof(float), "resampling buffer");
        if (!mid) s = NST_ENOMEM;
    }
    if (s == NST_OK) {
        /* horizontal pass: src (src->w x src->h) -> mid (w x src->h) */
#pragma omp parallel for schedule(static)
        for (int y = 0; y < src->h; y++) {
            const float *in = src->px + (size_t)y * src->w * 3;
            float *o = mid + (size_t)y * w * 3;
            for (int x = 0; x < w; x++) {
                float r = 0, g = 0, b = 0;
                for (int k = 0; k < tx[x].count; k++) {
                    const float *p = in + (size_t)(tx[x].first + k) * 3;
                    float c = tx[x].w[k];
                    r += c * p[0];
                    g += c * p[1];
                    b += c * p[2];
                }
                o[3 * x] = r;
                o[3 * x + 1] = g;
                o[3 * x + 2] = b;
            }
        }
        /* vertical pass: mid -> dst, clamped */
#pragma omp parallel for schedule(static)
        for (int y = 0; y < h; y++) {
            float *o = dst->px + (size_t)y * w * 3;
            for (int i = 0; i < w * 3; i++) o[i] = 0;
            for (int k = 0; k < ty[y].count; k++) {
                const float *in = mid + (size_t)(ty[y].first + k) * w * 3;
                float c = ty[y].w[k];
                for (int i = 0; i < w * 3; i++) o[i] += c * in[i];
            }
            for (int i = 0; i < w * 3; i++) o[i] = o[i] < 0.f ? 0.f : (o[i] > 1.f ? 1.f : o[i]);
        }
    }
    nst_free(tx);
    nst_free(px);
    nst_free(ty);
    nst_free(py);
    nst_free(mid);
    if (s != NST_OK) nst_image_free(dst);
    return s;
}

void nst_fit_long_side(int src_w, int src_h, int long_side, int *w, int *h)
{
    if (src_w >= src_h) {
        *w = long_side;
        *h = (int)lround((double)src_h * long_side / src_w);
    } else {
        *h = long_side;
        *w = (int)lround((double)src_w * long_side / src_h);
    }
    if (*w < 1) *w = 1;
    if (*h < 1) *h = 1;
}

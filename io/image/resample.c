/* io/image/resample.c: separable Lanczos-3 resizing of any rectangle, streaming (see resample.h). Each
 * output pixel's weights are computed from its index alone and normalised to sum to 1, so a
 * constant image stays constant and a pixel's value does not depend on the rectangle asked for. */
#include "resample.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "../../util/mem.h"

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

/* Weights of outputs [o0, o0 + n) when resizing n_in samples to n_out along one axis. */
static nst_status make_taps(int n_in, int n_out, int o0, int n, taps **out, float **pool)
{
    double scale = (double)n_in / n_out;
    double support = 3.0 * (scale > 1.0 ? scale : 1.0);
    double stretch = scale > 1.0 ? scale : 1.0;
    int max_taps = (int)ceil(2 * support) + 2;
    taps *t = nst_alloc_array((size_t)n, sizeof(taps), "resampling taps");
    float *w = nst_alloc_array((size_t)n * max_taps, sizeof(float), "resampling weights");
    if (!t || !w) {
        nst_free(t);
        nst_free(w);
        return NST_ENOMEM;
    }
    for (int i = 0; i < n; i++) {
        int o = o0 + i;
        double center = (o + 0.5) * scale; /* in input coordinates, pixel centres at i + 0.5 */
        int lo = (int)floor(center - support), hi = (int)ceil(center + support);
        if (lo < 0) lo = 0;
        if (hi > n_in) hi = n_in;
        if (hi - lo > max_taps) hi = lo + max_taps;
        double sum = 0;
        float *wo = w + (size_t)i * max_taps;
        for (int k = lo; k < hi; k++) {
            double v = lanczos3((k + 0.5 - center) / stretch);
            wo[k - lo] = (float)v;
            sum += v;
        }
        if (sum == 0) { /* degenerate: nearest sample */
            lo = (int)center < n_in ? (int)center : n_in - 1;
            hi = lo + 1;
            wo[0] = 1.f;
            sum = 1;
        }
        for (int k = 0; k < hi - lo; k++) wo[k] = (float)(wo[k] / sum);
        t[i].first = lo;
        t[i].count = hi - lo;
        t[i].w = wo;
    }
    *out = t;
    *pool = w;
    return NST_OK;
}

/* Identity taps for an axis that keeps its size: output o is source o, copied exactly. */
static nst_status copy_taps(int o0, int n, taps **out, float **pool)
{
    taps *t = nst_alloc_array((size_t)n, sizeof(taps), "resampling taps");
    float *w = nst_alloc(sizeof(float), "resampling weights");
    if (!t || !w) {
        nst_free(t);
        nst_free(w);
        return NST_ENOMEM;
    }
    w[0] = 1.f;
    for (int i = 0; i < n; i++) t[i] = (taps){o0 + i, 1, w};
    *out = t;
    *pool = w;
    return NST_OK;
}

static nst_status axis_taps(int n_in, int n_out, int o0, int n, taps **out, float **pool)
{
    return n_in == n_out ? copy_taps(o0, n, out, pool) : make_taps(n_in, n_out, o0, n, out, pool);
}

/* Source rows are read in chunks this many bytes wide at most (rounded to whole bands). */
#define CHUNK_BYTES ((size_t)32 << 20)

static nst_status resample(nst_source *src, int W, int H, nst_rect r, float *out, int clamp);

nst_status nst_resample_rect(nst_source *src, int W, int H, nst_rect r, float *out) { return resample(src, W, H, r, out, 1); }
nst_status nst_resample_rect_raw(nst_source *src, int W, int H, nst_rect r, float *out) { return resample(src, W, H, r, out, 0); }

/* The source extent of one axis' outputs [o0, o0 + n): the union of their taps. */
static void axis_extent(int n_in, int n_out, int o0, int n, int *lo, int *hi)
{
    if (n_in == n_out) {
        *lo = o0;
        *hi = o0 + n;
        return;
    }
    taps *t = NULL;
    float *pool = NULL;
    if (make_taps(n_in, n_out, o0, n, &t, &pool) != NST_OK) { /* out of memory: the whole axis is always enough */
        nst_fail_clear();
        *lo = 0;
        *hi = n_in;
        return;
    }
    *lo = t[0].first;
    *hi = t[0].first + t[0].count;
    for (int i = 0; i < n; i++) {
        if (t[i].first < *lo) *lo = t[i].first;
        if (t[i].first + t[i].count > *hi) *hi = t[i].first + t[i].count;
    }
    nst_free(t);
    nst_free(pool);
}

nst_rect nst_resample_footprint(int sw, int sh, int W, int H, nst_rect r)
{
    int x0, x1, y0, y1;
    axis_extent(sw, W, r.x, r.w, &x0, &x1);
    axis_extent(sh, H, r.y, r.h, &y0, &y1);
    return nst_rect_make(x0, y0, x1 - x0, y1 - y0);
}

/* One rectangle's resampling: the taps of its columns and rows, the source extent under it, the
 * chunk of source rows read at a time, and the ring of rows filtered horizontally. */
typedef struct {
    nst_source *src;
    nst_rect r;
    taps *tx, *ty;
    float *px, *py;   /* the taps' weights */
    int sx0, scols;   /* the source columns under the rectangle */
    int sy0, sy1;     /* and its rows */
    int band, chunk_rows, cap;
    float *ring, *chunk;
} resampling;

static void resampling_free(resampling *z)
{
    nst_free(z->tx);
    nst_free(z->px);
    nst_free(z->ty);
    nst_free(z->py);
    nst_free(z->ring);
    nst_free(z->chunk);
}

/* The taps, the source extent, the chunk size and the buffers of resampling r of a W x H
 * resizing of src. */
static nst_status resampling_plan(resampling *z, nst_source *src, int W, int H, nst_rect r)
{
    const int sw = src->w, sh = src->h;
    z->src = src;
    z->r = r;
    nst_status s = axis_taps(sw, W, r.x, r.w, &z->tx, &z->px);
    if (s == NST_OK) s = axis_taps(sh, H, r.y, r.h, &z->ty, &z->py);
    if (s != NST_OK) return s;
    const taps *tx = z->tx, *ty = z->ty;

    /* the source columns and rows under the rectangle */
    int sx0 = tx[0].first, sx1 = tx[0].first + tx[0].count, max_ty = 0;
    for (int i = 0; i < r.w; i++) {
        if (tx[i].first < sx0) sx0 = tx[i].first;
        if (tx[i].first + tx[i].count > sx1) sx1 = tx[i].first + tx[i].count;
    }
    for (int i = 0; i < r.h; i++)
        if (ty[i].count > max_ty) max_ty = ty[i].count;
    const int sy0 = ty[0].first, sy1 = ty[r.h - 1].first + ty[r.h - 1].count; /* firsts ascend with the output row */
    const int scols = sx1 - sx0;

    /* chunks of whole bands (within CHUNK_BYTES where a band allows), starting on a band boundary */
    const int band = src->band > 0 ? src->band : 1;
    size_t row_bytes = (size_t)scols * 3 * sizeof(float);
    int chunk_rows = (int)(CHUNK_BYTES / row_bytes / (size_t)band) * band;
    if (chunk_rows < band) chunk_rows = row_bytes * band <= 4 * CHUNK_BYTES ? band : (int)(CHUNK_BYTES / row_bytes);
    if (chunk_rows < 1) chunk_rows = 1;
    if (chunk_rows > sy1 - sy0 + band) chunk_rows = sy1 - sy0 + band;
    const int cap = max_ty + chunk_rows; /* ring rows: an output row's taps plus one chunk */
    z->sx0 = sx0, z->scols = scols, z->sy0 = sy0, z->sy1 = sy1;
    z->band = band, z->chunk_rows = chunk_rows, z->cap = cap;
    z->ring = nst_alloc_array((size_t)cap * r.w, 3 * sizeof(float), "the resampling ring");
    z->chunk = nst_alloc_array((size_t)chunk_rows, row_bytes, "a band of source rows");
    return z->ring && z->chunk ? NST_OK : NST_ENOMEM;
}

/* Source rows [from, c1) of the chunk read from row c0, filtered horizontally into the ring. */
static void filter_rows(const resampling *z, int c0, int from, int c1)
{
    const taps *tx = z->tx;
    const nst_rect r = z->r;
    const int sx0 = z->sx0, scols = z->scols, cap = z->cap;
    const float *chunk = z->chunk;
    float *ring = z->ring;
#pragma omp parallel for schedule(static)
    for (int y = from; y < c1; y++) {
        const float *in = chunk + (size_t)(y - c0) * scols * 3;
        float *o = ring + (size_t)(y % cap) * r.w * 3;
        for (int x = 0; x < r.w; x++) {
            const float *p = in + (size_t)(tx[x].first - sx0) * 3;
            float cr = 0, cg = 0, cb = 0;
            for (int k = 0; k < tx[x].count; k++) {
                float c = tx[x].w[k];
                cr += c * p[3 * k];
                cg += c * p[3 * k + 1];
                cb += c * p[3 * k + 2];
            }
            o[3 * x] = cr;
            o[3 * x + 1] = cg;
            o[3 * x + 2] = cb;
        }
    }
}

/* Output rows [oy, oy1), whose taps are all in the ring, filtered vertically into out. */
static void filter_columns(const resampling *z, float *out, int oy, int oy1, int clamp)
{
    const taps *ty = z->ty;
    const nst_rect r = z->r;
    const int cap = z->cap;
    const float *ring = z->ring;
#pragma omp parallel for schedule(static)
    for (int y = oy; y < oy1; y++) {
        float *o = out + (size_t)y * r.w * 3;
        const size_t n = (size_t)r.w * 3;
        for (size_t i = 0; i < n; i++) o[i] = 0;
        for (int k = 0; k < ty[y].count; k++) {
            const float *in = ring + (size_t)((ty[y].first + k) % cap) * n;
            float c = ty[y].w[k];
            for (size_t i = 0; i < n; i++) o[i] += c * in[i];
        }
        if (clamp)
            for (size_t i = 0; i < n; i++) o[i] = o[i] < 0.f ? 0.f : (o[i] > 1.f ? 1.f : o[i]);
    }
}

/* Read and filter horizontally the chunks from *next on until the source rows below `need` are
 * in the ring (*filled: the rows read so far). */
static nst_status fill_rows(resampling *z, int need, int *filled, int *next)
{
    const int sh = z->src->h;
    nst_status s = NST_OK;
    while (s == NST_OK && *filled < need) {
        int c0 = *next, c1 = *next + z->chunk_rows < sh ? *next + z->chunk_rows : sh;
        if (c1 > z->sy1) c1 = z->sy1;
        s = nst_source_read(z->src, nst_rect_make(z->sx0, c0, z->scols, c1 - c0), z->chunk);
        if (s != NST_OK) break;
        filter_rows(z, c0, c0 > *filled ? c0 : *filled, c1);
        *filled = c1;
        *next = c1;
    }
    return s;
}

static nst_status resample(nst_source *src, int W, int H, nst_rect r, float *out, int clamp)
{
    if (W < 1 || H < 1 || r.x < 0 || r.y < 0 || r.w < 1 || r.h < 1 || r.x + r.w > W || r.y + r.h > H)
        return nst_fail(NST_ERUNTIME, "%s: cannot resample region %dx%d+%d+%d of a %dx%d image", src->name, r.w, r.h, r.x, r.y, W, H);
    if (W == src->w && H == src->h) return nst_source_read(src, r, out);
    resampling z;
    memset(&z, 0, sizeof z);
    nst_status s = resampling_plan(&z, src, W, H, r);
    int filled = z.sy0;                                      /* source rows [sy0, filled) have been read and filtered */
    int next = z.band > 1 ? z.sy0 / z.band * z.band : z.sy0; /* the next chunk starts here (band-aligned) */
    for (int oy = 0; s == NST_OK && oy < r.h;) {
        /* read and filter chunks until output row oy has all its source rows */
        s = fill_rows(&z, z.ty[oy].first + z.ty[oy].count, &filled, &next);
        if (s != NST_OK) break;
        /* every output row whose taps are in the ring now, filtered vertically */
        int oy1 = oy;
        while (oy1 < r.h && z.ty[oy1].first + z.ty[oy1].count <= filled) oy1++;
        filter_columns(&z, out, oy, oy1, clamp);
        oy = oy1;
    }
    resampling_free(&z);
    return s;
}

nst_status nst_image_resize(const nst_image *src, int w, int h, nst_image *dst)
{
    memset(dst, 0, sizeof *dst);
    if (w < 1 || h < 1) return nst_fail(NST_EINPUT, "cannot resize to %dx%d", w, h);
    nst_source *s;
    NST_TRY(nst_source_wrap(src, "an image in memory", &s));
    nst_status st = nst_image_alloc(dst, w, h);
    if (st == NST_OK) st = nst_resample_rect(s, w, h, nst_rect_make(0, 0, w, h), dst->px);
    nst_source_close(s);
    if (st != NST_OK) nst_image_free(dst);
    return st;
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

void nst_halve_rect(const void *src, nst_rect have, int W, int H, int sample_bytes, nst_rect r, unsigned char *dst, size_t stride)
{
    const unsigned char *s8 = src;
    const uint16_t *s16 = src;
    for (int y = 0; y < r.h; y++) {
        int sy = 2 * (r.y + y), ny = sy + 1 < H ? 2 : 1;
        for (int x = 0; x < r.w; x++) {
            int sx = 2 * (r.x + x), nx = sx + 1 < W ? 2 : 1;
            unsigned n = (unsigned)(nx * ny);
            for (int ch = 0; ch < 3; ch++) {
                unsigned sum = 0;
                for (int dy = 0; dy < ny; dy++)
                    for (int dx = 0; dx < nx; dx++) {
                        size_t k = ((size_t)(sy + dy - have.y) * (size_t)have.w + (size_t)(sx + dx - have.x)) * 3 + (size_t)ch;
                        sum += sample_bytes == 2 ? s16[k] : s8[k];
                    }
                unsigned v = (sum + n / 2) / n;
                if (sample_bytes == 2)
                    ((uint16_t *)(dst + (size_t)y * stride))[3 * x + ch] = (uint16_t)v;
                else
                    dst[(size_t)y * stride + 3 * (size_t)x + (size_t)ch] = (unsigned char)v;
            }
        }
    }
}

/* kernels/cpu/loss_cpu.c: the local loss terms and their gradients: mean-squared feature error
 * (content), squared total variation of the image, and the sum of squares. Features and their
 * gradients are fp32 or bf16 (read into fp32, the gradient rounded once per update), the image
 * fp32. Sums are taken per row in double and the rows added in order: bit-identical for any
 * thread count. */
#include <stdlib.h>

#include "../../util/mem.h"
#include "cpu.h"

/* Sum the per-row partials in order. */
static double ordered_sum(const double *rows, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++) s += rows[i];
    return s;
}

/* One row of the loss terms (the dtype a literal: see pool_cpu.c): the sum of (f - p)^2 over n
 * elements from off, and df += scale (f - p) there. A mask m (NULL at the unmasked calls, which
 * then inline without it) weights each position's c elements by its value w as (w d) d and
 * (scale w) d: exact for w = 1, so an all-ones mask gives the unmasked bits. */
static inline __attribute__((always_inline)) double mse_row(const void *f, const void *p, const float *m, size_t off, size_t n, int c,
                                                            int bf)
{
    double s = 0;
    for (size_t i = off; i < off + n; i++) {
        double d = (double)cpu_ld(f, i, bf) - cpu_ld(p, i, bf);
        s += m ? ((double)m[i / (size_t)c] * d) * d : d * d;
    }
    return s;
}

static inline __attribute__((always_inline)) void mse_grad_row(const void *f, const void *p, const float *m, void *df, size_t off,
                                                               size_t n, int c, float scale, int bf)
{
    for (size_t i = off; i < off + n; i++) {
        float sw = m ? scale * m[i / (size_t)c] : scale;
        cpu_st(df, i, cpu_ld(df, i, bf) + sw * (cpu_ld(f, i, bf) - cpu_ld(p, i, bf)), bf);
    }
}

static inline __attribute__((always_inline)) double sumsq_row(const void *t, size_t off, size_t n, int bf)
{
    double s = 0;
    for (size_t i = off; i < off + n; i++) {
        double v = cpu_ld(t, i, bf);
        s += v * v;
    }
    return s;
}

/* row y of region r starts at element off of f (c channels per position) */
#define ROW_OFF(f, r, y) (((size_t)((r).y + (y)) * (f)->w + (r).x) * (f)->c)

nst_status cpu_mse(nst_backend *be, const nst_tensor *f, const nst_tensor *p, nst_rect own, nst_rect seed, const nst_tensor *m,
                   float scale, double *sumsq, nst_tensor *df)
{
    (void)be;
    NST_TRY(cpu_check_same_dt(f, p, "mse"));
    NST_TRY(cpu_check_region(f, own, "mse"));
    NST_TRY(nst_tensor_check_mask(f, m, "mse"));
    if (p->h != f->h || p->w != f->w || p->c != f->c) return nst_fail(NST_ERUNTIME, "mse: target shape differs");
    const int bf = f->dt == NST_BF16, c = f->c;
    const float *w = m ? m->data : NULL;
    double *rows = nst_alloc_array((size_t)(own.h > 0 ? own.h : 1), sizeof(double), "row sums");
    if (!rows) return NST_ENOMEM;
    const size_t n = (size_t)own.w * c;
#pragma omp parallel for schedule(static)
    for (int y = 0; y < own.h; y++) {
        size_t off = ROW_OFF(f, own, y);
        if (w)
            rows[y] = bf ? mse_row(f->data, p->data, w, off, n, c, 1) : mse_row(f->data, p->data, w, off, n, c, 0);
        else
            rows[y] = bf ? mse_row(f->data, p->data, NULL, off, n, c, 1) : mse_row(f->data, p->data, NULL, off, n, c, 0);
    }
    *sumsq = ordered_sum(rows, own.h);
    nst_free(rows);
    if (!df) return NST_OK;
    NST_TRY(cpu_check_same_dt(f, df, "mse"));
    NST_TRY(cpu_check_region(f, seed, "mse"));
    if (df->h != f->h || df->w != f->w || df->c != f->c) return nst_fail(NST_ERUNTIME, "mse: gradient shape differs");
    const size_t k = (size_t)seed.w * c;
#pragma omp parallel for schedule(static)
    for (int y = 0; y < seed.h; y++) {
        size_t off = ROW_OFF(f, seed, y);
        if (w && bf)
            mse_grad_row(f->data, p->data, w, df->data, off, k, c, scale, 1);
        else if (w)
            mse_grad_row(f->data, p->data, w, df->data, off, k, c, scale, 0);
        else if (bf)
            mse_grad_row(f->data, p->data, NULL, df->data, off, k, c, scale, 1);
        else
            mse_grad_row(f->data, p->data, NULL, df->data, off, k, c, scale, 0);
    }
    return NST_OK;
}

nst_status cpu_tv(nst_backend *be, const nst_tensor *img, nst_rect own, nst_rect seed, float scale, double *sum,
                  nst_tensor *dimg)
{
    (void)be;
    NST_TRY(cpu_check_f32(img, "tv"));
    NST_TRY(cpu_check_region(img, own, "tv"));
    const int W = img->w, H = img->h, C = img->c;
    const float *x = img->data;
    double *rows = nst_alloc_array((size_t)(own.h > 0 ? own.h : 1), sizeof(double), "row sums");
    if (!rows) return NST_ENOMEM;
#pragma omp parallel for schedule(static)
    for (int yy = 0; yy < own.h; yy++) {
        int y = own.y + yy;
        double s = 0;
        for (int xx = own.x; xx < own.x + own.w; xx++) {
            const float *p = x + ((size_t)y * W + xx) * C;
            for (int c = 0; c < C; c++) {
                if (xx + 1 < W) {
                    double d = (double)p[C + c] - p[c];
                    s += d * d;
                }
                if (y + 1 < H) {
                    double d = (double)p[(size_t)W * C + c] - p[c];
                    s += d * d;
                }
            }
        }
        rows[yy] = s;
    }
    *sum = ordered_sum(rows, own.h);
    nst_free(rows);
    if (!dimg) return NST_OK;
    NST_TRY(cpu_check_f32(dimg, "tv"));
    NST_TRY(cpu_check_region(img, seed, "tv"));
    float *g = dimg->data;
#pragma omp parallel for schedule(static)
    for (int yy = 0; yy < seed.h; yy++) {
        int y = seed.y + yy;
        for (int xx = seed.x; xx < seed.x + seed.w; xx++) {
            const float *p = x + ((size_t)y * W + xx) * C;
            float *o = g + ((size_t)y * W + xx) * C;
            for (int c = 0; c < C; c++) {
                /* d/dp of sum over the pairs that contain p */
                float v = 0.f;
                if (xx > 0) v += p[c] - p[c - C];
                if (y > 0) v += p[c] - p[c - (size_t)W * C];
                if (xx + 1 < W) v -= p[C + c] - p[c];
                if (y + 1 < H) v -= p[(size_t)W * C + c] - p[c];
                o[c] += scale * 2.f * v;
            }
        }
    }
    return NST_OK;
}

nst_status cpu_sumsq(nst_backend *be, const nst_tensor *t, nst_rect own, double *out)
{
    (void)be;
    NST_TRY(cpu_check_act(t, "sumsq"));
    NST_TRY(cpu_check_region(t, own, "sumsq"));
    double *rows = nst_alloc_array((size_t)(own.h > 0 ? own.h : 1), sizeof(double), "row sums");
    if (!rows) return NST_ENOMEM;
    const int bf = t->dt == NST_BF16;
    const size_t n = (size_t)own.w * t->c;
#pragma omp parallel for schedule(static)
    for (int y = 0; y < own.h; y++) {
        size_t off = ((size_t)(own.y + y) * t->w + own.x) * t->c;
        rows[y] = bf ? sumsq_row(t->data, off, n, 1) : sumsq_row(t->data, off, n, 0);
    }
    *out = ordered_sum(rows, own.h);
    nst_free(rows);
    return NST_OK;
}

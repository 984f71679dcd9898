/* kernels/cpu/loss_cpu.c: the local loss terms and their gradients: mean-squared feature error
 * (content), squared total variation of the image, and the sum of squares. Features and their
 * gradients are fp32 or bf16 (read into fp32, the gradient rounded once per update), the image
 * fp32. Each position's (pixel's) terms are added in double in order, and the positions' sums
 * exactly (kernels/xsum.h), one accumulator a thread: the same bits for any thread count, and for
 * a tiled image the whole image's. */
#include <omp.h>
#include <stdlib.h>

#include "../../util/mem.h"
#include "cpu.h"

/* One accumulator a thread, merged into out when the threads are done (exact: in any order). */
typedef struct {
    nst_xsum *part;
    int n;
} thread_sums;

static nst_status sums_open(thread_sums *t)
{
    t->n = omp_get_max_threads();
    t->part = nst_alloc_array((size_t)t->n, sizeof(nst_xsum), "per-thread sums");
    if (!t->part) return NST_ENOMEM;
    for (int i = 0; i < t->n; i++) nst_xsum_zero(&t->part[i]);
    return NST_OK;
}

static void sums_close(thread_sums *t, nst_xsum *out)
{
    for (int i = 0; i < t->n; i++) nst_xsum_merge(out, &t->part[i]);
    nst_free(t->part);
}

/* One row of the loss terms (the dtype a literal: see pool_cpu.c): each position's sum of
 * (f - p)^2 over its c elements into acc, over n elements from off. A mask m (NULL at the
 * unmasked calls, which then inline without it) weights each position's elements by its value w
 * as (w d) d: exact for w = 1, so an all-ones mask gives the unmasked bits. */
static inline __attribute__((always_inline)) void mse_row(const void *f, const void *p, const float *m, size_t off, size_t n, int c,
                                                          int bf, nst_xsum *acc)
{
    for (size_t i = off; i < off + n; i += (size_t)c) {
        double s = 0;
        for (size_t k = i; k < i + (size_t)c; k++) {
            double d = (double)cpu_ld(f, k, bf) - cpu_ld(p, k, bf);
            s += m ? ((double)m[i / (size_t)c] * d) * d : d * d;
        }
        nst_xsum_add(acc, s);
    }
}

static inline __attribute__((always_inline)) void mse_grad_row(const void *f, const void *p, const float *m, void *df, size_t off,
                                                               size_t n, int c, float scale, int bf)
{
    for (size_t i = off; i < off + n; i++) {
        float sw = m ? scale * m[i / (size_t)c] : scale;
        cpu_st(df, i, cpu_ld(df, i, bf) + sw * (cpu_ld(f, i, bf) - cpu_ld(p, i, bf)), bf);
    }
}

static inline __attribute__((always_inline)) void sumsq_row(const void *t, size_t off, size_t n, int c, int bf, nst_xsum *acc)
{
    for (size_t i = off; i < off + n; i += (size_t)c) {
        double s = 0;
        for (size_t k = i; k < i + (size_t)c; k++) {
            double v = cpu_ld(t, k, bf);
            s += v * v;
        }
        nst_xsum_add(acc, s);
    }
}

/* row y of region r starts at element off of f (c channels per position) */
#define ROW_OFF(f, r, y) (((size_t)((r).y + (y)) * (f)->w + (r).x) * (f)->c)

nst_status cpu_mse(nst_backend *be, const nst_tensor *f, const nst_tensor *p, nst_rect own, nst_rect seed, const nst_tensor *m,
                   float scale, nst_xsum *sumsq, nst_tensor *df)
{
    (void)be;
    NST_TRY(cpu_check_same_dt(f, p, "mse"));
    NST_TRY(cpu_check_region(f, own, "mse"));
    NST_TRY(nst_tensor_check_mask(f, m, "mse"));
    if (p->h != f->h || p->w != f->w || p->c != f->c) return nst_fail(NST_ERUNTIME, "mse: target shape differs");
    const int bf = f->dt == NST_BF16, c = f->c;
    const float *w = m ? m->data : NULL;
    thread_sums ts;
    NST_TRY(sums_open(&ts));
    const size_t n = (size_t)own.w * c;
#pragma omp parallel for schedule(static)
    for (int y = 0; y < own.h; y++) {
        size_t off = ROW_OFF(f, own, y);
        nst_xsum *acc = &ts.part[omp_get_thread_num()];
        if (w && bf)
            mse_row(f->data, p->data, w, off, n, c, 1, acc);
        else if (w)
            mse_row(f->data, p->data, w, off, n, c, 0, acc);
        else if (bf)
            mse_row(f->data, p->data, NULL, off, n, c, 1, acc);
        else
            mse_row(f->data, p->data, NULL, off, n, c, 0, acc);
    }
    sums_close(&ts, sumsq);
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

nst_status cpu_tv(nst_backend *be, const nst_tensor *img, nst_rect own, nst_rect seed, float scale, nst_xsum *sum,
                  nst_tensor *dimg)
{
    (void)be;
    NST_TRY(cpu_check_f32(img, "tv"));
    NST_TRY(cpu_check_region(img, own, "tv"));
    const int W = img->w, H = img->h, C = img->c;
    const float *x = img->data;
    thread_sums ts;
    NST_TRY(sums_open(&ts));
#pragma omp parallel for schedule(static)
    for (int yy = 0; yy < own.h; yy++) {
        int y = own.y + yy;
        nst_xsum *acc = &ts.part[omp_get_thread_num()];
        for (int xx = own.x; xx < own.x + own.w; xx++) { /* a pixel's pairs in double, the pixels exactly */
            const float *p = x + ((size_t)y * W + xx) * C;
            double s = 0;
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
            nst_xsum_add(acc, s);
        }
    }
    sums_close(&ts, sum);
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

nst_status cpu_sumsq(nst_backend *be, const nst_tensor *t, nst_rect own, nst_xsum *out)
{
    (void)be;
    NST_TRY(cpu_check_act(t, "sumsq"));
    NST_TRY(cpu_check_region(t, own, "sumsq"));
    thread_sums ts;
    NST_TRY(sums_open(&ts));
    const int bf = t->dt == NST_BF16;
    const size_t n = (size_t)own.w * t->c;
#pragma omp parallel for schedule(static)
    for (int y = 0; y < own.h; y++) {
        size_t off = ((size_t)(own.y + y) * t->w + own.x) * t->c;
        if (bf)
            sumsq_row(t->data, off, n, t->c, 1, &ts.part[omp_get_thread_num()]);
        else
            sumsq_row(t->data, off, n, t->c, 0, &ts.part[omp_get_thread_num()]);
    }
    sums_close(&ts, out);
    return NST_OK;
}

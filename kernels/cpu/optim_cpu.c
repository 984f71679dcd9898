/* kernels/cpu/optim_cpu.c: the optimisers' element ops: the Adam step, the dot product (and its exact
 * grouping for tiles), y = a x + b y, and projected L-BFGS's box [0, 1] (the held pixels, the
 * projected step). */
#include <math.h>
#include <omp.h>

#include "../../util/mem.h"
#include "cpu.h"

#define DOT_CHUNK 4096

/* step t's scalars: lr / bc1 and 1 / sqrt(bc2), bc = 1 - beta^t */
static void adam_scalars(const nst_adam_params *p, double t, float *step, float *rbc2)
{
    const double bc1 = 1.0 - pow(p->beta1, t), bc2 = 1.0 - pow(p->beta2, t);
    *step = (float)(p->lr / bc1), *rbc2 = (float)(1.0 / sqrt(bc2));
}

nst_status cpu_adam_tick(nst_backend *be, const nst_adam_params *p, nst_adam_step *s)
{
    (void)be;
    s->t += 1;
    adam_scalars(p, s->t, &s->step, &s->rbc2);
    return NST_OK;
}

nst_status cpu_adam(nst_backend *be, float *x, const float *g, float *m, float *v, size_t n, const nst_adam_params *p,
                    const nst_adam_step *s)
{
    (void)be;
    /* The update in PyTorch's order of operations (torch.optim.Adam):
     *   m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2
     *   x -= (lr / bc1) * m / (sqrt(v) / sqrt(bc2) + eps),  bc = 1 - beta^t */
    const float b1 = p->beta1, b2 = p->beta2, eps = p->eps;
    float step, rbc2;
    if (s)
        step = s->step, rbc2 = s->rbc2;
    else
        adam_scalars(p, (double)p->t, &step, &rbc2);
    const int clamp = p->clamp;
#pragma omp parallel for simd schedule(static)
    for (size_t i = 0; i < n; i++) {
        float gi = g[i];
        float mi = b1 * m[i] + (1.f - b1) * gi;
        float vi = b2 * v[i] + (1.f - b2) * gi * gi;
        m[i] = mi;
        v[i] = vi;
        float xi = x[i] - step * mi / (sqrtf(vi) * rbc2 + eps);
        if (clamp) xi = xi < 0.f ? 0.f : (xi > 1.f ? 1.f : xi);
        x[i] = xi;
    }
    return NST_OK;
}

nst_status cpu_dot(nst_backend *be, const float *a, const float *b, size_t n, double *out)
{
    (void)be;
    size_t chunks = (n + DOT_CHUNK - 1) / DOT_CHUNK;
    double *part = nst_alloc_array(chunks ? chunks : 1, sizeof(double), "dot partials");
    if (!part) return NST_ENOMEM;
#pragma omp parallel for schedule(static)
    for (size_t k = 0; k < chunks; k++) {
        double s = 0;
        size_t end = (k + 1) * DOT_CHUNK < n ? (k + 1) * DOT_CHUNK : n;
        for (size_t i = k * DOT_CHUNK; i < end; i++) s += (double)a[i] * b[i];
        part[k] = s;
    }
    double s = 0;
    for (size_t k = 0; k < chunks; k++) s += part[k];
    nst_free(part);
    *out = s;
    return NST_OK;
}

nst_status cpu_axpby(nst_backend *be, float *y, const float *x, size_t n, float a, float b)
{
    (void)be;
    if (b == 0.f) { /* y's old values (perhaps uninitialised) do not take part */
#pragma omp parallel for simd schedule(static)
        for (size_t i = 0; i < n; i++) y[i] = a * x[i];
    } else {
#pragma omp parallel for simd schedule(static)
        for (size_t i = 0; i < n; i++) y[i] = a * x[i] + b * y[i];
    }
    return NST_OK;
}

nst_status cpu_dot_exact(nst_backend *be, const float *a, const float *b, int w, int h, int seg, nst_xsum *acc)
{
    (void)be;
    if (seg < 1) return nst_fail(NST_ERUNTIME, "dot_exact: runs of %d pixels", seg);
    const int nt = omp_get_max_threads();
    nst_xsum *part = nst_alloc_array((size_t)nt, sizeof(nst_xsum), "exact dot partials");
    if (!part) return NST_ENOMEM;
#pragma omp parallel num_threads(nt)
    {
        nst_xsum *mine = &part[omp_get_thread_num()];
        nst_xsum_zero(mine);
#pragma omp for schedule(static)
        for (int y = 0; y < h; y++)
            for (int x0 = 0; x0 < w; x0 += seg) { /* one run: its products in double, in order */
                const size_t from = ((size_t)y * w + x0) * 3, to = ((size_t)y * w + (x0 + seg < w ? x0 + seg : w)) * 3;
                double r = 0;
                for (size_t i = from; i < to; i++) r += (double)a[i] * b[i];
                nst_xsum_add(mine, r);
            }
    }
    for (int t = 0; t < nt; t++) nst_xsum_merge(acc, &part[t]); /* exact: any order */
    nst_free(part);
    return NST_OK;
}

/* A pixel on a bound that its gradient pushes against (descent would leave [0, 1]). */
static inline int held(float x, float g) { return (x <= 0.f && g > 0.f) || (x >= 1.f && g < 0.f); }

nst_status cpu_box_hold(nst_backend *be, float *v, const float *x, const float *g, size_t n)
{
    (void)be;
#pragma omp parallel for simd schedule(static)
    for (size_t i = 0; i < n; i++)
        if (held(x[i], g[i])) v[i] = 0.f;
    return NST_OK;
}

nst_status cpu_box_step(nst_backend *be, float *x, float *d, size_t n, float t)
{
    (void)be;
#pragma omp parallel for simd schedule(static)
    for (size_t i = 0; i < n; i++) {
        float xi = x[i] + t * d[i];
        xi = xi < 0.f ? 0.f : (xi > 1.f ? 1.f : xi);
        d[i] = xi - x[i];
        x[i] = xi;
    }
    return NST_OK;
}

/* bench/bench_ops.h: what the per-op benchmarks (conv_layers, gram_layers) share: a clock, the
 * median of timed calls, seeded random data on the backend, and a one-line exit on failure. */
#ifndef NST_BENCH_OPS_H
#define NST_BENCH_OPS_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "../kernels/backend.h"
#include "../util/mem.h"

static const char *bench_name = "bench";

static inline double bench_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static inline void bench_die(const char *what)
{
    fprintf(stderr, "%s: %s: %s\n", bench_name, what, nst_fail_message());
    exit(1);
}

static inline int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* the median of n timings (sorted in place) */
static inline double bench_median(double *t, int n)
{
    qsort(t, (size_t)n, sizeof *t, bench_cmp_double);
    return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

static unsigned long long bench_rng = 88172645463325252ull;
static inline float bench_urand(void) /* xorshift64, in [-1, 1) */
{
    bench_rng ^= bench_rng << 13, bench_rng ^= bench_rng >> 7, bench_rng ^= bench_rng << 17;
    return (float)((double)(bench_rng >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

/* t's elements uniform in [-scale, scale), or in [0, scale) with nonneg (post-ReLU features) */
static inline void bench_fill(nst_backend *be, nst_tensor *t, float scale, int nonneg)
{
    size_t n = nst_tensor_elems(t);
    float *h = nst_alloc_array(n, sizeof(float), "host data");
    if (!h) bench_die("host memory");
    for (size_t i = 0; i < n; i++) {
        float u = bench_urand();
        h[i] = (nonneg ? (u < 0 ? 0.f : u) : u) * scale;
    }
    if (be->ops->upload(be, t->data, h, n, t->dt) != NST_OK) bench_die("upload");
    nst_free(h);
}

#endif

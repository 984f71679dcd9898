/* tests/naive.h: straightforward double-precision versions of the network's ops, written for the
 * tests independently of kernels/ (no oneDNN, no blocking, no threads): the reference the CPU
 * backend is compared with, and the double-precision loss the finite differences differentiate. */
#ifndef NST_TEST_NAIVE_H
#define NST_TEST_NAIVE_H

#include <stdlib.h>
#include <string.h>

/* y[h][w][co] = conv3x3(x[h][w][ci]) + b, zero 'same' padding; ReLU if relu. w: OIHW. */
static inline void naive_conv(const double *x, int h, int w, int ci, const float *wt, const float *b, int co, int relu, double *y)
{
    for (int i = 0; i < h; i++)
        for (int j = 0; j < w; j++)
            for (int o = 0; o < co; o++) {
                double s = b ? b[o] : 0;
                for (int ky = 0; ky < 3; ky++)
                    for (int kx = 0; kx < 3; kx++) {
                        int yy = i + ky - 1, xx = j + kx - 1;
                        if (yy < 0 || yy >= h || xx < 0 || xx >= w) continue;
                        const double *p = x + ((size_t)yy * w + xx) * ci;
                        const float *q = wt + (size_t)o * ci * 9 + ky * 3 + kx;
                        for (int c = 0; c < ci; c++) s += p[c] * q[(size_t)c * 9];
                    }
                y[((size_t)i * w + j) * co + o] = relu && s < 0 ? 0 : s;
            }
}

/* 2x2 stride-2 pooling, floor; max (first maximum wins) or average. */
static inline void naive_pool(const double *x, int h, int w, int c, int avg, double *y)
{
    for (int i = 0; i < h / 2; i++)
        for (int j = 0; j < w / 2; j++)
            for (int k = 0; k < c; k++) {
                double a = x[((size_t)(2 * i) * w + 2 * j) * c + k], b = x[((size_t)(2 * i) * w + 2 * j + 1) * c + k];
                double d = x[((size_t)(2 * i + 1) * w + 2 * j) * c + k], e = x[((size_t)(2 * i + 1) * w + 2 * j + 1) * c + k];
                double m = a;
                if (b > m) m = b;
                if (d > m) m = d;
                if (e > m) m = e;
                y[((size_t)i * (w / 2) + j) * c + k] = avg ? 0.25 * ((a + b) + (d + e)) : m;
            }
}

static inline void to_double(const float *f, double *d, size_t n)
{
    for (size_t i = 0; i < n; i++) d[i] = f[i];
}

#endif

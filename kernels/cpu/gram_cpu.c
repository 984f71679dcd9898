/* kernels/cpu/gram_cpu.c: the Gram matrix's difference to its target,
 *
 *   D = G / M - A   (G the fp64 sums of gram_sums_cpu.c; the lagged Gram extrapolates 2 G - G_prev)
 *
 * and its squared norm, the style loss's value. The backward that takes D is gram_backward_cpu.c. */
#include "cpu.h"

nst_status cpu_gram_diff(nst_backend *be, const double *g, const double *g_prev, double g_scale, const float *a, int c,
                         float *d, double *sumsq)
{
    (void)be;
    double s = 0;
    for (int i = 0; i < c; i++) {
        double row = 0;
        for (int j = 0; j < c; j++) {
            size_t u = i <= j ? (size_t)i * c + j : (size_t)j * c + i; /* the upper triangle holds the sums */
            float now = (float)(g[u] * g_scale) - a[(size_t)i * c + j];
            row += (double)now * now;
            d[(size_t)i * c + j] = g_prev ? (float)((2 * g[u] - g_prev[u]) * g_scale) - a[(size_t)i * c + j] : now;
        }
        s += row;
    }
    *sumsq = s;
    return NST_OK;
}

/* video/cuts.c: colour-histogram signatures and their distance (see cuts.h). */
#include "cuts.h"

#include <math.h>
#include <string.h>

void nst_cut_signature_of(const float *px, int w, int h, nst_cut_signature *out)
{
    double count[3][NST_CUT_BINS];
    memset(count, 0, sizeof count);
    const size_t n = (size_t)w * h;
    for (size_t i = 0; i < n; i++)
        for (int c = 0; c < 3; c++) {
            float v = px[3 * i + c];
            int b = v > 0 ? (int)(v * NST_CUT_BINS) : 0; /* NaN and below 0: the first bin */
            count[c][b < NST_CUT_BINS ? b : NST_CUT_BINS - 1] += 1;
        }
    for (int c = 0; c < 3; c++)
        for (int b = 0; b < NST_CUT_BINS; b++) out->h[c][b] = n ? (float)(count[c][b] / (double)n) : 0;
}

double nst_cut_distance(const nst_cut_signature *a, const nst_cut_signature *b)
{
    double d = 0;
    for (int c = 0; c < 3; c++)
        for (int k = 0; k < NST_CUT_BINS; k++) d += fabs((double)a->h[c][k] - b->h[c][k]);
    return d / 6.0; /* half the L1 distance per channel, averaged over the three */
}

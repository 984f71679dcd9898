/* tests/test_color.c: colour control (nst/inputs/color.h) against its definitions.
 * - statistics are sums: over parts they add up to the whole's (what makes them tiling-invariant);
 * - histogram matching moves the style's mean and covariance to the content's (bound 1e-5);
 * - the luminance transform gives the style's Y the content's mean and standard deviation;
 * - keep_chroma: the result keeps the content's chroma (YIQ I and Q) and its own luminance Y
 *   wherever no channel clamps (bound 1e-6). */
#include "../nst/inputs/color.h"
#include "test.h"

static const double YIQ[3][3] = {{0.299, 0.587, 0.114}, {0.595716, -0.274453, -0.321263}, {0.211456, -0.522591, 0.311135}};

static unsigned rng = 12345;
static float frand(void) { return (float)((rng = rng * 1664525u + 1013904223u) >> 8) / 16777216.f; }

/* n pixels: base + spread * (a mix of shared and own random parts), so channels correlate */
static float *pixels(size_t n, const double base[3], const double spread[3], double mix)
{
    float *p = malloc(sizeof(float) * 3 * n);
    for (size_t i = 0; i < n; i++) {
        double s = frand() - 0.5;
        for (int c = 0; c < 3; c++) p[3 * i + c] = (float)(base[c] + spread[c] * (mix * s + (1 - mix) * (frand() - 0.5)));
    }
    return p;
}

static void t_stats_add_over_parts(void)
{
    const size_t n = 10000;
    double b[3] = {0.4, 0.5, 0.6}, sp[3] = {0.3, 0.2, 0.4};
    float *p = pixels(n, b, sp, 0.5);
    nst_color_stats whole, parts;
    memset(&whole, 0, sizeof whole), memset(&parts, 0, sizeof parts);
    nst_color_stats_add(&whole, p, n);
    nst_color_stats_add(&parts, p, 3001);
    nst_color_stats_add(&parts, p + 3 * 3001, n - 3001);
    const double *a = (const double *)&whole, *c = (const double *)&parts;
    for (size_t i = 0; i < sizeof whole / sizeof(double); i++) CHECK_NEAR(c[i], a[i], 1e-9 * fmax(1, fabs(a[i])), "a sum");
    free(p);
}

static void t_match_moves_mean_and_covariance(void)
{
    const size_t n = 20000;
    double bc[3] = {0.45, 0.5, 0.55}, sc[3] = {0.2, 0.15, 0.1}; /* content: grey-ish, narrow */
    double bs[3] = {0.6, 0.4, 0.3}, ss[3] = {0.3, 0.4, 0.2};   /* style: warm, wide */
    float *c = pixels(n, bc, sc, 0.7), *s = pixels(n, bs, ss, 0.3);
    nst_color_stats cs, st, after;
    memset(&cs, 0, sizeof cs), memset(&st, 0, sizeof st), memset(&after, 0, sizeof after);
    nst_color_stats_add(&cs, c, n);
    nst_color_stats_add(&st, s, n);
    nst_color_xform x;
    CHECK(nst_color_xform_make(NST_COLOR_MATCH, &cs, &st, &x) == NST_OK, "make");
    nst_color_xform_apply(&x, s, n);
    nst_color_stats_add(&after, s, n);
    double m0[3], c0[9], m1[3], c1[9], ms[3], cvs[9];
    nst_color_mean_cov(&cs, m0, c0);
    nst_color_mean_cov(&after, m1, c1);
    nst_color_mean_cov(&st, ms, cvs);
    double dm = 0, dc = 0, before = 0;
    for (int i = 0; i < 3; i++) dm = fmax(dm, fabs(m1[i] - m0[i])), before = fmax(before, fabs(ms[i] - m0[i]));
    for (int i = 0; i < 9; i++) dc = fmax(dc, fabs(c1[i] - c0[i]));
    printf("    style mean off by %.3g before, %.3g after; covariance off by %.3g after\n", before, dm, dc);
    CHECK(dm < 1e-5, "mean differs by %g", dm);
    CHECK(dc < 1e-5, "covariance differs by %g", dc);
    free(c), free(s);
}

static void t_luminance_matches_mean_and_deviation(void)
{
    const size_t n = 20000;
    double bc[3] = {0.5, 0.5, 0.5}, sc[3] = {0.2, 0.2, 0.2}, bs[3] = {0.3, 0.35, 0.3}, ss[3] = {0.4, 0.4, 0.4};
    float *c = pixels(n, bc, sc, 0.9), *s = pixels(n, bs, ss, 0.9);
    nst_color_stats cs, st, after;
    memset(&cs, 0, sizeof cs), memset(&st, 0, sizeof st), memset(&after, 0, sizeof after);
    nst_color_stats_add_luminance(&cs, c, n);
    nst_color_stats_add_luminance(&st, s, n);
    nst_color_xform x;
    CHECK(nst_color_xform_make(NST_COLOR_LUMINANCE, &cs, &st, &x) == NST_OK, "make");
    nst_color_xform_apply(&x, s, n);
    for (size_t i = 0; i < n; i++) CHECK(s[3 * i] == s[3 * i + 1] && s[3 * i] == s[3 * i + 2], "pixel %zu is not grey", i);
    nst_color_stats_add_luminance(&after, s, n);
    double m0[3], c0[9], m1[3], c1[9];
    nst_color_mean_cov(&cs, m0, c0);
    nst_color_mean_cov(&after, m1, c1);
    CHECK_NEAR(m1[0], m0[0], 1e-5, "luminance mean");
    CHECK_NEAR(sqrt(c1[0]), sqrt(c0[0]), 1e-5, "luminance deviation");
    free(c), free(s);
}

static void t_keep_chroma(void)
{
    const size_t n = 20000;
    double b[3] = {0.5, 0.45, 0.4}, sp[3] = {0.5, 0.6, 0.5};
    float *content = pixels(n, b, sp, 0.2), *result = pixels(n, b, sp, 0.6);
    for (size_t i = 0; i < 3 * n; i++) content[i] = fminf(1.f, fmaxf(0.f, content[i])), result[i] = fminf(1.f, fmaxf(0.f, result[i]));
    float *kept = malloc(sizeof(float) * 3 * n);
    memcpy(kept, result, sizeof(float) * 3 * n);
    nst_color_keep_chroma(kept, content, n);
    double worst_iq = 0, worst_y = 0;
    size_t unclamped = 0;
    for (size_t i = 0; i < n; i++) {
        const float *k = kept + 3 * i, *c = content + 3 * i, *r = result + 3 * i;
        int clamped = 0;
        for (int a = 0; a < 3; a++) clamped |= k[a] <= 0.f || k[a] >= 1.f;
        if (clamped) continue;
        unclamped++;
        for (int q = 1; q < 3; q++) {
            double dk = 0, dc = 0;
            for (int a = 0; a < 3; a++) dk += YIQ[q][a] * k[a], dc += YIQ[q][a] * c[a];
            worst_iq = fmax(worst_iq, fabs(dk - dc));
        }
        double yk = 0, yr = 0;
        for (int a = 0; a < 3; a++) yk += YIQ[0][a] * k[a], yr += YIQ[0][a] * r[a];
        worst_y = fmax(worst_y, fabs(yk - yr));
    }
    printf("    %zu of %zu pixels unclamped: chroma off by %.3g, luminance off by %.3g\n", unclamped, n, worst_iq, worst_y);
    CHECK(unclamped > n / 2, "only %zu pixels unclamped", unclamped);
    CHECK(worst_iq < 1e-6, "chroma differs by %g", worst_iq);
    CHECK(worst_y < 1e-6, "luminance differs by %g", worst_y);
    free(content), free(result), free(kept);
}

int main(void)
{
    RUN(t_stats_add_over_parts);
    RUN(t_match_moves_mean_and_covariance);
    RUN(t_luminance_matches_mean_and_deviation);
    RUN(t_keep_chroma);
    return test_report("test_color");
}

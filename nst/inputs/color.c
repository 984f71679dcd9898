/* nst/inputs/color.c: colour statistics, histogram matching by mean and covariance, luminance-only
 * transfer (see color.h). */
#include "color.h"

#include <math.h>
#include <string.h>
#include <strings.h>

static const double YW[3] = {0.299, 0.587, 0.114};

int nst_color_mode_parse(const char *name)
{
    if (strcasecmp(name, "none") == 0) return NST_COLOR_NONE;
    if (strcasecmp(name, "luminance") == 0) return NST_COLOR_LUMINANCE;
    if (strcasecmp(name, "match") == 0) return NST_COLOR_MATCH;
    return -1;
}

void nst_color_stats_add(nst_color_stats *s, const float *rgb, size_t npx)
{
    for (size_t i = 0; i < npx; i++) {
        const float *p = rgb + 3 * i;
        for (int a = 0; a < 3; a++) {
            s->sum[a] += p[a];
            for (int b = 0; b < 3; b++) s->outer[3 * a + b] += (double)p[a] * p[b];
        }
    }
    s->n += (double)npx;
}

void nst_color_stats_add_luminance(nst_color_stats *s, const float *rgb, size_t npx)
{
    for (size_t i = 0; i < npx; i++) {
        const float *p = rgb + 3 * i;
        double y = YW[0] * p[0] + YW[1] * p[1] + YW[2] * p[2];
        for (int a = 0; a < 3; a++) {
            s->sum[a] += y;
            for (int b = 0; b < 3; b++) s->outer[3 * a + b] += y * y;
        }
    }
    s->n += (double)npx;
}

void nst_color_mean_cov(const nst_color_stats *s, double mean[3], double cov[9])
{
    double n = s->n > 0 ? s->n : 1;
    for (int a = 0; a < 3; a++) mean[a] = s->sum[a] / n;
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++) cov[3 * a + b] = s->outer[3 * a + b] / n - mean[a] * mean[b];
}

/* Eigen-decomposition of a symmetric 3x3 matrix by Jacobi rotations: A = V diag(e) V^T. */
static void eig3(const double A[9], double e[3], double V[9])
{
    double a[9];
    memcpy(a, A, sizeof a);
    for (int i = 0; i < 9; i++) V[i] = i % 4 == 0;
    for (int sweep = 0; sweep < 50; sweep++) {
        double off = fabs(a[1]) + fabs(a[2]) + fabs(a[5]);
        if (off < 1e-30) break;
        for (int p = 0; p < 2; p++)
            for (int q = p + 1; q < 3; q++) {
                double apq = a[3 * p + q];
                if (fabs(apq) < 1e-300) continue;
                double theta = (a[3 * q + q] - a[3 * p + p]) / (2 * apq);
                double t = (theta >= 0 ? 1 : -1) / (fabs(theta) + sqrt(theta * theta + 1));
                double c = 1 / sqrt(t * t + 1), sn = t * c;
                for (int k = 0; k < 3; k++) { /* A = J^T A J */
                    double akp = a[3 * k + p], akq = a[3 * k + q];
                    a[3 * k + p] = c * akp - sn * akq;
                    a[3 * k + q] = sn * akp + c * akq;
                }
                for (int k = 0; k < 3; k++) {
                    double apk = a[3 * p + k], aqk = a[3 * q + k];
                    a[3 * p + k] = c * apk - sn * aqk;
                    a[3 * q + k] = sn * apk + c * aqk;
                }
                for (int k = 0; k < 3; k++) {
                    double vkp = V[3 * k + p], vkq = V[3 * k + q];
                    V[3 * k + p] = c * vkp - sn * vkq;
                    V[3 * k + q] = sn * vkp + c * vkq;
                }
            }
    }
    for (int i = 0; i < 3; i++) e[i] = a[4 * i];
}

/* S^power of a symmetric positive semi-definite 3x3 matrix (eigenvalues floored). */
static void sym_pow(const double S[9], double power, double out[9])
{
    double e[3], V[9];
    eig3(S, e, V);
    for (int i = 0; i < 3; i++) e[i] = pow(fmax(e[i], 1e-8), power); /* a flat channel: no division by zero */
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++) {
            double v = 0;
            for (int k = 0; k < 3; k++) v += V[3 * a + k] * e[k] * V[3 * b + k];
            out[3 * a + b] = v;
        }
}

nst_status nst_color_xform_make(nst_color_mode mode, const nst_color_stats *content, const nst_color_stats *style, nst_color_xform *x)
{
    memset(x, 0, sizeof *x);
    x->kind = mode;
    if (mode == NST_COLOR_NONE) return NST_OK;
    double mc[3], cc[9], ms[3], cs[9];
    nst_color_mean_cov(content, mc, cc);
    nst_color_mean_cov(style, ms, cs);
    if (mode == NST_COLOR_LUMINANCE) { /* the style's Y to the content's mean and standard deviation */
        double sc = sqrt(fmax(cc[0], 0)), ss = sqrt(fmax(cs[0], 0));
        x->M[0] = ss > 1e-6 ? sc / ss : 1.0;
        x->b[0] = mc[0] - x->M[0] * ms[0];
        return NST_OK;
    }
    double root_c[9], inv_root_s[9];
    sym_pow(cc, 0.5, root_c);
    sym_pow(cs, -0.5, inv_root_s);
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++) {
            double v = 0;
            for (int k = 0; k < 3; k++) v += root_c[3 * a + k] * inv_root_s[3 * k + b];
            x->M[3 * a + b] = v;
        }
    for (int a = 0; a < 3; a++) x->b[a] = mc[a] - (x->M[3 * a] * ms[0] + x->M[3 * a + 1] * ms[1] + x->M[3 * a + 2] * ms[2]);
    return NST_OK;
}

static float clamp01(double v) { return v < 0 ? 0.f : v > 1 ? 1.f : (float)v; }

void nst_color_xform_apply(const nst_color_xform *x, float *rgb, size_t npx)
{
    if (x->kind == NST_COLOR_NONE) return;
    for (size_t i = 0; i < npx; i++) {
        float *p = rgb + 3 * i;
        if (x->kind == NST_COLOR_LUMINANCE) {
            double y = YW[0] * p[0] + YW[1] * p[1] + YW[2] * p[2];
            p[0] = p[1] = p[2] = clamp01(x->M[0] * y + x->b[0]);
        } else {
            double r = p[0], g = p[1], b = p[2];
            for (int a = 0; a < 3; a++) p[a] = clamp01(x->M[3 * a] * r + x->M[3 * a + 1] * g + x->M[3 * a + 2] * b + x->b[a]);
        }
    }
}

void nst_color_to_luminance(float *rgb, size_t npx)
{
    for (size_t i = 0; i < npx; i++) {
        float *p = rgb + 3 * i;
        p[0] = p[1] = p[2] = (float)(YW[0] * p[0] + YW[1] * p[1] + YW[2] * p[2]);
    }
}

void nst_color_keep_chroma(float *result, const float *content, size_t npx)
{
    for (size_t i = 0; i < npx; i++) {
        float *r = result + 3 * i;
        const float *c = content + 3 * i;
        double dy = YW[0] * (r[0] - c[0]) + YW[1] * (r[1] - c[1]) + YW[2] * (r[2] - c[2]);
        for (int a = 0; a < 3; a++) r[a] = clamp01(c[a] + dy);
    }
}

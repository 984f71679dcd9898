/* nst/inputs/color.h: colour control (Gatys et al., "Controlling Perceptual Factors in Neural Style
 * Transfer", 2017), with statistics over the whole image, never per tile.
 *
 *   color.mode = luminance   luminance-only transfer: the network sees the luminance Y of content
 *                            and style (replicated to three channels), the style's Y matched to the
 *                            content's mean and standard deviation; the output keeps the content's
 *                            chroma: out = content + (Y(result) - Y(content)) in RGB, the YIQ
 *                            round trip with the result's Y and the content's I and Q.
 *   color.mode = match       colour histogram matching: the style's RGB is mapped by
 *                            x' = M (x - mu_s) + mu_c, M = Sigma_c^1/2 Sigma_s^-1/2 (symmetric
 *                            square roots), so its mean and covariance become the content's.
 *
 * Statistics are sums (count, sum, sum of outer products) taken over the pixels a rank owns and
 * added over ranks, so every tiling sees the same numbers. Pixels stay in [0,1] (clamped).
 */
#ifndef NST_COLOR_H
#define NST_COLOR_H

#include <stddef.h>

#include "../../util/status.h"

typedef enum { NST_COLOR_NONE, NST_COLOR_LUMINANCE, NST_COLOR_MATCH } nst_color_mode;

/* "none" | "luminance" | "match" -> mode, -1 if unknown */
int nst_color_mode_parse(const char *name);

/* Sums over RGB pixels: 13 doubles, so they can be added over ranks as they are. */
typedef struct {
    double n, sum[3], outer[9];
} nst_color_stats;

void nst_color_stats_add(nst_color_stats *s, const float *rgb, size_t npx);
/* Mean and covariance (biased) from the sums. */
void nst_color_mean_cov(const nst_color_stats *s, double mean[3], double cov[9]);

/* A transform of style pixels: none, affine RGB (match), or luminance with an affine map of Y. */
typedef struct {
    int kind;      /* NST_COLOR_NONE, NST_COLOR_MATCH, NST_COLOR_LUMINANCE */
    double M[9], b[3]; /* match: x' = M x + b; luminance: y' = M[0] y + b[0] */
} nst_color_xform;

/* The transform that gives style statistics `style` the content statistics `content`. */
nst_status nst_color_xform_make(nst_color_mode mode, const nst_color_stats *content, const nst_color_stats *style, nst_color_xform *x);
void nst_color_xform_apply(const nst_color_xform *x, float *rgb, size_t npx);

/* Y = 0.299 R + 0.587 G + 0.114 B, replicated into the three channels (luminance-only inputs). */
void nst_color_to_luminance(float *rgb, size_t npx);
/* result := content + (Y(result) - Y(content)) per pixel, clamped: the result's luminance with the
 * content's chroma. */
void nst_color_keep_chroma(float *result, const float *content, size_t npx);
/* Luminance statistics in the same form (all three "channels" the Y). */
void nst_color_stats_add_luminance(nst_color_stats *s, const float *rgb, size_t npx);

#endif

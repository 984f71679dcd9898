/* kernels/check/tolerance.c: the one tolerance table of the op harness (make test's
 * test_backend_ops and nstbatch --self-test), derived from each precision's unit roundoffs.
 *
 * Every comparison is max |got - ref| / max |ref| over the op's output, the reference being the
 * CPU backend in fp32 fed the same (already rounded) inputs. So an error comes only from what the
 * backend under test does differently: rounding its result to the storage dtype (u_s: 2^-24 fp32
 * and tf32, 2^-8 bf16, 2^-11 fp16), rounding products' inputs in its math (u_i: 2^-11 tf32, else
 * 0), and summing in another order in fp32 (eps = 2^-24 per term, over k terms; 2^-53 for the
 * Gram sums, which are fp64).
 *
 * The coefficients count those effects per op class, with a margin of 2 measured on real bf16
 * arithmetic (the CPU bf16 backend against CPU fp32, tests/test_backend_ops.c prints the worst
 * error / tolerance of every op): an error above the tolerance is a defect, not noise. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "check.h"

/* The classes derived from the per-op ones (a library's shapes, tiles) and the render's first
 * objective: us and ui are the storage and input unit roundoffs, rt the square root of the terms. */
static double derived(nst_tol_class k, nst_precision p, double terms, double us, double ui, double rt)
{
    switch (k) {
    case NST_TOL_CONV_SHAPES:
        /* A backend whose library picks an algorithm per shape (cuDNN) computes a window and the
         * whole tensor with two algorithms. Each is held to NST_TOL_CONV against the CPU, whose
         * results are the same bits at both shapes, so they differ by at most twice that. */
        return 2 * nst_tolerance(NST_TOL_CONV, p, terms);
    case NST_TOL_GRAM_BACKWARD_SHAPES:
        /* the same argument for the Gram backward's GEMM (cuBLAS picks its kernel by size) */
        return 2 * nst_tolerance(NST_TOL_GRAM_BACKWARD, p, terms);
    case NST_TOL_GRAM_TILED:
        /* Sums in fp64 added in another order differ by a few 2^-53 of the sum (NST_TOL_GRAM_SUMS
         * bounds it); rounded to fp32, two such values land one fp32 step apart whenever a
         * rounding boundary falls between them (2^-24 of the value, at most 2^-23 of the largest
         * entry). On a tile-exact backend the same argument leaves a chance of about 2^-19 per
         * entry, fixed by the data: the CPU holds the harness's data to NST_TOL_EXACT. */
        return 0x1p-23 + nst_tolerance(NST_TOL_GRAM_SUMS, p, terms);
    case NST_TOL_FIRST_LOSS:
        /* A render's first loss terms, over `terms` = the depth (convolutions to the deepest loss
         * layer): sums of squares over the whole image, continuous in the rounding, so their
         * relative error is the features' (about one storage or input rounding per layer, in
         * quadrature over the depth). Measured at most 0.56 (u_s + u_i) sqrt(depth) (fp32: oneDNN's
         * AVX2 against AVX-512 kernels; bf16 against fp32: 0.16), depth 1 to 13, widths 1/8 to 1:
         * 8 leaves a margin of 14. A missing Gram allreduce moves the style term by 70 %. */
        return 8 * (us + ui) * rt;
    case NST_TOL_FIRST_GRADIENT:
        /* One sample of the first image gradient, relative to the reference gradient's rms: with
         * no gate changing, the 2 x depth roundings forward and backward in quadrature, amplified
         * by the cancellation in the sum that makes the gradient at a pixel. Measured at most
         * 17 (u_s + u_i) sqrt(depth) (fp32, AVX2 against AVX-512, depth 3 to 13), where the sum's
         * order dominates; where storage rounding does, more: on an H200 against the CPU at depth
         * 13 the rms alone was 33 in fp16, 24 in tf32 and 11 in bf16 (units of (u_s + u_i)
         * sqrt(depth)), and the old 64 put 4.6 % of fp16's samples past it, against the 5 % that
         * NST_TOL_FIRST_GRADIENT_SHARE leaves for gates. 160 is about 5 of fp16's rms: its bulk
         * stays inside and the share counts gates again (the planted defects fail in fp32 far
         * beyond it: tests/test_gpu_standin.sh). (Gates are NST_TOL_FIRST_GRADIENT_SHARE's business.) */
        return 160 * (us + ui) * rt;
    case NST_TOL_FIRST_GRADIENT_SHARE:
        /* The gradient of a ReLU and max-pool network is piecewise constant in its gates: where a
         * ReLU's input, or a max-pool's runner-up, is within rounding of the gate, two devices
         * route that unit's gradient differently and a patch of samples moves by O(1). That
         * happens to a share of units that grows with the rounding: measured at most 0.17 % of
         * the samples past NST_TOL_FIRST_GRADIENT in bf16 against fp32 (depth 3 to 13, noise
         * input), none in fp32 (both against NST_TOL_FIRST_GRADIENT's old factor, 64). 5 % in every
         * precision: a halo one pixel short moves 8 % (64 px tiles) to 20 % (32 px) of the samples
         * at depth 5 in fp32 past the factor 64, 18.9 % (32 px) past 160 (tests/test_gpu_render.sh
         * plants it); a smooth input (content init) has ties that a noise input does not. */
        return 0.05;
    default:
        return 0;
    }
}

double nst_tolerance(nst_tol_class k, nst_precision p, double terms)
{
    const double us = nst_dtype_unit_roundoff(nst_precision_dtype(p)), ui = nst_precision_input_roundoff(p);
    const double eps = 0x1p-24, rt = sqrt(terms > 1 ? terms : 1);
    switch (k) {
    case NST_TOL_ELEMENT:
        /* one rounding of the result to storage (ours and the reference's) and a few fp32 ulp of
         * the arithmetic before it (fused multiply-adds, another order of two additions) */
        return 2 * us + 8 * eps;
    case NST_TOL_CONV:
        /* the output's rounding to storage; input roundings (tf32) and the fp32 sum of k = 9 cin
         * products in another order grow like sqrt(k) (random signs) relative to the output */
        return 2 * us + (2 * ui + 4 * eps) * rt;
    case NST_TOL_GRAM_BACKWARD:
        /* scale * D rounded to storage (each entry), the product summed over k = C channels,
         * added to the gradient and rounded: about one storage rounding more than conv. With a
         * mask F's rows m_p f_p are rounded to storage too (the reference's are exact in fp32),
         * a second input rounding as independent as D's: with the result's rounding the three
         * fit the 3 u_s, as measured (bf16: the worst masked case at 0.36 of it, unmasked 0.33) */
        return 3 * us + (2 * ui + 4 * eps) * rt;
    case NST_TOL_GRAM_SUMS:
        /* the sums over k positions: every product exact in double and every sum in double, on
         * the CPU and the GPU alike (whatever the precision: tf32 only rounds conv inputs), so only
         * the fp64 additions in another order differ. The CPU's sequential sum of same-sign terms
         * (features after a ReLU) errs by about sqrt(k) / 3 roundings of 2^-53, twice that in
         * the upper half of a binade; the worst of 2080 entries of fp32 features took 2.8 sqrt(k)
         * in a host model of both orders (k = 574464): 8 leaves a margin of about 3. With a mask
         * the products (m_p f_p[i]) f_p[j] are no longer exact (up to 24 + 16 + 24 bits with the
         * harness's masks, multiples of 2^-16): each rounds once, by 2^-53 of a term at most,
         * which adds at most 2^-53 of the sum, nothing beside the order of the additions */
        return 8 * 0x1p-53 * rt;
    case NST_TOL_SUM:
        /* a double reduction of identical values in another order */
        return 1e-9;
    case NST_TOL_EXACT:
        /* a window's interior, or a region's sums added in parts, against the whole: the bits that
         * make a tiled render equal the one-tile render */
        return 0;
    case NST_TOL_F32_MATH:
        /* fp32 element arithmetic of the optimisers (sqrt, division, fused multiply-adds): a few
         * ulp whatever the storage precision */
        return 16 * eps;
    default:
        return derived(k, p, terms, us, ui, rt);
    }
}

const char *nst_tol_class_name(nst_tol_class k)
{
    static const char *const n[] = {"element",    "conv",       "gram backward",  "gram sums",           "double sum",
                                    "fp32 math",  "exact",      "conv shapes",    "gram backward shapes", "gram tiled",
                                    "first loss", "first gradient", "first gradient share"};
    return (unsigned)k < sizeof n / sizeof *n ? n[k] : "?";
}

nst_tol_class nst_contract_class(const nst_backend *be, nst_tol_class inexact) { return be->tiles_exact ? NST_TOL_EXACT : inexact; }

const char *nst_loss_term_name(int k)
{
    static const char *const n[] = {"total", "content", "style", "tv", "temporal"};
    return (unsigned)k < NST_LOSS_NTERMS ? n[k] : "?";
}

/* The worst loss term's relative error (a term that is 0 in the reference: against the total). */
static void judge_loss(nst_first_verdict *v, const double *ref, const double *got)
{
    v->loss_err = 0, v->loss_worst = NST_LOSS_TOTAL;
    for (int k = 0; k < NST_LOSS_NTERMS; k++) {
        double scale = ref[k] != 0 ? fabs(ref[k]) : fabs(ref[NST_LOSS_TOTAL]);
        double e = isfinite(got[k]) ? fabs(got[k] - ref[k]) / (scale > 0 ? scale : 1) : INFINITY;
        if (!(e <= v->loss_err)) v->loss_err = e, v->loss_worst = k;
    }
}

void nst_first_verdict_judge(nst_precision p, int depth, int exact, const double *ref_loss, const double *got_loss, const float *ref,
                             const float *got, size_t n, nst_first_verdict *v)
{
    memset(v, 0, sizeof *v);
    v->threshold = exact ? 0 : nst_tolerance(NST_TOL_FIRST_GRADIENT, p, depth);
    v->max_share = exact ? 0 : nst_tolerance(NST_TOL_FIRST_GRADIENT_SHARE, p, depth);
    v->loss_tol = nst_tolerance(exact ? NST_TOL_SUM : NST_TOL_FIRST_LOSS, p, depth);
    double rr = 0, dd = 0;
    int finite = 1;
    for (size_t i = 0; i < n; i++) {
        double d = (double)got[i] - ref[i];
        rr += (double)ref[i] * ref[i], dd += d * d;
        finite &= isfinite(ref[i]) && isfinite(got[i]);
    }
    const double rms = n && rr > 0 ? sqrt(rr / (double)n) : 1;
    size_t over = 0;
    for (size_t i = 0; i < n; i++) {
        double e = fabs((double)got[i] - ref[i]) / rms;
        if (e > v->max_err) v->max_err = e;
        over += !(e <= v->threshold);
    }
    v->share = n ? (double)over / (double)n : 0;
    v->l2 = rr > 0 ? sqrt(dd / rr) : sqrt(dd);
    judge_loss(v, ref_loss, got_loss);
    if (!finite) v->max_err = v->l2 = INFINITY;
    v->ok = finite && v->share <= v->max_share && v->loss_err <= v->loss_tol;
}

void nst_first_verdict_describe(const nst_first_verdict *v, char *out, size_t cap)
{
    if (v->threshold == 0 && v->max_share == 0) /* exact */
        snprintf(out, cap, "max %.2g rms apart (must be 0), loss %.2g (max %.2g, %s)", v->max_err, v->loss_err, v->loss_tol,
                 nst_loss_term_name(v->loss_worst));
    else
        snprintf(out, cap, "%.3g of samples over %.2g rms (max %.2g), loss %.2g (max %.2g, %s)", v->share, v->threshold, v->max_share,
                 v->loss_err, v->loss_tol, nst_loss_term_name(v->loss_worst));
}

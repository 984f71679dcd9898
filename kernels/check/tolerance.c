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

#include "check.h"

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
    case NST_TOL_TILED_RENDER:
        /* the share of samples of a tiled render allowed past nst_tiled_render_verdict's threshold:
         * the pixels whose gradient is within the precision's rounding of zero at some step (well
         * under 1 % in fp32; bf16, fp16 and tf32 round gradients by 2^-8 to 2^-11, so more) */
        return us > 0x1p-12 || ui > 0x1p-12 ? 0.05 : 0.01;
    case NST_TOL_F32_MATH:
        /* fp32 element arithmetic of the optimisers (sqrt, division, fused multiply-adds): a few
         * ulp whatever the storage precision */
        return 16 * eps;
    }
    return 0;
}

const char *nst_tol_class_name(nst_tol_class k)
{
    static const char *const n[] = {"element",    "conv",          "gram backward", "gram sums",   "double sum",
                                    "fp32 math",  "exact",         "conv shapes",   "gram backward shapes",
                                    "gram tiled", "tiled render"};
    return (unsigned)k < sizeof n / sizeof *n ? n[k] : "?";
}

nst_tol_class nst_contract_class(const nst_backend *be, nst_tol_class inexact) { return be->tiles_exact ? NST_TOL_EXACT : inexact; }

void nst_tiled_render_verdict(nst_precision p, const float *one, const float *tiled, size_t n, nst_render_verdict *v)
{
    const double us = nst_dtype_unit_roundoff(nst_precision_dtype(p)), ui = nst_precision_input_roundoff(p);
    /* gradients that agree to the precision's rounding move a pixel by a few lr x that rounding
     * per step (lr = 0.02, 2^-8 in bf16: 1e-4): the thresholds leave a factor of about 30 */
    v->threshold = us > 0x1p-12 || ui > 0x1p-12 ? 0x1p-5 : 1e-3;
    v->max_fraction = nst_tolerance(NST_TOL_TILED_RENDER, p, 1);
    size_t over = 0;
    int finite = 1;
    v->max_diff = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(one[i]) || !isfinite(tiled[i])) finite = 0;
        double d = fabs((double)one[i] - tiled[i]);
        if (d > v->max_diff) v->max_diff = d;
        over += !(d <= v->threshold);
    }
    v->fraction = n ? (double)over / (double)n : 0;
    v->ok = finite && v->fraction <= v->max_fraction;
    if (!finite) v->max_diff = INFINITY;
}

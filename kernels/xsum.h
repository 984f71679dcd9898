/* kernels/xsum.h: exact sums of doubles, whatever their order (a long fixed-point accumulator).
 *
 * Where a tiled render must add the same values as the whole image's in another grouping (a dot
 * product over tiles, a loss summed over tiles and ranks), floating-point addition would round
 * differently for each grouping. This adds them exactly instead: every finite double is an integer
 * times a power of two, and the accumulator holds the sum as one long integer in limbs of 32 bits
 * (kept in int64, so that 2^31 additions fit before a carry must move), covering every exponent a
 * double has. Addition of limbs is associative, so any order and any split over threads, tiles
 * and ranks (nst_xsum_merge, or a sum of the limbs as integers over MPI) gives the same integer,
 * and nst_xsum_value the same double from it. A NaN or an infinity added marks the sum, which then
 * reads as NaN.
 *
 * Costs a few nanoseconds an addition: callers add partial sums of short runs (a row segment of a
 * tile, the same in every tiling), not single products.
 */
#ifndef NST_XSUM_H
#define NST_XSUM_H

#include <stdint.h>

/* 2^-1126 (below the least subnormal, 2^-1074, times 2^52) to 2^1024 and beyond, in 32-bit limbs */
#define NST_XSUM_LIMBS 68
#define NST_XSUM_BASE (-1126)

typedef struct {
    int64_t limb[NST_XSUM_LIMBS]; /* limb j: multiples of 2^(32 j + NST_XSUM_BASE) */
    int64_t nonfinite;           /* NaNs and infinities added (their count: also exact) */
    int64_t adds;                /* additions since the carries last moved */
} nst_xsum;

/* The int64 values of an accumulator, in order, for a sum over ranks as integers. */
#define NST_XSUM_WORDS (NST_XSUM_LIMBS + 2)

void nst_xsum_zero(nst_xsum *s);
/* s += v, exactly. */
void nst_xsum_add(nst_xsum *s, double v);
/* s += t, exactly. */
void nst_xsum_merge(nst_xsum *s, const nst_xsum *t);
/* Move the carries: every limb but the top one into [0, 2^32). The value is unchanged. */
void nst_xsum_normalize(nst_xsum *s);
/* The sum as a double: a function of the exact sum alone (NaN when a non-finite value was added). */
double nst_xsum_value(const nst_xsum *s);

#endif

/* kernels/xsum.c: exact sums of doubles (see xsum.h). */
#include "xsum.h"
#include "xsum_core.h"

#include <math.h>
#include <string.h>

void nst_xsum_zero(nst_xsum *s) { memset(s, 0, sizeof *s); }

void nst_xsum_add(nst_xsum *s, double v)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    nst_xsum_add_bits(s, bits);
}

void nst_xsum_merge(nst_xsum *s, const nst_xsum *t)
{
    for (int j = 0; j < NST_XSUM_LIMBS; j++) s->limb[j] += t->limb[j];
    s->nonfinite += t->nonfinite;
    s->adds += t->adds;
    if (s->adds >= NST_XSUM_CARRY_EVERY) nst_xsum_normalize(s);
}

void nst_xsum_normalize(nst_xsum *s) { nst_xsum_normalize_core(s); }

double nst_xsum_value(const nst_xsum *s)
{
    if (s->nonfinite) return NAN;
    nst_xsum t = *s;
    nst_xsum_normalize(&t);
    /* normalized, only the top limb may be negative, and then the whole is: take the magnitude,
     * whose limbs are all non-negative, so that adding them loses nothing to cancellation */
    const int negative = t.limb[NST_XSUM_LIMBS - 1] < 0;
    if (negative) {
        for (int j = 0; j < NST_XSUM_LIMBS; j++) t.limb[j] = -t.limb[j];
        nst_xsum_normalize(&t);
    }
    /* from the most significant limb down: the same double for the same integer */
    double v = 0;
    for (int j = NST_XSUM_LIMBS - 1; j >= 0; j--)
        if (t.limb[j]) v += ldexp((double)t.limb[j], 32 * j + NST_XSUM_BASE);
    return negative ? -v : v;
}

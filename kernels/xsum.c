/* kernels/xsum.c: exact sums of doubles (see xsum.h). */
#include "xsum.h"

#include <math.h>
#include <string.h>

/* A limb takes at most 2^32 - 1 in magnitude an addition: 2^30 of them stay far inside int64. */
#define XSUM_CARRY_EVERY (1LL << 30)

void nst_xsum_zero(nst_xsum *s) { memset(s, 0, sizeof *s); }

void nst_xsum_add(nst_xsum *s, double v)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    const int field = (int)((bits >> 52) & 0x7ff);
    uint64_t m = bits & ((1ULL << 52) - 1);
    if (field == 0x7ff) {
        s->nonfinite++;
        return;
    }
    if (field) m |= 1ULL << 52;
    if (!m) return;
    /* v = m 2^e, e = field - 1075 (subnormals: -1074); bit position above the base: */
    const int p = (field ? field : 1) - 1075 - NST_XSUM_BASE;
    const int j = p >> 5;
    const unsigned __int128 w = (unsigned __int128)m << (p & 31); /* < 2^84: three limbs */
    const int64_t c0 = (int64_t)(w & 0xffffffffu), c1 = (int64_t)((w >> 32) & 0xffffffffu), c2 = (int64_t)(w >> 64);
    if (bits >> 63) {
        s->limb[j] -= c0, s->limb[j + 1] -= c1, s->limb[j + 2] -= c2;
    } else {
        s->limb[j] += c0, s->limb[j + 1] += c1, s->limb[j + 2] += c2;
    }
    if (++s->adds >= XSUM_CARRY_EVERY) nst_xsum_normalize(s);
}

void nst_xsum_merge(nst_xsum *s, const nst_xsum *t)
{
    for (int j = 0; j < NST_XSUM_LIMBS; j++) s->limb[j] += t->limb[j];
    s->nonfinite += t->nonfinite;
    s->adds += t->adds;
    if (s->adds >= XSUM_CARRY_EVERY) nst_xsum_normalize(s);
}

void nst_xsum_normalize(nst_xsum *s)
{
    for (int j = 0; j < NST_XSUM_LIMBS - 1; j++) {
        const int64_t carry = s->limb[j] >> 32; /* arithmetic: the floor, so that the rest is in [0, 2^32) */
        s->limb[j] -= carry * ((int64_t)1 << 32);
        s->limb[j + 1] += carry;
    }
    s->adds = 0;
}

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

/* kernels/xsum_core.h: the exact accumulator's addition and carry (kernels/xsum.h) as inline
 * functions that compile for the host and for the device alike, so that the CPU backend and a
 * CUDA kernel (kernels/cuda/reduce_cuda.cu adds a reduction's double into a loss sum kept on the
 * GPU) run the same integer arithmetic: a sum is the same integer whichever added it. 64-bit
 * integer operations only (no __int128), which both compilers have. */
#ifndef NST_XSUM_CORE_H
#define NST_XSUM_CORE_H

#include <stdint.h>

#include "xsum.h"

#if defined(__CUDACC__)
#define NST_HD __host__ __device__
#else
#define NST_HD
#endif

/* A limb takes at most 2^32 - 1 in magnitude an addition: 2^30 of them stay far inside int64. */
#define NST_XSUM_CARRY_EVERY (1LL << 30)

/* Move the carries: every limb but the top one into [0, 2^32). The value is unchanged. */
static inline NST_HD void nst_xsum_normalize_core(nst_xsum *s)
{
    for (int j = 0; j < NST_XSUM_LIMBS - 1; j++) {
        const int64_t carry = s->limb[j] >> 32; /* arithmetic: the floor, so that the rest is in [0, 2^32) */
        s->limb[j] -= carry * ((int64_t)1 << 32);
        s->limb[j + 1] += carry;
    }
    s->adds = 0;
}

/* s += v (the bits of a double), exactly. */
static inline NST_HD void nst_xsum_add_bits(nst_xsum *s, uint64_t bits)
{
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
    const int j = p >> 5, sh = p & 31;
    /* m 2^sh < 2^84, three limbs: the low 64 bits give the first two, m >> (64 - sh) the third */
    const uint64_t lo = m << sh;
    const int64_t c0 = (int64_t)(lo & 0xffffffffu), c1 = (int64_t)(lo >> 32), c2 = sh ? (int64_t)(m >> (64 - sh)) : 0;
    if (bits >> 63) {
        s->limb[j] -= c0, s->limb[j + 1] -= c1, s->limb[j + 2] -= c2;
    } else {
        s->limb[j] += c0, s->limb[j + 1] += c1, s->limb[j + 2] += c2;
    }
    if (++s->adds >= NST_XSUM_CARRY_EVERY) nst_xsum_normalize_core(s);
}

#endif

/* kernels/bf16.h: bfloat16 on the host: the conversions the CPU backend's own loops and the tests
 * use. They round as the hardware does when oneDNN's kernels write bf16 (VCVTNE2PS2BF16): to
 * nearest, ties to even, subnormal inputs and results flushed to zero, NaN kept quiet; so a value
 * rounded here equals the same value rounded inside a oneDNN convolution. */
#ifndef NST_BF16_H
#define NST_BF16_H

#include <stdint.h>
#include <string.h>

typedef uint16_t nst_bf16;

static inline float nst_bf16_to_f32(nst_bf16 h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline nst_bf16 nst_f32_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    uint32_t mag = u & 0x7fffffffu;
    uint32_t r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16; /* to nearest, ties to even */
    r = mag > 0x7f800000u ? (u >> 16) | 0x40u : r;        /* NaN: keep it, quiet */
    r = mag < 0x00800000u ? (u >> 16) & 0x8000u : r;      /* subnormal: signed zero */
    return (nst_bf16)r;                                   /* (selects, not branches: loops vectorise) */
}

/* f rounded to bf16 and back: what storing it costs */
static inline float nst_bf16_round(float f) { return nst_bf16_to_f32(nst_f32_to_bf16(f)); }

#endif

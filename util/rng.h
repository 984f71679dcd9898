/* util/rng.h: counter-based random numbers. A value depends only on (seed, stream, index), never
 * on the order of calls, so noise drawn for a pixel is the same whichever tile or rank draws it,
 * and seeded weights are the same on every machine (integer arithmetic, no libm). */
#ifndef NST_RNG_H
#define NST_RNG_H

#include <stdint.h>

/* 64 well-mixed bits for (seed, stream, index). */
uint64_t nst_rng_bits(uint64_t seed, uint64_t stream, uint64_t index);
/* Uniform in [0, 1) with 24 bits of resolution (exact in float). */
float nst_rng_uniform(uint64_t seed, uint64_t stream, uint64_t index);

#endif

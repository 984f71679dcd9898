/* util/rng.c: counter-based random numbers (see rng.h): splitmix64 finaliser over a mixed key. */
#include "rng.h"

static uint64_t mix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

uint64_t nst_rng_bits(uint64_t seed, uint64_t stream, uint64_t index)
{
    return mix64(mix64(mix64(seed) ^ stream) ^ index);
}

float nst_rng_uniform(uint64_t seed, uint64_t stream, uint64_t index)
{
    return (float)(nst_rng_bits(seed, stream, index) >> 40) * (1.0f / 16777216.0f);
}

/* kernels/cpu/gram_blocks_cpu.h: the blocking the two Gram-sum kernels share (the fp64 sums,
 * gram_sums_cpu.c, and the fixed-point ones, gram_fixed_cpu.c): a region's positions taken in
 * blocks converted to rows of doubles (a block fits in L2; on AVX-512 16 channels an instruction),
 * and the 8 x 16 tiles of G that touch its upper triangle, which the threads share out over each
 * block (the fp64 sums, whose order must not depend on the thread count, always; the fixed-point
 * ones above GB_SPLIT_MAX_C channels), or one block of rows per thread. */
#ifndef NST_GRAM_BLOCKS_CPU_H
#define NST_GRAM_BLOCKS_CPU_H

#include <immintrin.h>
#include <stdint.h>

#include "../../util/mem.h"
#include "cpu.h"

#define GB_TI 8
#define GB_TJ 16
#define GB_BLOCK_DOUBLES 65536 /* 512 KiB of converted positions */
/* A block's positions are rows of PS doubles: the c channels and a cache line more, so that rows
 * 2 or 4 KiB apart (256 and 512 channels) do not all fall in one set of the L1 cache, which made
 * the AVX2 tiles, reading each row four times, half as fast at 512 channels. */
#define GB_AT(x, p, i) (x)[(size_t)(p) * PS + (size_t)(i)]

/* the largest c whose fixed-point sums may split positions among threads: each thread then holds
 * sums of its own, 16 c^2 bytes (1 MiB at 256) */
#define GB_SPLIT_MAX_C 256

typedef struct {
    int P;          /* positions per block */
    size_t PS;      /* doubles per position row */
    double *d, *a;  /* the block's rows, and with a mask their weighted copies (a = d without) */
    size_t stride;  /* doubles from one copy of (d, a) to the next, with a copy per thread */
    int *tiles;     /* (i0, j0) of each tile */
    int ntiles;
} gb_plan;

static inline int gb_row_doubles(int c) { return (c + 7) / 8 * 8 + 8; }

/* positions per block for c channels */
static inline int gb_block_positions(int c)
{
    const int p = GB_BLOCK_DOUBLES / gb_row_doubles(c);
    return p > 0 ? p : 1;
}

/* the blocks and tiles for c channels, `copies` blocks of rows in the backend's scratch */
static inline nst_status gb_plan_make(cpu_impl *impl, int c, int masked, int copies, gb_plan *pl)
{
    const int cpad = gb_row_doubles(c);
    pl->P = gb_block_positions(c);
    pl->PS = (size_t)cpad;
    pl->stride = (masked ? 2 : 1) * (size_t)pl->P * cpad;
    size_t need = (size_t)copies * pl->stride;
    if (need > impl->dscratch_cap) {
        nst_free(impl->dscratch);
        impl->dscratch = nst_alloc_array(need, sizeof(double), "Gram positions");
        impl->dscratch_cap = impl->dscratch ? need : 0;
        if (!impl->dscratch) return NST_ENOMEM;
    }
    pl->d = impl->dscratch;
    pl->a = masked ? pl->d + (size_t)pl->P * cpad : pl->d;
    int cap = ((c + GB_TI - 1) / GB_TI) * ((c + GB_TJ - 1) / GB_TJ);
    pl->tiles = nst_alloc_array((size_t)cap, 2 * sizeof(int), "Gram tiles");
    if (!pl->tiles) return NST_ENOMEM;
    pl->ntiles = 0;
    for (int i0 = 0; i0 < c; i0 += GB_TI)
        for (int j0 = i0 / GB_TJ * GB_TJ; j0 < c; j0 += GB_TJ) {
            pl->tiles[2 * pl->ntiles] = i0, pl->tiles[2 * pl->ntiles + 1] = j0;
            pl->ntiles++;
        }
    return NST_OK;
}

static inline void gb_plan_free(gb_plan *pl) { nst_free(pl->tiles); }

/* the tensor position of the region's q-th position in row order */
static inline size_t gb_position(const nst_tensor *f, nst_rect own, size_t q)
{
    return (size_t)(own.y + (int)(q / (size_t)own.w)) * f->w + own.x + (int)(q % (size_t)own.w);
}

/* The first channels of a position (fp32 or bf16 at src), 16 at a time, as doubles times scale (a
 * power of two: exact) into d, their magnitudes' bits folded into the vector *m by lane (every
 * step exact, so the same values as a scalar loop); returns how many it did. */
__attribute__((target("avx512f"))) static inline int gb_row_max_avx512(const void *src, int c, double scale, double *d, __m512i *m, int bf)
{
    const __m512d sc = _mm512_set1_pd(scale);
    const __m512i abs = _mm512_set1_epi32(0x7fffffff);
    int i = 0;
    for (; i + 16 <= c; i += 16) {
        __m512i b = bf ? _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)((const uint16_t *)src + i))), 16)
                       : _mm512_loadu_si512((const uint32_t *)src + i);
        *m = _mm512_max_epu32(*m, _mm512_and_si512(b, abs));
        __m512 v = _mm512_castsi512_ps(b);
        _mm512_storeu_pd(d + i, _mm512_mul_pd(_mm512_cvtps_pd(_mm512_castps512_ps256(v)), sc));
        _mm512_storeu_pd(d + i + 8, _mm512_mul_pd(_mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1))), sc));
    }
    return i;
}

/* the same for one position, the largest magnitude's bits into *mb */
__attribute__((target("avx512f"))) static inline int gb_row_avx512(const void *src, int c, double scale, double *d, uint32_t *mb, int bf)
{
    __m512i m = _mm512_set1_epi32((int)*mb);
    const int i = gb_row_max_avx512(src, c, scale, d, &m, bf);
    *mb = (uint32_t)_mm512_reduce_max_epu32(m);
    return i;
}

#endif

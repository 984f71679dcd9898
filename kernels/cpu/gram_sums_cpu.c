/* kernels/cpu/gram_sums_cpu.c: the Gram sums G += F^T F in double, over a region of an fp32 or
 * bf16 NHWC tensor, and the guided sums G += (m F)^T F of a mask m.
 *
 * Why double, and why this order. Every product of two fp32 (or bf16) values is exact in double,
 * and the sum of a few million of them keeps about 30 bits more than fp32 needs, so the sums of a
 * tiled image (tile by tile, rank by rank) round to the same fp32 matrix as the whole image's:
 * what makes a tiled render equal the one-tile render. Each entry G[i][j] (j >= i, the upper
 * triangle) is one sequential sum over the region's positions in row order, G += f_p[i] f_p[j],
 * whatever the thread count, blocking or instruction set: a fused multiply-add of an exact
 * product rounds exactly as a multiply and an add do, so the AVX-512 path and the portable one
 * give the same bits.
 *
 * How. The region is taken in blocks of positions converted to double (a block fits in L2); every
 * thread owns a fixed set of 8 x 16 tiles of G and runs its tiles over the block with the tile's
 * 128 sums held in registers. The five style layers' sums at 512 x 384 took 137 ms per iteration
 * with OpenBLAS dsyrk on rows converted to double, and take about 56 ms this way (NSTBATCH_PROFILE).
 * With a mask, each position is also converted as m_p f_p (exact in double) and G[i][j] sums
 * (m_p f_p[i]) f_p[j]: the row side weighted, the column side not, each product rounded once
 * (by a multiply of its own on the AVX-512 path too, so both paths give the same bits).
 * AVX2 machines take the same tiles as four sub-tiles of 4 x 8 sums (isa_cpu.c picks the path,
 * ONEDNN_MAX_CPU_ISA lowers it). */
/* The masked sums' separate multiply and add must stay separate: no contraction into an FMA. */
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif
#include <immintrin.h>
#include <string.h>

#include "../../util/mem.h"
#include "cpu.h"

#define TI 8
#define TJ 16
#define BLOCK_DOUBLES 65536 /* 256 KiB of converted positions */

/* The block's P positions into the tile's sums (a for the rows i, d for the columns j). fused: a
 * fused multiply-add, which rounds as a multiply and an add do when the product is exact (f f:
 * 48 bits); a masked product (m f) f is not, so it is rounded by its own multiply, as the
 * portable path does. */
__attribute__((target("avx512f,fma"), always_inline)) static inline void tile_sums(__m512d acc[TI][2], const double *a, const double *d,
                                                                                   int P, int c, int i0, int j0, int fused)
{
    for (int p = 0; p < P; p++) {
        const double *f = d + (size_t)p * c, *fa = a + (size_t)p * c;
        __m512d x0 = _mm512_loadu_pd(f + j0), x1 = _mm512_loadu_pd(f + j0 + 8);
        for (int r = 0; r < TI; r++) {
            __m512d b = _mm512_set1_pd(fa[i0 + r]);
            if (fused) {
                acc[r][0] = _mm512_fmadd_pd(b, x0, acc[r][0]);
                acc[r][1] = _mm512_fmadd_pd(b, x1, acc[r][1]);
            } else {
                acc[r][0] = _mm512_add_pd(_mm512_mul_pd(b, x0), acc[r][0]);
                acc[r][1] = _mm512_add_pd(_mm512_mul_pd(b, x1), acc[r][1]);
            }
        }
    }
}

/* One full tile: G[i0..i0+8)[j0..j0+16) over the block's P positions (rows of c doubles: a for
 * the rows i, d for the columns j; a = d without a mask), the 128 sums in sixteen AVX-512
 * registers. */
__attribute__((target("avx512f,fma"))) static void tile_avx512(const double *a, const double *d, int P, int c, int i0, int j0, double *g)
{
    __m512d acc[TI][2];
    for (int r = 0; r < TI; r++)
        for (int h = 0; h < 2; h++) acc[r][h] = _mm512_loadu_pd(g + (size_t)(i0 + r) * c + j0 + 8 * h);
    if (a == d)
        tile_sums(acc, a, d, P, c, i0, j0, 1);
    else
        tile_sums(acc, a, d, P, c, i0, j0, 0);
    /* store the upper triangle only: column j0 + k of row i0 + r where j0 + k >= i0 + r */
    for (int r = 0; r < TI; r++)
        for (int h = 0; h < 2; h++) {
            int first = i0 + r - (j0 + 8 * h); /* the first column (of these 8) on or above the diagonal */
            __mmask8 m = first <= 0 ? 0xff : first >= 8 ? 0 : (__mmask8)(0xff << first);
            _mm512_mask_storeu_pd(g + (size_t)(i0 + r) * c + j0 + 8 * h, m, acc[r][h]);
        }
}

/* The same tile with AVX2 (sixteen 256-bit registers): four sub-tiles of 4 x 8 sums, each held
 * in eight registers over the block's positions. Every entry is still one sum in position order,
 * with the fused or separate rounding of the AVX-512 path, so both give the same bits. */
__attribute__((target("avx2,fma"), always_inline)) static inline void sub_sums(__m256d acc[4][2], const double *a, const double *d, int P,
                                                                               int c, int i0, int j0, int fused)
{
    for (int p = 0; p < P; p++) {
        const double *f = d + (size_t)p * c, *fa = a + (size_t)p * c;
        __m256d x0 = _mm256_loadu_pd(f + j0), x1 = _mm256_loadu_pd(f + j0 + 4);
        for (int r = 0; r < 4; r++) {
            __m256d b = _mm256_broadcast_sd(fa + i0 + r);
            if (fused) {
                acc[r][0] = _mm256_fmadd_pd(b, x0, acc[r][0]);
                acc[r][1] = _mm256_fmadd_pd(b, x1, acc[r][1]);
            } else {
                acc[r][0] = _mm256_add_pd(_mm256_mul_pd(b, x0), acc[r][0]);
                acc[r][1] = _mm256_add_pd(_mm256_mul_pd(b, x1), acc[r][1]);
            }
        }
    }
}

__attribute__((target("avx2,fma"))) static void tile_avx2(const double *a, const double *d, int P, int c, int i0, int j0, double *g)
{
    for (int si = i0; si < i0 + TI; si += 4)
        for (int sj = j0; sj < j0 + TJ; sj += 8) {
            if (sj + 8 <= si) continue; /* wholly below the diagonal */
            __m256d acc[4][2];
            for (int r = 0; r < 4; r++)
                for (int h = 0; h < 2; h++) acc[r][h] = _mm256_loadu_pd(g + (size_t)(si + r) * c + sj + 4 * h);
            if (a == d)
                sub_sums(acc, a, d, P, c, si, sj, 1);
            else
                sub_sums(acc, a, d, P, c, si, sj, 0);
            /* store the upper triangle only (lanes below it keep the values they were loaded with) */
            for (int r = 0; r < 4; r++)
                for (int h = 0; h < 2; h++) {
                    double v[4];
                    _mm256_storeu_pd(v, acc[r][h]);
                    for (int k = 0; k < 4; k++)
                        if (sj + 4 * h + k >= si + r) g[(size_t)(si + r) * c + sj + 4 * h + k] = v[k];
                }
        }
}

/* The same sums for any tile (and at the matrix's edge), one entry at a time: the portable path. */
static void tile_scalar(const double *a, const double *d, int P, int c, int i0, int j0, double *g)
{
    for (int i = i0; i < i0 + TI && i < c; i++)
        for (int j = j0 > i ? j0 : i; j < j0 + TJ && j < c; j++) {
            double s = g[(size_t)i * c + j];
            for (int p = 0; p < P; p++) s += a[(size_t)p * c + i] * d[(size_t)p * c + j];
            g[(size_t)i * c + j] = s;
        }
}

/* position p of the region (row order) as c doubles (the dtype a literal: see pool_cpu.c), and
 * with a mask as c doubles m_p f_p too (om) */
static inline __attribute__((always_inline)) void convert(const nst_tensor *f, nst_rect own, const nst_tensor *m, size_t p, double *o,
                                                          double *om, int bf)
{
    size_t at = (size_t)(own.y + (int)(p / (size_t)own.w)) * f->w + own.x + (int)(p % (size_t)own.w), src = at * f->c;
    for (int i = 0; i < f->c; i++) o[i] = cpu_ld(f->data, src + i, bf);
    if (m) {
        double w = ((const float *)m->data)[at];
        for (int i = 0; i < f->c; i++) om[i] = w * o[i];
    }
}

nst_status cpu_gram_accumulate(nst_backend *be, const nst_tensor *f, nst_rect own, const nst_tensor *m, double *g)
{
    cpu_impl *impl = cpu_of(be);
    NST_TRY(cpu_check_act(f, "gram"));
    NST_TRY(cpu_check_region(f, own, "gram"));
    NST_TRY(nst_tensor_check_mask(f, m, "gram"));
    if (nst_rect_empty(own)) return NST_OK;
    const int c = f->c, bf = f->dt == NST_BF16;
    const int P = BLOCK_DOUBLES / c > 0 ? BLOCK_DOUBLES / c : 1;
    const size_t need = (m ? 2 : 1) * (size_t)P * c; /* the positions, and their weighted copies */
    if (need > impl->dscratch_cap) {
        nst_free(impl->dscratch);
        impl->dscratch = nst_alloc_array(need, sizeof(double), "Gram positions");
        impl->dscratch_cap = impl->dscratch ? need : 0;
        if (!impl->dscratch) return NST_ENOMEM;
    }
    double *d = impl->dscratch, *a = m ? d + (size_t)P * c : d;
    /* the tiles touching the upper triangle, row blocks of TI by column blocks of TJ */
    int ntiles = 0, cap = ((c + TI - 1) / TI) * ((c + TJ - 1) / TJ);
    int *tiles = nst_alloc_array((size_t)cap, 2 * sizeof(int), "Gram tiles");
    if (!tiles) return NST_ENOMEM;
    for (int i0 = 0; i0 < c; i0 += TI)
        for (int j0 = i0 / TJ * TJ; j0 < c; j0 += TJ) tiles[2 * ntiles] = i0, tiles[2 * ntiles + 1] = j0, ntiles++;
    const size_t npos = (size_t)nst_rect_area(own);
    const cpu_isa_level isa = cpu_kernels_isa();
#pragma omp parallel
    for (size_t p0 = 0; p0 < npos; p0 += (size_t)P) {
        int n = npos - p0 < (size_t)P ? (int)(npos - p0) : P;
#pragma omp for schedule(static) /* (its barrier: every thread waits for the whole block) */
        for (int k = 0; k < n; k++) {
            if (bf)
                convert(f, own, m, p0 + (size_t)k, d + (size_t)k * c, a + (size_t)k * c, 1);
            else
                convert(f, own, m, p0 + (size_t)k, d + (size_t)k * c, a + (size_t)k * c, 0);
        }
#pragma omp for schedule(static)
        for (int t = 0; t < ntiles; t++) {
            int i0 = tiles[2 * t], j0 = tiles[2 * t + 1];
            if (isa == CPU_ISA_AVX512 && i0 + TI <= c && j0 + TJ <= c)
                tile_avx512(a, d, n, c, i0, j0, g);
            else if (isa == CPU_ISA_AVX2 && i0 + TI <= c && j0 + TJ <= c)
                tile_avx2(a, d, n, c, i0, j0, g);
            else
                tile_scalar(a, d, n, c, i0, j0, g);
        }
    }
    nst_free(tiles);
    return NST_OK;
}

/* kernels/cpu/gram_sums_cpu.c: the Gram sums G += F^T F in double, over a region of an fp32 or
 * bf16 NHWC tensor, and the guided sums G += (m F)^T F of a mask m: the op gram_accumulate, which
 * the lagged strategy, the style target of a single image and the op harness use. The exact
 * strategies sum in fixed point instead (gram_fixed_cpu.c), whose sums do not depend on the order
 * at all; these depend on it in fp64's last places.
 *
 * Why double, and why this order. Every product of two fp32 (or bf16) values is exact in double,
 * and the sum of a few million of them keeps about 30 bits more than fp32 needs. Each entry G[i][j] (j >= i, the upper
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

#include "cpu.h"
#include "gram_blocks_cpu.h"

#define TI GB_TI
#define TJ GB_TJ
#define AT GB_AT

/* The multiply-add of a tile's sums. Fused where the product is exact (f f: 48 bits), which
 * rounds as a multiply and an add do; a masked product (m f) f is not exact, so it is rounded by a
 * multiply of its own, as the portable path does. */
#define FMA512(b, x, acc) _mm512_fmadd_pd(b, x, acc)
#define SEP512(b, x, acc) _mm512_add_pd(_mm512_mul_pd(b, x), acc)
#define FMA256(b, x, acc) _mm256_fmadd_pd(b, x, acc)
#define SEP256(b, x, acc) _mm256_add_pd(_mm256_mul_pd(b, x), acc)

/* The block's P positions into the sums c<r><h> (rows i0 + r, columns j0 + 8h .. +8), a for the
 * rows i and d for the columns j. The sums are named variables, not an array: GCC keeps an array
 * of vectors in memory and stores every one at every step. */
#define ROW512(OP, r)                                                                              \
    do {                                                                                           \
        const __m512d b = _mm512_set1_pd(fa[(r)]);                                                 \
        c##r##0 = OP(b, x0, c##r##0);                                                              \
        c##r##1 = OP(b, x1, c##r##1);                                                              \
    } while (0)
#define SUMS512(OP)                                                                                \
    for (int p = 0; p < P; p++) {                                                                  \
        const double *f = &AT(d, p, j0), *fa = &AT(a, p, i0);                                      \
        const __m512d x0 = _mm512_loadu_pd(f), x1 = _mm512_loadu_pd(f + 8);                        \
        ROW512(OP, 0); ROW512(OP, 1); ROW512(OP, 2); ROW512(OP, 3);                                \
        ROW512(OP, 4); ROW512(OP, 5); ROW512(OP, 6); ROW512(OP, 7);                                \
    }
#define LOAD512(r) __m512d c##r##0 = _mm512_loadu_pd(t + (r) * TJ), c##r##1 = _mm512_loadu_pd(t + (r) * TJ + 8)
#define KEEP512(r) (_mm512_storeu_pd(t + (r) * TJ, c##r##0), _mm512_storeu_pd(t + (r) * TJ + 8, c##r##1))

/* the tile's entries <-> t (TI x TJ): the upper triangle; t's other entries are not read back */
static void tile_get(const double *g, int c, int i0, int j0, double *t)
{
    for (int r = 0; r < TI; r++) memcpy(t + r * TJ, g + (size_t)(i0 + r) * c + j0, TJ * sizeof(double));
}
static void tile_put(const double *t, int c, int i0, int j0, double *g)
{
    for (int r = 0; r < TI; r++)
        for (int k = 0; k < TJ; k++)
            if (j0 + k >= i0 + r) g[(size_t)(i0 + r) * c + j0 + k] = t[r * TJ + k];
}

/* One full tile: G[i0..i0+8)[j0..j0+16) over the block's P positions (rows of c doubles: a for
 * the rows i, d for the columns j; a = d without a mask), the 128 sums in sixteen AVX-512
 * registers. */
__attribute__((target("avx512f,fma"))) static void tile_avx512(const double *a, const double *d, int P, size_t PS, int c, int i0, int j0,
                                                                double *g)
{
    double t[TI * TJ];
    tile_get(g, c, i0, j0, t);
    LOAD512(0); LOAD512(1); LOAD512(2); LOAD512(3); LOAD512(4); LOAD512(5); LOAD512(6); LOAD512(7);
    if (a == d) {
        SUMS512(FMA512)
    } else {
        SUMS512(SEP512)
    }
    KEEP512(0), KEEP512(1), KEEP512(2), KEEP512(3), KEEP512(4), KEEP512(5), KEEP512(6), KEEP512(7);
    tile_put(t, c, i0, j0, g);
}

/* The same tile with AVX2 (sixteen 256-bit registers): four sub-tiles of 4 x 8 sums, each held in
 * eight registers over the block's positions (sub-tiles wholly below the diagonal skipped). Every
 * entry is still one sum in position order, with the AVX-512 path's roundings: the same bits. */
#define ROW256(OP, r)                                                                              \
    do {                                                                                           \
        const __m256d b = _mm256_broadcast_sd(fa + (r));                                           \
        c##r##0 = OP(b, x0, c##r##0);                                                              \
        c##r##1 = OP(b, x1, c##r##1);                                                              \
    } while (0)
#define SUMS256(OP)                                                                                \
    for (int p = 0; p < P; p++) {                                                                  \
        const double *f = &AT(d, p, sj), *fa = &AT(a, p, si);                                      \
        const __m256d x0 = _mm256_loadu_pd(f), x1 = _mm256_loadu_pd(f + 4);                       \
        ROW256(OP, 0); ROW256(OP, 1); ROW256(OP, 2); ROW256(OP, 3);                                \
    }
#define LOAD256(r) __m256d c##r##0 = _mm256_loadu_pd(u + (r) * TJ), c##r##1 = _mm256_loadu_pd(u + (r) * TJ + 4)
#define KEEP256(r) (_mm256_storeu_pd(u + (r) * TJ, c##r##0), _mm256_storeu_pd(u + (r) * TJ + 4, c##r##1))

__attribute__((target("avx2,fma"))) static void tile_avx2(const double *a, const double *d, int P, size_t PS, int c, int i0, int j0, double *g)
{
    double t[TI * TJ];
    tile_get(g, c, i0, j0, t);
    for (int si = i0; si < i0 + TI; si += 4)
        for (int sj = j0; sj < j0 + TJ; sj += 8) {
            if (sj + 8 <= si) continue; /* wholly below the diagonal */
            double *u = t + (si - i0) * TJ + (sj - j0);
            LOAD256(0); LOAD256(1); LOAD256(2); LOAD256(3);
            if (a == d) {
                SUMS256(FMA256)
            } else {
                SUMS256(SEP256)
            }
            KEEP256(0), KEEP256(1), KEEP256(2), KEEP256(3);
        }
    tile_put(t, c, i0, j0, g);
}

/* The same sums for any tile (and at the matrix's edge), one entry at a time: the portable path. */
static void tile_scalar(const double *a, const double *d, int P, size_t PS, int c, int i0, int j0, double *g)
{
    for (int i = i0; i < i0 + TI && i < c; i++)
        for (int j = j0 > i ? j0 : i; j < j0 + TJ && j < c; j++) {
            double s = g[(size_t)i * c + j];
            for (int p = 0; p < P; p++) s += AT(a, p, i) * AT(d, p, j);
            g[(size_t)i * c + j] = s;
        }
}

/* position q of the region (row order) as c doubles at index k of the block, d (the dtype a
 * literal: see pool_cpu.c), and with a mask as c doubles m_p f_p too, in a */
static inline __attribute__((always_inline)) void convert(const nst_tensor *f, nst_rect own, const nst_tensor *m, size_t q, int k,
                                                          size_t PS, double *d, double *a, int wide, int bf)
{
    size_t at = gb_position(f, own, q), src = at * f->c;
    uint32_t mb = 0;
    int i0 = wide ? gb_row_avx512(cpu_at(f->data, src, bf), f->c, 1.0, &AT(d, k, 0), &mb, bf) : 0;
    for (int i = i0; i < f->c; i++) AT(d, k, i) = cpu_ld(f->data, src + i, bf);
    if (m) {
        double w = ((const float *)m->data)[at];
        for (int i = 0; i < f->c; i++) AT(a, k, i) = w * AT(d, k, i);
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
    gb_plan pl;
    NST_TRY(gb_plan_make(impl, c, m != NULL, 1, &pl));
    const int P = pl.P, ntiles = pl.ntiles, *tiles = pl.tiles;
    const size_t PS = pl.PS;
    double *d = pl.d, *a = pl.a;
    const size_t npos = (size_t)nst_rect_area(own);
    const cpu_isa_level isa = cpu_kernels_isa();
#pragma omp parallel
    for (size_t p0 = 0; p0 < npos; p0 += (size_t)P) {
        int n = npos - p0 < (size_t)P ? (int)(npos - p0) : P;
#pragma omp for schedule(static) /* (its barrier: every thread waits for the whole block) */
        for (int k = 0; k < n; k++) {
            if (bf)
                convert(f, own, m, p0 + (size_t)k, k, PS, d, a, isa >= CPU_ISA_AVX512, 1);
            else
                convert(f, own, m, p0 + (size_t)k, k, PS, d, a, isa >= CPU_ISA_AVX512, 0);
        }
#pragma omp for schedule(static)
        for (int t = 0; t < ntiles; t++) {
            int i0 = tiles[2 * t], j0 = tiles[2 * t + 1];
            if (isa >= CPU_ISA_AVX512 && i0 + TI <= c && j0 + TJ <= c)
                tile_avx512(a, d, n, PS, c, i0, j0, g);
            else if (isa == CPU_ISA_AVX2 && i0 + TI <= c && j0 + TJ <= c)
                tile_avx2(a, d, n, PS, c, i0, j0, g);
            else
                tile_scalar(a, d, n, PS, c, i0, j0, g);
        }
    }
    gb_plan_free(&pl);
    return NST_OK;
}

/* kernels/cpu/gram_fixed_cpu.c: the Gram sums in fixed point, order-independent by construction:
 * what makes a tiled render's global Gram the one-tile render's bits for every image, not with a
 * high probability (the fp64 sums of gram_sums_cpu.c, added in another order over tiles and ranks,
 * round to another fp32 value now and then: an estimated few times in 100 iterations of a 512x384
 * render on two tiles, more with larger images).
 *
 * The number. With a layer's bound 2^e (every |f| < 2^e, the same on every rank: the caller's),
 * each position's values are scaled to a = f 2^-(e+4), |a| < 1/16 (exact: a power of two; with a
 * mask m in [0, 1] the row side is m a, exact in double as m has 16 bits and f 24). Entry (i, j)
 * sums the integers K(p) = floor(a_i a_j / Q), Q = 2^-51, so the sum is an integer and its value
 * sum K(p) Q 2^(2e+8) does not depend on the order, the blocking, the tiles or the ranks: integer
 * addition is associative. Each K(p) is the product rounded down to a multiple of Q: at most Q
 * 2^(2e+8) = 2^(2e-43) below it, 2^-43 of the bound squared.
 *
 * How, at the fp64 multiply-add rate. A chain q = 3; q = fma(a_i, a_j, q) rounded toward minus
 * infinity, 128 positions long, stays in [2, 4), where doubles are exactly the multiples of Q (each
 * |product| < 2^-8, so |q - 3| < 1/2); rounding down there commutes with adding a multiple of Q, so
 * the chain ends at q = 3 + Q sum K(p) exactly, and its integer (bits of q minus bits of 3) is
 * added to the tile's 64-bit sums. The AVX-512 path rounds down per instruction (embedded
 * rounding), the AVX2 path under MXCSR's round-down mode, set and restored around each tile; the
 * portable path computes the round-to-nearest fma and steps down one Q when the exact remainder
 * (a second fma) is negative. All three are the same function of the data: the same bits. The
 * positions are converted to scaled doubles in blocks (gram_blocks_cpu.h), 16 channels an
 * instruction on AVX-512; the conversion also finds the largest magnitude, exactly.
 *
 * The threads. Up to 256 channels each thread takes whole blocks and sums them into sums of its
 * own, added to the caller's at the end (sums_by_positions); above, they share each block's tiles
 * (sums_by_tiles). As integers add in any order, the split and the thread count cannot change a
 * bit; the choice is speed only.
 *
 * The sums: per entry (i, j >= i) two int64, lo in [0, 2^40) (the plane acc[0, c c)) and hi (the
 * plane after it), the value lo + 2^40 hi. The tiles add their blocks' integers to lo only, and
 * carry lo's high bits into hi (a fold) after every FOLD_POSITIONS positions and at the end of the
 * call, so lo is in [0, 2^40) whenever a call returns. For 2^32 positions the value stays under
 * 2^75, so nothing overflows; ranks add lo and hi as int64, and the reader normalises.
 *
 * The bound is the caller's to choose, the same on every rank: *emax returns the smallest k with
 * every |f| < 2^k over the region (NST_GRAM_EMIN for all zeros, NST_GRAM_ENONFINITE with a NaN,
 * an infinity or a mask weight outside [0, 1]), and where k > e the sums of that call are not
 * valid (the caller sums again with a larger e: nst/optimise/objective.c). */
#include <immintrin.h>
#include <math.h>
#include <omp.h>
#include <string.h>

#include "cpu.h"
#include "gram_blocks_cpu.h"

#define CHAIN 128               /* products per chain: 128 x 2^-8 < 1/2 keeps q in [2, 4) */
#define FIXQ 0x1p-51            /* the grid of [2, 4) */
#define THREE_BITS 0x4008000000000000LL /* the bits of 3.0 */
#define LO_BITS NST_GRAM_LO_BITS
/* The positions whose sums a tile adds to lo between two folds. Each integer K(p) has |K| <= 2^43
 * (|a_i a_j| < 2^-8 = 2^43 Q), and a fold leaves lo in [0, 2^40): after 2^19 positions |lo| <
 * 2^40 + 2^62 < 2^63. Folding only this often (and at the end of a call) keeps the hi plane out of
 * the cache while the blocks run: with 512 channels both planes are 4 MiB, more than an L2. */
#define FOLD_POSITIONS (1 << 19)
#define CONVERT_ROWS 16 /* positions a thread converts at a time where the threads share a block */

/* Chains of the tile's 8 x 16 entries over the block's n positions, CHAIN at a time, their integers
 * added to k (8 x 16 int64). Without `left` (a constant where inlined), only the right 8 columns:
 * for a tile whose left half lies wholly below the diagonal (j0 + 8 <= i0, left of the diagonal's
 * odd row blocks). Without `right`, only the left 8: for a tile whose right half lies wholly past
 * the matrix's edge (j0 + 8 >= c: every tile of a layer of 8 channels). Half the multiply-adds, the
 * same chains for the rest; k's other half stays 0. A tile at the edge reads the rows' zero padding
 * past c (zero_pad): those lanes' products are 0 and their entries are not added (tile_into_lo). */
#define RD512 (_MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC)
#define ROWF512(r)                                                                                 \
    do {                                                                                           \
        const __m512d b = _mm512_set1_pd(fa[(r)]);                                                 \
        if (left) c##r##0 = _mm512_fmadd_round_pd(b, x0, c##r##0, RD512);                          \
        if (right) c##r##1 = _mm512_fmadd_round_pd(b, x1, c##r##1, RD512);                         \
    } while (0)
#define START512(r) __m512d c##r##0 = three, c##r##1 = three
#define FLUSH512(r)                                                                                \
    do {                                                                                           \
        int64_t *kr = k + (r) * GB_TJ;                                                             \
        if (left) _mm512_storeu_si512(kr, _mm512_add_epi64(_mm512_loadu_si512(kr), _mm512_sub_epi64(_mm512_castpd_si512(c##r##0), tb))); \
        if (right) _mm512_storeu_si512(kr + 8, _mm512_add_epi64(_mm512_loadu_si512(kr + 8), _mm512_sub_epi64(_mm512_castpd_si512(c##r##1), tb))); \
    } while (0)

__attribute__((target("avx512f,fma"), always_inline)) static inline void chains_avx512_cols(const double *a, const double *d, int n, size_t PS,
                                                                                          int i0, int j0, int64_t *k, const int left,
                                                                                          const int right)
{
    const __m512d three = _mm512_set1_pd(3.0);
    const __m512i tb = _mm512_set1_epi64(THREE_BITS);
    for (int p0 = 0; p0 < n; p0 += CHAIN) {
        const int p1 = p0 + CHAIN < n ? p0 + CHAIN : n;
        START512(0); START512(1); START512(2); START512(3); START512(4); START512(5); START512(6); START512(7);
        for (int p = p0; p < p1; p++) {
            const double *f = &GB_AT(d, p, j0), *fa = &GB_AT(a, p, i0);
            const __m512d x0 = left ? _mm512_loadu_pd(f) : three, x1 = right ? _mm512_loadu_pd(f + 8) : three;
            ROWF512(0); ROWF512(1); ROWF512(2); ROWF512(3); ROWF512(4); ROWF512(5); ROWF512(6); ROWF512(7);
        }
        FLUSH512(0); FLUSH512(1); FLUSH512(2); FLUSH512(3); FLUSH512(4); FLUSH512(5); FLUSH512(6); FLUSH512(7);
    }
}

__attribute__((target("avx512f,fma"))) static void chains_avx512(const double *a, const double *d, int n, size_t PS, int i0, int j0, int64_t *k)
{
    chains_avx512_cols(a, d, n, PS, i0, j0, k, 1, 1);
}

__attribute__((target("avx512f,fma"))) static void chains_avx512_right(const double *a, const double *d, int n, size_t PS, int i0, int j0,
                                                                       int64_t *k)
{
    chains_avx512_cols(a, d, n, PS, i0, j0, k, 0, 1);
}

__attribute__((target("avx512f,fma"))) static void chains_avx512_left(const double *a, const double *d, int n, size_t PS, int i0, int j0,
                                                                      int64_t *k)
{
    chains_avx512_cols(a, d, n, PS, i0, j0, k, 1, 0);
}

/* AVX2: four sub-tiles of 4 x 8, each chain as above under MXCSR's round-down mode; those wholly
 * below the diagonal or past the matrix's edge left out (the rest read zero padding as above). */
#define ROWF256(r)                                                                                 \
    do {                                                                                           \
        const __m256d b = _mm256_broadcast_sd(fa + (r));                                           \
        c##r##0 = _mm256_fmadd_pd(b, x0, c##r##0);                                                 \
        c##r##1 = _mm256_fmadd_pd(b, x1, c##r##1);                                                 \
    } while (0)
#define START256(r) __m256d c##r##0 = three, c##r##1 = three
#define FLUSH256(r)                                                                                \
    do {                                                                                           \
        int64_t *kr = k + (si - i0 + (r)) * GB_TJ + (sj - j0);                                     \
        __m256i *k0 = (__m256i *)kr, *k1 = (__m256i *)(kr + 4);                                   \
        _mm256_storeu_si256(k0, _mm256_add_epi64(_mm256_loadu_si256(k0), _mm256_sub_epi64(_mm256_castpd_si256(c##r##0), tb))); \
        _mm256_storeu_si256(k1, _mm256_add_epi64(_mm256_loadu_si256(k1), _mm256_sub_epi64(_mm256_castpd_si256(c##r##1), tb))); \
    } while (0)

__attribute__((target("avx2,fma"))) static void chains_avx2(const double *a, const double *d, int n, size_t PS, int c, int i0, int j0,
                                                            int64_t *k)
{
    const __m256d three = _mm256_set1_pd(3.0);
    const __m256i tb = _mm256_set1_epi64x(THREE_BITS);
    for (int si = i0; si < i0 + GB_TI && si < c; si += 4)
        for (int sj = j0; sj < j0 + GB_TJ && sj < c; sj += 8) {
            if (sj + 8 <= si) continue; /* wholly below the diagonal */
            for (int p0 = 0; p0 < n; p0 += CHAIN) {
                const int p1 = p0 + CHAIN < n ? p0 + CHAIN : n;
                START256(0); START256(1); START256(2); START256(3);
                for (int p = p0; p < p1; p++) {
                    const double *f = &GB_AT(d, p, sj), *fa = &GB_AT(a, p, si);
                    const __m256d x0 = _mm256_loadu_pd(f), x1 = _mm256_loadu_pd(f + 4);
                    ROWF256(0); ROWF256(1); ROWF256(2); ROWF256(3);
                }
                FLUSH256(0); FLUSH256(1); FLUSH256(2); FLUSH256(3);
            }
        }
}

/* round-down fma(x, y, q) for q and the result in [2, 4), by round-to-nearest operations: the
 * nearest s, and one Q less where the exact remainder x y + (q - s) (q - s exact) is negative */
static inline double fma_down(double x, double y, double q)
{
    double s = fma(x, y, q);
    return fma(x, y, q - s) < 0 ? s - FIXQ : s;
}

/* the portable path (below AVX2): one entry's chains at a time, the matrix's edge left out */
static void chains_scalar(const double *a, const double *d, int n, size_t PS, int c, int i0, int j0, int64_t *k)
{
    for (int i = i0; i < i0 + GB_TI && i < c; i++)
        for (int j = j0 > i ? j0 : i; j < j0 + GB_TJ && j < c; j++)
            for (int p0 = 0; p0 < n; p0 += CHAIN) {
                double q = 3.0;
                for (int p = p0; p < n && p < p0 + CHAIN; p++) q = fma_down(GB_AT(a, p, i), GB_AT(d, p, j), q);
                int64_t bits;
                memcpy(&bits, &q, sizeof bits);
                k[(i - i0) * GB_TJ + (j - j0)] += bits - THREE_BITS;
            }
}

/* lo += the tile's block sums k (entries past the matrix's edge left out; those below the diagonal,
 * which the AVX-512 path computes and no reader uses, added and folded like the rest: bounded).
 * No carry: the fold below keeps lo in range. */
static void tile_into_lo(const int64_t *k, int c, int i0, int j0, int64_t *lo)
{
    const int hn = j0 + GB_TJ <= c ? GB_TJ : c - j0;
    for (int r = 0; r < GB_TI && i0 + r < c; r++)
        for (int h = 0; h < hn; h++) lo[(size_t)(i0 + r) * c + j0 + h] += k[r * GB_TJ + h];
}

/* The tile's entries with lo's bits from 2^40 up carried into hi: lo back in [0, 2^40), the value
 * lo + 2^40 hi unchanged (an arithmetic shift is a floor). Integer operations: any width, the
 * same bits. */
__attribute__((target_clones("avx512f", "default"))) static void fold_tile(int64_t *acc, int c, int i0, int j0)
{
    int64_t *lo = acc, *hi = acc + (size_t)c * c;
    const int hn = j0 + GB_TJ <= c ? GB_TJ : c - j0;
    for (int r = 0; r < GB_TI && i0 + r < c; r++) {
        const size_t at = (size_t)(i0 + r) * c + j0;
        for (int h = 0; h < hn; h++) {
            hi[at + h] += lo[at + h] >> LO_BITS;
            lo[at + h] &= (1LL << LO_BITS) - 1;
        }
    }
}

/* The tile's sums over the block's n positions, chain by chain, added to acc's lo plane; folded
 * where `fold` says (see FOLD_POSITIONS). */
static void tile_fixed(const double *a, const double *d, int n, size_t PS, int c, int i0, int j0, cpu_isa_level isa, int fold, int64_t *acc)
{
    int64_t k[GB_TI * GB_TJ] = {0};
    if (isa >= CPU_ISA_AVX512) {
        if (j0 + GB_TJ / 2 <= i0)
            chains_avx512_right(a, d, n, PS, i0, j0, k); /* the left half wholly below the diagonal */
        else if (j0 + GB_TJ / 2 >= c)
            chains_avx512_left(a, d, n, PS, i0, j0, k); /* the right half wholly past the edge */
        else
            chains_avx512(a, d, n, PS, i0, j0, k);
    } else if (isa == CPU_ISA_AVX2) {
        const unsigned csr = _mm_getcsr();
        _mm_setcsr((csr & ~0x6000u) | 0x2000u); /* round toward minus infinity */
        chains_avx2(a, d, n, PS, c, i0, j0, k);
        _mm_setcsr(csr);
    } else
        chains_scalar(a, d, n, PS, c, i0, j0, k);
    tile_into_lo(k, c, i0, j0, acc);
    if (fold) fold_tile(acc, c, i0, j0);
}

/* channels i .. c - 1 of the position at element src as doubles times scale into o, their
 * magnitudes' bits into *mb: the scalar rest of a row */
static inline __attribute__((always_inline)) void row_rest(const void *data, size_t src, int i, int c, double scale, double *o, uint32_t *mb,
                                                           int bf)
{
    for (; i < c; i++) {
        uint32_t b = cpu_bits(data, src + i, bf) << (bf ? 16 : 0), ab = b & 0x7fffffffu;
        float v;
        memcpy(&v, &b, sizeof v);
        *mb = ab > *mb ? ab : *mb;
        o[i] = (double)v * scale;
    }
}

/* Columns c up to the tiles' edge (c rounded up to 16, inside the row's padding) of a converted row
 * set to 0. An edge tile reads them (chains_avx512_cols, chains_avx2), in lanes whose entries are
 * past c and never added: any values there leave the bits alone, zeros keep stale doubles of
 * another layer (a NaN, a subnormal's slow path) out of the chains and the reads defined. */
static inline void zero_pad(double *o, int c)
{
    for (int j = c; j < (c + GB_TJ - 1) / GB_TJ * GB_TJ; j++) o[j] = 0;
}

/* a conversion's checks on the largest magnitude's bits mb: not finite (*bad), or at the bound lim
 * or bad (*over, shared by the threads) */
static inline void check_bound(uint32_t mb, double lim, int *bad, int *over)
{
    float mx;
    memcpy(&mx, &mb, sizeof mx);
    if (mb >= 0x7f800000u) *bad = 1;
    if (!((double)mx < lim) || *bad) {
#pragma omp atomic write
        *over = 1;
    }
}

/* position q of the region as c scaled doubles at index k of the block, and with a mask the row
 * side m a; the largest |f| seen into *big (as its bits: they order like the magnitudes, and a NaN
 * or an infinity is above 0x7f800000), and *over (shared by the threads) set where a value reaches
 * the bound lim, or is not finite, or a mask weight is outside [0, 1] (*bad) */
static inline __attribute__((always_inline)) void convert_scaled(const nst_tensor *f, nst_rect own, const nst_tensor *m, size_t q, int k,
                                                                 size_t PS, double scale, double lim, double *d, double *a, uint32_t *big,
                                                                 int *bad, int *over, int wide, int bf)
{
    size_t at = gb_position(f, own, q), src = at * f->c;
    uint32_t mb = *big;
    int i = 0;
    if (wide) i = gb_row_avx512(cpu_at(f->data, src, bf), f->c, scale, &GB_AT(d, k, 0), &mb, bf);
    row_rest(f->data, src, i, f->c, scale, &GB_AT(d, k, 0), &mb, bf);
    zero_pad(&GB_AT(d, k, 0), f->c);
    *big = mb;
    if (m) {
        double w = ((const float *)m->data)[at];
        if (!(w >= 0 && w <= 1)) *bad = 1; /* a weight out of [0, 1] would break |m a| < 1/16 */
        for (int j = 0; j < f->c; j++) GB_AT(a, k, j) = w * GB_AT(d, k, j);
        zero_pad(&GB_AT(a, k, 0), f->c);
    }
    check_bound(mb, lim, bad, over);
}

/* the smallest k with |f| < 2^k for the largest |f|'s bits (NST_GRAM_EMIN for 0) */
static int exponent_above(uint32_t big)
{
    float v;
    memcpy(&v, &big, sizeof v);
    return big ? ilogbf(v) + 1 : NST_GRAM_EMIN;
}

/* what every block's conversion needs to know */
typedef struct {
    const nst_tensor *f, *m;
    nst_rect own;
    size_t PS;
    double scale, lim;
    int wide, bf;
} fx_src;

/* Positions p0 + k0 .. p0 + k1 - 1 without a mask on AVX-512, into rows k0 .. k1 - 1 of d: the
 * values of convert_scaled (the same exact conversions), faster where rows are short (64
 * channels: the conversion took a fifth of the sums' time): the positions stepped along the
 * region's rows instead of divided out, and the largest magnitude kept in a vector over the rows,
 * reduced once. Its checks, once: the largest value against the bound. */
__attribute__((target("avx512f"))) static void rows_avx512(const fx_src *s, size_t p0, int k0, int k1, double *d, uint32_t *big, int *bad,
                                                           int *over)
{
    const nst_tensor *f = s->f;
    const int c = f->c, bf = s->bf;
    const size_t PS = s->PS, q0 = p0 + (size_t)k0;
    __m512i m = _mm512_setzero_si512();
    uint32_t mb = *big;
    int y = s->own.y + (int)(q0 / (size_t)s->own.w), x = s->own.x + (int)(q0 % (size_t)s->own.w);
    for (int k = k0; k < k1; k++) {
        const size_t src = ((size_t)y * f->w + x) * c;
        const void *row = cpu_at(f->data, src, bf);
        double *o = &GB_AT(d, k, 0);
        row_rest(f->data, src, gb_row_max_avx512(row, c, s->scale, o, &m, bf), c, s->scale, o, &mb, bf);
        zero_pad(o, c);
        if (++x == s->own.x + s->own.w) x = s->own.x, y++;
    }
    const uint32_t vm = (uint32_t)_mm512_reduce_max_epu32(m);
    *big = mb = vm > mb ? vm : mb;
    check_bound(mb, s->lim, bad, over);
}

/* positions p0 + k0 .. p0 + k1 - 1 of the region into rows k0 .. k1 - 1 of (d, a) */
static void convert_rows(const fx_src *s, size_t p0, int k0, int k1, double *d, double *a, uint32_t *big, int *bad, int *over)
{
    if (s->wide && !s->m) {
        rows_avx512(s, p0, k0, k1, d, big, bad, over);
        return;
    }
    for (int k = k0; k < k1; k++) {
        if (s->bf)
            convert_scaled(s->f, s->own, s->m, p0 + (size_t)k, k, s->PS, s->scale, s->lim, d, a, big, bad, over, s->wide, 1);
        else
            convert_scaled(s->f, s->own, s->m, p0 + (size_t)k, k, s->PS, s->scale, s->lim, d, a, big, bad, over, s->wide, 0);
    }
}

/* Split by tiles: the threads convert each block together and share out its tiles. Every thread
 * reads the rows the others converted: for large c, where a block's tiles are many and each row is
 * read by many of them. */
static void sums_by_tiles(const fx_src *s, const gb_plan *pl, size_t npos, int c, cpu_isa_level isa, int64_t *acc, uint32_t *pbig,
                          int *pbad, int *over)
{
    uint32_t big = 0;
    int bad = 0;
    size_t since = 0; /* positions since the last fold (every thread counts the same blocks) */
#pragma omp parallel reduction(max : big) reduction(| : bad) firstprivate(since)
    for (size_t p0 = 0; p0 < npos; p0 += (size_t)pl->P) {
        int n = npos - p0 < (size_t)pl->P ? (int)(npos - p0) : pl->P;
        since += (size_t)n;
        const int fold = p0 + (size_t)n >= npos || since + (size_t)pl->P > FOLD_POSITIONS;
        if (fold) since = 0;
#pragma omp for schedule(static) /* (its barrier: every thread waits for the whole block) */
        for (int k = 0; k < n; k += CONVERT_ROWS) convert_rows(s, p0, k, k + CONVERT_ROWS < n ? k + CONVERT_ROWS : n, pl->d, pl->a, &big, &bad, over);
        /* once a value has reached the bound the sums are invalid (the caller sums again with a
         * larger one): the tiles are skipped, on every thread alike (over is read after the
         * barrier), and the values only scanned for *emax */
        int skip;
#pragma omp atomic read
        skip = *over;
#pragma omp for schedule(static) /* (its barrier: the block is not overwritten while read) */
        for (int t = 0; t < pl->ntiles; t++)
            if (!skip)
                tile_fixed(pl->a, pl->d, n, s->PS, c, pl->tiles[2 * t], pl->tiles[2 * t + 1], isa, fold, acc);
            else if (fold) /* (lo stays in [0, 2^40) after every call, valid or not) */
                fold_tile(acc, c, pl->tiles[2 * t], pl->tiles[2 * t + 1]);
    }
    *pbig = big, *pbad = bad;
}

/* Split by positions: each thread converts blocks of its own into rows of its own and sums all their
 * tiles into an accumulator of its own; the accumulators are then added. Nothing a thread computes
 * is read by another until the end: for small c, where a block is read by few tiles and sharing it
 * costs more than its arithmetic (relu1_1 at 64 channels ran slower on 2 threads than on 1 when
 * the cores shared no cache). Integers add in any order, so the split cannot change the sums. */
static void sums_by_positions(const fx_src *s, const gb_plan *pl, size_t npos, int c, cpu_isa_level isa, int64_t *acc, int64_t *part,
                              uint32_t *pbig, int *pbad, int *over)
{
    const size_t cc = (size_t)c * c, nblocks = (npos + (size_t)pl->P - 1) / (size_t)pl->P;
    uint32_t big = 0;
    int bad = 0;
#pragma omp parallel reduction(max : big) reduction(| : bad)
    {
        const int t = omp_get_thread_num();
        double *d = pl->d + (size_t)t * pl->stride, *a = pl->a + (size_t)t * pl->stride;
        int64_t *mine = part + (size_t)t * 2 * cc;
        memset(mine, 0, 2 * cc * sizeof(int64_t));
        size_t since = 0; /* this thread's positions since its last fold */
#pragma omp for schedule(static)
        for (size_t b = 0; b < nblocks; b++) {
            const size_t p0 = b * (size_t)pl->P;
            const int n = npos - p0 < (size_t)pl->P ? (int)(npos - p0) : pl->P;
            convert_rows(s, p0, 0, n, d, a, &big, &bad, over);
            int skip; /* (past the bound the sums are invalid: only the scan for *emax goes on) */
#pragma omp atomic read
            skip = *over;
            since += (size_t)n;
            const int fold = since + (size_t)pl->P > FOLD_POSITIONS;
            if (fold) since = 0;
            for (int k = 0; k < pl->ntiles && !skip; k++) tile_fixed(a, d, n, s->PS, c, pl->tiles[2 * k], pl->tiles[2 * k + 1], isa, fold, mine);
        }
        for (int k = 0; k < pl->ntiles; k++) fold_tile(mine, c, pl->tiles[2 * k], pl->tiles[2 * k + 1]);
#pragma omp barrier /* every part folded before any is added */
        const int T = omp_get_num_threads();
#pragma omp for schedule(static)
        for (size_t x = 0; x < cc; x++) { /* lo < 2^40 per part: no overflow below 2^23 threads */
            int64_t lo = acc[x], hi = acc[cc + x];
            for (int u = 0; u < T; u++) lo += part[(size_t)u * 2 * cc + x], hi += part[(size_t)u * 2 * cc + cc + x];
            acc[cc + x] = hi + (lo >> LO_BITS);
            acc[x] = lo & ((1LL << LO_BITS) - 1);
        }
    }
    *pbig = big, *pbad = bad;
}

nst_status cpu_gram_fixed(nst_backend *be, const nst_tensor *f, nst_rect own, const nst_tensor *m, int e, int64_t *acc, int *emax)
{
    cpu_impl *impl = cpu_of(be);
    NST_TRY(cpu_check_act(f, "gram_fixed"));
    NST_TRY(cpu_check_region(f, own, "gram_fixed"));
    NST_TRY(nst_tensor_check_mask(f, m, "gram_fixed"));
    if (e < NST_GRAM_EMIN || e > 200)
        return nst_fail(NST_ERUNTIME, "gram_fixed: bound 2^%d out of range (%d..200)", e, NST_GRAM_EMIN);
    if (nst_rect_empty(own)) return NST_OK;
    const int c = f->c, threads = omp_get_max_threads();
    const size_t npos = (size_t)nst_rect_area(own);
    /* by positions where the threads' own accumulators are small (16 c^2 bytes: 1 MiB at 256
     * channels) and every thread gets at least two blocks */
    const size_t P = (size_t)gb_block_positions(c);
    const int by_positions = threads > 1 && c <= GB_SPLIT_MAX_C && npos >= 2 * (size_t)threads * P;
    gb_plan pl;
    NST_TRY(gb_plan_make(impl, c, m != NULL, by_positions ? threads : 1, &pl));
    int64_t *part = NULL;
    if (by_positions && !(part = nst_alloc_array((size_t)threads * 2 * c * c, sizeof(int64_t), "Gram sums per thread"))) {
        gb_plan_free(&pl);
        return NST_ENOMEM;
    }
    const cpu_isa_level isa = cpu_kernels_isa();
    const fx_src s = {f, m, own, pl.PS, ldexp(1.0, -(e + 4)), ldexp(1.0, e), isa >= CPU_ISA_AVX512, f->dt == NST_BF16};
    uint32_t big = 0;
    int bad = 0, over = 0;
    if (by_positions)
        sums_by_positions(&s, &pl, npos, c, isa, acc, part, &big, &bad, &over);
    else
        sums_by_tiles(&s, &pl, npos, c, isa, acc, &big, &bad, &over);
    nst_free(part);
    gb_plan_free(&pl);
    int k = bad ? NST_GRAM_ENONFINITE : exponent_above(big);
    if (k > *emax) *emax = k;
    return NST_OK;
}

/* kernels/cpu/gram_backward_cpu.c: the Gram backward dF += (m F) S over a region, S = scale * D
 * rounded to the dtype (D symmetric C x C), for fp32 or bf16 NHWC tensors: the backend's own
 * kernel, exact by construction.
 *
 * Why our own. A GEMM library picks its blocking from the size of the call: oneDNN's sgemm, for
 * one, sums a row in other groups when it is computed among fewer rows (below about 540 rows of
 * 512 channels), so a window's rows would round differently from the whole image's. Here each
 * output is one chain of fused multiply-adds in channel order from zero,
 *     acc = fma(a_i, S[i][j], acc)  for i = 0 .. C-1,   then   dF[p][j] = round(dF[p][j] + acc),
 * with a_i = f_p[i] (m_p f_p[i] rounded to the dtype with a mask): the same bits whatever the
 * region, the position, the number of rows, the thread count or the instruction set (the portable
 * path calls fmaf, which rounds as the vector fused multiply-adds do). One level differs: at
 * AVX512_BF16 the bf16 backward runs on VDPBF16PS, two multiply-adds of exact bf16 products an
 * instruction, in the same channel order, each partial sum flushed to zero below 2^-126 (the
 * instruction's defined rounding); so that level's bits leave the others' only where a partial
 * sum is subnormal, and each output is still one chain of its own row's values: exact over tiles.
 *
 * How. S is packed once per call into panels of PW columns (zero-padded); the region's positions
 * go in blocks of BLOCK rows, each converted (and weighted) into fp32 rows, and every panel runs
 * over the block in micro-tiles of R rows x PW columns held in registers (AVX-512: 8 x 32, AVX2:
 * 6 x 16; AVX512_BF16 takes the rows and panels as channel pairs, a row's pairs made straight
 * from the tensor). Each tile's dF lines are prefetched before its sums and added with vectors
 * (the bf16 rounding done with integer operations, bit for bit nst_f32_to_bf16's): with 64 or
 * 128 channels the sums are short, and a scalar add that waited on memory took as long as they
 * did (relu1_1 and relu2_1 at 512 x 384 in bf16: 10.4 and 10.9 ms, now 6.1 and 4.5,
 * bench/gram_layers). Threads take whole blocks. Scratch: the panels (at most C x C floats plus
 * padding, and their pairs) and one block per thread. */
#include <immintrin.h>
#include <math.h>
#include <omp.h>
#include <string.h>

#include "../../util/mem.h"
#include "cpu.h"

#define BLOCK 48 /* positions per block: a multiple of both micro-tiles' rows */
#define PW_MAX 32

typedef struct {
    int c, pw, npanels; /* channels, panel width, panels */
    const float *s;     /* panels: npanels x c x pw */
    int c2;             /* AVX512_BF16 (bf16 tensors): channel pairs, ceil(c / 2) */
    const uint32_t *sp; /* and the panels as pairs: npanels x c2 x pw */
} panels;

/* ---- micro-tiles: rows a (r x c, stride c) times one panel (c x pw) into out (r x pw) ---------- */
/* The accumulators are named variables, not an array: GCC keeps an array of vectors in memory and
 * stores every one at every step, which made these kernels a third as fast. */

#define B512_ROW(r)                                                                                \
    do {                                                                                           \
        __m512 x = _mm512_set1_ps(a[(size_t)(r) * c + i]);                                         \
        c##r##0 = _mm512_fmadd_ps(x, s0, c##r##0);                                                 \
        c##r##1 = _mm512_fmadd_ps(x, s1, c##r##1);                                                 \
    } while (0)
#define B512_OUT(r) (_mm512_storeu_ps(out + (r) * 32, c##r##0), _mm512_storeu_ps(out + (r) * 32 + 16, c##r##1))

__attribute__((target("avx512f"))) static void micro_avx512(const float *a, const float *s, int c, float *out)
{
    __m512 c00 = _mm512_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00, c40 = c00,
           c41 = c00, c50 = c00, c51 = c00, c60 = c00, c61 = c00, c70 = c00, c71 = c00;
    for (int i = 0; i < c; i++) {
        const __m512 s0 = _mm512_loadu_ps(s + (size_t)i * 32), s1 = _mm512_loadu_ps(s + (size_t)i * 32 + 16);
        B512_ROW(0); B512_ROW(1); B512_ROW(2); B512_ROW(3); B512_ROW(4); B512_ROW(5); B512_ROW(6); B512_ROW(7);
    }
    B512_OUT(0), B512_OUT(1), B512_OUT(2), B512_OUT(3), B512_OUT(4), B512_OUT(5), B512_OUT(6), B512_OUT(7);
}

#define B256_ROW(r)                                                                                \
    do {                                                                                           \
        __m256 x = _mm256_broadcast_ss(a + (size_t)(r) * c + i);                                   \
        c##r##0 = _mm256_fmadd_ps(x, s0, c##r##0);                                                 \
        c##r##1 = _mm256_fmadd_ps(x, s1, c##r##1);                                                 \
    } while (0)
#define B256_OUT(r) (_mm256_storeu_ps(out + (r) * 16, c##r##0), _mm256_storeu_ps(out + (r) * 16 + 8, c##r##1))

__attribute__((target("avx2,fma"))) static void micro_avx2(const float *a, const float *s, int c, float *out)
{
    __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00, c40 = c00,
           c41 = c00, c50 = c00, c51 = c00;
    for (int i = 0; i < c; i++) {
        const __m256 s0 = _mm256_loadu_ps(s + (size_t)i * 16), s1 = _mm256_loadu_ps(s + (size_t)i * 16 + 8);
        B256_ROW(0); B256_ROW(1); B256_ROW(2); B256_ROW(3); B256_ROW(4); B256_ROW(5);
    }
    B256_OUT(0), B256_OUT(1), B256_OUT(2), B256_OUT(3), B256_OUT(4), B256_OUT(5);
}

/* AVX512_BF16, bf16 tensors: VDPBF16PS adds two products a dword, the high half's first (Intel's
 * definition; checked on AMD's Zen 5 too: 32 million lanes, every one), each product exact in
 * fp32, each step rounded to nearest with a subnormal result flushed to zero. The pairs hold
 * channel 2k in the high half and 2k + 1 in the low one, so the chain runs in channel order, the
 * fused multiply-adds of the other paths with flushed subnormal partial sums (and one step of
 * 0 x 0 more for an odd c); twice the multiply-adds an instruction. Rows of c2 dwords. */
#define BH_ROW(r)                                                                                  \
    do {                                                                                           \
        const __m512bh x = (__m512bh)_mm512_set1_epi32((int)a[(size_t)(r) * c2 + k]);             \
        c##r##0 = _mm512_dpbf16_ps(c##r##0, x, s0);                                                \
        c##r##1 = _mm512_dpbf16_ps(c##r##1, x, s1);                                                \
    } while (0)

__attribute__((target("avx512f,avx512bf16"))) static void micro_avx512bf16(const uint32_t *a, const uint32_t *s, int c2, float *out)
{
    __m512 c00 = _mm512_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00, c40 = c00,
           c41 = c00, c50 = c00, c51 = c00, c60 = c00, c61 = c00, c70 = c00, c71 = c00;
    for (int k = 0; k < c2; k++) {
        const __m512bh s0 = (__m512bh)_mm512_loadu_si512(s + (size_t)k * 32), s1 = (__m512bh)_mm512_loadu_si512(s + (size_t)k * 32 + 16);
        BH_ROW(0); BH_ROW(1); BH_ROW(2); BH_ROW(3); BH_ROW(4); BH_ROW(5); BH_ROW(6); BH_ROW(7);
    }
    B512_OUT(0), B512_OUT(1), B512_OUT(2), B512_OUT(3), B512_OUT(4), B512_OUT(5), B512_OUT(6), B512_OUT(7);
}

/* one row at a time (any panel width): the portable path */
static void micro_portable(const float *a, const float *s, int c, int pw, float *out)
{
    for (int j = 0; j < pw; j++) {
        float acc = 0.f;
        for (int i = 0; i < c; i++) acc = fmaf(a[i], s[(size_t)i * pw + j], acc);
        out[j] = acc;
    }
}

/* ---- packing --------------------------------------------------------------------------------- */

/* S = scale * D rounded to the dtype, as panels of pw columns (zeros past column c) */
static void pack_panels(const float *d, float scale, int c, int pw, int bf, float *s)
{
    const int np = (c + pw - 1) / pw;
    for (int p = 0; p < np; p++)
        for (int i = 0; i < c; i++)
            for (int k = 0; k < pw; k++) {
                int j = p * pw + k;
                float v = j < c ? d[(size_t)i * c + j] * scale : 0.f;
                s[((size_t)p * c + i) * pw + k] = bf ? nst_bf16_to_f32(nst_f32_to_bf16(v)) : v;
            }
}

/* the bf16 bits of values a and b (bf16 values held in fp32) as a pair: a high, b low */
static inline uint32_t pair_of(float a, float b)
{
    uint32_t ua, ub;
    memcpy(&ua, &a, sizeof ua), memcpy(&ub, &b, sizeof ub);
    return (ua & 0xffff0000u) | ub >> 16;
}

/* A bf16 position's pairs straight from the tensor: channels 2k (high half) and 2k + 1 (low), a
 * zero after an odd c; with a mask m_p f_p rounded to bf16 as pack_rows rounds it; zero rows up
 * to `rows`. Moves, or one product and its rounding, so the machine's widest vectors
 * (target_clones) change no bit. */
__attribute__((target_clones("avx512f", "avx2", "default"))) static void pair_rows_bf16(const nst_tensor *f, const size_t *off,
                                                                                      const nst_tensor *m, int n, int rows, uint32_t *out)
{
    const int c = f->c, c2 = (c + 1) / 2;
    for (int k = 0; k < n; k++) {
        const nst_bf16 *src = (const nst_bf16 *)f->data + off[k];
        uint32_t *o = out + (size_t)k * c2;
        if (m) {
            const float w = ((const float *)m->data)[off[k] / (size_t)c];
            for (int i = 0; i < c / 2; i++)
                o[i] = (uint32_t)nst_f32_to_bf16(w * nst_bf16_to_f32(src[2 * i])) << 16 | nst_f32_to_bf16(w * nst_bf16_to_f32(src[2 * i + 1]));
            if (c % 2) o[c2 - 1] = (uint32_t)nst_f32_to_bf16(w * nst_bf16_to_f32(src[c - 1])) << 16;
        } else {
            for (int i = 0; i < c / 2; i++) o[i] = (uint32_t)src[2 * i] << 16 | src[2 * i + 1];
            if (c % 2) o[c2 - 1] = (uint32_t)src[c - 1] << 16;
        }
    }
    memset(out + (size_t)n * c2, 0, (size_t)(rows - n) * c2 * sizeof(uint32_t));
}

/* the panels' rows 2k and 2k + 1 as rows of pairs (a zero row after an odd c), into sp */
static const uint32_t *pair_panels(const panels *P, uint32_t *sp)
{
    const int c = P->c, pw = P->pw;
    for (int p = 0; p < P->npanels; p++)
        for (int k = 0; k < P->c2; k++)
            for (int j = 0; j < pw; j++) {
                const float *col = P->s + (size_t)p * c * pw + j;
                sp[((size_t)p * P->c2 + k) * pw + j] = pair_of(col[(size_t)(2 * k) * pw], 2 * k + 1 < c ? col[(size_t)(2 * k + 1) * pw] : 0.f);
            }
    return sp;
}

/* The element offsets of the region's positions q0 .. q0+n-1 (row order) in their tensor, times c:
 * one division for the block, then steps along the row. */
static void block_offsets(const nst_tensor *t, nst_rect r, size_t q0, int n, size_t *off)
{
    int y = r.y + (int)(q0 / (size_t)r.w), x = r.x + (int)(q0 % (size_t)r.w);
    for (int k = 0; k < n; k++) {
        off[k] = ((size_t)y * t->w + x) * (size_t)t->c;
        if (++x == r.x + r.w) x = r.x, y++;
    }
}

/* n positions (offsets off) as fp32 rows of c (m_p f_p rounded to the dtype with a mask), zero
 * rows up to `rows`. bf is a constant where this is inlined, so each loop is compiled per dtype. */
static inline __attribute__((always_inline)) void pack_rows_dt(const nst_tensor *f, const size_t *off, const nst_tensor *m, int n, int rows,
                                                               float *a, int bf)
{
    const int c = f->c;
    for (int k = 0; k < n; k++) {
        size_t src = off[k];
        float *o = a + (size_t)k * c;
        if (m) {
            const float w = ((const float *)m->data)[src / (size_t)c];
            for (int i = 0; i < c; i++) o[i] = bf ? nst_bf16_round(w * cpu_ld(f->data, src + i, 1)) : w * cpu_ld(f->data, src + i, 0);
        } else {
            for (int i = 0; i < c; i++) o[i] = cpu_ld(f->data, src + i, bf);
        }
    }
    memset(a + (size_t)n * c, 0, (size_t)(rows - n) * c * sizeof(float));
}

/* (conversions and one rounded product each: the same bits at any vector width, target_clones) */
__attribute__((target_clones("avx512f", "avx2", "default"))) static void pack_rows(const nst_tensor *f, const size_t *off,
                                                                                 const nst_tensor *m, int n, int rows, int bf, float *a)
{
    if (bf)
        pack_rows_dt(f, off, m, n, rows, a, 1);
    else
        pack_rows_dt(f, off, m, n, rows, a, 0);
}

/* ---- dF += the tile, rounded once to the dtype ------------------------------------------------ */
/* Every path rounds dF[p][j] + out[j] as cpu_st does (nst_f32_to_bf16: to nearest even, NaN kept
 * quiet, subnormals to signed zero); the vector paths take 16 or 8 columns at a time and leave
 * the rest of a row (c not a multiple of 8) to the scalar loop. */

__attribute__((target("avx512f"))) static inline __m512i round_bf16_avx512(__m512 v)
{
    const __m512i u = _mm512_castps_si512(v), mag = _mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff));
    const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    __m512i r = _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), odd), 16);
    const __mmask16 nan = _mm512_cmpgt_epu32_mask(mag, _mm512_set1_epi32(0x7f800000));
    const __mmask16 sub = _mm512_cmplt_epu32_mask(mag, _mm512_set1_epi32(0x00800000));
    r = _mm512_mask_mov_epi32(r, nan, _mm512_or_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40)));
    return _mm512_mask_mov_epi32(r, sub, _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x8000)));
}

__attribute__((target("avx512f"))) static int add_row_avx512(void *df, size_t o, const float *src, int nj, int bf)
{
    int j = 0;
    for (; j + 16 <= nj; j += 16) {
        const __m512 x = _mm512_loadu_ps(src + j);
        if (bf) {
            nst_bf16 *d = (nst_bf16 *)df + o + j;
            const __m512 y = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)d)), 16));
            _mm256_storeu_si256((__m256i *)d, _mm512_cvtepi32_epi16(round_bf16_avx512(_mm512_add_ps(y, x))));
        } else {
            float *d = (float *)df + o + j;
            _mm512_storeu_ps(d, _mm512_add_ps(_mm512_loadu_ps(d), x));
        }
    }
    return j;
}

__attribute__((target("avx2"))) static inline __m256i round_bf16_avx2(__m256 v)
{
    const __m256i u = _mm256_castps_si256(v), hi = _mm256_srli_epi32(u, 16);
    const __m256i mag = _mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff));
    const __m256i odd = _mm256_and_si256(hi, _mm256_set1_epi32(1));
    __m256i r = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), odd), 16);
    /* mag < 2^31: the signed compares order it as unsigned ones would */
    const __m256i nan = _mm256_cmpgt_epi32(mag, _mm256_set1_epi32(0x7f800000));
    const __m256i sub = _mm256_cmpgt_epi32(_mm256_set1_epi32(0x00800000), mag);
    r = _mm256_blendv_epi8(r, _mm256_or_si256(hi, _mm256_set1_epi32(0x40)), nan);
    return _mm256_blendv_epi8(r, _mm256_and_si256(hi, _mm256_set1_epi32(0x8000)), sub);
}

__attribute__((target("avx2"))) static int add_row_avx2(void *df, size_t o, const float *src, int nj, int bf)
{
    int j = 0;
    for (; j + 8 <= nj; j += 8) {
        const __m256 x = _mm256_loadu_ps(src + j);
        if (bf) {
            nst_bf16 *d = (nst_bf16 *)df + o + j;
            const __m256 y = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)d)), 16));
            const __m256i r = round_bf16_avx2(_mm256_add_ps(y, x));
            _mm_storeu_si128((__m128i *)d, _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1)));
        } else {
            float *d = (float *)df + o + j;
            _mm256_storeu_ps(d, _mm256_add_ps(_mm256_loadu_ps(d), x));
        }
    }
    return j;
}

/* dF at the n positions (offsets off) += out's rows, columns of panel p */
static void add_tile(nst_tensor *df, cpu_isa_level isa, const size_t *off, int n, int p, int pw, const float *out, int bf)
{
    const int c = df->c, j0 = p * pw, nj = c - j0 < pw ? c - j0 : pw;
    for (int k = 0; k < n; k++) {
        const size_t o = off[k] + (size_t)j0;
        const float *src = out + (size_t)k * pw;
        int j = isa >= CPU_ISA_AVX512 ? add_row_avx512(df->data, o, src, nj, bf) : isa == CPU_ISA_AVX2 ? add_row_avx2(df->data, o, src, nj, bf) : 0;
        for (; j < nj; j++) cpu_st(df->data, o + j, cpu_ld(df->data, o + j, bf) + src[j], bf);
    }
}

/* Ask for dF's lines of the next tile before its sums run: the add that follows would otherwise
 * wait on each row (a row group touches a row's columns of one panel, not the whole row). */
static inline void prefetch_tile(const nst_tensor *df, const size_t *off, int n, int j0, int pw, int bf)
{
    const int c = df->c, nj = c - j0 < pw ? c - j0 : pw, es = bf ? 2 : 4;
    for (int k = 0; k < n; k++) {
        const char *row = (const char *)df->data + (off[k] + (size_t)j0) * es;
        for (int b = 0; b < nj * es; b += 64) _mm_prefetch(row + b, _MM_HINT_T0);
    }
}

/* ---- one block ------------------------------------------------------------------------------- */

static void block(const panels *P, cpu_isa_level isa, const float *a, const uint32_t *ap, int n, nst_tensor *df, const size_t *off, int bf)
{
    const int R = isa >= CPU_ISA_AVX512 ? 8 : isa == CPU_ISA_AVX2 ? 6 : 1, c = P->c, pw = P->pw, c2 = P->c2;
    float out[8 * PW_MAX];
    for (int p = 0; p < P->npanels; p++) {
        const float *s = P->s + (size_t)p * c * pw;
        for (int k0 = 0; k0 < n; k0 += R) {
            const float *rows = a + (size_t)k0 * c;
            prefetch_tile(df, off + k0, n - k0 < R ? n - k0 : R, p * pw, pw, bf);
            if (isa == CPU_ISA_AVX512_BF16)
                micro_avx512bf16(ap + (size_t)k0 * c2, P->sp + (size_t)p * c2 * pw, c2, out);
            else if (isa == CPU_ISA_AVX512)
                micro_avx512(rows, s, c, out);
            else if (isa == CPU_ISA_AVX2)
                micro_avx2(rows, s, c, out);
            else
                micro_portable(rows, s, c, pw, out);
            add_tile(df, isa, off + k0, n - k0 < R ? n - k0 : R, p, pw, out, bf);
        }
    }
}

static nst_status scratch(cpu_impl *impl, size_t bytes, float **out)
{
    if (bytes > impl->scratch_cap) {
        nst_free(impl->scratch);
        impl->scratch = nst_alloc(bytes, "Gram backward scratch");
        impl->scratch_cap = impl->scratch ? bytes : 0;
        if (!impl->scratch) return NST_ENOMEM;
    }
    *out = impl->scratch;
    return NST_OK;
}

static nst_status backward(cpu_impl *impl, const nst_tensor *f, nst_rect seed, const nst_tensor *m, const float *d, float scale,
                           nst_tensor *df)
{
    const int bf = f->dt == NST_BF16;
    const cpu_isa_level isa = cpu_kernels_isa_for(f->dt);
    const int c = f->c, pw = isa >= CPU_ISA_AVX512 ? 32 : isa == CPU_ISA_AVX2 ? 16 : 8, pairs = isa == CPU_ISA_AVX512_BF16;
    const int threads = omp_get_max_threads();
    panels P = {c, pw, (c + pw - 1) / pw, NULL, (c + 1) / 2, NULL};
    /* 4-byte words: the panels, their pairs, and each thread's block (fp32 rows, or their pairs) */
    const size_t sfloats = (size_t)P.npanels * c * pw, spairs = pairs ? (size_t)P.npanels * P.c2 * pw : 0;
    const size_t per = (size_t)BLOCK * (pairs ? P.c2 : c);
    float *buf;
    NST_TRY(scratch(impl, (sfloats + spairs + per * (size_t)threads) * sizeof(float), &buf));
    pack_panels(d, scale, c, pw, bf, buf);
    P.s = buf;
    if (pairs) P.sp = pair_panels(&P, (uint32_t *)(buf + sfloats));
    const size_t npos = (size_t)nst_rect_area(seed), nblocks = (npos + BLOCK - 1) / BLOCK;
#pragma omp parallel num_threads(threads)
    {
        float *a = buf + sfloats + spairs + per * (size_t)omp_get_thread_num();
        uint32_t *ap = (uint32_t *)a;
#pragma omp for schedule(static)
        for (size_t b = 0; b < nblocks; b++) {
            size_t q0 = b * BLOCK;
            int n = npos - q0 < BLOCK ? (int)(npos - q0) : BLOCK;
            size_t off[BLOCK];
            block_offsets(f, seed, q0, n, off);
            if (pairs)
                pair_rows_bf16(f, off, m, n, BLOCK, ap);
            else
                pack_rows(f, off, m, n, BLOCK, bf, a);
            block(&P, isa, a, ap, n, df, off, bf);
        }
    }
    return NST_OK;
}

nst_status cpu_gram_backward(nst_backend *be, const nst_tensor *f, nst_rect seed, const nst_tensor *m, const float *d, float scale,
                             nst_tensor *df)
{
    NST_TRY(cpu_check_same_dt(f, df, "gram_backward"));
    NST_TRY(cpu_check_region(f, seed, "gram_backward"));
    NST_TRY(nst_tensor_check_mask(f, m, "gram_backward"));
    if (df->h != f->h || df->w != f->w || df->c != f->c)
        return nst_fail(NST_ERUNTIME, "gram_backward: gradient shape differs from the features");
    if (nst_rect_empty(seed)) return NST_OK;
    return backward(cpu_of(be), f, seed, m, d, scale, df);
}

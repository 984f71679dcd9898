/* tests/test_gram_fixed.c: the fixed-point Gram sums (kernels/cpu/gram_fixed_cpu.c) against an
 * exact integer truth, on every path of the backend's own kernels and thread counts, and the
 * property they exist for: the sums of a region in parts, in any order, equal the whole region's
 * bit for bit, also on data where the fp64 sums (gram_accumulate) do not.
 *
 * The truth: each value f = M 2^E (M an integer of at most 24 bits, from frexpf) and mask weight
 * m = W 2^-16, so K(p) = floor(m f_i f_j 2^(43 - 2e)) = floor(W M_i M_j 2^(E_i + E_j - 16 + 43 - 2e))
 * is a shift of an integer product, in __int128. */
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../kernels/backend.h"
#include "../kernels/cpu/cpu.h"
#include "../kernels/cpu/gram_blocks_cpu.h"
#include "../util/mem.h"
#include "kernel_paths.h"
#include "test.h"

static nst_backend *be;

/* floor(v 2^sh) for an integer v */
static __int128 shift_floor(__int128 v, int sh)
{
    if (sh >= 0) return v << sh;
    if (sh <= -126) return v < 0 ? -1 : 0;
    return v >> -sh; /* arithmetic: floor */
}

/* value = M 2^E exactly */
static void split(float v, int64_t *M, int *E)
{
    int ex;
    float fr = frexpf(v, &ex);
    *M = (int64_t)ldexpf(fr, 24);
    *E = ex - 24;
}

/* The exact sums of every entry (i, j), j >= i, over region r of v (h x w x c), mask weights mw
 * (or NULL): a c x c table, its upper triangle set. Each value is split once (the sums are of
 * integers, so their order does not matter). */
static __int128 *truths(const float *v, int w, int c, nst_rect r, const float *mw, int e)
{
    const size_t np = (size_t)r.w * r.h;
    int64_t *M = malloc(np * c * sizeof *M), *W = malloc(np * sizeof *W);
    int *E = malloc(np * c * sizeof *E);
    size_t p = 0;
    for (int y = r.y; y < r.y + r.h; y++)
        for (int x = r.x; x < r.x + r.w; x++, p++) {
            size_t at = (size_t)y * w + x;
            W[p] = mw ? (int64_t)ldexp(mw[at], 16) : 65536;
            for (int ch = 0; ch < c; ch++) split(v[at * c + ch], &M[ch * np + p], &E[ch * np + p]);
        }
    __int128 *t = calloc((size_t)c * c, sizeof *t);
    for (int i = 0; i < c; i++)
        for (int j = i; j < c; j++) {
            const int64_t *Mi = M + i * np, *Mj = M + j * np;
            const int *Ei = E + i * np, *Ej = E + j * np;
            __int128 s = 0;
            for (size_t q = 0; q < np; q++) s += shift_floor((__int128)W[q] * Mi[q] * Mj[q], Ei[q] + Ej[q] - 16 + 43 - 2 * e);
            t[(size_t)i * c + j] = s;
        }
    free(M), free(W), free(E);
    return t;
}

static __int128 value(const int64_t *acc, int c, int i, int j)
{
    const size_t at = (size_t)i * c + j;
    return (__int128)acc[(size_t)c * c + at] * ((__int128)1 << NST_GRAM_LO_BITS) + acc[at];
}

/* values in [lo, hi) (and a share of exact zeros, as after a ReLU), exactly representable in dt */
static void fill(float *v, size_t n, unsigned seed, float lo, float hi, int bf)
{
    srand(seed);
    for (size_t i = 0; i < n; i++) {
        float x = lo + (hi - lo) * (float)rand() / ((float)RAND_MAX + 1.f);
        if (rand() % 4 == 0) x = 0;
        if (rand() % 16 == 0) x *= 0x1p-30f; /* a wide range of magnitudes */
        v[i] = bf ? nst_bf16_to_f32(nst_f32_to_bf16(x)) : x;
        if (fabsf(v[i]) >= hi && hi > 0) v[i] = 0; /* rounding to bf16 may reach the bound */
    }
}

static nst_tensor upload(const float *v, int h, int w, int c, int bf)
{
    nst_tensor f;
    if (nst_tensor_alloc(be, h, w, c, bf ? NST_BF16 : NST_F32, &f) != NST_OK) exit(1);
    be->ops->upload(be, f.data, v, (size_t)h * w * c, f.dt);
    return f;
}

static int64_t *sums(const nst_tensor *f, nst_rect r, const nst_tensor *m, int e, int *emax)
{
    int64_t *acc = calloc(2 * (size_t)f->c * f->c, sizeof(int64_t));
    *emax = NST_GRAM_EMIN;
    nst_status s = be->ops->gram_fixed(be, f, r, m, e, acc, emax);
    CHECK(s == NST_OK, "gram_fixed: %s", nst_fail_message());
    return acc;
}

/* Every path and one thread against the truth: fp32 and bf16, signed and non-negative data, values
 * up to just under the bound (chains near their limit), with and without a mask, c at tile edges. */
static void t_fixed_sums_equal_the_exact_truth_on_every_path(void)
{
    /* c at tile edges: on AVX-512 the left half alone (3, 8, 24), both halves reading the rows'
     * padding (77), and the right half alone (77's last rows) */
    const int h = 19, w = 41, cs[] = {3, 8, 24, 64, 77}, e = 5;
    for (int k = 0; k < 5; k++)
        for (int bf = 0; bf < 2; bf++)
            for (int variant = 0; variant < 4; variant++) { /* non-negative, signed, masked, all near the bound */
                int c = cs[k];
                size_t n = (size_t)h * w * c;
                float *v = malloc(n * sizeof(float)), *mw = malloc((size_t)h * w * sizeof(float));
                fill(v, n, 70 + k * 8 + bf * 3 + variant, variant == 1 ? -32.f : 0.f, 32.f, bf);
                if (variant == 3) /* every product near 2^-8 after scaling: full chains reach about 1/2 */
                    for (size_t i = 0; i < n; i++) v[i] = bf ? 31.f - (float)(i % 7) * 0.125f : 32.f - 0x1p-19f * (float)(i % 97 + 1);
                for (int p = 0; p < h * w; p++) mw[p] = (float)(rand() % 65537) * 0x1p-16f;
                nst_tensor f = upload(v, h, w, c, bf), mt = {0};
                if (variant == 2) mt = upload(mw, h, w, 1, 0);
                nst_rect r = nst_rect_make(3, 2, w - 7, h - 4);
                __int128 *want = truths(v, w, c, r, variant == 2 ? mw : NULL, e);
                int saved = omp_get_max_threads(), wrong = 0, emax;
                for (int path = 0; path <= NPATHS; path++) {
                    if (path < NPATHS && !path_is_new(path, NST_F32)) continue;
                    set_path(path < NPATHS ? path : -1);
                    if (path == NPATHS) omp_set_num_threads(1);
                    int64_t *acc = sums(&f, r, variant == 2 ? &mt : NULL, e, &emax);
                    set_path(-1);
                    omp_set_num_threads(saved);
                    int differ = 0;
                    for (int i = 0; i < c; i++)
                        for (int j = i; j < c; j++)
                            differ += value(acc, c, i, j) != want[(size_t)i * c + j] ||
                                      acc[(size_t)i * c + j] < 0 || acc[(size_t)i * c + j] >= (1LL << NST_GRAM_LO_BITS);
                    CHECK(differ == 0, "c %d %s %s, %s: %d entries differ from the truth", c, bf ? "bf16" : "fp32",
                          variant == 0 ? "non-negative" : variant == 1 ? "signed" : variant == 2 ? "masked" : "near the bound",
                          path < NPATHS ? path_names[path] : "one thread", differ);
                    CHECK(emax <= e, "emax %d above the bound %d", emax, e);
                    wrong += differ;
                    free(acc);
                }
                nst_tensor_free(be, &f);
                if (variant == 2) nst_tensor_free(be, &mt);
                free(v), free(mw), free(want);
            }
}

/* Thread counts and the two ways of sharing the work (kernels/cpu/gram_fixed_cpu.c): up to 256
 * channels a region of at least two blocks per thread is split by positions, each thread summing
 * blocks of its own and the sums added at the end; otherwise the threads share each block's tiles.
 * Both, on 1 to 4 threads (3: blocks that do not share out evenly), on every path at 3 threads,
 * equal the truth; a value past the bound in the last block is reported on any thread count. */
static void t_every_thread_count_and_split_gives_the_truth(void)
{
    const struct { int c, h, w, bf, masked; } shape[] = {{16, 160, 150, 0, 0}, {64, 80, 100, 1, 0}, {77, 80, 100, 0, 1}, {300, 30, 40, 1, 0}};
    for (int k = 0; k < 4; k++) {
        const int c = shape[k].c, h = shape[k].h, w = shape[k].w, bf = shape[k].bf, e = 6;
        const size_t npos = (size_t)h * w, n = npos * c;
        const int split = c <= GB_SPLIT_MAX_C && npos >= 2 * 4 * (size_t)gb_block_positions(c);
        CHECK(split == (c <= 256), "c %d: the shape no longer tests the split it was chosen for", c);
        float *v = malloc(n * sizeof(float)), *mw = malloc(npos * sizeof(float));
        fill(v, n, 300 + k, -60.f, 60.f, bf);
        for (size_t p = 0; p < npos; p++) mw[p] = (float)(rand() % 65537) * 0x1p-16f;
        nst_tensor f = upload(v, h, w, c, bf), mt = {0};
        if (shape[k].masked) mt = upload(mw, h, w, 1, 0);
        const nst_tensor *m = shape[k].masked ? &mt : NULL;
        nst_rect r = nst_rect_make(0, 0, w, h);
        __int128 *want = truths(v, w, c, r, m ? mw : NULL, e);
        int saved = omp_get_max_threads(), emax;
        for (int threads = 1; threads <= 4; threads++)
            for (int path = threads == 3 ? 0 : NPATHS; path <= NPATHS; path++) {
                if (path < NPATHS && !path_is_new(path, NST_F32)) continue;
                omp_set_num_threads(threads);
                set_path(path < NPATHS ? path : -1);
                int64_t *acc = sums(&f, r, m, e, &emax);
                set_path(-1);
                int differ = 0;
                for (int i = 0; i < c; i++)
                    for (int j = i; j < c; j++) differ += value(acc, c, i, j) != want[(size_t)i * c + j];
                CHECK(differ == 0 && emax <= e, "c %d, split by %s, %d threads, %s: %d entries differ from the truth, emax %d", c,
                      split ? "positions" : "tiles", threads, path < NPATHS ? path_names[path] : "the best path", differ, emax);
                free(acc);
            }
        v[n - 1] = 64.f; /* 2^6 at the last position: needs e >= 7 */
        be->ops->upload(be, f.data, v, n, f.dt);
        for (int threads = 1; threads <= 4; threads++) {
            omp_set_num_threads(threads);
            free(sums(&f, r, m, e, &emax));
            CHECK(emax == 7, "c %d, %d threads: a value of 64 with e = 6 at the last position: emax %d, expected 7", c, threads, emax);
        }
        omp_set_num_threads(saved);
        nst_tensor_free(be, &f);
        if (m) nst_tensor_free(be, &mt);
        free(v), free(mw), free(want);
    }
}

/* The property: a region summed in parts (bands, columns, single positions), the parts in any
 * order and on separate accumulators (ranks) then added, equals the whole region's sums bit for
 * bit. The data mix one large value with many tiny ones, where fp64 sums depend on the order:
 * the test shows that they do here (so the property is not vacuous) and the fixed ones do not. */
static void t_parts_in_any_order_equal_the_whole(void)
{
    const int h = 24, w = 30, c = 32, e = 4;
    size_t n = (size_t)h * w * c, cc = (size_t)c * c;
    float *v = malloc(n * sizeof(float));
    fill(v, n, 90, 0.f, 16.f, 0);
    for (size_t i = 0; i < (size_t)c; i++) v[i] = 15.f;                           /* position (0, 0): large */
    for (size_t i = (size_t)c; i < n; i++) v[i] = v[i] * 0x1p-26f + 0x1p-26f; /* the rest: tiny */
    nst_tensor f = upload(v, h, w, c, 0);
    nst_rect whole = nst_rect_make(0, 0, w, h);
    int emax;
    int64_t *all = sums(&f, whole, NULL, e, &emax);
    double *g_all = calloc(cc, sizeof(double));
    be->ops->gram_accumulate(be, &f, whole, NULL, g_all);
    /* parts: bands of rows bottom-up, the top band as columns right to left, the first row alone */
    int64_t *rank[2] = {calloc(2 * cc, sizeof(int64_t)), calloc(2 * cc, sizeof(int64_t))};
    double *gr[2] = {calloc(cc, sizeof(double)), calloc(cc, sizeof(double))};
    int part = 0;
    for (int y1 = h; y1 > 1; y1 -= 5, part++) { /* rows 1.. in bands of 5, bottom-up */
        int y0 = y1 - 5 < 1 ? 1 : y1 - 5;
        nst_rect r = nst_rect_make(0, y0, w, y1 - y0);
        be->ops->gram_fixed(be, &f, r, NULL, e, rank[part % 2], &emax);
        be->ops->gram_accumulate(be, &f, r, NULL, gr[part % 2]);
    }
    for (int x = w - 1; x >= 0; x--, part++) { /* row 0, one position at a time, right to left */
        nst_rect r = nst_rect_make(x, 0, 1, 1);
        be->ops->gram_fixed(be, &f, r, NULL, e, rank[part % 2], &emax);
        be->ops->gram_accumulate(be, &f, r, NULL, gr[part % 2]);
    }
    int differ_fixed = 0, differ_fp64 = 0;
    for (int i = 0; i < c; i++)
        for (int j = i; j < c; j++) {
            __int128 s = value(rank[0], c, i, j) + value(rank[1], c, i, j);
            differ_fixed += s != value(all, c, i, j);
            differ_fp64 += gr[0][i * c + j] + gr[1][i * c + j] != g_all[i * c + j];
        }
    CHECK(differ_fp64 > 0, "the data were meant to make fp64 sums depend on the order; none did");
    CHECK(differ_fixed == 0, "%d of %d entries differ between the parts and the whole", differ_fixed, c * (c + 1) / 2);
    printf("    parts against the whole: fixed point %d entries differ, fp64 %d of %d\n", differ_fixed, differ_fp64, c * (c + 1) / 2);
    nst_tensor_free(be, &f);
    free(v), free(all), free(g_all), free(rank[0]), free(rank[1]), free(gr[0]), free(gr[1]);
}

/* A long region: 1500 x 1500 positions (more than 2^21) of values all at +-63.75, just under the
 * bound 2^6, so that every integer K(p) is within 0.03 % of 2^43, the largest there is: the sums
 * pass 2^63, and lo (which the tiles add to between folds) would wrap without the folds
 * every 2^19 positions, on one thread (the threads share tiles) and on two and three (each has
 * more than 2^19 positions of its own). Each entry's truth is the count times +-K. */
static void t_long_regions_fold_before_they_overflow(void)
{
    const int h = 1500, w = 1500, c = 16, e = 6;
    const size_t npos = (size_t)h * w, n = npos * c;
    float *v = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) v[i] = i % c % 3 == 0 ? -63.75f : 63.75f; /* exact in bf16 */
    nst_tensor f = upload(v, h, w, c, 1);
    nst_rect r = nst_rect_make(0, 0, w, h);
    const __int128 K = (__int128)4064 * ((__int128)1 << 31) + ((__int128)1 << 27); /* 63.75^2 2^-20 2^51 */
    int saved = omp_get_max_threads();
    for (int threads = 1; threads <= 3; threads++)
        for (int path = 0; path < (threads == 2 ? NPATHS : 1); path++) {
            if (!path_is_new(path, NST_F32)) continue;
            omp_set_num_threads(threads);
            set_path(path ? path : -1);
            int emax;
            int64_t *acc = sums(&f, r, NULL, e, &emax);
            set_path(-1);
            int differ = 0, lo_out = 0;
            for (int i = 0; i < c; i++)
                for (int j = i; j < c; j++) {
                    const __int128 want = (__int128)npos * ((i % 3 == 0) == (j % 3 == 0) ? K : -K);
                    differ += value(acc, c, i, j) != want;
                    lo_out += acc[(size_t)i * c + j] < 0 || acc[(size_t)i * c + j] >= (1LL << NST_GRAM_LO_BITS);
                }
            CHECK(differ == 0 && lo_out == 0 && emax == e, "%zu positions at +-63.75, %d threads, %s: %d entries differ, %d lo out of [0, 2^40), emax %d",
                  npos, threads, path ? path_names[path] : "the best path", differ, lo_out, emax);
            free(acc);
        }
    omp_set_num_threads(saved);
    nst_tensor_free(be, &f);
    free(v);
}

/* The bound: *emax is the smallest k with every |f| < 2^k; a value at 2^e (or above) makes emax
 * exceed e; all zeros give NST_GRAM_EMIN; a NaN, an infinity or a mask weight outside [0, 1] give
 * NST_GRAM_ENONFINITE; summing again with e = emax gives the truth. */
static void t_bound_is_reported(void)
{
    const int h = 6, w = 7, c = 16;
    size_t n = (size_t)h * w * c;
    float *v = calloc(n, sizeof(float));
    nst_tensor f = upload(v, h, w, c, 0);
    nst_rect r = nst_rect_make(0, 0, w, h);
    int emax;
    free(sums(&f, r, NULL, 0, &emax));
    CHECK(emax == NST_GRAM_EMIN, "all zeros: emax %d", emax);
    fill(v, n, 5, 0.f, 3.f, 0);
    v[17] = 8.f; /* 2^3: needs e >= 4 */
    be->ops->upload(be, f.data, v, n, NST_F32);
    free(sums(&f, r, NULL, 3, &emax));
    CHECK(emax == 4, "a value of 8 with e = 3: emax %d, expected 4", emax);
    int64_t *acc = sums(&f, r, NULL, emax, &emax);
    __int128 *want = truths(v, w, c, r, NULL, 4);
    int differ = 0;
    for (int i = 0; i < c; i++)
        for (int j = i; j < c; j++) differ += value(acc, c, i, j) != want[(size_t)i * c + j];
    free(want);
    CHECK(differ == 0 && emax == 4, "summed again at e = 4: %d entries differ, emax %d", differ, emax);
    free(acc);
    v[40] = NAN;
    be->ops->upload(be, f.data, v, n, NST_F32);
    free(sums(&f, r, NULL, 4, &emax));
    CHECK(emax == NST_GRAM_ENONFINITE, "a NaN: emax %d", emax);
    v[40] = 1;
    be->ops->upload(be, f.data, v, n, NST_F32);
    float *mw = malloc((size_t)h * w * sizeof(float));
    for (int p = 0; p < h * w; p++) mw[p] = 1;
    mw[5] = 1.5f;
    nst_tensor mt = upload(mw, h, w, 1, 0);
    free(sums(&f, r, &mt, 4, &emax));
    CHECK(emax == NST_GRAM_ENONFINITE, "a mask weight of 1.5: emax %d", emax);
    nst_tensor_free(be, &mt);
    nst_tensor_free(be, &f);
    free(v), free(mw);
}

int main(void)
{
    if (nst_backend_open("cpu", 0, &be) != NST_OK) {
        printf("cannot open the CPU backend: %s\n", nst_fail_message());
        return 1;
    }
    printf("test_gram_fixed: %s; own kernels: %s\n", be->description, cpu_isa_level_name(cpu_kernels_isa()));
    RUN(t_fixed_sums_equal_the_exact_truth_on_every_path);
    RUN(t_every_thread_count_and_split_gives_the_truth);
    RUN(t_parts_in_any_order_equal_the_whole);
    RUN(t_bound_is_reported);
    RUN(t_long_regions_fold_before_they_overflow);
    nst_backend_close(be);
    return test_report("test_gram_fixed");
}

/* tests/test_optim.c: the optimisers' parts that need no network.
 * - the stopping rule (nst/optimise/stop.h): a flat loss stops at the minimum, not before; a loss
 *   falling by a fixed fraction per iteration stops exactly when a window's mean falls less than
 *   the tolerance, computed here from the rule's definition; a single spike cannot end a level
 *   while it is in either window; a NaN never does; the rule is off at tolerance 0; its history restored mid-level decides as
 *   the uninterrupted one;
 * - the box ops of the CPU backend (box_hold, box_step) against their definitions, on values at,
 *   inside and outside the bounds;
 * - projected L-BFGS (nst/optimise/lbfgs.h) on a separable quadratic whose minimum lies partly
 *   outside [0, 1]: it ends at the projection of the minimum (within 1e-5), never leaves the box,
 *   and the same problem split into 3 "tiles" takes bit for bit the same steps as 1; without the
 *   box it leaves [0, 1] (the case the written image used to differ from the reported one). */
#include "../kernels/backend.h"
#include "../nst/optimise/lbfgs.h"
#include "../nst/optimise/stop.h"
#include "test.h"

/* Feed n values v(i) to a rule; the iteration at which it fires, or -1. */
static long long fire_at(nst_stop *s, long long n, double (*v)(long long, double), double a)
{
    for (long long i = 0; i < n; i++)
        if (nst_stop_feed(s, v(i, a))) return i;
    return -1;
}

static double flat(long long i, double a) { return (void)i, a; }
static double geometric(long long i, double r) { return 100.0 * pow(1.0 - r, (double)i); }
static double spiky(long long i, double a) { return i == 60 ? a * 1e6 : 10.0 - 1e-9 * (double)i; }
static double nan_after(long long i, double a) { return i >= 30 ? NAN : a; }
static double harmonic(long long i, double a) { return 100.0 / (1.0 + (double)i / a); }

static void t_flat_stops_at_the_minimum(void)
{
    nst_stop s;
    CHECK(nst_stop_init(&s, 0.01, 10, 50) == NST_OK, "init");
    long long at = fire_at(&s, 1000, flat, 3.0);
    CHECK(at == 50, "a flat loss stops at iteration %lld, expected 50 (stop_min, the steps taken)", at);
    nst_stop_free(&s);
    CHECK(nst_stop_init(&s, 0.01, 40, 10) == NST_OK, "init");
    at = fire_at(&s, 1000, flat, 3.0);
    CHECK(at == 79, "with two windows of 40 longer than stop_min: %lld, expected 79 (80 losses)", at);
    nst_stop_free(&s);
}

/* With a loss falling by r per iteration, the later window's mean is (1-r)^W of the earlier's:
 * the relative drop is 1 - (1-r)^W, the same at every iteration. Below the tolerance it fires at
 * the first chance; above, never. */
static void t_geometric_follows_the_definition(void)
{
    const int W = 20;
    const double tol = 0.05;
    const double r_slow = 1 - pow(1 - tol, 1.0 / W) - 1e-4, r_fast = 1 - pow(1 - tol, 1.0 / W) + 1e-4;
    nst_stop s;
    nst_stop_init(&s, tol, W, 0);
    long long at = fire_at(&s, 2000, geometric, r_slow);
    CHECK(at == 2 * W - 1, "drop %.5f per window (below %.2f) fires at %lld, expected %d", 1 - pow(1 - r_slow, W), tol, at, 2 * W - 1);
    nst_stop_free(&s);
    nst_stop_init(&s, tol, W, 0);
    at = fire_at(&s, 2000, geometric, r_fast);
    CHECK(at == -1, "drop %.5f per window (above %.2f) fired at %lld", 1 - pow(1 - r_fast, W), tol, at);
    nst_stop_free(&s);
}

static void t_one_spike_cannot_stop_a_falling_loss(void)
{
    nst_stop s;
    nst_stop_init(&s, 0.5, 10, 0); /* a spike of 1e6x in one window: the later window rises, the earlier falls */
    long long at = fire_at(&s, 200, spiky, 10.0);
    CHECK(at == 19, "a nearly flat loss stops at the first chance, %lld", at);
    nst_stop_free(&s);
    nst_stop_init(&s, 0.5, 10, 61); /* may fire only after the spike has entered the later window */
    at = fire_at(&s, 200, spiky, 10.0);
    CHECK(at == 80, "while the spike is in a window, the means differ by far more than the tolerance: fired at %lld, expected 80 "
          "(when the spike has left both windows)", at);
    nst_stop_free(&s);
}

static void t_nan_and_off(void)
{
    nst_stop s;
    nst_stop_init(&s, 0.5, 5, 0);
    long long at = fire_at(&s, 30, flat, 1.0);
    CHECK(at == 9, "flat: %lld", at);
    nst_stop_free(&s);
    nst_stop_init(&s, 0.5, 5, 20);
    at = fire_at(&s, 500, nan_after, 1.0);
    CHECK(at == 20, "a flat loss fires at 20 before the NaNs begin (at %lld)", at);
    nst_stop_free(&s);
    nst_stop_init(&s, 0.5, 5, 40);
    at = fire_at(&s, 500, nan_after, 1.0);
    CHECK(at == -1, "a NaN loss fired the rule at %lld", at);
    nst_stop_free(&s);
    nst_stop_init(&s, 0, 5, 0);
    CHECK(s.ring == NULL && fire_at(&s, 500, flat, 1.0) == -1, "tolerance 0: off");
    nst_stop_free(&s);
}

/* The history copied at iteration k (what a checkpoint keeps) into a new rule: it fires where
 * the uninterrupted one does (a loss whose drop per window shrinks, so that it fires late). */
static void t_restored_history_decides_the_same(void)
{
    const double r = 10;
    nst_stop a, b;
    nst_stop_init(&a, 0.05, 25, 0);
    long long ref = fire_at(&a, 5000, harmonic, r);
    nst_stop_free(&a);
    for (long long k = 1; ref > 0 && k < ref; k += 37) {
        nst_stop_init(&a, 0.05, 25, 0);
        for (long long i = 0; i < k; i++) nst_stop_feed(&a, harmonic(i, r));
        nst_stop_init(&b, 0.05, 25, 0);
        memcpy(b.ring, a.ring, sizeof(double) * 50);
        b.seen = a.seen;
        long long at = -1;
        for (long long i = k; i < 5000 && at < 0; i++)
            if (nst_stop_feed(&b, harmonic(i, r))) at = i;
        CHECK(at == ref, "restored at %lld: fired at %lld, uninterrupted at %lld", k, at, ref);
        nst_stop_free(&a), nst_stop_free(&b);
    }
    CHECK(ref > 300, "the reference fired at %lld (about W / tolerance - a = 490 expected)", ref);
}

/* ---- exact sums ------------------------------------------------------------------------------- */

static uint64_t xrng = 88172645463325252ull;
static uint64_t next_u64(void) { xrng ^= xrng << 13, xrng ^= xrng >> 7, xrng ^= xrng << 17; return xrng; }
/* a double of random sign, mantissa and exponent in [lo, hi) */
static double wide(int lo, int hi)
{
    double m = (double)(next_u64() >> 11) / 9007199254740992.0 + 0.5;
    return ldexp(next_u64() & 1 ? -m : m, lo + (int)(next_u64() % (uint64_t)(hi - lo)));
}

static void t_xsum_exact(void)
{
    enum { N = 20000 };
    static double v[N];
    nst_xsum a, b, c, d;
    nst_xsum_zero(&a);
    __int128 exact = 0; /* integers below 2^50: their sum is exact in __int128 */
    for (int i = 0; i < N; i++) {
        v[i] = (double)((int64_t)(next_u64() >> 14) - ((int64_t)1 << 49));
        exact += (__int128)v[i];
        nst_xsum_add(&a, v[i]);
    }
    CHECK(nst_xsum_value(&a) == (double)exact, "integers: %.17g, exactly %.17g", nst_xsum_value(&a), (double)exact);
    /* any order, any split: the same integer, the same double */
    for (int i = 0; i < N; i++) v[i] = wide(-1074, 1000);
    nst_xsum_zero(&a), nst_xsum_zero(&b), nst_xsum_zero(&c), nst_xsum_zero(&d);
    for (int i = 0; i < N; i++) nst_xsum_add(&a, v[i]);
    for (int i = N - 1; i >= 0; i--) nst_xsum_add(i % 3 ? &b : &c, v[i]);
    nst_xsum_merge(&c, &b);
    nst_xsum_normalize(&a), nst_xsum_normalize(&c);
    CHECK(memcmp(a.limb, c.limb, sizeof a.limb) == 0 && nst_xsum_value(&a) == nst_xsum_value(&c), "reversed and split in two: %.17g vs %.17g",
          nst_xsum_value(&a), nst_xsum_value(&c));
    for (int i = 0; i < N; i++) nst_xsum_add(&d, -v[i]);
    nst_xsum_merge(&d, &a);
    CHECK(nst_xsum_value(&d) == 0, "x - x over 2098 binades: %.17g", nst_xsum_value(&d));
    /* cancellation, and a negative sum */
    nst_xsum_zero(&a);
    nst_xsum_add(&a, 1e300), nst_xsum_add(&a, 1.0), nst_xsum_add(&a, -1e300), nst_xsum_add(&a, 0x1p-1074);
    CHECK(nst_xsum_value(&a) == 1.0, "1e300 + 1 - 1e300 + 2^-1074: %.17g", nst_xsum_value(&a));
    nst_xsum_zero(&a);
    nst_xsum_add(&a, -1.5), nst_xsum_add(&a, 0.25), nst_xsum_add(&a, -0x1p-60);
    CHECK(nst_xsum_value(&a) == -1.25 - 0x1p-60, "-1.5 + 0.25 - 2^-60: %.17g", nst_xsum_value(&a));
    nst_xsum_add(&a, NAN);
    CHECK(isnan(nst_xsum_value(&a)), "a NaN added reads NaN");
    /* the 64-bit limb split (kernels/xsum_core.h, shared with the CUDA kernels) against 128-bit
     * shifts, every exponent */
    int bad = 0;
    for (int i = 0; i < N && !bad; i++) {
        double x = wide(-1074, 1024);
        uint64_t bits;
        memcpy(&bits, &x, sizeof bits);
        nst_xsum_zero(&a);
        nst_xsum_add(&a, x);
        int field = (int)((bits >> 52) & 0x7ff), p = (field ? field : 1) - 1075 - NST_XSUM_BASE;
        uint64_t m = (bits & ((1ULL << 52) - 1)) | (field ? 1ULL << 52 : 0);
        unsigned __int128 w = (unsigned __int128)m << (p & 31);
        int64_t want[3] = {(int64_t)(w & 0xffffffffu), (int64_t)((w >> 32) & 0xffffffffu), (int64_t)(w >> 64)};
        for (int k = 0; k < 3; k++) bad |= a.limb[(p >> 5) + k] != (x < 0 ? -want[k] : want[k]);
    }
    CHECK(!bad, "the 64-bit limb split equals the 128-bit shift over every binade");
}

/* dot_exact over a 37 x 6 image: the whole against tiles cut at multiples of the runs (4 px) and at
 * any row, on 1 and 3 threads: the same bits. */
static void t_dot_exact_on_tiles(void)
{
    nst_backend *be = NULL;
    if (nst_backend_open("cpu", 3, &be) != NST_OK) SKIP("no CPU backend: %s", nst_fail_message());
    enum { W = 37, H = 6, SEG = 4 };
    static float a[W * H * 3], b[W * H * 3], ta[W * H * 3], tb[W * H * 3];
    for (int i = 0; i < W * H * 3; i++) a[i] = (float)wide(-30, 30), b[i] = (float)wide(-30, 30);
    nst_xsum whole, tiled;
    nst_xsum_zero(&whole), nst_xsum_zero(&tiled);
    be->ops->dot_exact(be, a, b, W, H, SEG, &whole);
    const int xs[] = {0, 12, 20, W}, ys[] = {0, 1, 4, H};
    for (int ty = 0; ty < 3; ty++)
        for (int tx = 0; tx < 3; tx++) { /* the tile's rows, packed as a tile's core is */
            int w = xs[tx + 1] - xs[tx], h = ys[ty + 1] - ys[ty], k = 0;
            for (int y = ys[ty]; y < ys[ty + 1]; y++)
                for (int x = xs[tx]; x < xs[tx + 1]; x++)
                    for (int c = 0; c < 3; c++, k++) ta[k] = a[(y * W + x) * 3 + c], tb[k] = b[(y * W + x) * 3 + c];
            be->ops->dot_exact(be, ta, tb, w, h, SEG, &tiled);
        }
    double vw = nst_xsum_value(&whole), vt = nst_xsum_value(&tiled);
    CHECK(vw == vt, "9 tiles %.17g, whole %.17g", vt, vw);
    double plain = 0;
    for (int i = 0; i < W * H * 3; i++) plain += (double)a[i] * b[i];
    CHECK(fabs(vw - plain) <= 1e-12 * fabs(plain) + 1e-300, "the exact dot %.17g, a plain double sum %.17g", vw, plain);
    nst_backend_close(be);
}

/* ---- the box ops ---------------------------------------------------------------------------- */

static void t_box_ops(void)
{
    nst_backend *be = NULL;
    if (nst_backend_open("cpu", 1, &be) != NST_OK) SKIP("no CPU backend: %s", nst_fail_message());
    float x[] = {0.f, 0.f, 1.f, 1.f, 0.5f, 0.f, 1.f, 0.25f};
    float g[] = {1.f, -1.f, -1.f, 1.f, 1.f, 0.f, 0.f, -3.f};
    float v[8], d[8], x2[8];
    for (int i = 0; i < 8; i++) v[i] = 10.f + (float)i;
    be->ops->box_hold(be, v, x, g, 8);
    const int held[] = {1, 0, 1, 0, 0, 0, 0, 0};
    for (int i = 0; i < 8; i++)
        CHECK(v[i] == (held[i] ? 0.f : 10.f + (float)i), "box_hold %d (x %g g %g): %g", i, x[i], g[i], v[i]);
    const float dir[] = {-1.f, 2.f, 0.5f, -0.25f, 2.f, -0.1f, 0.1f, 0.5f};
    for (int i = 0; i < 8; i++) d[i] = dir[i], x2[i] = x[i];
    be->ops->box_step(be, x2, d, 8, 0.5f);
    for (int i = 0; i < 8; i++) {
        float want = x[i] + 0.5f * dir[i];
        want = want < 0.f ? 0.f : want > 1.f ? 1.f : want;
        CHECK(x2[i] == want && d[i] == want - x[i], "box_step %d: x %g d %g, want %g and %g", i, x2[i], d[i], want, want - x[i]);
    }
    nst_backend_close(be);
}

/* ---- projected L-BFGS -------------------------------------------------------------------------- */

/* f(x) = sum w_i (x_i - c_i)^2: c partly below 0 and above 1, w spread over two decades. */
#define NQ 603 /* 3 tiles of 67 pixels */
static float qc[NQ], qw[NQ];

static void quadratic_setup(void)
{
    for (int i = 0; i < NQ; i++) {
        qc[i] = -0.4f + 1.8f * (float)((i * 37) % NQ) / NQ;
        qw[i] = 0.1f + 10.f * (float)((i * 53) % NQ) / NQ;
    }
}

/* n L-BFGS steps over `tiles` equal parts from x = 0.5; x gets the result. */
static void run_lbfgs(nst_backend *be, int box, int tiles, int steps, float *x)
{
    const int per = NQ / tiles;
    int index[8];
    size_t n[8];
    float *xs[8], *gs[8];
    float g[NQ];
    for (int t = 0; t < tiles; t++) index[t] = t, n[t] = (size_t)per, xs[t] = x + t * per, gs[t] = g + t * per;
    nst_lbfgs L;
    nst_collectives none;
    memset(&none, 0, sizeof none);
    int w[8];
    for (int t = 0; t < tiles; t++) w[t] = per / 3; /* one row of per / 3 pixels a tile; runs of 1 pixel */
    CHECK(nst_lbfgs_init(&L, be, none, 5, 1.0, box, tiles, index, tiles, n, w, 1) == NST_OK, "init");
    for (int i = 0; i < NQ; i++) x[i] = 0.5f;
    for (int k = 0; k < steps; k++) {
        for (int i = 0; i < NQ; i++) g[i] = 2.f * qw[i] * (x[i] - qc[i]);
        CHECK(nst_lbfgs_step(&L, xs, gs, NST_OK) == NST_OK, "step %d", k);
    }
    nst_lbfgs_free(&L);
}

static void t_projected_lbfgs(void)
{
    nst_backend *be = NULL;
    if (nst_backend_open("cpu", 1, &be) != NST_OK) SKIP("no CPU backend: %s", nst_fail_message());
    quadratic_setup();
    float x1[NQ], x3[NQ], xf[NQ];
    run_lbfgs(be, 1, 1, 150, x1);
    run_lbfgs(be, 1, 3, 150, x3);
    run_lbfgs(be, 0, 1, 60, xf);
    double err = 0, outside = 0;
    int differ = 0;
    for (int i = 0; i < NQ; i++) {
        float want = qc[i] < 0.f ? 0.f : qc[i] > 1.f ? 1.f : qc[i];
        err = fmax(err, fabs(x1[i] - want));
        outside = fmax(outside, fmax(-x1[i], x1[i] - 1.f));
        differ += memcmp(&x1[i], &x3[i], sizeof(float)) != 0;
    }
    CHECK(err < 1e-5, "projected L-BFGS ends %.3g from the projected minimum", err);
    CHECK(outside <= 0, "a pixel left [0, 1] by %.3g", outside);
    CHECK(differ == 0, "3 tiles against 1: %d values differ", differ);
    double free_outside = 0;
    for (int i = 0; i < NQ; i++) free_outside = fmax(free_outside, fmax(-xf[i], xf[i] - 1.f));
    CHECK(free_outside > 0.1, "without the box the minimum lies outside [0, 1] (by %.3g): the case the box is for", free_outside);
    nst_backend_close(be);
}

int main(void)
{
    RUN(t_flat_stops_at_the_minimum);
    RUN(t_geometric_follows_the_definition);
    RUN(t_one_spike_cannot_stop_a_falling_loss);
    RUN(t_nan_and_off);
    RUN(t_restored_history_decides_the_same);
    RUN(t_xsum_exact);
    RUN(t_dot_exact_on_tiles);
    RUN(t_box_ops);
    RUN(t_projected_lbfgs);
    return test_report("test_optim");
}

/* tests/test.h: minimal test macros (redis/hdf5 style). A test is a function; CHECK records a
 * failure with file:line and continues; SKIP ends a test with a visible reason. Each binary ends
 * with "N passed, N failed, N skipped" (tests/run.sh adds them up) and exits non-zero on failure.
 *
 *   static void t_something(void) { CHECK(x == 1, "x = %d", x); }
 *   int main(void) { RUN(t_something); return test_report("name"); }
 */
#ifndef NST_TEST_H
#define NST_TEST_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int test_passed, test_failed, test_skipped, test_cur_fail __attribute__((unused)),
    test_cur_skip __attribute__((unused));
static const char *test_cur __attribute__((unused));

#define CHECK(cond, ...)                                                                          \
    do {                                                                                          \
        if (!(cond)) {                                                                            \
            if (test_cur_fail++ < 8) {                                                            \
                printf("    FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);                        \
                printf(__VA_ARGS__);                                                              \
                printf("\n");                                                                     \
            }                                                                                     \
        }                                                                                         \
    } while (0)

/* |a - b| <= tol * max(1, |b|) style checks */
#define CHECK_NEAR(a, b, tol, what)                                                               \
    CHECK(fabs((double)(a) - (double)(b)) <= (tol), "%s: %.9g vs %.9g (|diff| %.3g > %.3g)", what, (double)(a), \
          (double)(b), fabs((double)(a) - (double)(b)), (double)(tol))

#define SKIP(...)                                                                                 \
    do {                                                                                          \
        printf("    SKIP %s: ", test_cur);                                                        \
        printf(__VA_ARGS__);                                                                      \
        printf("\n");                                                                             \
        test_cur_skip = 1;                                                                        \
        return;                                                                                   \
    } while (0)

/* NST_TEST_ONLY=t_a,t_b runs those tests of a suite alone (tests/test_isa.sh below the machine's
 * level: only the tests whose paths the level changes). A listed name that no RUN of the suite
 * has is a failure at the report (the first 32 names are checked), so a renamed test cannot leave
 * a filtered run checking nothing. */
static unsigned test_only_seen __attribute__((unused));

/* the comma-separated list's item at p: its length in *len; the next item's start, or NULL */
static inline const char *test_only_item(const char *p, int *len)
{
    const char *end = strchr(p, ',');
    *len = end ? (int)(end - p) : (int)strlen(p);
    return end ? end + 1 : NULL;
}

static inline int test_selected(const char *name)
{
    const char *only = getenv("NST_TEST_ONLY");
    if (!only || !*only) return 1;
    int len, n = (int)strlen(name);
    for (int i = 0; only && *only; i++) {
        const char *item = only;
        only = test_only_item(only, &len);
        if (len == n && strncmp(item, name, (size_t)n) == 0) {
            if (i < 32) test_only_seen |= 1u << i;
            return 1;
        }
    }
    return 0;
}

/* the listed names no RUN had: each a failure */
static inline void test_only_report(void)
{
    const char *only = getenv("NST_TEST_ONLY");
    if (!only || !*only) return;
    int len;
    for (int i = 0; only && *only && i < 32; i++) {
        const char *item = only;
        only = test_only_item(only, &len);
        if (!(test_only_seen & 1u << i)) {
            printf("  FAIL NST_TEST_ONLY names %.*s, which no test of this suite has\n", len, item);
            test_failed++;
        }
    }
}

#define RUN(fn)                                                                                   \
    do {                                                                                          \
        if (!test_selected(#fn)) break;                                                           \
        test_cur = #fn;                                                                           \
        test_cur_fail = test_cur_skip = 0;                                                        \
        fn();                                                                                     \
        if (test_cur_skip) {                                                                      \
            test_skipped++;                                                                       \
        } else if (test_cur_fail) {                                                               \
            test_failed++;                                                                        \
            printf("  FAIL %s (%d checks failed)\n", #fn, test_cur_fail);                        \
        } else {                                                                                  \
            test_passed++;                                                                        \
            printf("  ok   %s\n", #fn);                                                           \
        }                                                                                         \
        fflush(stdout);                                                                           \
    } while (0)

static inline int test_report(const char *suite)
{
    test_only_report();
    printf("%s: %d passed, %d failed, %d skipped\n", suite, test_passed, test_failed, test_skipped);
    return test_failed ? 1 : 0;
}

/* A scratch directory: argv[1] when given (kept afterwards), else a new one under /tmp that
 * test_scratch_done removes. test_scratch(name) is a path in it (one static buffer: copy it
 * before asking for a second). */
static char test_dir[512];
static int test_dir_owned;

static inline int test_scratch_init(int argc, char **argv, const char *suite)
{
    char cmd[600];
    test_dir_owned = argc < 2;
    if (argc > 1)
        snprintf(test_dir, sizeof test_dir, "%s", argv[1]);
    else
        snprintf(test_dir, sizeof test_dir, "/tmp/nstbatch-%s-%ld", suite, (long)getpid());
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", test_dir);
    return system(cmd) == 0;
}

static inline const char *test_scratch(const char *name)
{
    static char p[1024];
    snprintf(p, sizeof p, "%s/%s", test_dir, name);
    return p;
}

static inline void test_scratch_done(void)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", test_dir);
    if (test_dir_owned && system(cmd) != 0) printf("could not remove %s\n", test_dir);
}

/* Deterministic test data: uniform in [lo, hi). */
static inline void test_fill(float *p, size_t n, unsigned seed, float lo, float hi)
{
    unsigned long long s = 0x9e3779b97f4a7c15ull * (seed + 1);
    for (size_t i = 0; i < n; i++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        p[i] = lo + (hi - lo) * (float)((s >> 40) * (1.0 / 16777216.0));
    }
}

/* max |a - b| / max(max |b|, floor): a relative error for whole arrays */
static inline double test_rel_err(const float *a, const float *b, size_t n, double floor)
{
    double md = 0, mb = floor;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]);
        if (d > md || d != d) md = d != d ? INFINITY : d;
        if (fabs(b[i]) > mb) mb = fabs(b[i]);
    }
    return md / mb;
}

#endif

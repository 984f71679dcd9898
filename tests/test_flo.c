/* tests/test_flo.c: the Middlebury .flo reader and writer (io/video/flo.h): a round trip bit for bit,
 * unknown flow as NaN, the bytes of a file written by hand (the format's definition, not our
 * writer), and every refusal with one line naming the file: a wrong tag, a corrupt or lying size,
 * truncation, trailing bytes, a size other than the frames', a size over the limit. */
#include <stdint.h>

#include "../io/video/flo.h"
#include "test.h"

/* A .flo of w x h made byte by byte: tag, sizes, then u = x + y / 8, v = -y (little-endian). */
static size_t by_hand(unsigned char *buf, int w, int h)
{
    memcpy(buf, "PIEH", 4);
    int32_t s[2] = {w, h};
    memcpy(buf + 4, s, 8); /* x86: little-endian already */
    size_t k = 12;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            float uv[2] = {(float)x + (float)y / 8, (float)-y};
            memcpy(buf + k, uv, 8);
            k += 8;
        }
    return k;
}

static void t_reads_the_format(void)
{
    unsigned char buf[12 + 5 * 3 * 8];
    size_t n = by_hand(buf, 5, 3);
    nst_flow f;
    CHECK(nst_flo_parse("hand.flo", buf, n, 0, 0, 1e6, &f) == NST_OK, "%s", nst_fail_message());
    CHECK(f.w == 5 && f.h == 3, "%dx%d", f.w, f.h);
    for (int y = 0; f.uv && y < 3; y++)
        for (int x = 0; x < 5; x++)
            CHECK(f.uv[2 * (y * 5 + x)] == (float)x + (float)y / 8 && f.uv[2 * (y * 5 + x) + 1] == (float)-y, "pixel %d,%d", x, y);
    nst_flow_free(&f);
}

static void t_round_trip(void)
{
    const char *path = test_scratch("rt.flo");
    float uv[2 * 4 * 2] = {0.5f, -1.25f, 1e-7f, 3e4f, NAN, 2, -0.0f, 7, 1, 1, 2, 2, 3, 3, 4, 4};
    nst_flow w = {4, 2, uv}, r;
    CHECK(nst_flo_write(path, &w) == NST_OK, "%s", nst_fail_message());
    CHECK(nst_flo_read(path, 4, 2, 0, &r) == NST_OK, "%s", nst_fail_message());
    for (int i = 0; r.uv && i < 16; i++) {
        if (i == 4 || i == 5) CHECK(isnan(r.uv[i]), "unknown flow at %d reads as NaN (%g)", i, r.uv[i]);
        else CHECK(memcmp(&r.uv[i], &uv[i], sizeof(float)) == 0, "value %d: %g against %g", i, r.uv[i], uv[i]);
    }
    nst_flow_free(&r);
}

/* fragment: what the one-line message must say */
static void refused(const char *what, const unsigned char *buf, size_t n, int ww, int wh, double maxpx, const char *fragment)
{
    nst_flow f;
    nst_fail_clear();
    nst_status s = nst_flo_parse("x.flo", buf, n, ww, wh, maxpx, &f);
    const char *m = nst_fail_message();
    CHECK(s == NST_EINPUT && f.uv == NULL, "%s: accepted", what);
    CHECK(strstr(m, fragment) && strstr(m, "x.flo") && !strchr(m, '\n'), "%s: message '%s' lacks '%s'", what, m, fragment);
}

static void t_refusals(void)
{
    static unsigned char buf[12 + 6 * 4 * 8 + 8];
    size_t n = by_hand(buf, 6, 4);
    refused("empty", buf, 0, 0, 0, 1e6, "not a Middlebury .flo file");
    refused("short header", buf, 7, 0, 0, 1e6, "not a Middlebury .flo file");
    refused("truncated", buf, n - 1, 0, 0, 1e6, "truncated: 203 bytes for a 6x4 flow, which takes 204");
    refused("trailing bytes", buf, n + 8, 0, 0, 1e6, "trailing bytes");
    refused("another size", buf, n, 8, 4, 1e6, "6x4 flow for 8x4 frames: give flow of the frames' size");
    refused("over the limit", buf, n, 0, 0, 20, "above the limit of 20 pixels");
    unsigned char bad[sizeof buf];
    memcpy(bad, buf, n);
    bad[0] = 'X';
    refused("wrong tag", bad, n, 0, 0, 1e6, "does not start with PIEH");
    memcpy(bad, buf, n);
    int32_t huge = 0x7fffffff;
    memcpy(bad + 4, &huge, 4);
    refused("a lying width", bad, n, 0, 0, 1e12, "corrupt .flo header");
    int32_t neg = -6;
    memcpy(bad + 4, &neg, 4);
    refused("a negative width", bad, n, 0, 0, 1e6, "corrupt .flo header");
    nst_flow f;
    nst_fail_clear();
    CHECK(nst_flo_read(test_scratch("none.flo"), 0, 0, 1e6, &f) == NST_EINPUT && strstr(nst_fail_message(), "cannot open"), "a missing file");
    nst_fail_clear();
}

int main(int argc, char **argv)
{
    if (!test_scratch_init(argc, argv, "test-flo")) return 1;
    RUN(t_reads_the_format);
    RUN(t_round_trip);
    RUN(t_refusals);
    test_scratch_done();
    return test_report("test_flo");
}

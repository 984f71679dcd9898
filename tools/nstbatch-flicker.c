/* tools/nstbatch-flicker.c: the temporal warping error of a clip, the flicker measure of video style
 * transfer, for any frames given their optical flow both ways (ground truth or estimated).
 *
 *   nstbatch-flicker FRAMES FWD BWD [--first N] [--count K]
 *   nstbatch-flicker FRAMES --dis ultrafast|fast|medium [--first N] [--count K]
 *   ... --maps MAPS    also a picture of each pair's error: MAPS (a pattern, .png) numbered i gets
 *                      |x - w(x')| averaged over the channels, x4, white where large, and dark blue
 *                      where the consistency weights leave the pixel out
 *
 * FRAMES, FWD and BWD are printf patterns (frame_%05d.png, fwd_%05d.flo, bwd_%05d.flo, as
 * tools/make_test_clip writes them): FWD of i is the flow from frame i to i + 1, BWD of i the flow
 * from frame i + 1 back to i. For every pair (i - 1, i) it warps frame i - 1 onto frame i along
 * BWD of i - 1 and prints both published normalisations of the error (flow/warp.h): Ruder et
 * al.'s mean over 3 x H x W under the consistency weights, and Lai et al.'s mean over the kept
 * pixels; then their means over the pairs. With --dis the flows are estimated both ways by OpenCV's
 * DIS (flow/dis.h) instead of read. Frames are read as [0, 1] RGB. Exit 2 for bad input. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../flow/dis.h"
#include "../flow/warp.h"
#include "../io/image/image.h"
#include "../util/mem.h"

static int usage(const char *why)
{
    fprintf(stderr, "nstbatch-flicker: error: %s (usage: nstbatch-flicker FRAMES (FWD BWD | --dis PRESET) [--first N] [--count K] [--maps MAPS])\n", why);
    return 2;
}

static int exists(const char *pattern, int i)
{
    char path[4200];
    snprintf(path, sizeof path, pattern, i);
    FILE *f = fopen(path, "rb");
    if (f) fclose(f);
    return f != NULL;
}

/* Pair (i - 1, i): its errors into *r; the flows read, or estimated by dis when it is given. */
/* The error picture of a pair (see the top): 4 |x - w| averaged over the channels, where kept. */
static nst_status write_map(const char *pattern, int i, const nst_image *cur, const float *warped, const unsigned char *valid, const float *c)
{
    char path[4200];
    snprintf(path, sizeof path, pattern, i);
    nst_image m;
    NST_TRY(nst_image_alloc(&m, cur->w, cur->h));
    for (size_t p = 0; p < (size_t)cur->w * cur->h; p++) {
        float e = 0;
        for (int k = 0; k < 3; k++) e += fabsf(cur->px[3 * p + k] - warped[3 * p + k]);
        e = 4 * e / 3;
        int kept = valid[p] && c[p] > 0;
        m.px[3 * p] = m.px[3 * p + 1] = kept ? e : 0;
        m.px[3 * p + 2] = kept ? e : 0.35f;
    }
    nst_status s = nst_image_write(path, &m, 8, 1, NULL);
    nst_image_free(&m);
    return s;
}

static nst_status pair(char **pat, nst_dis *dis, int i, const nst_image *prev, const nst_image *cur, nst_flicker *r, const char *maps)
{
    char fp[4200], bp[4200];
    nst_flow fwd = {0}, bwd = {0};
    nst_status s;
    if (dis) {
        s = nst_dis_flow(dis, prev->px, cur->px, cur->w, cur->h, &fwd);
        if (s == NST_OK) s = nst_dis_flow(dis, cur->px, prev->px, cur->w, cur->h, &bwd);
    } else {
        snprintf(fp, sizeof fp, pat[1], i - 1);
        snprintf(bp, sizeof bp, pat[2], i - 1);
        s = nst_flo_read(fp, cur->w, cur->h, 0, &fwd);
        if (s == NST_OK) s = nst_flo_read(bp, cur->w, cur->h, 0, &bwd);
    }
    size_t n = (size_t)cur->w * cur->h;
    float *warped = s == NST_OK ? nst_alloc_array(n * 3, sizeof(float), "a warped frame") : NULL;
    float *c = s == NST_OK ? nst_alloc_array(n, sizeof(float), "weights") : NULL;
    unsigned char *valid = s == NST_OK ? nst_alloc(n, "a mask") : NULL;
    if (s == NST_OK && (!warped || !c || !valid)) s = NST_ENOMEM;
    if (s == NST_OK) {
        nst_warp_backward(prev->px, &bwd, warped, valid);
        nst_flow_consistency(&fwd, &bwd, c);
        *r = nst_flicker_error(cur->px, warped, valid, c, cur->w, cur->h);
        if (maps) s = write_map(maps, i, cur, warped, valid, c);
    }
    nst_free(warped), nst_free(c), nst_free(valid);
    nst_flow_free(&fwd), nst_flow_free(&bwd);
    return s;
}

static nst_status read_frame(const char *pattern, int i, nst_image *img)
{
    char path[4200];
    snprintf(path, sizeof path, pattern, i);
    nst_read_limits lim = nst_default_limits(1000);
    return nst_image_read(path, &lim, img, NULL);
}

int main(int argc, char **argv)
{
    char *pat[3] = {0};
    const char *preset = NULL, *maps = NULL;
    int first = 0, count = -1, np = 0;
    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--dis") && a + 1 < argc) preset = argv[++a];
        else if (!strcmp(argv[a], "--first") && a + 1 < argc) first = atoi(argv[++a]);
        else if (!strcmp(argv[a], "--maps") && a + 1 < argc) maps = argv[++a];
        else if (!strcmp(argv[a], "--count") && a + 1 < argc) count = atoi(argv[++a]);
        else if (argv[a][0] == '-') return usage("unknown option, or an option without its value");
        else if (np < 3) pat[np++] = argv[a];
        else return usage("three patterns: FRAMES FWD BWD");
    }
    if (np != (preset ? 1 : 3))
        return usage(preset ? "with --dis, give FRAMES alone" : "give FRAMES, FWD and BWD as printf patterns (frame_%05d.png fwd_%05d.flo bwd_%05d.flo)");
    for (int k = 0; k < np; k++)
        if (!strstr(pat[k], "%")) return usage("each pattern needs a %d (or %05d) for the frame number");
    if (first < 0 || count == 0 || count < -1) return usage("--first N >= 0, --count K >= 1");
    nst_dis *dis = NULL;
    nst_status s = preset ? nst_dis_open(preset, &dis) : NST_OK;
    nst_image prev = {0}, cur = {0};
    if (s == NST_OK) s = read_frame(pat[0], first, &prev);
    double sr = 0, sl = 0;
    int pairs = 0;
    for (int i = first + 1; s == NST_OK && (count < 0 ? exists(pat[0], i) : i < first + count); i++) {
        s = read_frame(pat[0], i, &cur);
        if (s == NST_OK && (cur.w != prev.w || cur.h != prev.h))
            s = nst_fail(NST_EINPUT, "frame %d is %dx%d, frame %d %dx%d: the frames of a clip have one size", i, cur.w, cur.h, i - 1, prev.w, prev.h);
        nst_flicker r;
        if (s == NST_OK) s = pair(pat, dis, i, &prev, &cur, &r, maps);
        if (s == NST_OK) {
            printf("frame %5d: ruder %.6g  lai %.6g  kept %.1f %%\n", i, r.ruder, r.lai, 100 * r.kept);
            sr += r.ruder, sl += r.lai, pairs++;
        }
        nst_image_free(&prev);
        prev = cur;
        memset(&cur, 0, sizeof cur);
    }
    nst_image_free(&prev);
    nst_dis_close(dis);
    if (s != NST_OK) {
        fprintf(stderr, "nstbatch-flicker: error: %s\n", nst_fail_message());
        return s == NST_EINPUT ? 2 : 1;
    }
    if (!pairs) return usage("fewer than two frames");
    printf("mean over %d pairs: ruder %.6g  lai %.6g\n", pairs, sr / pairs, sl / pairs);
    return 0;
}

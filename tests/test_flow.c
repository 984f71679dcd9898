/* tests/test_flow.c: the video mode's flow arithmetic (flow/warp.h) on its own and on a clip with
 * exact motion (tools/make_test_clip, run by tests/test_flow.sh):
 * - a whole-pixel flow warps to a shift exactly; a half-pixel flow averages; a flow leaving the
 *   image, or unknown, is not valid;
 * - on the clip, frame 0 warped onto frame 1 along the exact backward flow equals frame 1 where
 *   the consistency weights keep it, up to 8-bit rounding and bilinear interpolation;
 * - the weights drop the true disocclusions (the clip's dis_ mask: the background the disc
 *   uncovers, what enters the image; at least 99 %: the published check has a tolerance) and
 *   keep nearly everything else;
 * - a frame whose brightness jumps shows a warping error far above the clip's own floor.
 *
 *   test_flow CLIP_DIR      (without it: the synthetic cases only) */
#include "../flow/dis.h"
#include "../flow/warp.h"
#include "../io/image/image.h"
#include "test.h"

static void t_synthetic(void)
{
    enum { W = 6, H = 5 };
    float img[W * H * 3], out[W * H * 3], uv[W * H * 2];
    unsigned char valid[W * H];
    for (int i = 0; i < W * H * 3; i++) img[i] = (float)(i % 17) / 16;
    nst_flow f = {W, H, uv};
    for (int i = 0; i < W * H; i++) uv[2 * i] = 1, uv[2 * i + 1] = -1; /* out(x, y) = img(x + 1, y - 1) */
    nst_warp_backward(img, &f, out, valid);
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            int in = x + 1 < W && y >= 1, i = y * W + x;
            CHECK(valid[i] == in, "(%d, %d) valid %d", x, y, valid[i]);
            if (in) CHECK(!memcmp(out + 3 * i, img + 3 * ((y - 1) * W + x + 1), 12), "(%d, %d) is the shifted pixel", x, y);
        }
    for (int i = 0; i < W * H; i++) uv[2 * i] = 0.5f, uv[2 * i + 1] = 0;
    uv[2 * 7] = NAN;
    nst_warp_backward(img, &f, out, valid);
    CHECK(fabsf(out[3 * 8] - 0.5f * (img[3 * 8] + img[3 * 9])) < 1e-6f, "half a pixel: the mean (%g)", out[3 * 8]);
    CHECK(!valid[7] && !valid[W - 1], "unknown flow and a target past the right edge are not valid");
    float c[W * H];
    for (int i = 0; i < W * H * 2; i++) uv[i] = 0;
    nst_flow_consistency(&f, &f, c);
    int ones = 0;
    for (int i = 0; i < W * H; i++) ones += c[i] == 1;
    CHECK(ones == W * H, "no motion: every weight 1 (%d of %d)", ones, W * H);
}

static const char *clip_dir;

static int load(const char *name, nst_image *img)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", clip_dir, name);
    nst_read_limits lim = nst_default_limits(100);
    return nst_image_read(path, &lim, img, NULL) == NST_OK;
}

static void t_clip(void)
{
    if (!clip_dir) SKIP("no clip given (tests/test_flow.sh makes them)");
    nst_image f0, f1, dis;
    nst_flow fwd, bwd;
    char fp[1200], bp[1200];
    snprintf(fp, sizeof fp, "%s/fwd_00000.flo", clip_dir);
    snprintf(bp, sizeof bp, "%s/bwd_00000.flo", clip_dir);
    if (!load("frame_00000.png", &f0) || !load("frame_00001.png", &f1) || !load("dis_00000.png", &dis) ||
        nst_flo_read(fp, f0.w, f0.h, 0, &fwd) != NST_OK || nst_flo_read(bp, f0.w, f0.h, 0, &bwd) != NST_OK) {
        CHECK(0, "the clip in %s: %s", clip_dir, nst_fail_message());
        return;
    }
    size_t n = (size_t)f0.w * f0.h;
    float *warped = malloc(n * 12), *c = malloc(n * 4);
    unsigned char *valid = malloc(n);
    nst_warp_backward(f0.px, &bwd, warped, valid);
    nst_flow_consistency(&fwd, &bwd, c);
    double worst = 0, caught = 0, truth = 0, kept = 0, rest = 0, far = 0, sum = 0;
    for (size_t i = 0; i < n; i++) {
        int disoccluded = dis.px[3 * i] > 0.5f;
        truth += disoccluded, caught += disoccluded && c[i] == 0;
        rest += !disoccluded, kept += !disoccluded && c[i] == 1;
        double d = 0;
        for (int ch = 0; c[i] == 1 && valid[i] && ch < 3; ch++)
            if (fabsf(warped[3 * i + ch] - f1.px[3 * i + ch]) > d) d = fabsf(warped[3 * i + ch] - f1.px[3 * i + ch]);
        worst = d > worst ? d : worst, far += d > 0.03, sum += d;
    }
    /* (next to the disc's edge, the bilinear footprint in frame 0 can still reach across it) */
    printf("    %s: frame 0 warped onto frame 1 where kept: mean %.4f, %.0f pixels off by more than 0.03 (max %.3f); disocclusions "
           "dropped %.0f of %.0f; others kept %.1f %%\n", clip_dir, sum / kept, far, worst, caught, truth, 100 * kept / rest);
    CHECK(sum / kept < 0.004 && far < 0.005 * kept, "frame 0 warped onto frame 1: mean %.4f, %.0f pixels off by more than 0.03", sum / kept, far);
    /* the check tolerates 0.5 px^2: where the uncovered background moves almost as the disc's
     * surface next to it did (rotation only: its rim's turn against the pan), a few pass it */
    CHECK(truth > 0 && caught >= 0.99 * truth, "the weights drop the disoccluded pixels (%.0f of %.0f)", caught, truth);
    CHECK(kept / rest > 0.95, "the weights keep %.1f %% of the others", 100 * kept / rest);
    nst_flicker floor = nst_flicker_error(f1.px, warped, valid, c, f1.w, f1.h);
    for (size_t i = 0; i < n * 3; i++) f1.px[i] = f1.px[i] * 0.9f + 0.05f; /* the brightness jumps */
    nst_flicker jump = nst_flicker_error(f1.px, warped, valid, c, f1.w, f1.h);
    printf("    warping error: the clip's floor ruder %.3g lai %.3g; with a brightness jump ruder %.3g lai %.3g\n", floor.ruder, floor.lai, jump.ruder,
           jump.lai);
    CHECK(jump.lai > 20 * floor.lai && jump.ruder > 20 * floor.ruder, "a flickering frame stands out");
    CHECK(fabs(floor.ruder * 3 * n - floor.lai * floor.kept * n) <= 1e-9 * floor.lai * n + 1e-12, "the two normalisations share one sum");
    free(warped), free(c), free(valid);
    nst_image_free(&f0), nst_image_free(&f1), nst_image_free(&dis), nst_flow_free(&fwd), nst_flow_free(&bwd);
}

/* OpenCV's DIS against the clip's exact flow: the mean endpoint error where frame 0's pixel stays
 * visible, and the same far from the disc's rim (DIS smooths across motion boundaries). */
static void t_dis(void)
{
    if (!clip_dir) SKIP("no clip given (tests/test_flow.sh makes them)");
#ifdef NST_HAVE_OPENCV /* built with OpenCV: DIS that does not load (the video plugin) is a failure */
    if (!nst_dis_available()) {
        nst_dis *d = NULL;
        nst_dis_open("medium", &d);
        CHECK(0, "built with OpenCV, and DIS does not load: %s", nst_fail_message());
        return;
    }
#else
    SKIP("built without OpenCV (libopencv-video-dev)");
#endif
    nst_image f0, f1, occ;
    nst_flow exact, est;
    char fp[1200];
    snprintf(fp, sizeof fp, "%s/fwd_00000.flo", clip_dir);
    if (!load("frame_00000.png", &f0) || !load("frame_00001.png", &f1) || !load("occ_00000.png", &occ) ||
        nst_flo_read(fp, f0.w, f0.h, 0, &exact) != NST_OK) {
        CHECK(0, "the clip in %s: %s", clip_dir, nst_fail_message());
        return;
    }
    nst_dis *d;
    CHECK(nst_dis_open("nonsense", &d) == NST_EINPUT && strstr(nst_fail_message(), "valid: ultrafast, fast, medium"), "a bad preset is refused");
    nst_fail_clear();
    if (nst_dis_open("medium", &d) != NST_OK || nst_dis_flow(d, f0.px, f1.px, f0.w, f0.h, &est) != NST_OK) {
        CHECK(0, "DIS: %s", nst_fail_message());
        return;
    }
    double epe = 0, n = 0, epe_in = 0, n_in = 0;
    for (int y = 0; y < f0.h; y++)
        for (int x = 0; x < f0.w; x++) {
            size_t i = (size_t)y * f0.w + x;
            if (occ.px[3 * i] > 0.5f) continue;
            double e = hypot(est.uv[2 * i] - exact.uv[2 * i], est.uv[2 * i + 1] - exact.uv[2 * i + 1]);
            epe += e, n++;
            int inner = x > 16 && y > 16 && x < f0.w - 16 && y < f0.h - 16;
            double ex = exact.uv[2 * i], ey = exact.uv[2 * i + 1];
            /* away from the rim: the exact flow is the same 8 px around */
            for (int dy = -8; inner && dy <= 8; dy += 8)
                for (int dx = -8; inner && dx <= 8; dx += 8) {
                    size_t j = (size_t)(y + dy) * f0.w + x + dx;
                    inner = fabs(exact.uv[2 * j] - ex) < 0.5 && fabs(exact.uv[2 * j + 1] - ey) < 0.5;
                }
            if (inner) epe_in += e, n_in++;
        }
    printf("    DIS medium against the exact flow: mean endpoint error %.3f px where visible, %.3f px away from the rim\n", epe / n, epe_in / n_in);
    CHECK(epe_in / n_in < 0.1 && epe / n < 0.3, "DIS's endpoint error: %.3f px away from the rim, %.3f px where visible", epe_in / n_in, epe / n);
    nst_dis_close(d);
    nst_flow_free(&est), nst_flow_free(&exact), nst_image_free(&f0), nst_image_free(&f1), nst_image_free(&occ);
}

int main(int argc, char **argv)
{
    clip_dir = argc > 1 ? argv[1] : NULL;
    RUN(t_synthetic);
    RUN(t_clip);
    RUN(t_dis);
    return test_report("test_flow");
}

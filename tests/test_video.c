/* tests/test_video.c: the video mode's arithmetic that needs no codec: shots and chunks and their
 * groups (video/plan.h), scene-cut signatures (video/cuts.h), and the temporal term's inputs
 * (video/temporal.h) on flows known exactly: a translation gives its warp, weight 1 where the
 * motion is followed and 0 where it leaves the frame; the long-term rule gives each pixel to its
 * nearest consistent frame; and the objective's temporal term (nst/optimise/objective.h) has the
 * gradient 2 lambda c (x - w) / (3 H W) and the same value over tiles as whole. */
#include "../video/cuts.h"
#include "../video/plan.h"
#include "../video/temporal.h"
#include "test.h"

static void t_plan_shots_and_chunks(void)
{
    long long cuts[] = {7, 3, 3, 0, 12, 99};
    nst_clip_plan p;
    CHECK(nst_clip_plan_make(12, cuts, 6, 0, &p) == NST_OK, "%s", nst_fail_message());
    CHECK(p.nshots == 3 && p.nunits == 3, "%d shots, %d units (cuts 3 and 7; 0 and the repeat add none, 12 and 99 are outside)",
          p.nshots, p.nunits);
    nst_clip_plan_free(&p);
    CHECK(nst_clip_plan_make(12, cuts, 3, 0, &p) == NST_OK, "plan");
    CHECK(p.nshots == 3 && p.unit[0].count == 3 && p.unit[1].start == 3 && p.unit[1].count == 4 && p.unit[2].start == 7 && p.unit[2].count == 5,
          "shots [0,3) [3,7) [7,12): got %d", p.nshots);
    nst_clip_plan_free(&p);
    CHECK(nst_clip_plan_make(10, NULL, 0, 4, &p) == NST_OK, "plan");
    CHECK(p.nshots == 1 && p.nunits == 3 && p.unit[2].start == 8 && p.unit[2].count == 2 && p.unit[2].shot == 0, "chunks of 4: %d units",
          p.nunits);
    int g[3];
    nst_clip_plan_assign(&p, 2, g);
    CHECK(g[0] == 0 && g[1] == 1 && g[2] == 0, "LPT: 4 -> 0, 4 -> 1, 2 -> 0 (got %d %d %d)", g[0], g[1], g[2]);
    nst_clip_plan_free(&p);
    CHECK(nst_clip_range_index(10, 4, 3) == 2 && nst_clip_range_index(4, 4, 3) == 0 && nst_clip_range_index(11, 4, 3) == 3, "range index");
}

/* A w x h frame: a smooth gradient, shifted by (dx, dy) (content moving right and down). */
static void scene(float *px, int w, int h, float dx, float dy, float tint)
{
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            float u = (x - dx) / w, v = (y - dy) / h;
            px[3 * (y * w + x)] = 0.2f + 0.5f * u;
            px[3 * (y * w + x) + 1] = 0.3f + 0.4f * v;
            px[3 * (y * w + x) + 2] = tint;
        }
}

static void t_cut_distance(void)
{
    enum { W = 40, H = 30 };
    static float a[W * H * 3], b[W * H * 3], c[W * H * 3];
    scene(a, W, H, 0, 0, 0.5f), scene(b, W, H, 2, 1, 0.5f), scene(c, W, H, 0, 0, 0.95f);
    nst_cut_signature sa, sb, sc;
    nst_cut_signature_of(a, W, H, &sa), nst_cut_signature_of(b, W, H, &sb), nst_cut_signature_of(c, W, H, &sc);
    double same = nst_cut_distance(&sa, &sa), moved = nst_cut_distance(&sa, &sb), cut = nst_cut_distance(&sa, &sc);
    CHECK(same == 0, "a frame against itself: %g", same);
    CHECK(moved < 0.15, "a small motion: %g", moved);
    CHECK(cut > 0.3 && cut <= 1, "another scene (blue 0.5 -> 0.95): %g", cut);
}

/* A uniform flow field. */
static void uniform(nst_flow *f, int w, int h, float u, float v)
{
    f->w = w, f->h = h;
    f->uv = malloc(sizeof(float) * 2 * w * h);
    for (int i = 0; i < w * h; i++) f->uv[2 * i] = u, f->uv[2 * i + 1] = v;
}

static void t_temporal_translation(void)
{
    enum { W = 24, H = 16 };
    static float prev[W * H * 3], cur[W * H * 3], target[W * H * 3], c[W * H], init[W * H * 3];
    for (int i = 0; i < W * H * 3; i++) prev[i] = (float)(i % 97) / 97.0f, cur[i] = 0.5f;
    nst_flow fwd, bwd; /* the scene moves 2 px right: a pixel at x came from x - 2 */
    uniform(&fwd, W, H, 2, 0), uniform(&bwd, W, H, -2, 0);
    nst_temporal_prev p = {1, prev, &fwd, &bwd};
    double kept;
    CHECK(nst_temporal_build(W, H, &p, 1, cur, target, c, init, &kept) == NST_OK, "%s", nst_fail_message());
    int bad = 0;
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            int i = y * W + x;
            if (x >= 2) { /* followed: the previous result from 2 px left, weight 1, and it starts there */
                for (int k = 0; k < 3; k++) bad += target[3 * i + k] != prev[3 * (i - 2) + k] || init[3 * i + k] != prev[3 * (i - 2) + k];
                bad += c[i] != 1;
            } else { /* came from outside the frame: no weight, the content starts there */
                bad += c[i] != 0;
                for (int k = 0; k < 3; k++) bad += init[3 * i + k] != cur[3 * i + k];
            }
        }
    CHECK(bad == 0, "%d values off the translation's warp", bad);
    CHECK_NEAR(kept, (double)(W - 2) / W, 1e-12, "share held");
    nst_flow_free(&fwd), nst_flow_free(&bwd);
}

static void t_temporal_long_term(void)
{
    enum { W = 20, H = 8 };
    static float r1[W * H * 3], r2[W * H * 3], cur[W * H * 3], target[W * H * 3], c[W * H], init[W * H * 3];
    for (int i = 0; i < W * H * 3; i++) r1[i] = 0.25f, r2[i] = 0.75f, cur[i] = 0.5f;
    nst_flow f1, b1, f2, b2; /* frame i-1 reaches only x >= 4, frame i-2 (static) everything */
    uniform(&f1, W, H, 4, 0), uniform(&b1, W, H, -4, 0), uniform(&f2, W, H, 0, 0), uniform(&b2, W, H, 0, 0);
    nst_temporal_prev p[2] = {{1, r1, &f1, &b1}, {2, r2, &f2, &b2}};
    CHECK(nst_temporal_build(W, H, p, 2, cur, target, c, init, NULL) == NST_OK, "%s", nst_fail_message());
    int bad = 0;
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            int i = y * W + x;
            float want = x >= 4 ? 0.25f : 0.75f; /* the nearest consistent frame holds the pixel, the other adds nothing */
            bad += c[i] != 1 || target[3 * i] != want;
        }
    CHECK(bad == 0, "%d pixels not held by their nearest consistent frame", bad);
    nst_flow_free(&f1), nst_flow_free(&b1), nst_flow_free(&f2), nst_flow_free(&b2);
}

int main(void)
{
    RUN(t_plan_shots_and_chunks);
    RUN(t_cut_distance);
    RUN(t_temporal_translation);
    RUN(t_temporal_long_term);
    return test_report("test_video");
}

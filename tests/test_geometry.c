/* tests/test_geometry.c: the layer table's derived geometry (stride, footprint, receptive field,
 * exact-gradient halo: the numbers of docs/DESIGN.md and docs/PERFORMANCE.md), rectangle algebra, and a
 * tile's own/seed regions. */
#include <stdio.h>
#include <string.h>

#include "../nst/plan/layout.h"
#include "../nst/optimise/objective.h"
#include "../nst/model/random_vgg.h"
#include "../nst/model/vgg.h"
#include "../tiler/rect.h"
#include "test.h"

static void t_vgg_footprints_match_the_published_table(void)
{
    /* layer, stride, overhang below (lo), receptive field, exact-gradient halo */
    const struct {
        const char *name;
        int stride, lo, hi, rf, halo;
    } want[] = {{"relu1_1", 1, 1, 1, 3, 2},       {"relu2_1", 2, 4, 5, 10, 8},     {"relu3_1", 4, 10, 13, 24, 22},
                {"relu4_1", 8, 30, 37, 68, 62},   {"relu4_2", 8, 38, 45, 84, 78}, {"relu5_1", 16, 70, 85, 156, 150},
                {"pool4", 16, 54, 69, 124, 0}};
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        int l = nst_vgg_find(want[i].name);
        CHECK(l >= 0, "%s not found", want[i].name);
        nst_footprint f = nst_vgg_footprint(l);
        CHECK(f.stride == want[i].stride && f.lo == want[i].lo && f.hi == want[i].hi,
              "%s: stride %d footprint [-%d, +%d]", want[i].name, f.stride, f.lo, f.hi);
        if (want[i].rf) CHECK(nst_vgg_receptive_field(l) == want[i].rf, "%s rf %d", want[i].name, nst_vgg_receptive_field(l));
        if (want[i].halo)
            CHECK(nst_vgg_gradient_halo(l) == want[i].halo, "%s halo %d", want[i].name, nst_vgg_gradient_halo(l));
    }
    CHECK(nst_vgg_find("conv3_1") == nst_vgg_find("relu3_1"), "conv and relu names share a layer");
    CHECK(nst_vgg_find("relu6_1") < 0 && nst_vgg_find("") < 0, "unknown names");
    CHECK(nst_vgg_conv_layer(12) == nst_vgg_find("conv5_1"), "conv index 12 is conv5_1");
}

/* The exact-gradient halo is the right one: by brute force over positions, every feature whose
 * footprint meets an aligned core lies within `halo` pixels of it, and some reach exactly that. */
static void t_gradient_halo_by_brute_force(void)
{
    const char *names[] = {"relu2_1", "relu4_2", "relu5_1"};
    for (int k = 0; k < 3; k++) {
        int l = nst_vgg_find(names[k]);
        nst_footprint f = nst_vgg_footprint(l);
        int c0 = 16 * 40, c1 = c0 + 64; /* core [c0, c1), aligned */
        int reach_lo = 0, reach_hi = 0;
        for (int j = (c0 - 400) / f.stride; j < (c1 + 400) / f.stride; j++) {
            int a = f.stride * j - f.lo, b = f.stride * j + f.hi; /* footprint of feature j */
            if (b < c0 || a > c1 - 1) continue;
            if (c0 - a > reach_lo) reach_lo = c0 - a;
            if (b - (c1 - 1) > reach_hi) reach_hi = b - (c1 - 1);
        }
        int halo = nst_vgg_gradient_halo(l);
        CHECK(halo == (reach_lo > reach_hi ? reach_lo : reach_hi), "%s: halo %d, brute force %d/%d", names[k], halo,
              reach_lo, reach_hi);
    }
}

static void t_rect_algebra(void)
{
    nst_rect a = {0, 0, 10, 8}, b = {5, 6, 10, 10};
    nst_rect i = nst_rect_intersect(a, b);
    CHECK(nst_rect_equal(i, nst_rect_make(5, 6, 5, 2)), "intersect %d %d %d %d", i.x, i.y, i.w, i.h);
    CHECK(nst_rect_empty(nst_rect_intersect(a, nst_rect_make(20, 0, 3, 3))), "disjoint");
    CHECK(nst_rect_contains(a, nst_rect_make(2, 2, 3, 3)) && !nst_rect_contains(a, b), "contains");
    CHECK(nst_rect_contains(a, nst_rect_make(50, 50, 0, 0)), "empty is contained");
    nst_rect g = nst_rect_grow(a, 3);
    CHECK(nst_rect_equal(g, nst_rect_make(-3, -3, 16, 14)), "grow");
    CHECK(nst_rect_area(nst_rect_grow(a, -6)) == 0, "shrink to nothing");
    nst_rect d = nst_rect_downscale_cover(nst_rect_make(-3, 5, 10, 3), 4);
    CHECK(nst_rect_equal(d, nst_rect_make(-1, 1, 3, 1)), "downscale %d %d %d %d", d.x, d.y, d.w, d.h);
    CHECK(nst_rect_area(nst_rect_make(3, 3, 100000, 100000)) == 10000000000LL, "64-bit area");
}

/* A whole-image tile owns and seeds every position of every layer, floor-pooled. */
static void t_whole_image_tile_regions(void)
{
    nst_backend *be;
    nst_weights w;
    nst_net net;
    nst_objective obj;
    nst_tile t;
    nst_loss_spec spec = {0};
    nst_collectives none = {0};
    CHECK(nst_backend_open("cpu", 0, &be) == NST_OK, "%s", nst_fail_message());
    nst_weights_random(&w, 1, 32);
    spec.nstyle = 1;
    spec.style[0] = nst_vgg_find("relu5_1");
    spec.style_layer_weight[0] = 1;
    spec.style_weight = 1;
    spec.deepest = spec.style[0];
    CHECK(nst_net_create(be, &w, spec.deepest, NST_POOL_MAX, &net) == NST_OK, "%s", nst_fail_message());
    CHECK(nst_objective_init(&obj, &spec, &net, none, NST_GRAM_RESIDENT, NULL, 37, 21) == NST_OK, "%s", nst_fail_message());
    nst_rect whole = {0, 0, 37, 21};
    CHECK(nst_tile_init(&obj, &t, 0, whole, whole, 0) == NST_OK, "%s", nst_fail_message());
    for (int l = 0; l < net.nlayers; l++) {
        nst_rect full = nst_tensor_rect(&t.acts->out[l]);
        CHECK(nst_rect_equal(t.own[l], full) && nst_rect_equal(t.seed[l], full), "layer %d: own %dx%d seed %dx%d of %dx%d", l,
              t.own[l].w, t.own[l].h, t.seed[l].w, t.seed[l].h, full.w, full.h);
    }
    CHECK(t.acts->out[spec.deepest].w == 2 && t.acts->out[spec.deepest].h == 1, "relu5_1 of 37x21 is %dx%d",
          t.acts->out[spec.deepest].w, t.acts->out[spec.deepest].h);
    CHECK(obj.M[0] == 2, "M = %g", obj.M[0]);
    nst_tile_free(&obj, &t);
    nst_objective_free(&obj);
    nst_net_destroy(&net);
    nst_weights_free(&w);
    nst_backend_close(be);
}

/* On a backend with an arena (CUDA), no window may give a layer 2^31 values or more (cuDNN's int
 * descriptors): a set tile size past it is refused, auto avoids it; the CPU has no such bound. */
static void t_windows_fit_cudnn_descriptors(void)
{
    nst_backend *be = NULL;
    nst_weights w;
    nst_config cfg;
    nst_loss_spec spec;
    nst_net net;
    nst_layout L;
    nst_config_defaults(&cfg);
    CHECK(nst_backend_open("cpu", 1, &be) == NST_OK && nst_weights_random(&w, 1, 1) == NST_OK && nst_loss_spec_parse(&cfg, &spec) == NST_OK &&
              nst_net_shapes(be, &w, spec.deepest, spec.pool, &net) == NST_OK,
          "set-up: %s", nst_fail_message());
    const int W = 8000, H = 8000;
    const size_t budget = (size_t)1 << 50;
    cfg.tiling_tile_size = 6144; /* windows of 6464 px: 6464^2 x 64 channels = 2.67e9 at relu1_1 */
    CHECK(nst_layout_plan(&cfg, &spec, &net, W, H, 1, 0, budget, &L) == NST_OK, "CPU, 6144 px tiles: %s", nst_fail_message());
    nst_layout_free(&L);
    be->capacity = (size_t)1 << 40; /* stands in for a CUDA arena */
    CHECK(nst_layout_plan(&cfg, &spec, &net, W, H, 1, 0, budget, &L) == NST_EINPUT && strstr(nst_fail_message(), "past cuDNN's descriptors"),
          "arena, 6144 px tiles: '%s'", nst_fail_message());
    nst_fail_clear();
    /* one tile over a 5888 px image: the window is the image, not the tile and its halo (an H200's
     * bench was told 6208x6208 px) */
    cfg.tiling_tile_size = 5888;
    CHECK(nst_layout_plan(&cfg, &spec, &net, 5888, 5888, 1, 0, budget, &L) == NST_EINPUT && strstr(nst_fail_message(), "windows of 5888x5888 px"),
          "arena, one 5888 px tile: '%s'", nst_fail_message());
    nst_fail_clear();
    cfg.tiling_tile_size = 5632; /* 5632^2 x 64 = 2.03e9: fits, as it ran on the H200 */
    CHECK(nst_layout_plan(&cfg, &spec, &net, 5632, 5632, 1, 0, budget, &L) == NST_OK, "arena, one 5632 px tile: %s", nst_fail_message());
    nst_layout_free(&L);
    cfg.tiling_tile_size = NST_WORD(0);
    CHECK(nst_layout_plan(&cfg, &spec, &net, W, H, 1, 0, budget, &L) == NST_OK, "arena, auto: %s", nst_fail_message());
    long long ww = L.grid.tile_w + 2 * L.grid.halo < W ? L.grid.tile_w + 2 * L.grid.halo : W;
    long long wh = L.grid.tile_h + 2 * L.grid.halo < H ? L.grid.tile_h + 2 * L.grid.halo : H;
    CHECK(ww * wh * 64 < (1ll << 31), "auto chose %dx%d tiles: windows of %lldx%lld x 64 channels", L.grid.tile_w, L.grid.tile_h, ww, wh);
    printf("    auto on an arena: %dx%d tiles, windows %lldx%lld (%.2fe9 values at relu1_1)\n", L.grid.tile_w, L.grid.tile_h, ww, wh,
           (double)(ww * wh * 64) / 1e9);
    nst_layout_free(&L);
    be->capacity = 0;
    nst_net_destroy(&net);
    nst_weights_free(&w);
    nst_backend_close(be);
}

int main(void)
{
    RUN(t_vgg_footprints_match_the_published_table);
    RUN(t_gradient_halo_by_brute_force);
    RUN(t_rect_algebra);
    RUN(t_whole_image_tile_regions);
    RUN(t_windows_fit_cudnn_descriptors);
    return test_report("test_geometry");
}

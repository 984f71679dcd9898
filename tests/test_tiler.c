/* tests/test_tiler.c: property tests of the tile grid, the rank assignment, the exchange plans,
 * the blend weights and the output pyramid, over many image sizes (odd ones and single-tile
 * images included). */
#include <stdint.h>

#include "../tiler/grid.h"
#include "../tiler/pyramid.h"
#include "test.h"

static const int sizes[][2] = {{320, 240}, {1, 1}, {17, 33}, {160, 160}, {161, 159}, {1000, 37}, {48, 4096}, {999, 777}};
static const int tiles[] = {16, 48, 64, 160, 512};
static const int halos[] = {0, 16, 32, 160};

static void t_cores_partition_and_windows_contain_cores(void)
{
    int grids = 0;
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
        for (size_t k = 0; k < sizeof tiles / sizeof *tiles; k++)
            for (size_t h = 0; h < sizeof halos / sizeof *halos; h++) {
                int W = sizes[s][0], H = sizes[s][1];
                nst_grid g;
                int tw = tiles[k], th = tiles[(k + h) % (sizeof tiles / sizeof *tiles)]; /* square and oblong cores */
                CHECK(nst_grid_make(W, H, tw, th, halos[h], 16, &g) == 0, "grid %dx%d %dx%d", W, H, tw, th);
                unsigned char *cover = calloc((size_t)W * H, 1);
                for (int t = 0; t < g.ntiles; t++) {
                    nst_rect c = nst_grid_core(&g, t), w = nst_grid_window(&g, t);
                    CHECK(c.x % 16 == 0 && c.y % 16 == 0 && w.x % 16 == 0 && w.y % 16 == 0, "alignment");
                    CHECK((w.x + w.w) % 16 == 0 || w.x + w.w == W, "window end aligned or at the image edge");
                    CHECK(nst_rect_contains(w, c), "window contains its core");
                    nst_rect want = nst_rect_intersect(nst_rect_grow(c, halos[h]), nst_rect_make(0, 0, W, H));
                    CHECK(nst_rect_equal(w, want), "window = core + halo, clipped");
                    CHECK(!nst_rect_empty(c), "empty core");
                    for (int y = c.y; y < c.y + c.h; y++)
                        for (int x = c.x; x < c.x + c.w; x++) cover[(size_t)y * W + x]++;
                }
                for (size_t i = 0; i < (size_t)W * H; i++) CHECK(cover[i] == 1, "pixel %zu covered %d times", i, cover[i]);
                free(cover);
                grids++;
            }
    CHECK(grids == 160, "%d grids", grids);
    nst_grid g;
    CHECK(nst_grid_make(100, 100, 40, 32, 0, 16, &g) < 0, "a tile size off the stride is refused");
    CHECK(nst_grid_make(100, 100, 32, 32, 8, 16, &g) < 0, "a halo off the stride is refused");
    CHECK(nst_grid_make(100, 100, 128, 128, 0, 16, &g) == 0 && g.ntiles == 1, "one tile for a small image");
    CHECK(nst_grid_make(768, 512, 384, 512, 160, 16, &g) == 0 && g.ntiles == 2, "two oblong tiles");
}

static void t_assignment_balances_and_gives_everyone_work(void)
{
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
        for (size_t k = 0; k < sizeof tiles / sizeof *tiles; k++) {
            nst_grid g;
            nst_grid_make(sizes[s][0], sizes[s][1], tiles[k], tiles[k], 32, 16, &g);
            for (int ranks = 1; ranks <= 8; ranks++) {
                int *owner = malloc(sizeof(int) * g.ntiles), *again = malloc(sizeof(int) * g.ntiles);
                int64_t worst = nst_assign_tiles(&g, ranks, owner), load[8] = {0}, biggest = 0;
                nst_assign_tiles(&g, ranks, again);
                int count[8] = {0};
                for (int t = 0; t < g.ntiles; t++) {
                    CHECK(owner[t] >= 0 && owner[t] < ranks && owner[t] == again[t], "owner / determinism");
                    int64_t a = nst_rect_area(nst_grid_window(&g, t));
                    load[owner[t]] += a;
                    count[owner[t]]++;
                    if (a > biggest) biggest = a;
                }
                int64_t lo = INT64_MAX, hi = 0;
                for (int r = 0; r < ranks; r++) {
                    if (g.ntiles >= ranks) CHECK(count[r] > 0, "rank %d without work (%d tiles, %d ranks)", r, g.ntiles, ranks);
                    if (load[r] < lo) lo = load[r];
                    if (load[r] > hi) hi = load[r];
                }
                CHECK(hi == worst, "reported load %lld vs %lld", (long long)worst, (long long)hi);
                if (g.ntiles >= ranks) CHECK(hi - lo <= biggest, "imbalance %lld above one tile %lld", (long long)(hi - lo), (long long)biggest);
                free(owner), free(again);
            }
        }
}

static void t_exchange_plans_cover_windows_once(void)
{
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
        for (size_t k = 0; k < 4; k++) {
            int W = sizes[s][0], H = sizes[s][1];
            nst_grid g;
            nst_grid_make(W, H, tiles[k], tiles[(k + 1) % 4], 32, 16, &g);
            int n, m;
            nst_transfer *p = nst_plan_core_to_window(&g, &n), *o = nst_plan_window_overlaps(&g, &m);
            CHECK(p && o, "plans");
            for (int t = 0; t < g.ntiles; t++) {
                nst_rect w = nst_grid_window(&g, t);
                unsigned char *cover = calloc((size_t)w.w * w.h, 1);
                for (int i = 0; i < n; i++) {
                    if (p[i].dst != t) continue;
                    CHECK(nst_rect_contains(nst_grid_core(&g, p[i].src), p[i].rect), "transfer outside its source core");
                    CHECK(nst_rect_contains(w, p[i].rect), "transfer outside its window");
                    for (int y = p[i].rect.y; y < p[i].rect.y + p[i].rect.h; y++)
                        for (int x = p[i].rect.x; x < p[i].rect.x + p[i].rect.w; x++) cover[(size_t)(y - w.y) * w.w + (x - w.x)]++;
                }
                for (size_t i = 0; i < (size_t)w.w * w.h; i++) CHECK(cover[i] == 1, "window pixel filled %d times", cover[i]);
                free(cover);
            }
            for (int i = 1; i < n; i++) CHECK(p[i - 1].dst < p[i].dst || (p[i - 1].dst == p[i].dst && p[i - 1].src < p[i].src), "order");
            for (int i = 0; i < m; i++) {
                int mirrored = 0;
                for (int j = 0; j < m; j++)
                    mirrored |= o[j].src == o[i].dst && o[j].dst == o[i].src && nst_rect_equal(o[j].rect, o[i].rect);
                CHECK(mirrored && o[i].src != o[i].dst, "overlap %d->%d not mirrored", o[i].src, o[i].dst);
                CHECK(nst_rect_equal(o[i].rect, nst_rect_intersect(nst_grid_window(&g, o[i].src), nst_grid_window(&g, o[i].dst))),
                      "overlap rect");
            }
            free(p), free(o);
        }
}

static void t_blend_weights(void)
{
    nst_grid g;
    nst_grid_make(200, 120, 64, 48, 32, 16, &g);
    for (int cos = 0; cos < 2; cos++)
        for (int t = 0; t < g.ntiles; t++) {
            nst_rect c = nst_grid_core(&g, t), w = nst_grid_window(&g, t);
            for (int y = w.y; y < w.y + w.h; y++)
                for (int x = w.x; x < w.x + w.w; x++) {
                    float v = nst_blend_weight(&g, t, x, y, g.halo, cos);
                    CHECK(v > 0 && v <= 1, "weight %g", v);
                    if (nst_rect_contains(c, nst_rect_make(x, y, 1, 1))) CHECK(v == 1, "core weight %g", v);
                }
            /* falls towards an inner window edge */
            if (w.x > 0) CHECK(nst_blend_weight(&g, t, w.x, c.y, g.halo, cos) < 0.05f, "edge weight");
        }
    /* a window edge at the image border does not fade */
    CHECK(nst_blend_weight(&g, 0, 0, 0, g.halo, 1) == 1, "image border");
}

/* The shapes of a W x H pyramid of T-pixel tiles: levels halve (ceil) down to the first that
 * fits one tile; one level when no reduced ones are asked for; Deep Zoom's go on to 1 x 1, with
 * the tiled levels its first. P: the tiled pyramid. */
static void check_pyramid_shapes(int W, int H, int T, nst_pyramid *P)
{
    CHECK(nst_pyramid_make(W, H, T, NST_PYRAMID_TO_TILE, P) == 0, "pyramid %dx%d T %d", W, H, T);
    const nst_level *top = &P->lv[P->nlevels - 1];
    CHECK(top->w <= T && top->h <= T && top->ntiles == 1, "%dx%d T %d: the last level is %dx%d", W, H, T, top->w, top->h);
    for (int l = 1; l < P->nlevels; l++)
        CHECK(P->lv[l].w == (P->lv[l - 1].w + 1) / 2 && P->lv[l].h == (P->lv[l - 1].h + 1) / 2, "level %d halves", l);
    if (P->nlevels > 1) CHECK(P->lv[P->nlevels - 2].w > T || P->lv[P->nlevels - 2].h > T, "one level too many");
    nst_pyramid one, dz;
    CHECK(nst_pyramid_make(W, H, T, NST_PYRAMID_ONE_LEVEL, &one) == 0 && one.nlevels == 1, "no reduced levels when not asked");
    /* Deep Zoom: on to 1 x 1, its largest level ceil(log2(max side)), the tiled levels a prefix */
    CHECK(nst_pyramid_make(W, H, T, NST_PYRAMID_TO_PIXEL, &dz) == 0, "Deep Zoom pyramid %dx%d", W, H);
    int longest = W > H ? W : H, maxlevel = 0;
    while ((1 << maxlevel) < longest) maxlevel++;
    CHECK(dz.nlevels == maxlevel + 1 && dz.lv[dz.nlevels - 1].w == 1 && dz.lv[dz.nlevels - 1].h == 1,
          "%dx%d: %d Deep Zoom levels, expected %d ending at 1x1", W, H, dz.nlevels, maxlevel + 1);
    CHECK(nst_pyramid_tiled_levels(&dz) == P->nlevels && memcmp(dz.lv, P->lv, sizeof(nst_level) * (size_t)P->nlevels) == 0,
          "%dx%d T %d: the tiled levels are the Deep Zoom pyramid's first", W, H, T);
    for (int l = 0; l < dz.nlevels; l++) /* OpenSeadragon's size of Deep Zoom level maxlevel - l */
        CHECK(dz.lv[l].w == (int)(((long long)W + (1ll << l) - 1) >> l) && dz.lv[l].h == (int)(((long long)H + (1ll << l) - 1) >> l),
              "%dx%d level %d is ceil(size / 2^%d)", W, H, l, l);
}

/* Level l's plan from its pieces (the render grid's cores at level 0, the halved tiles of level
 * l - 1 above): ordered by piece, each cut inside its tile and its piece, every pixel covered
 * once, and a halved tile landing whole in one tile. */
static void check_level_plan(const nst_pyramid *P, const nst_grid *g, int l, int W, int H, int T)
{
    const nst_level *lv = &P->lv[l];
    nst_rect *pieces;
    int npieces, ntr = 0;
    if (l == 0) {
        npieces = g->ntiles;
        pieces = malloc(sizeof(nst_rect) * (size_t)npieces);
        for (int t = 0; t < npieces; t++) pieces[t] = nst_grid_core(g, t);
    } else {
        npieces = P->lv[l - 1].ntiles;
        pieces = malloc(sizeof(nst_rect) * (size_t)npieces);
        for (int t = 0; t < npieces; t++) pieces[t] = nst_pyramid_halve(nst_pyramid_tile(P, l - 1, t));
    }
    nst_transfer *tr = nst_plan_pieces_to_tiles(P, l, pieces, npieces, &ntr);
    unsigned char *cover = calloc((size_t)lv->w * lv->h, 1);
    int order_ok = 1, inside = 1, per_piece_ok = 1;
    int *cuts = calloc((size_t)npieces, sizeof(int));
    for (int i = 0; i < ntr; i++) {
        nst_rect r = tr[i].rect;
        if (i && tr[i].src < tr[i - 1].src) order_ok = 0;
        if (!nst_rect_contains(nst_pyramid_tile(P, l, tr[i].dst), r) || !nst_rect_contains(pieces[tr[i].src], r)) inside = 0;
        cuts[tr[i].src]++;
        for (int y = r.y; y < r.y + r.h; y++)
            for (int x = r.x; x < r.x + r.w; x++) cover[(size_t)y * lv->w + x]++;
    }
    for (int t = 0; l > 0 && t < npieces; t++) per_piece_ok &= cuts[t] == 1; /* a halved tile lands in one tile */
    int once = 1;
    for (size_t i = 0; i < (size_t)lv->w * lv->h; i++) once &= cover[i] == 1;
    CHECK(tr && order_ok && inside && once && per_piece_ok,
          "%dx%d T %d level %d: plan ordered %d, inside %d, covers once %d, halved pieces whole %d", W, H, T, l, order_ok, inside,
          once, per_piece_ok);
    free(cuts);
    free(cover);
    free(tr);
    free(pieces);
}

/* The output pyramid: its shapes (above); the piece plans cover every pixel exactly once, from
 * pieces owned by the given ranks; owners follow the render at level 0 and a tile's top-left
 * child above. */
static void t_output_pyramid(void)
{
    const int out_tiles[] = {16, 64, 512};
    int checked = 0;
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
        for (size_t k = 0; k < sizeof out_tiles / sizeof *out_tiles; k++) {
            int W = sizes[s][0], H = sizes[s][1], T = out_tiles[k];
            nst_pyramid P;
            check_pyramid_shapes(W, H, T, &P);
            /* a render grid and owners (3 ranks) to cut level 0 from */
            nst_grid g;
            nst_grid_make(W, H, 48, 32, 16, 16, &g);
            int *rowner = malloc(sizeof(int) * (size_t)g.ntiles), *owner = malloc(sizeof(int) * (size_t)P.lv[0].ntiles);
            nst_assign_tiles(&g, 3, rowner);
            nst_pyramid_owners0(&P, &g, rowner, owner);
            for (int t = 0; t < P.lv[0].ntiles; t++) {
                nst_rect r = nst_pyramid_tile(&P, 0, t);
                int cx = r.x + r.w / 2, cy = r.y + r.h / 2, rt = (cy / 32) * g.nx + cx / 48;
                CHECK(nst_rect_contains(nst_grid_core(&g, rt), nst_rect_make(cx, cy, 1, 1)) && owner[t] == rowner[rt],
                      "output tile %d: owner is the render core's at its centre", t);
            }
            for (int l = 0; l < P.nlevels; l++) {
                const nst_level *lv = &P.lv[l];
                check_level_plan(&P, &g, l, W, H, T);
                if (l > 0) {
                    int *o2 = malloc(sizeof(int) * (size_t)lv->ntiles);
                    nst_pyramid_owners_reduced(&P, l, owner, o2);
                    for (int t = 0; t < lv->ntiles; t++) {
                        int i = t % lv->nx, j = t / lv->nx;
                        CHECK(o2[t] == owner[2 * j * P.lv[l - 1].nx + 2 * i], "level %d tile %d: owner of its top-left child", l, t);
                    }
                    free(owner);
                    owner = o2;
                }
                checked++;
            }
            free(owner);
            free(rowner);
        }
    CHECK(checked > 50, "only %d levels checked", checked);
    nst_pyramid P;
    CHECK(nst_pyramid_make(100, 100, 24, NST_PYRAMID_TO_TILE, &P) != 0 && nst_pyramid_make(0, 5, 16, NST_PYRAMID_TO_TILE, &P) != 0,
          "invalid pyramids refused");
}

int main(void)
{
    RUN(t_cores_partition_and_windows_contain_cores);
    RUN(t_assignment_balances_and_gives_everyone_work);
    RUN(t_exchange_plans_cover_windows_once);
    RUN(t_blend_weights);
    RUN(t_output_pyramid);
    return test_report("test_tiler");
}

/* tests/test_gram_tiled.c: the allreduced Gram of a tiled image equals the whole-image Gram.
 *
 *   mpirun -np N build/tests/test_gram_tiled
 *
 * A 320x240 image, the random VGG-19 at width 1/8, tiles of 64 px spread over the ranks: every
 * rank sums the Gram matrices of its tiles over owned positions, the sums are added across ranks,
 * and the result is compared with the Gram of the whole image computed as one tile on rank 0.
 * On the CPU the sums are fixed-point integers (kernels/cpu/gram_fixed_cpu.c): the tiled Gram must
 * equal the whole image's bit for bit (difference 0; with fp64 sums it was about 1e-14 relative).
 * The same for the guided Gram of two masks (a soft ramp and its complement, nst/optimise/objective.h):
 * the sums equal too, the denominators (sums of the masks) exactly equal, and the two
 * masks' denominators adding up to the position count. Prints one line "gram: ..." on rank 0;
 * exits non-zero on every rank if a bound fails. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "../mpi/comm.h"
#include "../nst/plan/layout.h"
#include "../nst/model/random_vgg.h"
#include "../nst/render/render.h"
#include "../util/mem.h"
#include "test.h"

static nst_status sum_doubles(void *ctx, double *buf, size_t n)
{
    (void)ctx;
    return nst_comm_sum_doubles(buf, n);
}

static nst_status sum_int64(void *ctx, int64_t *buf, size_t n)
{
    (void)ctx;
    return nst_comm_sum_int64(buf, n);
}

static nst_status max_ints(void *ctx, int *buf, size_t n)
{
    (void)ctx;
    return nst_comm_max_ints(buf, n);
}

static nst_status check(void *ctx, nst_status s)
{
    (void)ctx;
    return nst_comm_check(s);
}

/* The soft mask: a ramp across the image, 0 on the left fifth, 1 on the right fifth. */
static float ramp(int x, int w) { return nst_mask_quantise((float)(((double)x / w - 0.2) / 0.6)); }

/* The masks of a window: the ramp (masks[0]) and its complement (masks[1]), one value per pixel. */
static void window_masks(nst_rect win, int W, float **masks)
{
    for (int y = 0; y < win.h; y++)
        for (int x = 0; x < win.w; x++) {
            float m = ramp(win.x + x, W);
            masks[0][(size_t)y * win.w + x] = m, masks[1][(size_t)y * win.w + x] = 1 - m;
        }
}

/* The tiles' windows of img uploaded. */
static nst_status upload_windows(nst_backend *be, const nst_image *img, nst_tile *tiles, int n)
{
    for (int i = 0; i < n; i++) {
        nst_rect win = tiles[i].window;
        float *px = nst_alloc_array((size_t)nst_rect_area(win) * 3, sizeof(float), "window");
        if (!px) return NST_ENOMEM;
        nst_image_extract(img, win, px);
        nst_status s = be->ops->upload(be, tiles[i].img.data, px, (size_t)nst_rect_area(win) * 3, NST_F32);
        nst_free(px);
        NST_TRY(s);
    }
    return NST_OK;
}

/* The style Gram sums of the given tiles (whole image if L is NULL: one tile); with guides, the
 * two masks' sums (out[g * nstyle + k]) and their denominators (den). With before, the objective
 * first evaluates that image, so the sums of img start from its bounds (the fixed-point sums'). */
static nst_status grams(nst_backend *be, const nst_weights *w, const nst_loss_spec *spec, const nst_image *img, const nst_image *before,
                        const nst_layout *L, nst_collectives coll, const nst_guides *guides, double **out, int *cs, double *den,
                        long *regrams)
{
    nst_net net;
    nst_objective obj;
    NST_TRY(nst_net_create(be, w, spec->deepest, spec->pool, &net));
    NST_TRY(nst_objective_init_guided(&obj, spec, &net, coll, NST_GRAM_RESIDENT, NULL, img->w, img->h, guides));
    int n = L ? L->nlocal : 1;
    nst_tile *tiles = nst_calloc(sizeof(nst_tile) * (size_t)(n + 1), "tiles");
    for (int i = 0; i < n; i++) {
        int t = L ? L->local[i] : 0;
        nst_rect core = L ? nst_grid_core(&L->grid, t) : nst_rect_make(0, 0, img->w, img->h);
        nst_rect win = L ? nst_grid_window(&L->grid, t) : core;
        NST_TRY(nst_tile_init(&obj, &tiles[i], t, core, win, 0));
        if (guides) {
            float *masks[2] = {nst_alloc_array((size_t)nst_rect_area(win), sizeof(float), "mask"),
                               nst_alloc_array((size_t)nst_rect_area(win), sizeof(float), "mask")};
            window_masks(win, img->w, masks);
            NST_TRY(nst_tile_set_masks(&obj, &tiles[i], masks));
            nst_free(masks[0]), nst_free(masks[1]);
        }
    }
    NST_TRY(nst_objective_finish_targets(&obj));
    nst_loss_terms terms;
    if (before) {
        NST_TRY(upload_windows(be, before, tiles, n));
        NST_TRY(nst_objective_eval(&obj, tiles, n, 0, NULL, &terms));
    }
    NST_TRY(upload_windows(be, img, tiles, n));
    NST_TRY(nst_objective_eval(&obj, tiles, n, 0, NULL, &terms));
    for (int q = 0; q < obj.ngram; q++) {
        int c = obj.C[q % spec->nstyle];
        cs[q] = c;
        out[q] = nst_alloc_array((size_t)c * c, sizeof(double), "grams");
        memcpy(out[q], obj.G[q], sizeof(double) * (size_t)c * c);
        den[q] = obj.M[q];
    }
    *regrams = obj.regrams;
    for (int i = 0; i < n; i++) nst_tile_free(&obj, &tiles[i]);
    nst_free(tiles);
    nst_objective_free(&obj);
    nst_net_destroy(&net);
    return NST_OK;
}

int main(int argc, char **argv)
{
    if (nst_comm_init(&argc, &argv) != NST_OK) return 1;
    int rank = nst_comm_rank(), size = nst_comm_size();
    nst_backend *be;
    nst_weights w;
    nst_config cfg;
    nst_loss_spec spec;
    nst_layout L;
    nst_image img;
    nst_config_defaults(&cfg);
    cfg.tiling_tile_size = 64;
    nst_config_set_key(&cfg, "content", "layers", "", "test", "");
    if (nst_backend_open("cpu", 1, &be) != NST_OK || nst_weights_random(&w, 3, 8) != NST_OK ||
        nst_loss_spec_parse(&cfg, &spec) != NST_OK || nst_image_alloc(&img, 320, 240) != NST_OK) {
        printf("set-up failed: %s\n", nst_fail_message());
        nst_comm_abort(1, "set-up failed");
    }
    test_fill(img.px, (size_t)320 * 240 * 3, 9, 0, 1);
    nst_net shapes;
    nst_net_shapes(be, &w, spec.deepest, spec.pool, &shapes);
    if (nst_layout_plan(&cfg, &spec, &shapes, 320, 240, size, rank, (size_t)1 << 34, &L) != NST_OK)
        nst_comm_abort(1, nst_fail_message());
    nst_collectives coll = {NULL, sum_doubles, sum_doubles, check, NULL, sum_int64, max_ints, check, NULL}; /* exchange: through the host */
    const nst_guides two = {2, {1, 1}, 0};
    /* a low-contrast version of the image: its features are smaller, so the image's own exceed
     * the bounds it leaves (the sums must run again with the new ones, and equal a fresh start) */
    nst_image flat;
    if (nst_image_alloc(&flat, 320, 240) != NST_OK) nst_comm_abort(1, "set-up failed");
    for (size_t i = 0; i < (size_t)320 * 240 * 3; i++) flat.px[i] = 0.5f + (img.px[i] - 0.5f) * 0.02f;
    int status = 0;
    for (int variant = 0; variant < 3; variant++) {
        const int guided = variant == 1;
        const nst_guides *gd = guided ? &two : NULL;
        double *tiled[NST_MAX_GRAMS] = {0}, *whole[NST_MAX_GRAMS] = {0}, dt[NST_MAX_GRAMS], dw[NST_MAX_GRAMS];
        int cs[NST_MAX_GRAMS], ngram = spec.nstyle * (guided ? 2 : 1);
        long again = 0, again_whole = 0;
        if (grams(be, &w, &spec, &img, variant == 2 ? &flat : NULL, &L, coll, gd, tiled, cs, dt, &again) != NST_OK)
            nst_comm_abort(1, nst_fail_message());
        if (rank == 0) {
            nst_collectives none = {0};
            if (grams(be, &w, &spec, &img, NULL, NULL, none, gd, whole, cs, dw, &again_whole) != NST_OK) nst_comm_abort(1, nst_fail_message());
            double worst = 0;
            int den_equal = 1, partition = 1;
            for (int q = 0; q < ngram; q++) {
                double md = 0, mx = 1e-30;
                for (int i = 0; i < cs[q]; i++)
                    for (int j = i; j < cs[q]; j++) {
                        size_t u = (size_t)i * cs[q] + j;
                        md = fmax(md, fabs(tiled[q][u] - whole[q][u]));
                        mx = fmax(mx, fabs(whole[q][u]));
                    }
                worst = fmax(worst, md / mx);
                den_equal &= dt[q] == dw[q];
                if (guided && q < spec.nstyle) { /* the ramp and its complement cover each position once */
                    int lh, lw, lc;
                    nst_net_shape(&shapes, spec.style[q], 240, 320, &lh, &lw, &lc);
                    partition &= dt[q] + dt[q + spec.nstyle] == (double)lh * lw;
                }
            }
            printf("gram%s: %d tiles of %dx%d px on %d rank(s): the allreduced Gram differs from the whole image's by %.3g (relative, max over %d %s)%s%s\n",
                   guided ? " (guided, 2 masks)" : variant == 2 ? " (after a flatter image: bounds grown)" : "", L.grid.ntiles, L.grid.tile_w,
                   L.grid.tile_h, size, worst, ngram, guided ? "masks x layers" : "layers",
                   guided ? (den_equal ? "; denominators equal exactly" : "; DENOMINATORS DIFFER") : "",
                   variant == 2 ? (again >= 2 ? "; the sums ran again for the grown bounds" : "; THE BOUNDS DID NOT GROW: nothing tested") : "");
            if (guided && !partition) printf("gram (guided): the masks' denominators do not add up to the position counts\n");
            if (!(worst == 0 && den_equal && partition) || (variant == 2 && again < 2)) status = 1;
        }
        for (int q = 0; q < NST_MAX_GRAMS; q++) nst_free(tiled[q]), nst_free(whole[q]);
    }
    nst_comm_bcast(&status, sizeof status, 0);
    nst_comm_finalize();
    return status;
}

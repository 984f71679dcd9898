/* tests/test_gram_tiled.c: the allreduced Gram of a tiled image equals the whole-image Gram.
 *
 *   mpirun -np N build/tests/test_gram_tiled
 *
 * A 320x240 image, the random VGG-19 at width 1/8, tiles of 64 px spread over the ranks: every
 * rank sums the Gram matrices of its tiles over owned positions, the sums are added across ranks,
 * and the result is compared with the Gram of the whole image computed as one tile on rank 0.
 * Bound: relative error <= 1e-6 (measured: about 1e-14, the fp64 sums added in another order). Prints one line
 * "gram: ..." on rank 0; exits non-zero on every rank if the bound fails. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "../mpi/comm.h"
#include "../nst/optim/layout.h"
#include "../nst/model/random_vgg.h"
#include "../nst/optim/render.h"
#include "../util/mem.h"
#include "test.h"

static nst_status sum_doubles(void *ctx, double *buf, size_t n)
{
    (void)ctx;
    return nst_comm_sum_doubles(buf, n);
}

static nst_status check(void *ctx, nst_status s)
{
    (void)ctx;
    return nst_comm_check(s);
}

/* The style Gram sums of the given tiles (whole image if ntiles == 0: one tile). */
static nst_status grams(nst_backend *be, const nst_weights *w, const nst_loss_spec *spec, const nst_image *img,
                        const nst_layout *L, nst_collectives coll, double **out, int *cs)
{
    nst_net net;
    nst_objective obj;
    NST_TRY(nst_net_create(be, w, spec->deepest, spec->pool, &net));
    NST_TRY(nst_objective_init(&obj, spec, &net, coll, NST_GRAM_RESIDENT, NULL, img->w, img->h));
    int n = L ? L->nlocal : 1;
    nst_tile *tiles = nst_calloc(sizeof(nst_tile) * (size_t)(n + 1), "tiles");
    for (int i = 0; i < n; i++) {
        int t = L ? L->local[i] : 0;
        nst_rect core = L ? nst_grid_core(&L->grid, t) : nst_rect_make(0, 0, img->w, img->h);
        nst_rect win = L ? nst_grid_window(&L->grid, t) : core;
        NST_TRY(nst_tile_init(&obj, &tiles[i], t, core, win, 0));
        float *px = nst_alloc_array((size_t)nst_rect_area(win) * 3, sizeof(float), "window");
        nst_image_extract(img, win, px);
        NST_TRY(be->ops->upload(be, tiles[i].img.data, px, (size_t)nst_rect_area(win) * 3, NST_F32));
        nst_free(px);
    }
    nst_loss_terms terms;
    NST_TRY(nst_objective_eval(&obj, tiles, n, 0, NULL, &terms));
    for (int k = 0; k < spec->nstyle; k++) {
        cs[k] = obj.C[k];
        out[k] = nst_alloc_array((size_t)obj.C[k] * obj.C[k], sizeof(double), "grams");
        memcpy(out[k], obj.G[k], sizeof(double) * (size_t)obj.C[k] * obj.C[k]);
    }
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
    nst_collectives coll = {NULL, sum_doubles, sum_doubles, check, NULL};
    double *tiled[NST_VGG_NLAYERS] = {0}, *whole[NST_VGG_NLAYERS] = {0};
    int cs[NST_VGG_NLAYERS];
    if (grams(be, &w, &spec, &img, &L, coll, tiled, cs) != NST_OK) nst_comm_abort(1, nst_fail_message());
    int status = 0;
    if (rank == 0) {
        nst_collectives none = {0};
        if (grams(be, &w, &spec, &img, NULL, none, whole, cs) != NST_OK) nst_comm_abort(1, nst_fail_message());
        double worst = 0;
        for (int k = 0; k < spec.nstyle; k++) {
            double md = 0, mx = 1e-30;
            for (int i = 0; i < cs[k]; i++)
                for (int j = i; j < cs[k]; j++) {
                    size_t q = (size_t)i * cs[k] + j;
                    md = fmax(md, fabs(tiled[k][q] - whole[k][q]));
                    mx = fmax(mx, fabs(whole[k][q]));
                }
            worst = fmax(worst, md / mx);
        }
        printf("gram: %d tiles of %dx%d px on %d rank(s): the allreduced Gram differs from the whole image's by %.3g (relative, max over %d layers)\n",
               L.grid.ntiles, L.grid.tile_w, L.grid.tile_h, size, worst, spec.nstyle);
        status = worst <= 1e-6 ? 0 : 1;
    }
    nst_comm_bcast(&status, sizeof status, 0);
    nst_comm_finalize();
    return status;
}

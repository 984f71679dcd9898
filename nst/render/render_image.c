/* nst/render/render_image.c: a render of whole images on one process (tests, the self-test):
 * windows cut from the image, rendered, cores placed back (see render.h). */
#include "render.h"

#include <string.h>

#include "../../util/mem.h"

void nst_image_extract(const nst_image *img, nst_rect r, float *out)
{
    for (int y = 0; y < r.h; y++)
        memcpy(out + (size_t)y * r.w * 3, img->px + ((size_t)(r.y + y) * img->w + r.x) * 3, (size_t)r.w * 3 * sizeof(float));
}

void nst_image_place(nst_image *img, nst_rect r, const float *in)
{
    for (int y = 0; y < r.h; y++)
        memcpy(img->px + ((size_t)(r.y + y) * img->w + r.x) * 3, in + (size_t)y * r.w * 3, (size_t)r.w * 3 * sizeof(float));
}

nst_status nst_render_image(const nst_config *cfg, const nst_loss_spec *spec, nst_backend *be, const nst_weights *w,
                            const nst_image *content, const nst_image *style, const nst_image *init, nst_image *out,
                            nst_render_stats *stats, nst_image *first_grad)
{
    nst_net probe;
    nst_layout L;
    int W = content->w, H = content->h;
    memset(out, 0, sizeof *out);
    if (first_grad) memset(first_grad, 0, sizeof *first_grad);
    NST_TRY(nst_net_shapes(be, w, spec->deepest, spec->pool, &probe));
    nst_status s = nst_layout_plan(cfg, spec, &probe, W, H, 1, 0, nst_memory_budget(be, cfg->run_memory_gb, 1), &L);
    nst_net_destroy(&probe);
    NST_TRY(s);
    /* the style targets of the whole style image, on this process */
    float *A[NST_VGG_NLAYERS] = {0};
    double normA[NST_VGG_NLAYERS] = {0};
    if (style && spec->nstyle) s = nst_objective_style_targets(spec, be, w, style->px, style->w, style->h, A, normA);
    if (s != NST_OK) {
        nst_layout_free(&L);
        return s;
    }
    float **bufs = nst_calloc(sizeof(float *) * 4 * (size_t)(L.nlocal + 1), "tile windows");
    if (!bufs) {
        nst_layout_free(&L);
        return NST_ENOMEM;
    }
    float **cw = bufs, **iw = bufs + L.nlocal + 1, **res = bufs + 2 * (L.nlocal + 1), **g0 = bufs + 3 * (L.nlocal + 1);
    for (int i = 0; s == NST_OK && i < L.nlocal; i++) {
        nst_rect win = nst_grid_window(&L.grid, L.local[i]);
        cw[i] = nst_alloc_array((size_t)nst_rect_area(win) * 3, sizeof(float), "a content window");
        if (init) iw[i] = nst_alloc_array((size_t)nst_rect_area(win) * 3, sizeof(float), "an init window");
        if (!cw[i] || (init && !iw[i])) s = NST_ENOMEM;
        else {
            nst_image_extract(content, win, cw[i]);
            if (init) nst_image_extract(init, win, iw[i]);
        }
    }
    nst_render_ctx ctx = {cfg, spec, be, w, &L, {0}, W, H, cfg->optim_iterations, style && spec->nstyle ? A : NULL, normA, NULL, NULL, NULL, 0, NULL, NULL, 0, 0, NULL, NULL, NULL, NULL, first_grad ? g0 : NULL};
    if (s == NST_OK) s = nst_render(&ctx, cw, init ? iw : NULL, res, stats);
    for (int k = 0; k < NST_VGG_NLAYERS; k++) nst_free(A[k]);
    if (s == NST_OK) s = nst_image_alloc(out, W, H);
    for (int i = 0; s == NST_OK && i < L.nlocal; i++) nst_image_place(out, nst_grid_core(&L.grid, L.local[i]), res[i]);
    if (s == NST_OK && first_grad && cfg->optim_iterations > 0) s = nst_image_alloc(first_grad, W, H);
    for (int i = 0; s == NST_OK && first_grad && cfg->optim_iterations > 0 && i < L.nlocal; i++)
        nst_image_place(first_grad, nst_grid_core(&L.grid, L.local[i]), g0[i]);
    for (int i = 0; i < 4 * (L.nlocal + 1); i++) nst_free(bufs[i]);
    nst_free(bufs);
    nst_layout_free(&L);
    if (s != NST_OK) {
        nst_image_free(out);
        if (first_grad) nst_image_free(first_grad);
    }
    return s;
}

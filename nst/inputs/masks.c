/* nst/inputs/masks.c: mask images, opened, checked and read by region (see masks.h). */
#include "masks.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../../mpi/comm.h"
#include "../../util/log.h"
#include "../../util/mem.h"

/* A mask's size against the content's: the same aspect, to a pixel of the mask's own size. */
static int same_aspect(int mw, int mh, int cw, int ch)
{
    return fabs(mh - (double)mw * ch / cw) <= 1.0 || fabs(mw - (double)mh * cw / ch) <= 1.0;
}

/* Rank 0: open mask j from `path` (config key `key`) and check it. */
static nst_status open_one(const nst_config *cfg, nst_masks *mk, int j, int key, const char *path, int cw, int ch)
{
    snprintf(mk->path[j], sizeof mk->path[j], "%s", path);
    mk->key[j] = key;
    NST_TRY(nst_open_input(cfg, key, path, &mk->src[j]));
    const nst_source *s = mk->src[j];
    mk->random[j] = s->random_access;
    if (s->info.channels > 2)
        return nst_fail(NST_EINPUT, "%s: %s: the mask %s is %s: a mask is a grayscale image (white where it applies, black where not); "
                        "save it as 8- or 16-bit gray", nst_config_origin(cfg, key), nst_config_keys(NULL)[key].full, path, s->info.detail);
    if (!same_aspect(s->w, s->h, cw, ch))
        return nst_fail(NST_EINPUT, "%s: %s: the mask %s is %dx%d and the content %dx%d: a mask covers the content, so it needs the "
                        "content's aspect (resize it to %dx%d, or draw it at the content's size)", nst_config_origin(cfg, key),
                        nst_config_keys(NULL)[key].full, path, s->w, s->h, cw, ch, s->w, (int)lround((double)s->w * ch / cw));
    nst_info("mask:    %s (%dx%d, %s%s) for %s\n", path, s->w, s->h, s->info.detail, s->random_access ? ", read by region" : "",
             nst_config_keys(NULL)[key].full);
    return NST_OK;
}

/* Rank 0: every mask of the config. */
static nst_status open_all(const nst_config *cfg, int nstyle, int cw, int ch, nst_masks *mk)
{
    char list[NST_CFG_STR_MAX];
    snprintf(list, sizeof list, "%s", cfg->style_masks);
    for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        while (*tok == ' ' || *tok == '\t') tok++;
        size_t n = strlen(tok);
        while (n && (tok[n - 1] == ' ' || tok[n - 1] == '\t')) tok[--n] = 0;
        if (!n) continue;
        if (mk->n == nstyle) break; /* nst_loss_spec_parse checked the count; no styles open (nstyle 0): no masks */
        NST_TRY(open_one(cfg, mk, mk->n, NST_K_style_masks, tok, cw, ch));
        mk->n++;
    }
    if (cfg->content_mask[0]) {
        NST_TRY(open_one(cfg, mk, mk->n, NST_K_content_mask, cfg->content_mask, cw, ch));
        mk->content = 1;
    }
    return NST_OK;
}

nst_status nst_masks_open(const nst_config *cfg, int nstyle, int cw, int ch, nst_masks *mk)
{
    memset(mk, 0, sizeof *mk);
    nst_status s = nst_comm_rank() == 0 ? open_all(cfg, nstyle, cw, ch, mk) : NST_OK;
    s = nst_bcast_keeping_sources(s, mk, sizeof *mk, mk->src, NST_MAX_MASKS);
    if (s != NST_OK) nst_masks_close(mk);
    return s;
}

void nst_masks_close(nst_masks *mk)
{
    for (int j = 0; j < NST_MAX_MASKS; j++) nst_source_close(mk->src[j]);
    memset(mk->src, 0, sizeof mk->src);
}

void nst_masks_free_windows(float ***w, int nlocal, int nmasks)
{
    for (int i = 0; w && i < nlocal; i++) {
        for (int j = 0; w[i] && j < nmasks; j++) nst_free(w[i][j]);
        nst_free(w[i]);
    }
    nst_free(w);
}

/* The local windows of mask j (RGB from the reader, gray replicated) as one value per pixel. */
static nst_status read_mask(const nst_config *cfg, nst_masks *mk, int j, const nst_layout *L, const nst_rect *rects, int W, int H,
                            float ***out)
{
    float **win = nst_calloc(sizeof(float *) * ((size_t)L->nlocal + 1), "mask windows");
    nst_status s = nst_comm_agree(win ? NST_OK : NST_ENOMEM);
    if (s == NST_OK)
        s = nst_read_rects(cfg, mk->key[j], mk->path[j], &mk->src[j], mk->random[j], W, H, rects, L->owner, L->grid.ntiles, win, NULL,
                           NULL);
    for (int i = 0; s == NST_OK && i < L->nlocal; i++) {
        size_t n = (size_t)nst_rect_area(rects[L->local[i]]);
        for (size_t p = 0; p < n; p++) win[i][p] = win[i][3 * p]; /* (nst_tile_set_masks quantises) */
        out[i][j] = win[i]; /* (its tail, two thirds, is unused: freed with it) */
        win[i] = NULL;
    }
    for (int i = 0; win && i < L->nlocal; i++) nst_free(win[i]);
    nst_free(win);
    return s;
}

nst_status nst_masks_windows(const nst_config *cfg, nst_masks *mk, const nst_layout *L, int W, int H, float ****out)
{
    const int nm = mk->n + mk->content;
    *out = NULL;
    if (!nm) return NST_OK;
    float ***w = nst_calloc(sizeof(float **) * ((size_t)L->nlocal + 1), "mask windows");
    nst_rect *rects = nst_alloc_array((size_t)L->grid.ntiles + 1, sizeof(nst_rect), "window rectangles");
    nst_status s = w && rects ? NST_OK : NST_ENOMEM;
    for (int i = 0; s == NST_OK && i < L->nlocal; i++)
        if (!(w[i] = nst_calloc(sizeof(float *) * (size_t)nm, "mask windows"))) s = NST_ENOMEM;
    for (int t = 0; rects && t < L->grid.ntiles; t++) rects[t] = nst_grid_window(&L->grid, t);
    s = nst_comm_agree(s);
    for (int j = 0; s == NST_OK && j < nm; j++) s = read_mask(cfg, mk, j, L, rects, W, H, w);
    nst_free(rects);
    if (s != NST_OK) {
        nst_masks_free_windows(w, L->nlocal, nm);
        return s;
    }
    *out = w;
    return NST_OK;
}

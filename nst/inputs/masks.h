/* nst/inputs/masks.h: the mask images of a job (style.masks, content.mask), opened once and read
 * by region at each level's size, like the content.
 *
 * A mask is a grayscale image over the content (any size with the content's aspect: it is
 * resampled to each level like the content), white where its style applies (or where the
 * content term holds). Every rank reads its tiles' windows: from a TIFF by region, from a PNG or
 * JPEG through rank 0 (nst_read_rects), so a window's values are those the whole mask resized has
 * there, in any tiling. The objective makes them its own (nst_tile_set_masks: clamped to [0,1],
 * multiples of 2^-16).
 */
#ifndef NST_MASKS_H
#define NST_MASKS_H

#include "../../io/config/config.h"
#include "../../io/image/source.h"
#include "inputs.h"
#include "../plan/layout.h"

#define NST_MAX_MASKS (NST_MAX_STYLES + 1)

typedef struct {
    int n;                                   /* style masks (0, or one per style image) */
    int content;                             /* content.mask: masks[n] */
    char path[NST_MAX_MASKS][NST_CFG_STR_MAX];
    int key[NST_MAX_MASKS];                  /* the config key each came from, for messages */
    int random[NST_MAX_MASKS];               /* TIFF: every rank reads its own windows */
    nst_source *src[NST_MAX_MASKS];          /* open where needed (rank 0, or every rank when random) */
} nst_masks;

/* Rank 0 opens every mask (headers) and checks it: grayscale, the content's aspect (cw x ch: the
 * content file's size). nstyle: the style images. Errors name the key and its config line.
 * Collective; nothing to do (n = 0, content = 0) without masks. */
nst_status nst_masks_open(const nst_config *cfg, int nstyle, int cw, int ch, nst_masks *mk);
void nst_masks_close(nst_masks *mk);
/* The windows of this rank's tiles of L at W x H, one value per pixel: (*out)[i][j] for local
 * tile i and mask j (the style masks, then the content's), allocated here (nst_masks_free_windows).
 * Collective. */
nst_status nst_masks_windows(const nst_config *cfg, nst_masks *mk, const nst_layout *L, int W, int H, float ****out);
void nst_masks_free_windows(float ***w, int nlocal, int nmasks);

#endif

/* nst/state/snapshot.h: output.save_every: the image being rendered, written as the preview PNG
 * while the render runs, so that a long print can be looked at (and a stopped one keeps its last
 * look).
 *
 * Every rank reduces its local cores to the preview's grid (a box filter: each preview pixel is
 * the mean of the image pixels that fall in it, whatever the tiling), sends the blocks its cores
 * touch to rank 0 of the group, which adds them in rank order and replaces the preview atomically.
 * A preview that cannot be written is a warning: it never stops the render.
 */
#ifndef NST_SNAPSHOT_H
#define NST_SNAPSHOT_H

#include "../../tiler/rect.h"
#include "../../util/status.h"

/* The preview of an img_w x img_h image (at most `side` px long; a smaller image keeps its
 * size) from this rank's n cores: cores[i] in image coordinates, px[i] its RGB pixels, row-major
 * fp32 in [0, 1]. Written by the group's rank 0 to `path` with `bits` (8 or 16) per sample.
 * Collective over the current group. */
nst_status nst_snapshot_write(const char *path, int side, int bits, int img_w, int img_h, const nst_rect *cores, float *const *px, int n);

#endif

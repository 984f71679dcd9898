/* nst/plan/move.h: pixels from one layout to another. Source rectangles (render cores, output tiles,
 * halved pieces...) belong to ranks; destination rectangles (output tiles, the source footprints
 * of the next pyramid level's windows...) belong to ranks; a plan lists their intersections
 * (tiler/). Each intersection is produced by its source's owner (a copy, or a conversion such as
 * quantising or halving) straight into the destination when both are local, else packed for the
 * destination's owner; one sparse exchange; the receivers unpack in plan order. Collective. */
#ifndef NST_MOVE_H
#define NST_MOVE_H

#include <stddef.h>

#include "../../tiler/grid.h"
#include "../../util/status.h"

/* Produce rect r (image coordinates) of source `src` into dst, rows `stride` bytes apart. */
typedef void (*nst_produce_fn)(void *ctx, int src, nst_rect r, unsigned char *dst, size_t stride);
/* Called once this rank has produced every cut of source `src` (it may be freed). */
typedef void (*nst_done_fn)(void *ctx, int src);

typedef struct {
    const nst_transfer *tr;       /* the plan: {src, dst, rect}, grouped by src */
    int ntr;
    const int *src_owner;         /* per source index */
    const int *dst_owner;         /* per destination index */
    const nst_rect *dst_rect;     /* per destination index */
    unsigned char *const *dst_px; /* per destination index: its buffer on its owner (rows dst_rect.w * px_bytes) */
    size_t px_bytes;              /* bytes per pixel */
    nst_produce_fn produce;
    nst_done_fn done;             /* may be NULL */
    void *ctx;
} nst_move;

/* held: bytes the caller holds meanwhile, for *peak (may be NULL): the most this held at once. */
nst_status nst_move_run(const nst_move *mv, size_t held, size_t *peak);

/* A produce function for float RGB sources held as whole rectangles: ctx is an nst_float_rects. */
typedef struct {
    const nst_rect *rect;  /* per source index */
    float *const *px;      /* per source index: its pixels on its owner (rect.w * rect.h * channels) */
    int channels;
} nst_float_rects;
void nst_produce_floats(void *ctx, int src, nst_rect r, unsigned char *dst, size_t stride);

#endif

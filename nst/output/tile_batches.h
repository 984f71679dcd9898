/* nst/output/tile_batches.h: a level's tiles encoded by their owners and stored by rank 0, the way
 * the TIFF and Deep Zoom sinks write. Every rank encodes the tiles it owns (one encoder per thread)
 * in batches of about 32 MiB of samples; batch by batch the encoded bytes travel to rank 0, which
 * stores them in rank order. The ranks encode in parallel, and each file has one writer, so the
 * output directory need not be shared between nodes. Internal to the output (nst/output*.c). */
#ifndef NST_TILE_BATCHES_H
#define NST_TILE_BATCHES_H

#include "output_sink.h"

typedef struct {
    /* Encode a w x h tile of packed RGB samples on encoder `thread` (0 .. nthreads - 1); the bytes
     * stay valid until that encoder's next call. Runs on worker threads. */
    nst_status (*encode)(void *ctx, int thread, const unsigned char *samples, int w, int h, const unsigned char **bytes, size_t *len);
    /* Rank 0: store tile t of the level. */
    nst_status (*store)(void *ctx, int t, const unsigned char *bytes, size_t len);
    void *ctx;
    int nthreads;
} nst_tile_codec;

/* Encode and store every tile of the level; time into sk->seconds (all) and sk->io_seconds (the
 * stores). Collective. */
nst_status nst_tile_batches_write(nst_sink *sk, const nst_pyramid *P, const nst_tileset *set, const nst_tile_codec *codec);

#endif

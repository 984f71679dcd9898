/* nst/output/output_dzi.c: the Deep Zoom sink: NAME.dzi (the descriptor) and NAME_files/L/C_R.jpg (or
 * .png), the layout OpenSeadragon and `vips dzsave` use (io/image/dzi.h).
 *
 * Deep Zoom level L of an image whose longest side needs n = ceil(log2(side)) halvings is our
 * pyramid level n - L (tiler/pyramid.h halves down to 1 x 1 for it, with the ceiling as Deep Zoom
 * does), cut into output.tile_size tiles with no overlap: each Deep Zoom tile is one output tile,
 * so its owner encodes it and only the encoded bytes move (tile_batches.h). Rank 0 writes the
 * tiles into a temporary folder, renamed into place just before the descriptor, so a reader never
 * sees a half-written pyramid under the final names. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../../io/image/dzi.h"
#include "../../mpi/comm.h"
#include "../../util/mem.h"
#include "../../util/threads.h"
#include "tile_batches.h"

typedef struct {
    nst_sink *sk;
    nst_dzi_codec codec;
    int nlevels;          /* the pyramid's; our level k is Deep Zoom level nlevels - 1 - k */
    int level, nx;        /* rank 0: the Deep Zoom level being stored, its tiles across */
    int sample_bytes;     /* of the level being encoded */
    int nthreads;
    unsigned char **out;  /* per thread: its last encoded tile (malloc'ed) */
    unsigned char **px8;  /* per thread: a 16-bit tile rounded to 8 bits */
    unsigned long long bytes;
} dzi_sink;

static nst_status dzi_encode(void *ctx, int thread, const unsigned char *samples, int w, int h, const unsigned char **bytes, size_t *len)
{
    dzi_sink *d = ctx;
    free(d->out[thread]);
    d->out[thread] = NULL;
    unsigned char *buf;
    nst_status s = nst_dzi_encode(&d->codec, samples, w, h, d->sample_bytes, d->px8[thread], &buf, len);
    if (s == NST_OK) d->out[thread] = buf, *bytes = buf;
    return s;
}

static nst_status dzi_store(void *ctx, int t, const unsigned char *bytes, size_t len)
{
    dzi_sink *d = ctx;
    char path[4400];
    snprintf(path, sizeof path, "%s/%d/%d_%d.%s", d->sk->dir.tmp, d->level, t % d->nx, t / d->nx, nst_dzi_ext(&d->codec));
    d->bytes += len;
    return nst_write_whole(path, bytes, len);
}

static nst_status dzi_level(nst_sink *sk, const nst_pyramid *P, const nst_tileset *set)
{
    dzi_sink *d = sk->impl;
    nst_status s = NST_OK;
    d->level = d->nlevels - 1 - set->level;
    d->nx = set->lv.nx;
    d->sample_bytes = set->sample_bytes;
    if (nst_comm_rank() == 0) {
        char dir[4400];
        snprintf(dir, sizeof dir, "%s/%d", sk->dir.tmp, d->level);
        if (mkdir(dir, 0755) != 0) s = nst_fail(NST_ERUNTIME, "%s: cannot create %s: %s", sk->dir.final_path, dir, strerror(errno));
    }
    for (int i = 0; set->sample_bytes == 2 && i < d->nthreads && s == NST_OK; i++)
        if (!d->px8[i] && !(d->px8[i] = nst_alloc((size_t)P->tile * P->tile * 3, "an 8-bit Deep Zoom tile"))) s = NST_ENOMEM;
    NST_TRY(nst_comm_agree(s));
    nst_tile_codec codec = {dzi_encode, dzi_store, d, d->nthreads};
    return nst_comm_agree(nst_tile_batches_write(sk, P, set, &codec));
}

static nst_status dzi_close(nst_sink *sk, int ok)
{
    dzi_sink *d = sk->impl;
    (void)ok;
    sk->bytes = d->bytes;
    for (int i = 0; i < d->nthreads; i++) {
        if (d->out) free(d->out[i]);
        if (d->px8) nst_free(d->px8[i]);
    }
    nst_free(d->out);
    nst_free(d->px8);
    nst_free(d);
    sk->impl = NULL;
    return NST_OK;
}

nst_status nst_sink_dzi(nst_sink *sk, const nst_output_spec *o, const nst_pyramid *P)
{
    NST_TRY(nst_sink_begin(sk, NST_OUT_DZI, o->path[NST_OUT_DZI], o->overwrite, P->nlevels));
    const int rank = nst_comm_rank();
    nst_status s = rank == 0 ? nst_atomic_dir_begin(&sk->dir, o->dzi_files, o->overwrite) : NST_OK;
    if (s != NST_OK && rank == 0) nst_atomic_abort(&sk->af);
    NST_TRY(nst_comm_agree(s));
    sk->has_dir = 1;
    s = nst_comm_bcast(&sk->dir, sizeof sk->dir, 0);
    dzi_sink *d = s == NST_OK ? nst_calloc(sizeof *d, "the Deep Zoom sink") : NULL;
    if (s == NST_OK && !d) s = NST_ENOMEM;
    if (d) {
        sk->impl = d;
        sk->level = dzi_level;
        sk->close = dzi_close;
        d->sk = sk;
        d->codec = (nst_dzi_codec){o->dzi_png, o->jpeg_quality, o->png_level};
        d->nlevels = P->nlevels;
        d->nthreads = nst_max_threads();
        d->out = nst_calloc(sizeof(unsigned char *) * (size_t)d->nthreads, "Deep Zoom tiles");
        d->px8 = nst_calloc(sizeof(unsigned char *) * (size_t)d->nthreads, "Deep Zoom tiles");
        if (!d->out || !d->px8) s = NST_ENOMEM;
    }
    if (s == NST_OK && rank == 0) {
        char xml[512];
        size_t n = nst_dzi_descriptor(xml, sizeof xml, &d->codec, P->tile, P->lv[0].w, P->lv[0].h);
        s = nst_write_whole(sk->af.tmp, xml, n);
    }
    s = nst_comm_agree(s);
    if (s != NST_OK) {
        if (d) dzi_close(sk, 0);
        if (rank == 0) nst_atomic_dir_abort(&sk->dir); /* (the descriptor's temporary: open_sinks) */
    }
    return s;
}

/* nst/output/output_tiff.c: the TIFF sink. The tiles travel as tile_batches.h says: compressed by their
 * owners with libtiff's codecs (one encoder per thread), written by rank 0 with raw tile writes. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "../../mpi/comm.h"
#include "../../util/mem.h"
#include "../../util/threads.h"
#include "../../util/timer.h"
#include "tile_batches.h"

typedef struct {
    nst_tiff_params p;
    nst_tiff_writer *w;      /* rank 0 */
    nst_tiff_encoder **enc;  /* one per thread */
    int nenc;
} tiff_sink;

static nst_status tiff_close(nst_sink *sk, int ok)
{
    tiff_sink *ts = sk->impl;
    nst_status s = NST_OK;
    if (ts->w) {
        double t0 = nst_now();
        s = nst_tiff_writer_close(ts->w);
        sk->io_seconds += nst_now() - t0;
        ts->w = NULL;
        struct stat st;
        if (s == NST_OK && stat(sk->af.tmp, &st) == 0) sk->bytes = (unsigned long long)st.st_size;
    }
    for (int i = 0; i < ts->nenc; i++) nst_tiff_encoder_free(ts->enc[i]);
    nst_free(ts->enc);
    nst_free(ts);
    sk->impl = NULL;
    return ok ? nst_comm_agree(s) : NST_OK;
}

/* The TIFF's codec for the batches: libtiff's encoders, raw tile writes on rank 0. */
static nst_status tiff_encode(void *ctx, int thread, const unsigned char *samples, int w, int h, const unsigned char **bytes, size_t *len)
{
    tiff_sink *ts = ctx;
    return nst_tiff_encode(ts->enc[thread], samples, w, h, bytes, len);
}

static nst_status tiff_store(void *ctx, int t, const unsigned char *bytes, size_t len)
{
    tiff_sink *ts = ctx;
    return nst_tiff_writer_tile(ts->w, t, bytes, len);
}

static nst_status tiff_level(nst_sink *sk, const nst_pyramid *P, const nst_tileset *set)
{
    tiff_sink *ts = sk->impl;
    const int rank = nst_comm_rank();
    double t0 = nst_now();
    nst_status s = NST_OK;
    if (rank == 0) s = nst_tiff_writer_level(ts->w, set->level, set->lv.w, set->lv.h);
    if (rank == 0) sk->io_seconds += nst_now() - t0, sk->seconds += nst_now() - t0;
    NST_TRY(nst_comm_agree(s));
    nst_tile_codec codec = {tiff_encode, tiff_store, ts, ts->nenc};
    s = nst_tile_batches_write(sk, P, set, &codec);
    if (s == NST_OK && rank == 0) {
        t0 = nst_now();
        s = nst_tiff_writer_end_level(ts->w);
        sk->io_seconds += nst_now() - t0, sk->seconds += nst_now() - t0;
    }
    return nst_comm_agree(s);
}

nst_status nst_sink_tiff(nst_sink *sk, const nst_output_spec *o, const nst_pyramid *P, int nlevels, const char *description)
{
    NST_TRY(nst_sink_begin(sk, NST_OUT_TIFF, o->path[NST_OUT_TIFF], o->overwrite, nlevels));
    tiff_sink *ts = nst_calloc(sizeof *ts, "the TIFF sink");
    nst_status s = ts ? NST_OK : NST_ENOMEM;
    if (ts) {
        sk->impl = ts;
        sk->level = tiff_level;
        sk->close = tiff_close;
        ts->p = o->tiff;
        ts->nenc = nst_max_threads();
        ts->enc = nst_calloc(sizeof(nst_tiff_encoder *) * (size_t)ts->nenc, "TIFF encoders");
        if (!ts->enc) s = NST_ENOMEM;
        for (int i = 0; s == NST_OK && i < ts->nenc; i++) s = nst_tiff_encoder_new(&ts->p, &ts->enc[i]);
    }
    if (s == NST_OK && nst_comm_rank() == 0) {
        /* BigTIFF from the uncompressed size of the whole pyramid: compression cannot be counted on */
        double raw = nst_pyramid_pixels(P) * 3 * (o->bits / 8);
        for (int k = nlevels; k < P->nlevels; k++) raw -= (double)P->lv[k].w * P->lv[k].h * 3 * (o->bits / 8);
        int big = strcmp(o->bigtiff, "yes") == 0 || (strcmp(o->bigtiff, "auto") == 0 && raw > 3.9e9);
        s = nst_tiff_writer_open(sk->af.tmp, &ts->p, nlevels, big, description, &ts->w);
    }
    s = nst_comm_agree(s);
    if (s != NST_OK && ts) tiff_close(sk, 0);
    return s;
}

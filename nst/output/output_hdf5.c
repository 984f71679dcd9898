/* nst/output/output_hdf5.c: the HDF5 sink. Every rank writes the chunks it owns in collective
 * transfers, one run of consecutive tiles of a row per call (one rectangle: HDF5's fast path),
 * the run's tiles laid side by side in one block buffer. Ranks with fewer runs take part in the
 * remaining calls with nothing to write. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "../../mpi/comm.h"
#include "../../util/mem.h"
#include "../../util/timer.h"
#include "../../util/version.h"
#include "output_sink.h"

typedef struct {
    nst_h5_image *h5;
} hdf5_sink;

static nst_status hdf5_close(nst_sink *sk, int ok)
{
    hdf5_sink *hs = sk->impl;
    nst_status s = NST_OK;
    if (hs->h5) {
        double t0 = nst_now();
        s = nst_h5_image_close(hs->h5);
        sk->io_seconds += nst_now() - t0;
        struct stat st;
        if (s == NST_OK && nst_comm_rank() == 0 && stat(sk->af.tmp, &st) == 0) sk->bytes = (unsigned long long)st.st_size;
    }
    nst_free(hs);
    sk->impl = NULL;
    return ok ? nst_comm_agree(s) : NST_OK;
}

static nst_status hdf5_level(nst_sink *sk, const nst_pyramid *P, const nst_tileset *set)
{
    hdf5_sink *hs = sk->impl;
    const int nranks = nst_comm_size(), T = P->tile;
    const nst_level *lv = &set->lv;
    double t_start = nst_now(), t0 = nst_now();
    nst_status s = nst_h5_image_level(hs->h5, set->level, lv->w, lv->h);
    sk->io_seconds += nst_now() - t0;
    NST_TRY(nst_comm_agree(s));

    /* the calls: as many as the most runs any rank has */
    int *runs = nst_calloc(sizeof(int) * (size_t)nranks, "tile runs per rank");
    unsigned char *block = NULL;
    if (!runs) s = NST_ENOMEM;
    int calls = 0;
    if (s == NST_OK) {
        for (int t = 0; t < lv->ntiles; t++) /* a run starts where the tile on the left is another rank's */
            if (t % lv->nx == 0 || set->owner[t - 1] != set->owner[t]) runs[set->owner[t]]++;
        for (int r = 0; r < nranks; r++)
            if (runs[r] > calls) calls = runs[r];
        block = nst_alloc((size_t)(lv->h < T ? lv->h : T) * lv->w * 3 * (size_t)set->sample_bytes, "an HDF5 block of tiles");
        if (!block) s = NST_ENOMEM;
    }
    s = nst_comm_agree(s);
    const size_t px = 3 * (size_t)set->sample_bytes;
    for (int c = 0, i = 0; s == NST_OK && c < calls; c++) {
        /* this rank's next run: own[i ..] while in the same row and adjacent */
        int n = 0, x = 0, y = 0, w = 0, h = 1;
        if (i < set->nown) {
            nst_rect r0 = nst_tileset_rect(P, set, i);
            x = r0.x;
            y = r0.y;
            h = r0.h;
            while (i + n < set->nown && set->own[i + n] == set->own[i] + n && set->own[i + n] / lv->nx == set->own[i] / lv->nx) {
                w += nst_tileset_rect(P, set, i + n).w;
                n++;
            }
            for (int k = 0, col = 0; k < n; k++) { /* side by side in the block */
                int tw = nst_tileset_rect(P, set, i + k).w;
                for (int yy = 0; yy < h; yy++)
                    memcpy(block + ((size_t)yy * w + (size_t)col) * px, set->px[i + k] + (size_t)yy * tw * px, (size_t)tw * px);
                col += tw;
            }
            i += n;
        }
        t0 = nst_now();
        s = nst_h5_image_write_block(hs->h5, x, y, w, h, block);
        sk->io_seconds += nst_now() - t0;
        s = nst_comm_agree(s);
    }
    if (s == NST_OK) {
        t0 = nst_now();
        s = nst_h5_image_end_level(hs->h5);
        sk->io_seconds += nst_now() - t0;
    }
    nst_free(runs);
    nst_free(block);
    sk->seconds += nst_now() - t_start;
    return nst_comm_agree(s);
}

nst_status nst_sink_hdf5(nst_sink *sk, const nst_output_spec *o, int nlevels, const char *description)
{
    NST_TRY(nst_sink_begin(sk, NST_OUT_HDF5, o->path[NST_OUT_HDF5], o->overwrite, nlevels));
    hdf5_sink *hs = nst_calloc(sizeof *hs, "the HDF5 sink");
    nst_status s = hs ? NST_OK : NST_ENOMEM;
    if (hs) {
        sk->impl = hs;
        sk->level = hdf5_level;
        sk->close = hdf5_close;
        double t0 = nst_now();
        s = nst_h5_image_create(sk->af.tmp, &o->h5, nlevels, description, NST_VERSION, &hs->h5);
        sk->io_seconds += nst_now() - t0;
    }
    s = nst_comm_agree(s);
    if (s != NST_OK && hs) hdf5_close(sk, 0);
    return s;
}

/* nst/output_hdf5.c: the HDF5 sink. Every rank writes the chunks it owns in collective
 * transfers, one row of tiles per call: the row's chunks laid side by side in one band buffer,
 * which is the order HDF5 walks the union of their hyperslabs in. Ranks whose tiles lie in fewer
 * rows take part in the remaining calls with nothing to write. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "../mpi/comm.h"
#include "../util/mem.h"
#include "../util/timer.h"
#include "../util/version.h"
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

    /* the calls: as many as the most rows of tiles any rank has tiles in */
    int *rows = nst_calloc(sizeof(int) * (size_t)nranks, "tile rows per rank");
    int *x = nst_alloc_array((size_t)lv->nx + 1, sizeof(int), "chunk columns");
    int *w = nst_alloc_array((size_t)lv->nx + 1, sizeof(int), "chunk widths");
    unsigned char *band = NULL;
    if (!rows || !x || !w) s = NST_ENOMEM;
    int calls = 0;
    if (s == NST_OK) {
        for (int j = 0; j < lv->ny; j++)
            for (int r = 0; r < nranks; r++) {
                int has = 0;
                for (int i = 0; i < lv->nx && !has; i++) has = set->owner[j * lv->nx + i] == r;
                rows[r] += has;
            }
        for (int r = 0; r < nranks; r++)
            if (rows[r] > calls) calls = rows[r];
        size_t row_bytes = (size_t)lv->w * 3 * (size_t)set->sample_bytes;
        band = nst_alloc((size_t)(lv->h < T ? lv->h : T) * row_bytes, "an HDF5 band of tiles");
        if (!band) s = NST_ENOMEM;
    }
    s = nst_comm_agree(s);
    const size_t px = 3 * (size_t)set->sample_bytes;
    for (int c = 0, i = 0; s == NST_OK && c < calls; c++) {
        /* this rank's next row of tiles: own[i ..] while the row stays the same */
        int n = 0, y = 0, h = 1, total = 0;
        if (i < set->nown) {
            int j = set->own[i] / lv->nx;
            nst_rect r0 = nst_tileset_rect(P, set, i);
            y = r0.y;
            h = r0.h;
            for (int k = i; k < set->nown && set->own[k] / lv->nx == j; k++, n++) {
                nst_rect r = nst_tileset_rect(P, set, k);
                x[n] = r.x;
                w[n] = r.w;
                total += r.w;
            }
            for (int k = 0, col = 0; k < n; col += w[k], k++) /* side by side in the band */
                for (int yy = 0; yy < h; yy++)
                    memcpy(band + ((size_t)yy * total + (size_t)col) * px, set->px[i + k] + (size_t)yy * w[k] * px, (size_t)w[k] * px);
            i += n;
        }
        t0 = nst_now();
        s = nst_h5_image_write_band(hs->h5, y, h, n, x, w, band);
        sk->io_seconds += nst_now() - t0;
        s = nst_comm_agree(s);
    }
    if (s == NST_OK) {
        t0 = nst_now();
        s = nst_h5_image_end_level(hs->h5);
        sk->io_seconds += nst_now() - t0;
    }
    nst_free(rows);
    nst_free(x);
    nst_free(w);
    nst_free(band);
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

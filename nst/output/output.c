/* nst/output/output.c: the output pipeline (see output.h): level 0 from the cores, then for every level
 * the formats that take it and the preview, then the next level; the files renamed into place
 * together at the end. */
#include "output.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../io/image.h"
#include "../../mpi/comm.h"
#include "../../util/log.h"
#include "../../util/mem.h"
#include "../../util/timer.h"
#include "output_sink.h"

nst_status nst_sink_begin(nst_sink *sk, int format, const char *path, int overwrite, int nlevels)
{
    memset(sk, 0, sizeof *sk);
    sk->format = format;
    sk->nlevels = nlevels;
    nst_status s = nst_comm_rank() == 0 ? nst_atomic_begin(&sk->af, path, overwrite) : NST_OK;
    s = nst_comm_agree(s);
    if (s == NST_OK) s = nst_comm_bcast(&sk->af, sizeof sk->af, 0);
    return s;
}

/* The test hook NSTBATCH_FAULT=RANK:output: that rank fails once level 0 is in every file (a full
 * disk, a lost rank), so the tests can check that no output appears and none is damaged. */
static nst_status injected_fault(void)
{
    const char *f = getenv("NSTBATCH_FAULT");
    int rank;
    char what[16];
    if (f && sscanf(f, "%d:%15s", &rank, what) == 2 && rank == nst_comm_rank() && strcmp(what, "output") == 0)
        return nst_fail(NST_ERUNTIME, "rank %d: injected fault while writing the output (NSTBATCH_FAULT=%s)", rank, f);
    return NST_OK;
}

/* The level the preview is made from: the smallest at least `side` long (level 0 if none is). */
static int preview_level(const nst_pyramid *P, int side)
{
    int best = 0;
    for (int k = 0; k < P->nlevels; k++) {
        int longest = P->lv[k].w > P->lv[k].h ? P->lv[k].w : P->lv[k].h;
        if (longest >= side) best = k;
    }
    return best;
}

nst_status nst_output_write(const nst_output_spec *o, const nst_layout *L, float **cores, int W, int H, const char *description,
                            nst_output_stats *st)
{
    const int rank = nst_comm_rank();
    memset(st, 0, sizeof *st);
    double t_start = nst_now();
    nst_pyramid P;
    /* every level is computed down to one tile (the preview needs a small one); the files take
     * them all, or only level 0 without output.pyramid */
    if (nst_pyramid_make(W, H, o->tiff.tile, 1, &P) != 0)
        return nst_fail(NST_EINPUT, "output of %dx%d cannot be cut into %d px tiles", W, H, o->tiff.tile);
    const int nwrite = o->pyramid ? P.nlevels : 1;
    const int pv = o->preview_path[0] ? preview_level(&P, o->preview_side) : -1;
    const int last = pv > nwrite - 1 ? pv : nwrite - 1;

    nst_sink sinks[NST_OUT_NFORMATS];
    int nsinks = 0;
    nst_status s = NST_OK;
    memset(sinks, 0, sizeof sinks);
    if (o->want[NST_OUT_TIFF]) {
        s = nst_sink_tiff(&sinks[nsinks], o, &P, nwrite, description);
        if (s == NST_OK) nsinks++;
    }
    if (s == NST_OK && o->want[NST_OUT_HDF5]) {
        s = nst_sink_hdf5(&sinks[nsinks], o, nwrite, description);
        if (s == NST_OK) nsinks++;
    }
    if (s == NST_OK && o->want[NST_OUT_PNG]) {
        s = nst_sink_png(&sinks[nsinks], o, &P, description);
        if (s == NST_OK) nsinks++;
    }
    if (s == NST_OK && o->want[NST_OUT_JPEG]) {
        s = nst_sink_jpeg(&sinks[nsinks], o, &P, description);
        if (s == NST_OK) nsinks++;
    }
    nst_sink preview;
    int have_preview = 0;
    const int preview_jpeg = nst_format_from_name(o->preview_path) == NST_FMT_JPEG; /* the spec named it */
    if (s == NST_OK && pv >= 0) {
        s = nst_sink_begin(&preview, preview_jpeg ? NST_OUT_JPEG : NST_OUT_PNG, o->preview_path, 1, 1);
        have_preview = s == NST_OK;
    }

    if (s != NST_OK && rank == 0 && nsinks < NST_OUT_NFORMATS) { /* a sink that failed after creating its temporary */
        if (sinks[nsinks].af.tmp[0]) nst_atomic_abort(&sinks[nsinks].af);
    }

    nst_tileset cur, next;
    memset(&cur, 0, sizeof cur);
    memset(&next, 0, sizeof next);
    double t0 = nst_now();
    if (s == NST_OK) s = nst_tiles_level0(&P, L, cores, o->bits, &cur, &st->peak_bytes);
    st->exchange_seconds += nst_now() - t0;
    for (int k = 0; s == NST_OK && k <= last; k++) {
        if (k < nwrite)
            for (int i = 0; s == NST_OK && i < nsinks; i++)
                if (k < sinks[i].nlevels) s = sinks[i].level(&sinks[i], &P, &cur);
        if (s == NST_OK && k == pv) s = nst_write_preview(&P, &cur, o->preview_side, preview_jpeg, preview.af.tmp);
        if (s == NST_OK && k == 0) s = nst_comm_agree(injected_fault());
        if (s == NST_OK && k < last) {
            t0 = nst_now();
            s = nst_tiles_reduce(&P, &cur, &next, &st->peak_bytes);
            st->exchange_seconds += nst_now() - t0;
            nst_tileset_free(&cur);
            cur = next;
            memset(&next, 0, sizeof next);
        }
    }
    nst_tileset_free(&cur);
    for (int i = 0; i < L->nlocal; i++) nst_free(cores[i]); /* if level 0 was never built */

    /* close every file; then all of them into place, or none */
    for (int i = 0; i < nsinks; i++) {
        nst_status c = sinks[i].close(&sinks[i], s == NST_OK);
        if (s == NST_OK) s = c;
    }
    s = nst_comm_agree(s);
    if (rank == 0) {
        for (int i = 0; i < nsinks; i++) {
            if (s == NST_OK) s = nst_atomic_commit(&sinks[i].af);
            else nst_atomic_abort(&sinks[i].af);
        }
        if (have_preview) {
            if (s == NST_OK) s = nst_atomic_commit(&preview.af);
            else nst_atomic_abort(&preview.af);
        }
    }
    s = nst_comm_agree(s);
    for (int i = 0; i < nsinks; i++) {
        st->format_seconds[sinks[i].format] = sinks[i].seconds;
        st->io_seconds[sinks[i].format] = sinks[i].io_seconds;
        st->bytes[sinks[i].format] = sinks[i].bytes;
    }
    st->levels = nwrite;
    st->seconds = nst_now() - t_start;
    return s;
}

/* nst/output/output.c: the output pipeline (see output.h): level 0 from the cores, then for every level
 * the formats that take it and the preview, then the next level; the files renamed into place
 * together at the end. */
#include "output.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../io/image/image.h"
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

/* The files of one output as it is written: a sink per format and the preview. */
typedef struct {
    nst_pyramid P;
    int nwrite;   /* the levels the files take */
    int pv, last; /* the preview's level (-1: none), the last level to compute */
    nst_sink sinks[NST_OUT_NFORMATS];
    int nsinks;
    nst_sink preview;
    int have_preview, preview_jpeg;
} out_files;

/* One sink per format asked for, then the preview's. A sink that failed after creating its
 * temporary has it removed (rank 0). */
static nst_status open_sinks(const nst_output_spec *o, const char *description, out_files *f)
{
    nst_status s = NST_OK;
    if (o->want[NST_OUT_TIFF]) {
        s = nst_sink_tiff(&f->sinks[f->nsinks], o, &f->P, f->nwrite, description);
        if (s == NST_OK) f->nsinks++;
    }
    if (s == NST_OK && o->want[NST_OUT_HDF5]) {
        s = nst_sink_hdf5(&f->sinks[f->nsinks], o, f->nwrite, description);
        if (s == NST_OK) f->nsinks++;
    }
    if (s == NST_OK && o->want[NST_OUT_PNG]) {
        s = nst_sink_png(&f->sinks[f->nsinks], o, &f->P, description);
        if (s == NST_OK) f->nsinks++;
    }
    if (s == NST_OK && o->want[NST_OUT_JPEG]) {
        s = nst_sink_jpeg(&f->sinks[f->nsinks], o, &f->P, description);
        if (s == NST_OK) f->nsinks++;
    }
    if (s == NST_OK && o->want[NST_OUT_DZI]) {
        s = nst_sink_dzi(&f->sinks[f->nsinks], o, &f->P);
        if (s == NST_OK) f->nsinks++;
    }
    f->preview_jpeg = nst_format_from_name(o->preview_path) == NST_FMT_JPEG; /* the spec named it */
    if (s == NST_OK && f->pv >= 0) {
        s = nst_sink_begin(&f->preview, f->preview_jpeg ? NST_OUT_JPEG : NST_OUT_PNG, o->preview_path, 1, 1);
        f->have_preview = s == NST_OK;
    }
    if (s != NST_OK && nst_comm_rank() == 0 && f->nsinks < NST_OUT_NFORMATS && f->sinks[f->nsinks].af.tmp[0])
        nst_atomic_abort(&f->sinks[f->nsinks].af);
    return s;
}

/* Level 0 from the cores, then every level into the sinks that take it and the preview, each
 * reduced to the next. Collective. */
static nst_status write_levels(const nst_output_spec *o, const nst_layout *L, float **cores, out_files *f, nst_output_stats *st)
{
    nst_tileset cur, next;
    memset(&cur, 0, sizeof cur);
    memset(&next, 0, sizeof next);
    double t0 = nst_now();
    nst_status s = nst_tiles_level0(&f->P, L, cores, o->bits, &cur, &st->peak_bytes);
    st->exchange_seconds += nst_now() - t0;
    for (int k = 0; s == NST_OK && k <= f->last; k++) {
        for (int i = 0; s == NST_OK && i < f->nsinks; i++)
            if (k < f->sinks[i].nlevels) s = f->sinks[i].level(&f->sinks[i], &f->P, &cur);
        if (s == NST_OK && k == f->pv) s = nst_write_preview(&f->P, &cur, o->preview_side, f->preview_jpeg, f->preview.af.tmp);
        if (s == NST_OK && k == 0) s = nst_comm_agree(injected_fault());
        if (s == NST_OK && k < f->last) {
            t0 = nst_now();
            s = nst_tiles_reduce(&f->P, &cur, &next, &st->peak_bytes);
            st->exchange_seconds += nst_now() - t0;
            nst_tileset_free(&cur);
            cur = next;
            memset(&next, 0, sizeof next);
        }
    }
    nst_tileset_free(&cur);
    return s;
}

/* Close every file; then all of them into place, or none (rank 0). Collective. */
static nst_status close_files(out_files *f, nst_status s)
{
    for (int i = 0; i < f->nsinks; i++) {
        nst_status c = f->sinks[i].close(&f->sinks[i], s == NST_OK);
        if (s == NST_OK) s = c;
    }
    s = nst_comm_agree(s);
    if (nst_comm_rank() == 0) {
        for (int i = 0; i < f->nsinks; i++) { /* a file's folder first: the file says it is complete */
            if (s == NST_OK && f->sinks[i].has_dir) s = nst_atomic_dir_commit(&f->sinks[i].dir);
            else if (f->sinks[i].has_dir) nst_atomic_dir_abort(&f->sinks[i].dir);
            if (s == NST_OK) s = nst_atomic_commit(&f->sinks[i].af);
            else nst_atomic_abort(&f->sinks[i].af);
        }
        if (f->have_preview) {
            if (s == NST_OK) s = nst_atomic_commit(&f->preview.af);
            else nst_atomic_abort(&f->preview.af);
        }
    }
    return nst_comm_agree(s);
}

nst_status nst_output_write(const nst_output_spec *o, const nst_layout *L, float **cores, int W, int H, const char *description,
                            nst_output_stats *st)
{
    memset(st, 0, sizeof *st);
    double t_start = nst_now();
    out_files f;
    memset(&f, 0, sizeof f);
    /* every level is computed down to one tile (the preview needs a small one), or to one pixel
     * for Deep Zoom, which takes them all; the other files take the levels down to one tile, or
     * only level 0 without output.pyramid */
    if (nst_pyramid_make(W, H, o->tiff.tile, o->want[NST_OUT_DZI] ? NST_PYRAMID_TO_PIXEL : NST_PYRAMID_TO_TILE, &f.P) != 0)
        return nst_fail(NST_EINPUT, "output of %dx%d cannot be cut into %d px tiles", W, H, o->tiff.tile);
    f.nwrite = o->pyramid ? nst_pyramid_tiled_levels(&f.P) : 1;
    f.pv = o->preview_path[0] ? preview_level(&f.P, o->preview_side) : -1;
    f.last = f.pv > f.nwrite - 1 ? f.pv : f.nwrite - 1;
    if (o->want[NST_OUT_DZI]) f.last = f.P.nlevels - 1;
    nst_status s = open_sinks(o, description, &f);
    if (s == NST_OK) s = write_levels(o, L, cores, &f, st);
    for (int i = 0; i < L->nlocal; i++) nst_free(cores[i]); /* if level 0 was never built */
    s = close_files(&f, s);
    for (int i = 0; i < f.nsinks; i++) {
        st->format_seconds[f.sinks[i].format] = f.sinks[i].seconds;
        st->io_seconds[f.sinks[i].format] = f.sinks[i].io_seconds;
        st->bytes[f.sinks[i].format] = f.sinks[i].bytes;
    }
    st->levels = f.nwrite;
    st->seconds = nst_now() - t_start;
    return s;
}

/* nst/output/output_sink.h: one output file being written, level by level, by all ranks together.
 * Internal to the output (nst/output*.c); each format's sink lives in its own file. */
#ifndef NST_OUTPUT_SINK_H
#define NST_OUTPUT_SINK_H

#include "../../io/atomic_file.h"
#include "output.h"
#include "output_tiles.h"

typedef struct nst_sink nst_sink;

struct nst_sink {
    int format;              /* NST_OUT_* */
    int nlevels;             /* levels it takes */
    nst_atomic_file af;      /* the temporary and final names (every rank knows them) */
    nst_atomic_file dir;     /* a folder of the file's, with has_dir (Deep Zoom's tiles): renamed into place before af */
    int has_dir;
    double seconds;          /* this rank's time in the sink */
    double io_seconds;       /* time in the file-writing calls alone (rank 0; HDF5: every rank) */
    unsigned long long bytes;
    /* Write one level (0, 1, ... in order). Collective. */
    nst_status (*level)(nst_sink *sk, const nst_pyramid *P, const nst_tileset *ts);
    /* Finish the file under its temporary name (ok) or give it up (!ok); frees the sink's own
     * state but not the sink. Collective. */
    nst_status (*close)(nst_sink *sk, int ok);
    void *impl;
};

/* Rank 0 creates the temporary file for path and every rank learns its name. Collective. */
nst_status nst_sink_begin(nst_sink *sk, int format, const char *path, int overwrite, int nlevels);

nst_status nst_sink_tiff(nst_sink *sk, const nst_output_spec *o, const nst_pyramid *P, int nlevels, const char *description);
nst_status nst_sink_hdf5(nst_sink *sk, const nst_output_spec *o, int nlevels, const char *description);
nst_status nst_sink_png(nst_sink *sk, const nst_output_spec *o, const nst_pyramid *P, const char *description);
nst_status nst_sink_jpeg(nst_sink *sk, const nst_output_spec *o, const nst_pyramid *P, const char *description);
/* Deep Zoom: takes every level of P, which must reach 1 x 1 (NST_PYRAMID_TO_PIXEL). */
nst_status nst_sink_dzi(nst_sink *sk, const nst_output_spec *o, const nst_pyramid *P);

/* Rank 0 receives the level's whole tile row j, (rows of the level) x (its width) samples, into
 * band; the other ranks send their tiles of that row. Collective; tolerates band == NULL on
 * ranks other than 0. */
nst_status nst_gather_tile_row(const nst_pyramid *P, const nst_tileset *ts, int j, unsigned char *band);

/* The preview: level ts (gathered to rank 0) resized to a long side of `side`, written as an
 * 8-bit PNG (a JPEG with jpeg) at path (a temporary name; rank 0). Collective. */
nst_status nst_write_preview(const nst_pyramid *P, const nst_tileset *ts, int side, int jpeg, const char *path);

#endif

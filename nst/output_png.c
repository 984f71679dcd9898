/* nst/output_png.c: the PNG sink and the preview. PNG is a stream of rows, so rank 0 writes it
 * one row of tiles at a time: it receives the row's tiles from their owners (each rank sends its
 * tiles in ascending order, the order rank 0 asks for them, so blocking messages cannot cross)
 * and writes the band. The preview gathers a small level the same way. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "../io/png_write.h"
#include "../io/resample.h"
#include "../mpi/comm.h"
#include "../util/mem.h"
#include "../util/timer.h"
#include "output_sink.h"

nst_status nst_gather_tile_row(const nst_pyramid *P, const nst_tileset *ts, int j, unsigned char *band)
{
    const int rank = nst_comm_rank();
    const nst_level *lv = &ts->lv;
    const size_t px = 3 * (size_t)ts->sample_bytes;
    nst_status s = NST_OK;
    unsigned char *tmp = NULL;
    for (int i = 0; i < lv->nx; i++) {
        int t = j * lv->nx + i, owner = ts->owner[t];
        nst_rect r = nst_pyramid_tile(P, ts->level, t);
        size_t n = (size_t)nst_rect_area(r) * px;
        int li = -1;
        if (owner == rank)
            for (int k = 0; k < ts->nown && li < 0; k++)
                if (ts->own[k] == t) li = k;
        if (rank != 0) {
            if (owner == rank && s == NST_OK) s = nst_comm_send(ts->px[li], n, 0);
            continue;
        }
        const unsigned char *src = NULL;
        if (owner == 0) {
            src = ts->px[li];
        } else {
            if (!tmp) tmp = nst_alloc((size_t)P->tile * P->tile * px, "a received tile");
            if (!tmp) nst_comm_abort(1, "out of memory receiving a tile");
            if (s == NST_OK) s = nst_comm_recv(tmp, n, owner);
            src = tmp;
        }
        if (s == NST_OK && band)
            for (int y = 0; y < r.h; y++)
                memcpy(band + ((size_t)y * lv->w + (size_t)r.x) * px, src + (size_t)y * r.w * px, (size_t)r.w * px);
    }
    nst_free(tmp);
    return s;
}

/* ---- the PNG sink ---------------------------------------------------------------------------- */

typedef struct {
    nst_png_stream *png; /* rank 0 */
    int bits, level;
    char *description;
} png_sink;

static nst_status png_close(nst_sink *sk, int ok)
{
    png_sink *ps = sk->impl;
    nst_status s = NST_OK;
    if (ps->png) {
        double t0 = nst_now();
        s = ok ? nst_png_stream_close(ps->png) : (nst_png_stream_close(ps->png), NST_OK);
        sk->io_seconds += nst_now() - t0;
        struct stat st;
        if (s == NST_OK && stat(sk->af.tmp, &st) == 0) sk->bytes = (unsigned long long)st.st_size;
    }
    nst_free(ps);
    sk->impl = NULL;
    return ok ? nst_comm_agree(s) : NST_OK;
}

static nst_status png_level(nst_sink *sk, const nst_pyramid *P, const nst_tileset *set)
{
    png_sink *ps = sk->impl;
    if (set->level != 0) return NST_OK;
    const int rank = nst_comm_rank(), T = P->tile;
    const nst_level *lv = &set->lv;
    double t_start = nst_now();
    unsigned char *band = NULL;
    nst_status s = NST_OK;
    if (rank == 0) {
        band = nst_alloc((size_t)(lv->h < T ? lv->h : T) * lv->w * 3 * (size_t)set->sample_bytes, "a PNG band of tiles");
        if (!band) s = NST_ENOMEM;
    }
    s = nst_comm_agree(s);
    nst_status w = NST_OK; /* a write failure on rank 0 still takes every tile, then reports */
    for (int j = 0; s == NST_OK && j < lv->ny; j++) {
        s = nst_gather_tile_row(P, set, j, band);
        if (s == NST_OK && rank == 0 && w == NST_OK) {
            int rows = (j + 1) * T < lv->h ? T : lv->h - j * T;
            double t0 = nst_now();
            w = nst_png_stream_rows(ps->png, band, rows);
            sk->io_seconds += nst_now() - t0;
        }
    }
    if (s == NST_OK) s = w;
    nst_free(band);
    sk->seconds += nst_now() - t_start;
    return nst_comm_agree(s);
}

nst_status nst_sink_png(nst_sink *sk, const nst_output_spec *o, const nst_pyramid *P, const char *description)
{
    NST_TRY(nst_sink_begin(sk, NST_OUT_PNG, o->path[NST_OUT_PNG], o->overwrite, 1));
    png_sink *ps = nst_calloc(sizeof *ps, "the PNG sink");
    nst_status s = ps ? NST_OK : NST_ENOMEM;
    if (ps) {
        sk->impl = ps;
        sk->level = png_level;
        sk->close = png_close;
        if (nst_comm_rank() == 0) {
            double t0 = nst_now();
            s = nst_png_stream_open(sk->af.tmp, P->lv[0].w, P->lv[0].h, o->bits, o->png_level, description, o->dpi, &ps->png);
            sk->io_seconds += nst_now() - t0;
        }
    }
    s = nst_comm_agree(s);
    if (s != NST_OK && ps) png_close(sk, 0);
    return s;
}

/* ---- the preview ----------------------------------------------------------------------------- */

nst_status nst_write_preview(const nst_pyramid *P, const nst_tileset *ts, int side, const char *path)
{
    const int rank = nst_comm_rank(), T = P->tile;
    const nst_level *lv = &ts->lv;
    const size_t px = 3 * (size_t)ts->sample_bytes;
    unsigned char *band = NULL;
    nst_image img = {0}, small = {0};
    nst_status s = NST_OK;
    if (rank == 0) {
        band = nst_alloc((size_t)(lv->h < T ? lv->h : T) * lv->w * px, "the preview's band");
        s = band ? nst_image_alloc(&img, lv->w, lv->h) : NST_ENOMEM;
    }
    s = nst_comm_agree(s);
    for (int j = 0; s == NST_OK && j < lv->ny; j++) {
        s = nst_gather_tile_row(P, ts, j, band);
        if (s == NST_OK && rank == 0) {
            int rows = (j + 1) * T < lv->h ? T : lv->h - j * T;
            for (int y = 0; y < rows; y++) nst_image_put_row(&img, j * T + y, 0, lv->w, band + (size_t)y * lv->w * px, 3, ts->sample_bytes * 8);
        }
    }
    s = nst_comm_agree(s);
    if (s == NST_OK && rank == 0) {
        int w, h;
        if (lv->w > side || lv->h > side)
            nst_fit_long_side(lv->w, lv->h, side, &w, &h);
        else
            w = lv->w, h = lv->h;
        s = nst_image_resize(&img, w, h, &small);
        if (s == NST_OK) s = nst_png_write(path, &small, 8, NULL);
    }
    nst_free(band);
    nst_image_free(&img);
    nst_image_free(&small);
    return nst_comm_agree(s);
}

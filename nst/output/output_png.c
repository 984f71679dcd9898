/* nst/output/output_png.c: the PNG and JPEG sinks and the preview. Both formats are streams of rows, so
 * rank 0 writes them one row of tiles at a time: it receives the row's tiles from their owners (each rank sends its
 * tiles in ascending order, the order rank 0 asks for them, so blocking messages cannot cross)
 * and writes the band. The preview gathers a small level the same way. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "../../io/image/jpeg_write.h"
#include "../../io/image/png_write.h"
#include "../../io/image/resample.h"
#include "../../mpi/comm.h"
#include "../../util/log.h"
#include "../../util/mem.h"
#include "../../util/timer.h"
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

/* ---- the PNG and JPEG sinks: streams of rows ---------------------------------------------------- */

typedef struct {
    void *stream; /* rank 0: an nst_png_stream or an nst_jpeg_stream */
    nst_status (*rows)(void *stream, const void *samples, int rows);
    nst_status (*finish)(void *stream);
} row_sink;

static nst_status png_rows(void *st, const void *samples, int rows) { return nst_png_stream_rows(st, samples, rows); }
static nst_status png_finish(void *st) { return nst_png_stream_close(st); }
static nst_status jpeg_rows(void *st, const void *samples, int rows) { return nst_jpeg_stream_rows(st, samples, rows); }
static nst_status jpeg_finish(void *st) { return nst_jpeg_stream_close(st); }

static nst_status rows_close(nst_sink *sk, int ok)
{
    row_sink *rs = sk->impl;
    nst_status s = NST_OK;
    if (rs->stream) {
        double t0 = nst_now();
        s = ok ? rs->finish(rs->stream) : (rs->finish(rs->stream), NST_OK);
        sk->io_seconds += nst_now() - t0;
        struct stat st;
        if (s == NST_OK && stat(sk->af.tmp, &st) == 0) sk->bytes = (unsigned long long)st.st_size;
    }
    nst_free(rs);
    sk->impl = NULL;
    return ok ? nst_comm_agree(s) : NST_OK;
}

/* Level 0 only, one band of tile rows at a time on rank 0. */
static nst_status rows_level(nst_sink *sk, const nst_pyramid *P, const nst_tileset *set)
{
    row_sink *rs = sk->impl;
    if (set->level != 0) return NST_OK;
    const int rank = nst_comm_rank(), T = P->tile;
    const nst_level *lv = &set->lv;
    double t_start = nst_now();
    unsigned char *band = NULL;
    nst_status s = NST_OK;
    if (rank == 0) {
        band = nst_alloc((size_t)(lv->h < T ? lv->h : T) * lv->w * 3 * (size_t)set->sample_bytes, "a band of tiles");
        if (!band) s = NST_ENOMEM;
    }
    s = nst_comm_agree(s);
    nst_status w = NST_OK; /* a write failure on rank 0 still takes every tile, then reports */
    for (int j = 0; s == NST_OK && j < lv->ny; j++) {
        s = nst_gather_tile_row(P, set, j, band);
        if (s == NST_OK && rank == 0 && w == NST_OK) {
            int rows = (j + 1) * T < lv->h ? T : lv->h - j * T;
            double t0 = nst_now();
            w = rs->rows(rs->stream, band, rows);
            sk->io_seconds += nst_now() - t0;
        }
    }
    if (s == NST_OK) s = w;
    nst_free(band);
    sk->seconds += nst_now() - t_start;
    return nst_comm_agree(s);
}

/* The sink of a row-stream format; rank 0 opens its stream with `open`. Collective. */
static nst_status rows_sink(nst_sink *sk, int format, const nst_output_spec *o, nst_status (*open)(const nst_output_spec *, const nst_pyramid *,
                                                                                                     const char *, const char *, row_sink *),
                            const nst_pyramid *P, const char *description)
{
    NST_TRY(nst_sink_begin(sk, format, o->path[format], o->overwrite, 1));
    row_sink *rs = nst_calloc(sizeof *rs, "a row sink");
    nst_status s = rs ? NST_OK : NST_ENOMEM;
    if (rs) {
        sk->impl = rs;
        sk->level = rows_level;
        sk->close = rows_close;
        if (nst_comm_rank() == 0) {
            double t0 = nst_now();
            s = open(o, P, sk->af.tmp, description, rs);
            sk->io_seconds += nst_now() - t0;
        }
    }
    s = nst_comm_agree(s);
    if (s != NST_OK && rs) rows_close(sk, 0);
    return s;
}

static nst_status png_open(const nst_output_spec *o, const nst_pyramid *P, const char *tmp, const char *description, row_sink *rs)
{
    nst_png_stream *ps = NULL;
    nst_status s = nst_png_stream_open(tmp, P->lv[0].w, P->lv[0].h, o->bits, o->png_level, description, o->dpi, &ps);
    rs->stream = ps, rs->rows = png_rows, rs->finish = png_finish;
    return s;
}

/* A progressive JPEG keeps every coefficient of the image on rank 0 until the end: up to this
 * much (about 180 megapixels at quality 90 or more), then baseline, which holds one band. */
#define PROGRESSIVE_MAX_BYTES (1ull << 30)

static nst_status jpeg_open(const nst_output_spec *o, const nst_pyramid *P, const char *tmp, const char *description, row_sink *rs)
{
    const int w = P->lv[0].w, h = P->lv[0].h;
    size_t coef = nst_jpeg_progressive_bytes(w, h, o->jpeg_quality);
    int progressive = coef <= PROGRESSIVE_MAX_BYTES;
    if (!progressive)
        nst_info("output:  %s is baseline: progressive would hold %.1f GiB of coefficients on rank 0 (1 GiB at most)\n", o->path[NST_OUT_JPEG],
                 (double)coef / (1u << 30));
    nst_jpeg_stream *js = NULL;
    nst_status s = nst_jpeg_stream_open(tmp, w, h, o->jpeg_quality, progressive, o->dpi, description, &js);
    rs->stream = js, rs->rows = jpeg_rows, rs->finish = jpeg_finish;
    return s;
}

nst_status nst_sink_png(nst_sink *sk, const nst_output_spec *o, const nst_pyramid *P, const char *description)
{
    return rows_sink(sk, NST_OUT_PNG, o, png_open, P, description);
}

nst_status nst_sink_jpeg(nst_sink *sk, const nst_output_spec *o, const nst_pyramid *P, const char *description)
{
    return rows_sink(sk, NST_OUT_JPEG, o, jpeg_open, P, description);
}

/* ---- the preview ----------------------------------------------------------------------------- */

nst_status nst_write_preview(const nst_pyramid *P, const nst_tileset *ts, int side, int jpeg, const char *path)
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
        if (s == NST_OK) s = jpeg ? nst_jpeg_write(path, &small, 90, NULL) : nst_png_write(path, &small, 8, NULL);
    }
    nst_free(band);
    nst_image_free(&img);
    nst_image_free(&small);
    return nst_comm_agree(s);
}

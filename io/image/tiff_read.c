/* io/image/tiff_read.c: TIFF region source (libtiff) for untrusted files (see tiff_read.h).
 *
 * Accepts 8/16-bit unsigned samples; gray (min-is-black or min-is-white), gray+alpha, RGB, RGBA,
 * 8-bit palette, and JPEG-compressed YCbCr (decoded to RGB by libtiff); strips or tiles; chunky
 * or planar; classic TIFF or BigTIFF; any compression libtiff decodes. The first image (IFD) is
 * read. Before anything is decoded the header is validated: dimensions against the limits,
 * sample layout, and every strip's or tile's offset + byte count against the file size.
 * libtiff runs with a 256 MiB single-allocation cap and its messages go to our error channel.
 * The reading is by region: only the strips or tiles that intersect the requested rectangle are
 * decoded, and the source keeps the most recently used ones (planes interleaved) in a small cache,
 * so neighbouring windows, whose halos reach into the same tiles, decode them once.
 */
#include <stdio.h>
#include <string.h>
#include <tiffio.h>
#include <unistd.h>

#include "../../util/checked.h"
#include "../../util/mem.h"
#include "../../util/threads.h"
#include "tiff_read.h"
#include "tiff_msg.h"

#define TIFF_MAX_ALLOC ((tmsize_t)256 << 20)
#define CACHE_BYTES ((size_t)64 << 20) /* decoded tiles or strips kept per source */

typedef struct {
    const unsigned char *buf; /* memory source, or NULL */
    int fd;                   /* file source */
    uint64_t size, pos;
    char msg[NST_TIFF_MSG_MAX];
} tiff_src;

static tmsize_t src_read(thandle_t h, void *out, tmsize_t n)
{
    tiff_src *s = h;
    if (n <= 0 || s->pos >= s->size) return 0;
    uint64_t avail = s->size - s->pos;
    size_t want = (uint64_t)n < avail ? (size_t)n : (size_t)avail;
    if (s->buf) {
        memcpy(out, s->buf + s->pos, want);
        s->pos += want;
        return (tmsize_t)want;
    }
    size_t done = 0;
    while (done < want) {
        ssize_t r = pread(s->fd, (char *)out + done, want - done, (off_t)(s->pos + done));
        if (r <= 0) break;
        done += (size_t)r;
    }
    s->pos += done;
    return (tmsize_t)done;
}

static tmsize_t src_write(thandle_t h, void *b, tmsize_t n)
{
    (void)h;
    (void)b;
    (void)n;
    return -1;
}

static toff_t src_seek(thandle_t h, toff_t off, int whence)
{
    tiff_src *s = h;
    uint64_t base = whence == SEEK_CUR ? s->pos : whence == SEEK_END ? s->size : 0;
    uint64_t np;
    if (__builtin_add_overflow(base, off, &np)) return (toff_t)-1;
    s->pos = np;
    return s->pos;
}

static int src_close(thandle_t h)
{
    (void)h;
    return 0;
}

static toff_t src_size(thandle_t h) { return ((tiff_src *)h)->size; }

static int src_map(thandle_t h, void **base, toff_t *size)
{
    tiff_src *s = h;
    if (!s->buf) return 0;
    *base = (void *)s->buf;
    *size = s->size;
    return 1;
}

static void src_unmap(thandle_t h, void *base, toff_t size)
{
    (void)h;
    (void)base;
    (void)size;
}

typedef enum { PH_GRAY, PH_GRAY_INV, PH_RGB, PH_PALETTE } photo_kind;

typedef struct {
    TIFF *tif;
    tiff_src *src;
    const char *name;
    uint32_t w, h;
    uint16_t spp, bps, planar;
    photo_kind kind;
    uint16_t *cmap[3];
    int tiled;
    uint32_t tw, th, rps;
    /* kept between reads */
    int whole_strips;          /* strips decode whole; else one huge chunky strip, row by row */
    unsigned char *dec;        /* one decoded plane of a tile or strip (or a scanline) */
    uint16_t *scratch;         /* a converted row (inverted gray, palette) */
    uint32_t next_row;         /* the scanline path's position: rows are decoded forward only */
    struct {                   /* decoded tiles or strips, planes interleaved, least recently used out */
        int64_t unit;          /* tile or strip index (of plane 0); -1: empty */
        uint64_t used;
        unsigned char *px;
    } cache[64];
    int ncache;
    size_t unit_bytes, dec_bytes;
    uint64_t clock;
} tiff_reader;

/* Convert n pixels of decoded samples (interleaved, spp per pixel) into RGB floats at dst. */
static void put_pixels(const tiff_reader *r, float *dst, int n, const void *samples)
{
    uint16_t *scratch = r->scratch;
    if (r->kind == PH_RGB || r->kind == PH_GRAY) {
        nst_samples_to_rgb(dst, n, samples, r->spp, r->bps);
        return;
    }
    if (r->kind == PH_GRAY_INV) { /* inverted to 16-bit full scale (255 * 257 = 65535) */
        for (int i = 0; i < n; i++)
            scratch[i] = r->bps == 16 ? (uint16_t)(65535 - ((const uint16_t *)samples)[(size_t)i * r->spp])
                                      : (uint16_t)((255 - ((const uint8_t *)samples)[(size_t)i * r->spp]) * 257);
        nst_samples_to_rgb(dst, n, scratch, 1, 16);
        return;
    }
    /* palette: 8-bit indices into 16-bit colour maps */
    for (int i = 0; i < n; i++) {
        uint8_t idx = ((const uint8_t *)samples)[(size_t)i * r->spp];
        scratch[3 * i] = r->cmap[0][idx];
        scratch[3 * i + 1] = r->cmap[1][idx];
        scratch[3 * i + 2] = r->cmap[2][idx];
    }
    nst_samples_to_rgb(dst, n, scratch, 3, 16);
}

static nst_status lib_error(const tiff_reader *r, const char *what)
{
    return nst_fail(NST_EINPUT, "%s: corrupt TIFF: %s%s%s", r->name, what, r->src->msg[0] ? ": " : "",
                    r->src->msg);
}

/* The image's size and its samples' layout (8 or 16-bit unsigned, 1 to 4 per pixel, chunky or
 * planar); the photometric interpretation and compression for what follows. */
static nst_status validate_samples(tiff_reader *r, const nst_read_limits *lim, uint16_t *photometric, uint16_t *compression)
{
    TIFF *tif = r->tif;
    uint16_t sformat = SAMPLEFORMAT_UINT;
    if (!TIFFGetField(tif, TIFFTAG_IMAGEWIDTH, &r->w) || !TIFFGetField(tif, TIFFTAG_IMAGELENGTH, &r->h))
        return nst_fail(NST_EINPUT, "%s: TIFF without image width or length", r->name);
    NST_TRY(nst_image_check_dims(r->name, r->w, r->h, lim));
    TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLESPERPIXEL, &r->spp);
    TIFFGetFieldDefaulted(tif, TIFFTAG_BITSPERSAMPLE, &r->bps);
    TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLEFORMAT, &sformat);
    TIFFGetFieldDefaulted(tif, TIFFTAG_PLANARCONFIG, &r->planar);
    TIFFGetFieldDefaulted(tif, TIFFTAG_COMPRESSION, compression);
    if (!TIFFGetField(tif, TIFFTAG_PHOTOMETRIC, photometric))
        *photometric = r->spp >= 3 ? PHOTOMETRIC_RGB : PHOTOMETRIC_MINISBLACK;
    if (r->bps != 8 && r->bps != 16)
        return nst_fail(NST_EINPUT, "%s: TIFF with %u bits per sample; supported: 8 or 16", r->name, r->bps);
    if (sformat != SAMPLEFORMAT_UINT)
        return nst_fail(NST_EINPUT, "%s: TIFF with non-integer samples (SampleFormat %u); supported: unsigned integer",
                        r->name, sformat);
    if (r->spp < 1 || r->spp > 4)
        return nst_fail(NST_EINPUT, "%s: TIFF with %u samples per pixel; supported: 1 to 4", r->name, r->spp);
    if (r->planar != PLANARCONFIG_CONTIG && r->planar != PLANARCONFIG_SEPARATE)
        return nst_fail(NST_EINPUT, "%s: TIFF with invalid PlanarConfiguration %u", r->name, r->planar);
    return NST_OK;
}

/* How the samples become RGB (r->kind): gray, inverted gray, RGB, palette, or JPEG's YCbCr
 * decoded to RGB by libtiff. */
static nst_status validate_colour(tiff_reader *r, uint16_t photometric, uint16_t compression)
{
    TIFF *tif = r->tif;
    switch (photometric) {
    case PHOTOMETRIC_MINISBLACK:
    case PHOTOMETRIC_MINISWHITE:
        if (r->spp > 2) return nst_fail(NST_EINPUT, "%s: gray TIFF with %u samples per pixel", r->name, r->spp);
        r->kind = photometric == PHOTOMETRIC_MINISWHITE ? PH_GRAY_INV : PH_GRAY;
        break;
    case PHOTOMETRIC_RGB:
        if (r->spp < 3) return nst_fail(NST_EINPUT, "%s: RGB TIFF with %u samples per pixel", r->name, r->spp);
        r->kind = PH_RGB;
        break;
    case PHOTOMETRIC_PALETTE:
        if (r->spp != 1 || r->bps != 8)
            return nst_fail(NST_EINPUT, "%s: palette TIFF must have one 8-bit sample per pixel", r->name);
        if (!TIFFGetField(tif, TIFFTAG_COLORMAP, &r->cmap[0], &r->cmap[1], &r->cmap[2]))
            return nst_fail(NST_EINPUT, "%s: palette TIFF without a colour map", r->name);
        r->kind = PH_PALETTE;
        break;
    case PHOTOMETRIC_YCBCR:
        if (compression != COMPRESSION_JPEG || r->spp != 3 || r->bps != 8 || r->planar != PLANARCONFIG_CONTIG)
            return nst_fail(NST_EINPUT, "%s: YCbCr TIFF is supported only with 8-bit JPEG compression", r->name);
        TIFFSetField(tif, TIFFTAG_JPEGCOLORMODE, JPEGCOLORMODE_RGB);
        r->kind = PH_RGB;
        break;
    default:
        return nst_fail(NST_EINPUT, "%s: TIFF photometric interpretation %u is not supported (gray, RGB, palette, JPEG YCbCr)",
                        r->name, photometric);
    }
    return NST_OK;
}

/* The tiles or strips: their sizes within the allocation cap, and every one's offset and byte
 * count inside the file, so that a lying header is refused before anything is decoded. */
static nst_status validate_striles(tiff_reader *r)
{
    TIFF *tif = r->tif;
    r->tiled = TIFFIsTiled(tif);
    uint64_t striles = r->tiled ? TIFFNumberOfTiles(tif) : TIFFNumberOfStrips(tif);
    if (r->tiled) {
        if (!TIFFGetField(tif, TIFFTAG_TILEWIDTH, &r->tw) || !TIFFGetField(tif, TIFFTAG_TILELENGTH, &r->th) ||
            r->tw == 0 || r->th == 0 || r->tw > 65536 || r->th > 65536)
            return nst_fail(NST_EINPUT, "%s: TIFF with invalid tile size", r->name);
        uint64_t ts = TIFFTileSize64(tif);
        if (ts == 0 || ts > (uint64_t)TIFF_MAX_ALLOC)
            return nst_fail(NST_EINPUT, "%s: TIFF tile of %llu bytes; the limit is %lld", r->name,
                            (unsigned long long)ts, (long long)TIFF_MAX_ALLOC);
    } else {
        TIFFGetFieldDefaulted(tif, TIFFTAG_ROWSPERSTRIP, &r->rps);
        if (r->rps == 0) return nst_fail(NST_EINPUT, "%s: TIFF with RowsPerStrip 0", r->name);
        if (r->rps > r->h) r->rps = r->h;
        uint64_t sl = TIFFScanlineSize64(tif);
        if (sl == 0 || sl > (uint64_t)TIFF_MAX_ALLOC) return lib_error(r, "invalid scanline size");
    }
    if (striles == 0) return lib_error(r, "no strips or tiles");
    for (uint64_t i = 0; i < striles; i++) {
        int err = 0;
        uint64_t off = TIFFGetStrileOffsetWithErr(tif, (uint32_t)i, &err);
        uint64_t cnt = err ? 0 : TIFFGetStrileByteCountWithErr(tif, (uint32_t)i, &err);
        if (err) return lib_error(r, "unreadable strip/tile offsets");
        if (cnt == 0)
            return nst_fail(NST_EINPUT, "%s: corrupt TIFF: %s %llu has no data (byte count 0)", r->name,
                            r->tiled ? "tile" : "strip", (unsigned long long)i);
        if (off > r->src->size || cnt > r->src->size - off)
            return nst_fail(NST_EINPUT,
                            "%s: corrupt or truncated TIFF: %s %llu lies past the end of the file (offset %llu + %llu bytes > %llu)",
                            r->name, r->tiled ? "tile" : "strip", (unsigned long long)i, (unsigned long long)off,
                            (unsigned long long)cnt, (unsigned long long)r->src->size);
    }
    return NST_OK;
}

static nst_status validate(tiff_reader *r, const nst_read_limits *lim, nst_image_info *info)
{
    uint16_t photometric = 0, compression = COMPRESSION_NONE;
    NST_TRY(validate_samples(r, lim, &photometric, &compression));
    NST_TRY(validate_colour(r, photometric, compression));
    NST_TRY(validate_striles(r));
    info->format = NST_FMT_TIFF;
    info->bits = r->bps;
    info->channels = r->spp;
    snprintf(info->detail, sizeof info->detail, "%s, %u-bit, %s%s %sTIFF",
             r->kind == PH_PALETTE ? "palette" : r->spp >= 3 ? (r->spp == 4 ? "RGBA" : "RGB") : (r->spp == 2 ? "gray+alpha" : "gray"),
             r->bps, r->tiled ? "tiled" : "striped", r->planar == PLANARCONFIG_SEPARATE ? ", planar" : "",
             TIFFIsBigEndian(r->tif) ? "big-endian " : "");
    return NST_OK;
}

/* Copy plane p of `nrows` x `ncols` decoded pixels (per_plane samples each, row stride `stride`
 * pixels) into the interleaved buffer (spp samples per pixel, ncols per row). */
static void interleave(const tiff_reader *r, unsigned char *inter, const unsigned char *dec, int p, size_t nrows,
                       size_t ncols, size_t stride)
{
    const size_t b = r->bps / 8, per_plane = r->planar == PLANARCONFIG_SEPARATE ? 1 : r->spp;
    for (size_t y = 0; y < nrows; y++)
        for (size_t x = 0; x < ncols; x++)
            memcpy(inter + ((y * ncols + x) * r->spp + (size_t)p) * b, dec + (y * stride + x) * per_plane * b,
                   per_plane * b);
}

/* The decoding buffers, sized once from the validated header. */
static nst_status reader_buffers(tiff_reader *r, int nreaders)
{
    const size_t b = r->bps / 8;
    const int planar = r->planar == PLANARCONFIG_SEPARATE;
    size_t unit_w = r->tiled ? r->tw : r->w, unit_h = r->tiled ? r->th : r->rps;
    size_t dec_bytes;
    if (r->tiled) {
        dec_bytes = (size_t)TIFFTileSize64(r->tif);
    } else {
        uint64_t strip_bytes = TIFFVStripSize64(r->tif, r->rps);
        r->whole_strips = strip_bytes > 0 && strip_bytes <= (uint64_t)TIFF_MAX_ALLOC;
        if (!r->whole_strips && planar)
            return nst_fail(NST_EINPUT, "%s: planar TIFF with strips above %lld bytes is not supported", r->name,
                            (long long)TIFF_MAX_ALLOC);
        dec_bytes = r->whole_strips ? (size_t)strip_bytes : (size_t)TIFFScanlineSize64(r->tif);
    }
    r->scratch = nst_alloc_array(unit_w, 3 * sizeof(uint16_t), "TIFF conversion row");
    r->dec = nst_alloc(dec_bytes, "a decoded TIFF tile or strip");
    r->dec_bytes = dec_bytes;
    r->unit_bytes = unit_w * unit_h * r->spp * b;
    /* as many cached units as fit this reader's share of CACHE_BYTES, at least one */
    r->ncache = (int)(CACHE_BYTES / (size_t)nreaders / (r->unit_bytes ? r->unit_bytes : 1));
    if (r->ncache < 1) r->ncache = 1;
    if (r->ncache > (int)(sizeof r->cache / sizeof *r->cache)) r->ncache = (int)(sizeof r->cache / sizeof *r->cache);
    for (int i = 0; i < r->ncache; i++) r->cache[i].unit = -1;
    return r->scratch && r->dec ? NST_OK : NST_ENOMEM;
}

/* Tile or strip `unit` (plane 0's index; rows [y, y + nrows) of the image for a strip), decoded with
 * its planes interleaved: from the cache, or decoded into the least recently used slot. */
static const unsigned char *decoded_unit(tiff_reader *r, uint32_t unit, uint32_t x, uint32_t y, size_t nrows, nst_status *st)
{
    int slot = 0;
    for (int i = 0; i < r->ncache; i++) {
        if (r->cache[i].unit == (int64_t)unit) {
            r->cache[i].used = ++r->clock;
            return r->cache[i].px;
        }
        if (r->cache[i].used < r->cache[slot].used) slot = i;
    }
    if (!r->cache[slot].px) {
        r->cache[slot].px = nst_alloc(r->unit_bytes, "a cached TIFF tile or strip");
        if (!r->cache[slot].px) {
            *st = NST_ENOMEM;
            return NULL;
        }
    }
    r->cache[slot].unit = -1;
    const int planar = r->planar == PLANARCONFIG_SEPARATE;
    const int planes = planar ? r->spp : 1;
    unsigned char *px = r->cache[slot].px;
    for (int p = 0; p < planes; p++) {
        unsigned char *into = planar ? r->dec : px;
        tmsize_t cap = (tmsize_t)(planar ? r->dec_bytes : r->unit_bytes); /* libtiff decodes at most this much */
        if (r->tiled) {
            if (TIFFReadEncodedTile(r->tif, TIFFComputeTile(r->tif, x, y, 0, (uint16_t)p), into, cap) < 0) {
                *st = lib_error(r, "cannot decode a tile");
                return NULL;
            }
            if (planar) interleave(r, px, r->dec, p, r->th, r->tw, r->tw);
        } else {
            if (TIFFReadEncodedStrip(r->tif, TIFFComputeStrip(r->tif, y, (uint16_t)p), into, cap) < 0) {
                *st = lib_error(r, "cannot decode a strip");
                return NULL;
            }
            if (planar) interleave(r, px, r->dec, p, nrows, r->w, r->w);
        }
    }
    r->cache[slot].unit = unit;
    r->cache[slot].used = ++r->clock;
    return px;
}

/* Rows [y0, y0 + rows) x columns [x0, x0 + cols) of the image into out (RGB floats, cols per row). */
static nst_status read_region(tiff_reader *r, int x0, int y0, int cols, int rows, float *out)
{
    const size_t b = r->bps / 8;
    const int x1 = x0 + cols, y1 = y0 + rows;

    if (!r->tiled && !r->whole_strips) { /* one huge chunky strip: forward only, restarting when asked for an earlier row */
        uint32_t y = (uint32_t)y0 < r->next_row ? 0 : r->next_row;
        for (; y < (uint32_t)y1; y++) {
            if (TIFFReadScanline(r->tif, r->dec, y, 0) < 0) {
                r->next_row = UINT32_MAX; /* restart next time */
                return lib_error(r, "cannot decode a row");
            }
            if ((int)y >= y0) put_pixels(r, out + (size_t)((int)y - y0) * cols * 3, cols, r->dec + (size_t)x0 * r->spp * b);
        }
        r->next_row = (uint32_t)y1;
        return NST_OK;
    }
    nst_status st = NST_OK;
    if (!r->tiled) {
        for (uint32_t sy = (uint32_t)y0 / r->rps * r->rps; sy < (uint32_t)y1; sy += r->rps) {
            size_t nrows = r->h - sy < r->rps ? r->h - sy : r->rps;
            const unsigned char *px = decoded_unit(r, TIFFComputeStrip(r->tif, sy, 0), 0, sy, nrows, &st);
            if (!px) return st;
            for (size_t yy = 0; yy < nrows; yy++) {
                int y = (int)(sy + yy);
                if (y < y0 || y >= y1) continue;
                put_pixels(r, out + (size_t)(y - y0) * cols * 3, cols, px + (yy * r->w + (size_t)x0) * r->spp * b);
            }
        }
        return NST_OK;
    }
    for (uint32_t ty = (uint32_t)y0 / r->th * r->th; ty < (uint32_t)y1; ty += r->th) {
        for (uint32_t tx = (uint32_t)x0 / r->tw * r->tw; tx < (uint32_t)x1; tx += r->tw) {
            const unsigned char *px = decoded_unit(r, TIFFComputeTile(r->tif, tx, ty, 0, 0), tx, ty, r->th, &st);
            if (!px) return st;
            int cx0 = (int)tx > x0 ? (int)tx : x0, cx1 = (int)(tx + r->tw) < x1 ? (int)(tx + r->tw) : x1;
            int cy0 = (int)ty > y0 ? (int)ty : y0, cy1 = (int)(ty + r->th) < y1 ? (int)(ty + r->th) : y1;
            for (int y = cy0; y < cy1; y++)
                put_pixels(r, out + ((size_t)(y - y0) * cols + (size_t)(cx0 - x0)) * 3, cx1 - cx0,
                           px + (((size_t)(y - (int)ty) * r->tw + (size_t)(cx0 - (int)tx)) * r->spp) * b);
        }
    }
    return NST_OK;
}

/* ---- the source ------------------------------------------------------------------------------------ */

#define MAX_READERS 16

/* One libtiff handle per thread on the same bytes (pread keeps no shared position): the rows of
 * tiles or strips of a region decode in parallel. */
typedef struct {
    int n;
    tiff_src src[MAX_READERS];
    tiff_reader r[MAX_READERS];
    int fd, owns_fd;
} tiff_source;

static nst_status tiff_source_read(nst_source *s, nst_rect rect, float *out)
{
    tiff_source *ts = s->impl;
    if (rect.x < 0 || rect.y < 0 || rect.w < 1 || rect.h < 1 || rect.x + rect.w > s->w || rect.y + rect.h > s->h)
        return nst_fail(NST_ERUNTIME, "%s: region %dx%d+%d+%d outside the %dx%d image", s->name, rect.w, rect.h, rect.x, rect.y,
                        s->w, s->h);
    const int unit_h = s->band;
    const int first = rect.y / unit_h, last = (rect.y + rect.h - 1) / unit_h;
    if (ts->n == 1 || first == last) {
        ts->src[0].msg[0] = 0;
        return read_region(&ts->r[0], rect.x, rect.y, rect.w, rect.h, out);
    }
    nst_status worst = NST_OK;
    char why[1024] = "";
#pragma omp parallel for schedule(dynamic, 1) num_threads(ts->n)
    for (int k = first; k <= last; k++) {
        int t = nst_thread_num();
        int y0 = k * unit_h > rect.y ? k * unit_h : rect.y, y1 = (k + 1) * unit_h < rect.y + rect.h ? (k + 1) * unit_h : rect.y + rect.h;
        ts->src[t].msg[0] = 0;
        nst_status st = read_region(&ts->r[t], rect.x, y0, rect.w, y1 - y0, out + (size_t)(y0 - rect.y) * rect.w * 3);
        if (st != NST_OK) {
#pragma omp critical(nst_tiff_read_failure)
            if (worst == NST_OK) {
                worst = st;
                nst_fail_take(why, sizeof why);
            }
        }
    }
    if (worst != NST_OK) nst_fail(worst, "%s", why); /* the worker's message, on this thread */
    return worst;
}

static void tiff_source_close(nst_source *s)
{
    tiff_source *ts = s->impl;
    for (int i = 0; i < ts->n; i++) {
        if (ts->r[i].tif) TIFFClose(ts->r[i].tif);
        nst_free(ts->r[i].dec);
        for (int c = 0; c < ts->r[i].ncache; c++) nst_free(ts->r[i].cache[c].px);
        nst_free(ts->r[i].scratch);
    }
    if (ts->owns_fd && ts->fd >= 0) close(ts->fd);
    nst_free(ts);
    nst_free(s);
}

/* Open handle i on the bytes, validate, size its buffers (a share of the cache). */
static nst_status open_reader(nst_source *s, tiff_source *ts, int i, const unsigned char *buf, size_t len, const nst_read_limits *lim)
{
    ts->src[i] = (tiff_src){buf, buf ? -1 : ts->fd, len, 0, ""};
    TIFFOpenOptions *opts = nst_tiff_options(ts->src[i].msg, TIFF_MAX_ALLOC);
    if (!opts) return nst_fail(NST_ENOMEM, "%s: cannot create a TIFF reader", s->name);
    /* "m": no memory mapping of files (a gigapixel file is read where needed, with pread) */
    ts->r[i].tif = TIFFClientOpenExt(s->name, buf ? "r" : "rm", &ts->src[i], src_read, src_write, src_seek, src_close, src_size,
                                     src_map, src_unmap, opts);
    TIFFOpenOptionsFree(opts);
    if (!ts->r[i].tif)
        return nst_fail(NST_EINPUT, "%s: corrupt TIFF: %s", s->name, ts->src[i].msg[0] ? ts->src[i].msg : "cannot read the header");
    ts->r[i].src = &ts->src[i];
    ts->r[i].name = s->name;
    NST_TRY(validate(&ts->r[i], lim, &s->info));
    return reader_buffers(&ts->r[i], ts->n);
}

nst_status nst_tiff_source_open(const char *name, const unsigned char *buf, size_t len, int fd,
                                const nst_read_limits *lim, nst_source **out)
{
    *out = NULL;
    nst_source *s = nst_calloc(sizeof *s, "a TIFF source");
    tiff_source *ts = nst_calloc(sizeof *ts, "a TIFF source");
    if (!s || !ts) {
        nst_free(s);
        nst_free(ts);
        if (!buf && fd >= 0) close(fd);
        return NST_ENOMEM;
    }
    snprintf(s->name, sizeof s->name, "%s", name);
    s->impl = ts;
    s->read = tiff_source_read;
    s->close = tiff_source_close;
    s->random_access = 1;
    ts->fd = buf ? -1 : fd;
    ts->owns_fd = !buf;
    ts->n = 1;
    nst_status st = open_reader(s, ts, 0, buf, len, lim);
    if (st == NST_OK) {
        s->w = (int)ts->r[0].w;
        s->h = (int)ts->r[0].h;
        s->band = (int)(ts->r[0].tiled ? ts->r[0].th : ts->r[0].whole_strips ? ts->r[0].rps : 1);
        /* more handles for the threads, where tiles or whole strips can be decoded independently */
        int want = nst_max_threads();
        if (want > MAX_READERS) want = MAX_READERS;
        if (ts->r[0].tiled || ts->r[0].whole_strips)
            for (int i = 1; st == NST_OK && i < want; i++) {
                ts->n = i + 1;
                st = open_reader(s, ts, i, buf, len, lim);
            }
    }
    if (st != NST_OK) {
        tiff_source_close(s);
        return st;
    }
    *out = s;
    return NST_OK;
}

/* io/tiff_read.c: TIFF reader (libtiff) for untrusted files.
 *
 * Accepts 8/16-bit unsigned samples; gray (min-is-black or min-is-white), gray+alpha, RGB, RGBA,
 * 8-bit palette, and JPEG-compressed YCbCr (decoded to RGB by libtiff); strips or tiles; chunky
 * or planar; classic TIFF or BigTIFF; any compression libtiff decodes. The first image (IFD) is
 * read. Before anything is decoded the header is validated: dimensions against the limits,
 * sample layout, and every strip's or tile's offset + byte count against the file size.
 * libtiff runs with a 256 MiB single-allocation cap and its messages go to our error channel.
 * The reading is by region (rows by scanline, tiles by tile): only the strips or tiles that
 * intersect the requested rectangle are decoded.
 */
#include <stdio.h>
#include <string.h>
#include <tiffio.h>
#include <unistd.h>

#include "../util/checked.h"
#include "../util/mem.h"
#include "image.h"
#include "tiff_msg.h"

#define TIFF_MAX_ALLOC ((tmsize_t)256 << 20)

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
} tiff_reader;

/* Convert n pixels of one decoded row (interleaved spp samples) into img row y from column x. */
static void put_pixels(const tiff_reader *r, nst_image *img, int y, int x, int n, const void *samples,
                       uint16_t *scratch)
{
    if (r->kind == PH_RGB || r->kind == PH_GRAY) {
        nst_image_put_row(img, y, x, n, samples, r->spp, r->bps);
        return;
    }
    if (r->kind == PH_GRAY_INV) { /* inverted to 16-bit full scale (255 * 257 = 65535) */
        for (int i = 0; i < n; i++)
            scratch[i] = r->bps == 16 ? (uint16_t)(65535 - ((const uint16_t *)samples)[(size_t)i * r->spp])
                                      : (uint16_t)((255 - ((const uint8_t *)samples)[(size_t)i * r->spp]) * 257);
        nst_image_put_row(img, y, x, n, scratch, 1, 16);
        return;
    }
    /* palette: 8-bit indices into 16-bit colour maps */
    for (int i = 0; i < n; i++) {
        uint8_t idx = ((const uint8_t *)samples)[(size_t)i * r->spp];
        scratch[3 * i] = r->cmap[0][idx];
        scratch[3 * i + 1] = r->cmap[1][idx];
        scratch[3 * i + 2] = r->cmap[2][idx];
    }
    nst_image_put_row(img, y, x, n, scratch, 3, 16);
}

static nst_status lib_error(const tiff_reader *r, const char *what)
{
    return nst_fail(NST_EINPUT, "%s: corrupt TIFF: %s%s%s", r->name, what, r->src->msg[0] ? ": " : "",
                    r->src->msg);
}

static nst_status validate(tiff_reader *r, const nst_read_limits *lim, nst_image_info *info)
{
    TIFF *tif = r->tif;
    uint16_t photometric = 0, sformat = SAMPLEFORMAT_UINT, compression = COMPRESSION_NONE;
    if (!TIFFGetField(tif, TIFFTAG_IMAGEWIDTH, &r->w) || !TIFFGetField(tif, TIFFTAG_IMAGELENGTH, &r->h))
        return nst_fail(NST_EINPUT, "%s: TIFF without image width or length", r->name);
    NST_TRY(nst_image_check_dims(r->name, r->w, r->h, lim));
    TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLESPERPIXEL, &r->spp);
    TIFFGetFieldDefaulted(tif, TIFFTAG_BITSPERSAMPLE, &r->bps);
    TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLEFORMAT, &sformat);
    TIFFGetFieldDefaulted(tif, TIFFTAG_PLANARCONFIG, &r->planar);
    TIFFGetFieldDefaulted(tif, TIFFTAG_COMPRESSION, &compression);
    if (!TIFFGetField(tif, TIFFTAG_PHOTOMETRIC, &photometric))
        photometric = r->spp >= 3 ? PHOTOMETRIC_RGB : PHOTOMETRIC_MINISBLACK;
    if (r->bps != 8 && r->bps != 16)
        return nst_fail(NST_EINPUT, "%s: TIFF with %u bits per sample; supported: 8 or 16", r->name, r->bps);
    if (sformat != SAMPLEFORMAT_UINT)
        return nst_fail(NST_EINPUT, "%s: TIFF with non-integer samples (SampleFormat %u); supported: unsigned integer",
                        r->name, sformat);
    if (r->spp < 1 || r->spp > 4)
        return nst_fail(NST_EINPUT, "%s: TIFF with %u samples per pixel; supported: 1 to 4", r->name, r->spp);
    if (r->planar != PLANARCONFIG_CONTIG && r->planar != PLANARCONFIG_SEPARATE)
        return nst_fail(NST_EINPUT, "%s: TIFF with invalid PlanarConfiguration %u", r->name, r->planar);

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
    /* Offsets and byte counts must lie inside the file: a lying header is refused before decoding. */
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
    info->format = NST_FMT_TIFF;
    info->bits = r->bps;
    info->channels = r->spp;
    snprintf(info->detail, sizeof info->detail, "%s, %u-bit, %s%s %sTIFF",
             r->kind == PH_PALETTE ? "palette" : r->spp >= 3 ? (r->spp == 4 ? "RGBA" : "RGB") : (r->spp == 2 ? "gray+alpha" : "gray"),
             r->bps, r->tiled ? "tiled" : "striped", r->planar == PLANARCONFIG_SEPARATE ? ", planar" : "",
             TIFFIsBigEndian(tif) ? "big-endian " : "");
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

/* Read rows [y0, y1) x columns [x0, x1) of the image into img at (0,0) (img is (x1-x0) x (y1-y0)).
 * Strips are decoded whole (each plane once) when they fit the allocation cap; a larger
 * single strip of chunky data is decoded row by row. */
static nst_status read_region(tiff_reader *r, int x0, int y0, int x1, int y1, nst_image *img)
{
    const size_t b = r->bps / 8;
    const int planar = r->planar == PLANARCONFIG_SEPARATE;
    const int planes = planar ? r->spp : 1;
    const size_t unit_w = r->tiled ? r->tw : r->w, unit_h = r->tiled ? r->th : r->rps;
    nst_status s = NST_OK;
    unsigned char *dec = NULL, *inter = NULL;
    uint16_t *scratch = nst_alloc_array(unit_w, 3 * sizeof(uint16_t), "TIFF conversion row");
    if (!scratch) return NST_ENOMEM;

    if (!r->tiled) {
        uint64_t strip_bytes = TIFFVStripSize64(r->tif, r->rps < r->h ? r->rps : r->h);
        int whole_strips = strip_bytes > 0 && strip_bytes <= (uint64_t)TIFF_MAX_ALLOC;
        if (!whole_strips && planar) {
            s = nst_fail(NST_EINPUT, "%s: planar TIFF with strips above %lld bytes is not supported", r->name,
                         (long long)TIFF_MAX_ALLOC);
            goto out;
        }
        if (!whole_strips) { /* one huge chunky strip: decode forward, row by row */
            dec = nst_alloc((size_t)TIFFScanlineSize64(r->tif), "a TIFF scanline");
            if (!dec) {
                s = NST_ENOMEM;
                goto out;
            }
            for (int y = 0; y < y1; y++) {
                if (TIFFReadScanline(r->tif, dec, (uint32_t)y, 0) < 0) {
                    s = lib_error(r, "cannot decode a row");
                    goto out;
                }
                if (y >= y0) put_pixels(r, img, y - y0, 0, x1 - x0, dec + (size_t)x0 * r->spp * b, scratch);
            }
            goto out;
        }
        dec = nst_alloc((size_t)strip_bytes, "a TIFF strip");
        if (planar) inter = nst_alloc_array(unit_w * unit_h, r->spp * b, "TIFF interleaved strip");
        if (!dec || (planar && !inter)) {
            s = NST_ENOMEM;
            goto out;
        }
        for (uint32_t sy = (uint32_t)y0 / r->rps * r->rps; sy < (uint32_t)y1; sy += r->rps) {
            size_t nrows = r->h - sy < r->rps ? r->h - sy : r->rps;
            for (int p = 0; p < planes; p++) {
                if (TIFFReadEncodedStrip(r->tif, TIFFComputeStrip(r->tif, sy, (uint16_t)p), dec, (tmsize_t)strip_bytes) < 0) {
                    s = lib_error(r, "cannot decode a strip");
                    goto out;
                }
                if (planar) interleave(r, inter, dec, p, nrows, r->w, r->w);
            }
            const unsigned char *px = planar ? inter : dec;
            for (size_t yy = 0; yy < nrows; yy++) {
                int y = (int)(sy + yy);
                if (y < y0 || y >= y1) continue;
                put_pixels(r, img, y - y0, 0, x1 - x0, px + (yy * r->w + (size_t)x0) * r->spp * b, scratch);
            }
        }
        goto out;
    }

    {
        tmsize_t ts = TIFFTileSize(r->tif);
        dec = nst_alloc((size_t)ts, "a TIFF tile");
        if (planar) inter = nst_alloc_array(unit_w * unit_h, r->spp * b, "TIFF interleaved tile");
        if (!dec || (planar && !inter)) {
            s = NST_ENOMEM;
            goto out;
        }
        for (uint32_t ty = (uint32_t)y0 / r->th * r->th; ty < (uint32_t)y1; ty += r->th) {
            for (uint32_t tx = (uint32_t)x0 / r->tw * r->tw; tx < (uint32_t)x1; tx += r->tw) {
                for (int p = 0; p < planes; p++) {
                    if (TIFFReadEncodedTile(r->tif, TIFFComputeTile(r->tif, tx, ty, 0, (uint16_t)p), dec, ts) < 0) {
                        s = lib_error(r, "cannot decode a tile");
                        goto out;
                    }
                    if (planar) interleave(r, inter, dec, p, r->th, r->tw, r->tw);
                }
                const unsigned char *px = planar ? inter : dec;
                int cx0 = (int)tx > x0 ? (int)tx : x0, cx1 = (int)(tx + r->tw) < x1 ? (int)(tx + r->tw) : x1;
                int cy0 = (int)ty > y0 ? (int)ty : y0, cy1 = (int)(ty + r->th) < y1 ? (int)(ty + r->th) : y1;
                for (int y = cy0; y < cy1; y++)
                    put_pixels(r, img, y - y0, cx0 - x0, cx1 - cx0,
                               px + (((size_t)(y - (int)ty) * r->tw + (size_t)(cx0 - (int)tx)) * r->spp) * b, scratch);
            }
        }
    }
out:
    nst_free(dec);
    nst_free(inter);
    nst_free(scratch);
    return s;
}

nst_status nst_tiff_read(const char *name, const unsigned char *buf, size_t len, int fd,
                         const nst_read_limits *lim, nst_image *out, nst_image_info *info)
{
    tiff_src src = {buf, fd, len, 0, ""};
    TIFFOpenOptions *opts = nst_tiff_options(src.msg, TIFF_MAX_ALLOC);
    if (!opts) return nst_fail(NST_ENOMEM, "%s: cannot create a TIFF reader", name);
    TIFF *tif = TIFFClientOpenExt(name, buf ? "r" : "rm", &src, src_read, src_write, src_seek, src_close,
                                  src_size, src_map, src_unmap, opts);
    TIFFOpenOptionsFree(opts);
    if (!tif)
        return nst_fail(NST_EINPUT, "%s: corrupt TIFF: %s", name, src.msg[0] ? src.msg : "cannot read the header");
    tiff_reader r;
    memset(&r, 0, sizeof r);
    r.tif = tif;
    r.src = &src;
    r.name = name;
    nst_status s = validate(&r, lim, info);
    if (s == NST_OK) s = nst_image_alloc(out, (int)r.w, (int)r.h);
    if (s == NST_OK) s = read_region(&r, 0, 0, (int)r.w, (int)r.h, out);
    TIFFClose(tif);
    if (s != NST_OK) nst_image_free(out);
    return s;
}

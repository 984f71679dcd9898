/* io/image/tiff_write.c: tiled TIFF pyramids from compressed tiles (see tiff_write.h), and the
 * whole-image TIFF writer on top of them.
 *
 * The encoder owns a scratch TIFF of one tile whose I/O procs capture what libtiff writes: each
 * TIFFWriteEncodedTile of tile 0 runs the predictor and codec and its output lands in the capture
 * buffer, byte for byte what a TIFF stores for that tile. The scratch and the real file get the
 * same tags from one function, so the stored bytes decode under the real file's tags. JPEG tiles
 * carry their own tables (JPEGTablesMode 0): no JPEGTables tag has to match across encoders. */
#include "tiff_write.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <tiffio.h>

#include "../../util/mem.h"
#include "../../util/version.h"
#include "icc.h"
#include "tiff_msg.h"

static const char *const codec_names[] = {"deflate", "lzw", "jpeg", "zstd", "none"};
static const uint16_t codec_tags[] = {COMPRESSION_ADOBE_DEFLATE, COMPRESSION_LZW, COMPRESSION_JPEG, COMPRESSION_ZSTD,
                                      COMPRESSION_NONE};

int nst_tiff_codec_parse(const char *name)
{
    for (int i = 0; i < 5; i++)
        if (strcasecmp(name, codec_names[i]) == 0) return i;
    return -1;
}

const char *nst_tiff_codec_name(nst_tiff_codec c) { return (unsigned)c < 5 ? codec_names[c] : "?"; }

nst_status nst_tiff_params_check(const nst_tiff_params *p)
{
    if (p->bits != 8 && p->bits != 16) return nst_fail(NST_EINPUT, "%d bits per sample; valid: 8 or 16", p->bits);
    if (p->tile < 16 || p->tile % 16 || p->tile > 65536)
        return nst_fail(NST_EINPUT, "tile size %d; valid: a multiple of 16 from 16 to 65536", p->tile);
    if ((unsigned)p->codec > NST_TC_NONE) return nst_fail(NST_EINPUT, "unknown compression");
    if (!TIFFIsCODECConfigured(codec_tags[p->codec]))
        return nst_fail(NST_EINPUT, "compression %s is not available in this libtiff (%s); valid: deflate, lzw, none",
                        codec_names[p->codec], TIFFGetVersion());
    if (p->codec == NST_TC_JPEG && p->bits != 8)
        return nst_fail(NST_EINPUT, "jpeg compression needs 8 bits per sample (output.bits = 8)");
    if (p->codec == NST_TC_DEFLATE && (p->level < 0 || p->level > 9))
        return nst_fail(NST_EINPUT, "deflate level %d; valid: 1 to 9 (0: 6)", p->level);
    if (p->codec == NST_TC_ZSTD && (p->level < 0 || p->level > 22))
        return nst_fail(NST_EINPUT, "zstd level %d; valid: 1 to 22 (0: 9)", p->level);
    if (p->codec == NST_TC_JPEG && (p->quality < 1 || p->quality > 100))
        return nst_fail(NST_EINPUT, "jpeg quality %d; valid: 1 to 100", p->quality);
    return NST_OK;
}

/* The tags of one tiled RGB directory: the same for the scratch and the real file. */
static int set_tags(TIFF *tif, const nst_tiff_params *p, int w, int h)
{
    int ok = TIFFSetField(tif, TIFFTAG_IMAGEWIDTH, (uint32_t)w) && TIFFSetField(tif, TIFFTAG_IMAGELENGTH, (uint32_t)h) &&
             TIFFSetField(tif, TIFFTAG_TILEWIDTH, (uint32_t)p->tile) && TIFFSetField(tif, TIFFTAG_TILELENGTH, (uint32_t)p->tile) &&
             TIFFSetField(tif, TIFFTAG_SAMPLESPERPIXEL, 3) && TIFFSetField(tif, TIFFTAG_BITSPERSAMPLE, p->bits) &&
             TIFFSetField(tif, TIFFTAG_SAMPLEFORMAT, SAMPLEFORMAT_UINT) &&
             TIFFSetField(tif, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG) &&
             TIFFSetField(tif, TIFFTAG_ORIENTATION, ORIENTATION_TOPLEFT) &&
             TIFFSetField(tif, TIFFTAG_COMPRESSION, codec_tags[p->codec]);
    if (!ok) return 0;
    switch (p->codec) {
    case NST_TC_JPEG:
        /* chroma at half resolution below quality 90, full at 90 and above (libvips' choice) */
        return TIFFSetField(tif, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_YCBCR) &&
               TIFFSetField(tif, TIFFTAG_YCBCRSUBSAMPLING, p->quality < 90 ? 2 : 1, p->quality < 90 ? 2 : 1) &&
               TIFFSetField(tif, TIFFTAG_JPEGQUALITY, p->quality) && TIFFSetField(tif, TIFFTAG_JPEGTABLESMODE, 0) &&
               TIFFSetField(tif, TIFFTAG_JPEGCOLORMODE, JPEGCOLORMODE_RGB);
    case NST_TC_DEFLATE:
        return TIFFSetField(tif, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_RGB) && TIFFSetField(tif, TIFFTAG_PREDICTOR, PREDICTOR_HORIZONTAL) &&
               TIFFSetField(tif, TIFFTAG_ZIPQUALITY, p->level > 0 ? p->level : 6);
    case NST_TC_ZSTD:
        return TIFFSetField(tif, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_RGB) && TIFFSetField(tif, TIFFTAG_PREDICTOR, PREDICTOR_HORIZONTAL) &&
               TIFFSetField(tif, TIFFTAG_ZSTD_LEVEL, p->level > 0 ? p->level : 9);
    case NST_TC_LZW:
        return TIFFSetField(tif, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_RGB) && TIFFSetField(tif, TIFFTAG_PREDICTOR, PREDICTOR_HORIZONTAL);
    default:
        return TIFFSetField(tif, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_RGB);
    }
}

/* ---- the encoder: a scratch TIFF whose writes are captured -------------------------------------- */

typedef struct {
    unsigned char *buf;
    size_t len, cap;
    uint64_t pos, size; /* the scratch file's position and size (nothing but the capture is kept) */
    int capturing, failed;
} sink;

static tmsize_t sink_write(thandle_t h, void *data, tmsize_t n)
{
    sink *s = h;
    if (n < 0) return -1;
    if (s->capturing) {
        if (s->len + (size_t)n > s->cap) {
            size_t cap = s->cap ? s->cap : 1 << 16;
            while (cap < s->len + (size_t)n) cap *= 2;
            unsigned char *b = nst_alloc(cap, "a compressed tile");
            if (!b) {
                s->failed = 1;
                return -1;
            }
            if (s->len) memcpy(b, s->buf, s->len);
            nst_free(s->buf);
            s->buf = b;
            s->cap = cap;
        }
        memcpy(s->buf + s->len, data, (size_t)n);
        s->len += (size_t)n;
    }
    s->pos += (uint64_t)n;
    if (s->pos > s->size) s->size = s->pos;
    return n;
}

static tmsize_t sink_read(thandle_t h, void *data, tmsize_t n)
{
    (void)h;
    (void)data;
    (void)n;
    return 0;
}

static toff_t sink_seek(thandle_t h, toff_t off, int whence)
{
    sink *s = h;
    s->pos = (whence == SEEK_CUR ? s->pos : whence == SEEK_END ? s->size : 0) + off;
    return s->pos;
}

static int sink_close(thandle_t h)
{
    (void)h;
    return 0;
}

static toff_t sink_size(thandle_t h) { return ((sink *)h)->size; }

static int sink_map(thandle_t h, void **base, toff_t *size)
{
    (void)h;
    (void)base;
    (void)size;
    return 0;
}

static void sink_unmap(thandle_t h, void *base, toff_t size)
{
    (void)h;
    (void)base;
    (void)size;
}

struct nst_tiff_encoder {
    nst_tiff_params p;
    TIFF *tif;
    sink out;
    unsigned char *tile; /* tile x tile x 3 samples: the padded input */
    char msg[NST_TIFF_MSG_MAX];
};

nst_status nst_tiff_encoder_new(const nst_tiff_params *p, nst_tiff_encoder **out)
{
    *out = NULL;
    NST_TRY(nst_tiff_params_check(p));
    nst_tiff_encoder *e = nst_calloc(sizeof *e, "a TIFF encoder");
    if (!e) return NST_ENOMEM;
    e->p = *p;
    e->tile = nst_alloc_array((size_t)p->tile * p->tile, 3 * (size_t)(p->bits / 8), "a TIFF tile");
    TIFFOpenOptions *opts = nst_tiff_options(e->msg, 0);
    if (e->tile && opts)
        e->tif = TIFFClientOpenExt("tile encoder", "w", &e->out, sink_read, sink_write, sink_seek, sink_close, sink_size, sink_map,
                                   sink_unmap, opts);
    if (opts) TIFFOpenOptionsFree(opts);
    if (!e->tif || !set_tags(e->tif, p, p->tile, p->tile)) {
        nst_status s = nst_fail(NST_ERUNTIME, "cannot set up a TIFF tile encoder (%s): %s", nst_tiff_codec_name(p->codec),
                                e->msg[0] ? e->msg : "libtiff refused the tags");
        nst_tiff_encoder_free(e);
        return s;
    }
    *out = e;
    return NST_OK;
}

nst_status nst_tiff_encode(nst_tiff_encoder *e, const void *samples, int w, int h, const unsigned char **bytes, size_t *len)
{
    const int T = e->p.tile;
    const size_t px = 3 * (size_t)(e->p.bits / 8), row = (size_t)T * px;
    if (w < 1 || h < 1 || w > T || h > T) return nst_fail(NST_ERUNTIME, "TIFF encoder: tile of %dx%d in a %d grid", w, h, T);
    const unsigned char *in = samples;
    for (int y = 0; y < T; y++) { /* pad by repeating the last column and row: it compresses to nearly nothing */
        unsigned char *o = e->tile + (size_t)y * row;
        if (y < h) {
            memcpy(o, in + (size_t)y * w * px, (size_t)w * px);
            for (int x = w; x < T; x++) memcpy(o + (size_t)x * px, o + (size_t)(w - 1) * px, px);
        } else {
            memcpy(o, e->tile + (size_t)(h - 1) * row, row);
        }
    }
    e->out.len = 0;
    e->out.capturing = 1;
    e->msg[0] = 0;
    tmsize_t r = TIFFWriteEncodedTile(e->tif, 0, e->tile, (tmsize_t)(row * (size_t)T));
    e->out.capturing = 0;
    if (r < 0 || e->out.failed || e->out.len == 0)
        return e->out.failed ? NST_ENOMEM
                             : nst_fail(NST_ERUNTIME, "TIFF %s encoder failed: %s", nst_tiff_codec_name(e->p.codec),
                                        e->msg[0] ? e->msg : "no data");
    *bytes = e->out.buf;
    *len = e->out.len;
    return NST_OK;
}

void nst_tiff_encoder_free(nst_tiff_encoder *e)
{
    if (!e) return;
    if (e->tif) TIFFClose(e->tif); /* writes its directory into the sink: discarded */
    nst_free(e->out.buf);
    nst_free(e->tile);
    nst_free(e);
}

/* ---- the file ---------------------------------------------------------------------------------- */

struct nst_tiff_writer {
    TIFF *tif;
    nst_tiff_params p;
    int nlevels, level, ntiles, written, width0;
    unsigned char *done; /* per tile of the current level */
    char *description;
    char path[4096];
    unsigned long long bytes;
    char msg[NST_TIFF_MSG_MAX];
};

static nst_status writer_error(nst_tiff_writer *tw, const char *what)
{
    return nst_fail(NST_ERUNTIME, "%s: TIFF %s failed: %s", tw->path, what, tw->msg[0] ? tw->msg : strerror(errno));
}

nst_status nst_tiff_writer_open(const char *path, const nst_tiff_params *p, int nlevels, int bigtiff, const char *description,
                                nst_tiff_writer **out)
{
    *out = NULL;
    NST_TRY(nst_tiff_params_check(p));
    nst_tiff_writer *tw = nst_calloc(sizeof *tw, "a TIFF writer");
    if (!tw) return NST_ENOMEM;
    tw->p = *p;
    tw->nlevels = nlevels;
    tw->level = -1;
    snprintf(tw->path, sizeof tw->path, "%s", path);
    if (description) {
        tw->description = nst_alloc(strlen(description) + 1, "the TIFF description");
        if (!tw->description) {
            nst_free(tw);
            return NST_ENOMEM;
        }
        strcpy(tw->description, description);
    }
    TIFFOpenOptions *opts = nst_tiff_options(tw->msg, 0);
    if (opts) tw->tif = TIFFOpenExt(path, bigtiff ? "w8" : "w", opts);
    if (opts) TIFFOpenOptionsFree(opts);
    if (!tw->tif) {
        nst_status s = nst_fail(NST_ERUNTIME, "%s: cannot create TIFF: %s", path, tw->msg[0] ? tw->msg : strerror(errno));
        nst_free(tw->description);
        nst_free(tw);
        return s;
    }
    *out = tw;
    return NST_OK;
}

nst_status nst_tiff_writer_level(nst_tiff_writer *tw, int level, int w, int h)
{
    if (level != tw->level + 1 || level >= tw->nlevels) return nst_fail(NST_ERUNTIME, "%s: TIFF level %d out of order", tw->path, level);
    tw->level = level;
    tw->msg[0] = 0;
    const int T = tw->p.tile;
    tw->ntiles = ((w + T - 1) / T) * ((h + T - 1) / T);
    tw->written = 0;
    nst_free(tw->done);
    tw->done = nst_calloc((size_t)tw->ntiles, "TIFF tile flags");
    if (!tw->done) return NST_ENOMEM;
    if (!set_tags(tw->tif, &tw->p, w, h)) return writer_error(tw, "tags");
    char software[64];
    snprintf(software, sizeof software, "nstbatch %s", NST_VERSION);
    int ok = TIFFSetField(tw->tif, TIFFTAG_SOFTWARE, software);
    unsigned char icc[NST_ICC_SRGB_MAX];
    size_t icc_len = nst_icc_srgb(icc, sizeof icc);
    ok = ok && icc_len && TIFFSetField(tw->tif, TIFFTAG_ICCPROFILE, (uint32_t)icc_len, icc);
    if (level == 0) tw->width0 = w;
    if (ok && tw->p.dpi > 0) { /* a reduced level prints at the same size: fewer pixels per inch */
        float res = (float)(tw->p.dpi * w / tw->width0);
        ok = TIFFSetField(tw->tif, TIFFTAG_XRESOLUTION, res) && TIFFSetField(tw->tif, TIFFTAG_YRESOLUTION, res) &&
             TIFFSetField(tw->tif, TIFFTAG_RESOLUTIONUNIT, RESUNIT_INCH);
    }
    if (level == 0) {
        ok = ok && TIFFSetField(tw->tif, TIFFTAG_SUBFILETYPE, 0);
        if (ok && tw->description) ok = TIFFSetField(tw->tif, TIFFTAG_IMAGEDESCRIPTION, tw->description);
        if (ok && tw->nlevels > 1) { /* the reduced levels follow as this IFD's SubIFDs */
            uint64_t offsets[64] = {0};
            ok = TIFFSetField(tw->tif, TIFFTAG_SUBIFD, (uint16_t)(tw->nlevels - 1), offsets);
        }
    } else {
        ok = ok && TIFFSetField(tw->tif, TIFFTAG_SUBFILETYPE, FILETYPE_REDUCEDIMAGE);
    }
    return ok ? NST_OK : writer_error(tw, "tags");
}

nst_status nst_tiff_writer_tile(nst_tiff_writer *tw, int t, const unsigned char *bytes, size_t len)
{
    if (t < 0 || t >= tw->ntiles || tw->done[t]) return nst_fail(NST_ERUNTIME, "%s: TIFF tile %d written twice or out of range", tw->path, t);
    if (TIFFWriteRawTile(tw->tif, (uint32_t)t, (void *)bytes, (tmsize_t)len) != (tmsize_t)len) return writer_error(tw, "tile write");
    tw->done[t] = 1;
    tw->written++;
    tw->bytes += len;
    return NST_OK;
}

nst_status nst_tiff_writer_end_level(nst_tiff_writer *tw)
{
    if (tw->written != tw->ntiles)
        return nst_fail(NST_ERUNTIME, "%s: TIFF level %d has %d of its %d tiles", tw->path, tw->level, tw->written, tw->ntiles);
    if (!TIFFWriteDirectory(tw->tif)) return writer_error(tw, "directory write");
    return NST_OK;
}

nst_status nst_tiff_writer_close(nst_tiff_writer *tw)
{
    nst_status s = NST_OK;
    if (tw->level != tw->nlevels - 1) s = nst_fail(NST_ERUNTIME, "%s: TIFF closed with level %d of %d", tw->path, tw->level, tw->nlevels);
    tw->msg[0] = 0;
    TIFFClose(tw->tif); /* the directories are written: nothing is pending */
    if (s == NST_OK && tw->msg[0]) s = writer_error(tw, "close");
    nst_free(tw->done);
    nst_free(tw->description);
    nst_free(tw);
    return s;
}

unsigned long long nst_tiff_writer_bytes(const nst_tiff_writer *tw) { return tw->bytes; }

/* ---- whole images ---------------------------------------------------------------------------- */

nst_status nst_tiff_write(const char *path, const nst_image *img, int bits, const char *description)
{
    nst_tiff_params p = {bits, NST_TC_DEFLATE, 0, 90, 256, 0};
    nst_tiff_encoder *e = NULL;
    nst_tiff_writer *tw = NULL;
    const size_t px = 3 * (size_t)(bits / 8);
    unsigned char *tile = nst_alloc_array((size_t)p.tile * p.tile, px, "a TIFF tile");
    double raw = (double)img->w * img->h * (double)px;
    nst_status s = tile ? nst_tiff_encoder_new(&p, &e) : NST_ENOMEM;
    if (s == NST_OK) s = nst_tiff_writer_open(path, &p, 1, raw > 3.9e9, description, &tw);
    if (s == NST_OK) s = nst_tiff_writer_level(tw, 0, img->w, img->h);
    for (int ty = 0, t = 0; s == NST_OK && ty < img->h; ty += p.tile)
        for (int tx = 0; s == NST_OK && tx < img->w; tx += p.tile, t++) {
            int w = img->w - tx < p.tile ? img->w - tx : p.tile, h = img->h - ty < p.tile ? img->h - ty : p.tile;
            for (int y = 0; y < h; y++)
                nst_rgb_to_samples(tile + (size_t)y * w * px, img->px + ((size_t)(ty + y) * img->w + tx) * 3, w, bits);
            const unsigned char *bytes;
            size_t len;
            s = nst_tiff_encode(e, tile, w, h, &bytes, &len);
            if (s == NST_OK) s = nst_tiff_writer_tile(tw, t, bytes, len);
        }
    if (s == NST_OK) s = nst_tiff_writer_end_level(tw);
    if (tw) {
        nst_status c = nst_tiff_writer_close(tw);
        if (s == NST_OK) s = c;
    }
    nst_tiff_encoder_free(e);
    nst_free(tile);
    return s;
}

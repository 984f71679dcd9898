/* io/image/tiff_pyramid.c: a tiled TIFF pyramid read tile by tile with libtiff (see tiff_pyramid.h). */
#include "tiff_pyramid.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <tiffio.h>

#include "../../util/mem.h"
#include "tiff_msg.h"

#define MAX_ALLOC ((tmsize_t)256 << 20)

struct nst_tiff_pyramid {
    TIFF *tif;
    nst_tiff_pyramid_info info;
    uint64_t sub[NST_TIFF_PYRAMID_MAX_LEVELS]; /* level k >= 1: its SubIFD's offset */
    int cur;                                   /* the directory libtiff is on */
    int jpeg;                                  /* YCbCr JPEG tiles, decoded to RGB */
    unsigned char *raw;                        /* one whole tile as libtiff decodes it */
    char path[4096];
    char msg[NST_TIFF_MSG_MAX];
};

static nst_status failed(nst_tiff_pyramid *p, const char *what)
{
    return nst_fail(NST_EINPUT, "%s: %s%s%s", p->path, what, p->msg[0] ? ": " : "", p->msg);
}

/* The directory's layout: tiled, RGB, chunky, 8/16-bit; its size into *w, *h. */
static nst_status check_dir(nst_tiff_pyramid *p, int level, int *w, int *h)
{
    uint32_t W = 0, H = 0, tw = 0, th = 0;
    uint16_t spp = 0, bps = 0, planar = PLANARCONFIG_CONTIG, photo = 0, comp = 0, fmt = SAMPLEFORMAT_UINT;
    TIFFGetField(p->tif, TIFFTAG_IMAGEWIDTH, &W);
    TIFFGetField(p->tif, TIFFTAG_IMAGELENGTH, &H);
    TIFFGetFieldDefaulted(p->tif, TIFFTAG_SAMPLESPERPIXEL, &spp);
    TIFFGetFieldDefaulted(p->tif, TIFFTAG_BITSPERSAMPLE, &bps);
    TIFFGetFieldDefaulted(p->tif, TIFFTAG_PLANARCONFIG, &planar);
    TIFFGetFieldDefaulted(p->tif, TIFFTAG_SAMPLEFORMAT, &fmt);
    TIFFGetField(p->tif, TIFFTAG_PHOTOMETRIC, &photo);
    TIFFGetFieldDefaulted(p->tif, TIFFTAG_COMPRESSION, &comp);
    char where[64] = "";
    if (level) snprintf(where, sizeof where, " (reduced level %d)", level);
    if (!TIFFIsTiled(p->tif) || !TIFFGetField(p->tif, TIFFTAG_TILEWIDTH, &tw) || !TIFFGetField(p->tif, TIFFTAG_TILELENGTH, &th))
        return nst_fail(NST_EINPUT, "%s%s: not tiled: a Deep Zoom pyramid is made from a tiled TIFF (nstbatch's own TIFF output is)", p->path, where);
    if (spp != 3 || planar != PLANARCONFIG_CONTIG || fmt != SAMPLEFORMAT_UINT || (bps != 8 && bps != 16) ||
        !(photo == PHOTOMETRIC_RGB || (photo == PHOTOMETRIC_YCBCR && comp == COMPRESSION_JPEG)))
        return nst_fail(NST_EINPUT, "%s%s: %u samples of %u bits, photometric %u: nstbatch-dzi reads RGB TIFFs of 8 or 16-bit samples, "
                        "interleaved (nstbatch's own TIFF output)", p->path, where, spp, bps, photo);
    if (tw != th || tw % 16 || tw > 8192 || W < 1 || H < 1 || W > (1u << 30) || H > (1u << 30))
        return nst_fail(NST_EINPUT, "%s%s: %ux%u with %ux%u tiles: nstbatch-dzi needs square tiles of a multiple of 16 px, at most 8192", p->path,
                        where, W, H, tw, th);
    if (level == 0) p->info.tile = (int)tw, p->info.bits = bps;
    if ((int)tw != p->info.tile || bps != p->info.bits) return nst_fail(NST_EINPUT, "%s%s: its tiles or bits differ from level 0's", p->path, where);
    if (photo == PHOTOMETRIC_YCBCR) TIFFSetField(p->tif, TIFFTAG_JPEGCOLORMODE, JPEGCOLORMODE_RGB), p->jpeg = 1;
    *w = (int)W, *h = (int)H;
    return NST_OK;
}

/* Level 0, then the SubIFDs while they halve it. */
static nst_status read_levels(nst_tiff_pyramid *p)
{
    nst_tiff_pyramid_info *in = &p->info;
    NST_TRY(check_dir(p, 0, &in->w[0], &in->h[0]));
    in->nlevels = 1;
    uint16_t n = 0;
    uint64_t *offs = NULL, sub[NST_TIFF_PYRAMID_MAX_LEVELS];
    if (TIFFGetField(p->tif, TIFFTAG_SUBIFD, &n, &offs) && n > 0) {
        if (n > NST_TIFF_PYRAMID_MAX_LEVELS - 1) n = NST_TIFF_PYRAMID_MAX_LEVELS - 1;
        memcpy(sub, offs, sizeof(uint64_t) * n); /* (libtiff's array goes with the directory) */
        for (int k = 1; k <= n; k++) {
            if (!TIFFSetSubDirectory(p->tif, sub[k - 1])) return failed(p, "cannot read a reduced level (SubIFD)");
            int w, h;
            NST_TRY(check_dir(p, k, &w, &h));
            if (w != (in->w[k - 1] + 1) / 2 || h != (in->h[k - 1] + 1) / 2) break; /* not our halving: computed instead */
            in->w[k] = w, in->h[k] = h, p->sub[k] = sub[k - 1];
            in->nlevels = k + 1;
        }
        if (!TIFFSetDirectory(p->tif, 0)) return failed(p, "cannot return to the first image");
        if (p->jpeg) TIFFSetField(p->tif, TIFFTAG_JPEGCOLORMODE, JPEGCOLORMODE_RGB); /* (a setting of the directory read) */
    }
    p->cur = 0;
    return NST_OK;
}

nst_status nst_tiff_pyramid_open(const char *path, nst_tiff_pyramid **out, nst_tiff_pyramid_info *info)
{
    *out = NULL;
    nst_tiff_pyramid *p = nst_calloc(sizeof *p, "a TIFF reader");
    if (!p) return NST_ENOMEM;
    snprintf(p->path, sizeof p->path, "%s", path);
    TIFFOpenOptions *opts = nst_tiff_options(p->msg, MAX_ALLOC);
    p->tif = opts ? TIFFOpenExt(path, "r", opts) : NULL;
    if (opts) TIFFOpenOptionsFree(opts);
    nst_status s = p->tif ? read_levels(p) : failed(p, "cannot open as a TIFF");
    if (s == NST_OK) {
        p->raw = nst_alloc((size_t)p->info.tile * p->info.tile * 3 * (size_t)(p->info.bits / 8), "a TIFF tile");
        if (!p->raw) s = NST_ENOMEM;
    }
    if (s != NST_OK) {
        nst_tiff_pyramid_close(p);
        return s;
    }
    *info = p->info;
    *out = p;
    return NST_OK;
}

nst_status nst_tiff_pyramid_tile(nst_tiff_pyramid *p, int k, int i, int j, void *buf)
{
    const nst_tiff_pyramid_info *in = &p->info;
    const int T = in->tile;
    if (k != p->cur) {
        int ok = k == 0 ? TIFFSetDirectory(p->tif, 0) : TIFFSetSubDirectory(p->tif, p->sub[k]);
        if (!ok) return failed(p, "cannot switch levels");
        if (p->jpeg) TIFFSetField(p->tif, TIFFTAG_JPEGCOLORMODE, JPEGCOLORMODE_RGB);
        p->cur = k;
    }
    p->msg[0] = 0;
    if (TIFFReadTile(p->tif, p->raw, (uint32_t)(i * T), (uint32_t)(j * T), 0, 0) < 0) {
        char what[96];
        snprintf(what, sizeof what, "cannot decode tile %d,%d of level %d", i, j, k);
        return failed(p, what);
    }
    const size_t px = 3 * (size_t)(in->bits / 8);
    const int w = (i + 1) * T < in->w[k] ? T : in->w[k] - i * T, h = (j + 1) * T < in->h[k] ? T : in->h[k] - j * T;
    for (int y = 0; y < h; y++) memmove((unsigned char *)buf + (size_t)y * w * px, p->raw + (size_t)y * T * px, (size_t)w * px);
    return NST_OK;
}

void nst_tiff_pyramid_close(nst_tiff_pyramid *p)
{
    if (!p) return;
    if (p->tif) TIFFClose(p->tif);
    nst_free(p->raw);
    nst_free(p);
}

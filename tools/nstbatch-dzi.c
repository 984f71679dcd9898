/* tools/nstbatch-dzi.c: a Deep Zoom pyramid (NAME.dzi, NAME_files/) from a finished tiled TIFF, read
 * tile by tile: nstbatch's own TIFF output, or any tiled RGB TIFF of 8 or 16 bits.
 *
 *   nstbatch-dzi IN.tif [OUT.dzi] [--tiles jpeg|png] [--quality Q] [--overwrite]
 *
 * Each Deep Zoom tile is one TIFF tile of the matching level; the levels the TIFF lacks (below
 * one tile, or all of them for a TIFF without reduced levels) are halved from the level above,
 * tile by tile, with the renderer's own halving (nst_halve_rect). So an nstbatch TIFF gives
 * exactly the tiles the render's own output.format = dzi writes, byte for byte, and memory stays
 * at a few tiles per level whatever the image's size. Files appear under their final names only
 * when complete. Exit status: 0, 2 for bad arguments or input, 1 for a failure while writing. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../io/atomic_file.h"
#include "../io/image/dzi.h"
#include "../io/image/resample.h"
#include "../io/image/tiff_pyramid.h"
#include "../tiler/pyramid.h"
#include "../util/mem.h"

typedef struct {
    nst_tiff_pyramid *tp;
    nst_tiff_pyramid_info info;
    nst_pyramid P;                                  /* every level, down to 1 x 1 */
    size_t px;                                      /* bytes per pixel */
    unsigned char *quad[NST_PYRAMID_MAX_LEVELS];    /* level k computed: its 2 x 2 tiles of level k - 1 */
    unsigned char *child[NST_PYRAMID_MAX_LEVELS];
} conv;

static int usage(const char *why)
{
    fprintf(stderr, "nstbatch-dzi: error: %s (usage: nstbatch-dzi IN.tif [OUT.dzi] [--tiles jpeg|png] [--quality 1-100] [--overwrite])\n", why);
    return 2;
}

/* Tile (i, j) of level k into out (packed rows of the tile's width): from the TIFF, or halved from
 * the up to 2 x 2 tiles of level k - 1 under it. */
static nst_status get_tile(conv *c, int k, int i, int j, unsigned char *out)
{
    if (k < c->info.nlevels) return nst_tiff_pyramid_tile(c->tp, k, i, j, out);
    const int T = c->P.tile;
    const nst_level *up = &c->P.lv[k - 1];
    if (!c->quad[k] && !(c->quad[k] = nst_alloc((size_t)4 * T * T * c->px, "tiles being halved"))) return NST_ENOMEM;
    if (!c->child[k] && !(c->child[k] = nst_alloc((size_t)T * T * c->px, "a tile being halved"))) return NST_ENOMEM;
    nst_rect r = nst_pyramid_tile(&c->P, k, j * c->P.lv[k].nx + i);
    nst_rect have = nst_rect_intersect(nst_rect_make(2 * r.x, 2 * r.y, 2 * r.w, 2 * r.h), nst_rect_make(0, 0, up->w, up->h));
    for (int dj = 0; dj < 2; dj++)
        for (int di = 0; di < 2; di++) {
            int ci = 2 * i + di, cj = 2 * j + dj;
            if (ci >= up->nx || cj >= up->ny) continue;
            nst_rect cr = nst_pyramid_tile(&c->P, k - 1, cj * up->nx + ci);
            NST_TRY(get_tile(c, k - 1, ci, cj, c->child[k]));
            for (int y = 0; y < cr.h; y++)
                memcpy(c->quad[k] + ((size_t)(cr.y - have.y + y) * have.w + (size_t)(cr.x - have.x)) * c->px, c->child[k] + (size_t)y * cr.w * c->px,
                       (size_t)cr.w * c->px);
        }
    nst_halve_rect(c->quad[k], have, up->w, up->h, (int)(c->px / 3), r, out, (size_t)r.w * c->px);
    return NST_OK;
}

/* Every level into the folder dir (its Deep Zoom numbering), every tile encoded; *tiles, *bytes. */
static nst_status write_levels(conv *c, const nst_dzi_codec *codec, const char *dir, long *tiles, unsigned long long *bytes)
{
    const int T = c->P.tile;
    unsigned char *px = nst_alloc((size_t)T * T * c->px, "a tile"), *px8 = nst_alloc((size_t)T * T * 3, "an 8-bit tile");
    nst_status s = px && px8 ? NST_OK : NST_ENOMEM;
    for (int k = 0; s == NST_OK && k < c->P.nlevels; k++) {
        const nst_level *lv = &c->P.lv[k];
        char path[8400];
        int L = c->P.nlevels - 1 - k;
        snprintf(path, sizeof path, "%s/%d", dir, L);
        if (mkdir(path, 0755) != 0) s = nst_fail(NST_ERUNTIME, "%s: cannot create: %s", path, strerror(errno));
        for (int t = 0; s == NST_OK && t < lv->ntiles; t++) {
            int i = t % lv->nx, j = t / lv->nx;
            nst_rect r = nst_pyramid_tile(&c->P, k, t);
            unsigned char *buf = NULL;
            size_t len = 0;
            s = get_tile(c, k, i, j, px);
            if (s == NST_OK) s = nst_dzi_encode(codec, px, r.w, r.h, (int)(c->px / 3), px8, &buf, &len);
            snprintf(path, sizeof path, "%s/%d/%d_%d.%s", dir, L, i, j, nst_dzi_ext(codec));
            if (s == NST_OK) s = nst_write_whole(path, buf, len);
            free(buf);
            *tiles += 1, *bytes += len;
        }
    }
    nst_free(px);
    nst_free(px8);
    return s;
}

/* The descriptor and the folder under temporary names, then into place: the folder first. */
static nst_status convert(conv *c, const nst_dzi_codec *codec, const char *out, const char *files, int overwrite, long *tiles,
                          unsigned long long *bytes)
{
    nst_atomic_file af, dir;
    NST_TRY(nst_atomic_begin(&af, out, overwrite));
    nst_status s = nst_atomic_dir_begin(&dir, files, overwrite);
    if (s != NST_OK) {
        nst_atomic_abort(&af);
        return s;
    }
    char xml[512];
    size_t n = nst_dzi_descriptor(xml, sizeof xml, codec, c->P.tile, c->P.lv[0].w, c->P.lv[0].h);
    s = nst_write_whole(af.tmp, xml, n);
    if (s == NST_OK) s = write_levels(c, codec, dir.tmp, tiles, bytes);
    if (s == NST_OK) s = nst_atomic_dir_commit(&dir);
    else nst_atomic_dir_abort(&dir);
    if (s == NST_OK) return nst_atomic_commit(&af);
    nst_atomic_abort(&af);
    return s;
}

/* The arguments: in, out (default: in's stem + .dzi), the codec, --overwrite. 0 or usage's 2. */
static int parse(int argc, char **argv, const char **in, char *out, size_t cap, nst_dzi_codec *codec, int *overwrite)
{
    const char *named = NULL;
    *in = NULL;
    for (int a = 1; a < argc; a++) {
        const char *v = argv[a];
        if (!strcmp(v, "--help") || !strcmp(v, "-h")) {
            printf("usage: nstbatch-dzi IN.tif [OUT.dzi] [--tiles jpeg|png] [--quality 1-100] [--overwrite]\n"
                   "A Deep Zoom pyramid (OUT.dzi and OUT_files/; default: IN's name with .dzi) from a tiled TIFF, tile by tile.\n"
                   "  --tiles jpeg|png  tile format (default jpeg)\n"
                   "  --quality Q       JPEG quality, 1-100 (default 90, as output.quality)\n"
                   "  --overwrite       replace an existing OUT.dzi and OUT_files/\n");
            return 3;
        }
        if (!strcmp(v, "--overwrite")) *overwrite = 1;
        else if (!strcmp(v, "--tiles") && a + 1 < argc) {
            v = argv[++a];
            if (strcmp(v, "jpeg") && strcmp(v, "jpg") && strcmp(v, "png")) return usage("--tiles: jpeg or png");
            codec->png = !strcmp(v, "png");
        } else if (!strcmp(v, "--quality") && a + 1 < argc) {
            char *end;
            long q = strtol(argv[++a], &end, 10);
            if (*end || q < 1 || q > 100) return usage("--quality: 1 to 100");
            codec->quality = (int)q;
        } else if (v[0] == '-' && v[1]) return usage("unknown option, or an option without its value");
        else if (!*in) *in = v;
        else if (!named) named = v;
        else return usage("one input and at most one output");
    }
    if (!*in) return usage("give the TIFF to convert");
    const char *dot = strrchr(*in, '.'), *slash = strrchr(*in, '/');
    size_t stem = dot && (!slash || dot > slash) ? (size_t)(dot - *in) : strlen(*in);
    if (named) snprintf(out, cap, "%s", named);
    else snprintf(out, cap, "%.*s.dzi", (int)stem, *in);
    size_t n = strlen(out);
    if (n < 5 || strcmp(out + n - 4, ".dzi")) return usage("the output's name ends in .dzi");
    return 0;
}

int main(int argc, char **argv)
{
    const char *in;
    char out[4096], files[4200];
    nst_dzi_codec codec = {0, 90, 6};
    int overwrite = 0, rc = parse(argc, argv, &in, out, sizeof out, &codec, &overwrite);
    if (rc) return rc == 3 ? 0 : rc;
    snprintf(files, sizeof files, "%.*s_files", (int)(strlen(out) - 4), out);
    struct stat st;
    if (!overwrite && (stat(out, &st) == 0 || lstat(files, &st) == 0)) {
        fprintf(stderr, "nstbatch-dzi: error: %s: output exists; use --overwrite to replace it\n", stat(out, &st) == 0 ? out : files);
        return 2;
    }
    conv c;
    memset(&c, 0, sizeof c);
    nst_status s = nst_tiff_pyramid_open(in, &c.tp, &c.info);
    if (s == NST_OK && nst_pyramid_make(c.info.w[0], c.info.h[0], c.info.tile, NST_PYRAMID_TO_PIXEL, &c.P) != 0)
        s = nst_fail(NST_EINPUT, "%s: %dx%d in %d px tiles is more than a pyramid holds", in, c.info.w[0], c.info.h[0], c.info.tile);
    c.px = 3 * (size_t)(c.info.bits / 8);
    long tiles = 0;
    unsigned long long bytes = 0;
    if (s == NST_OK) s = convert(&c, &codec, out, files, overwrite, &tiles, &bytes);
    for (int k = 0; k < NST_PYRAMID_MAX_LEVELS; k++) nst_free(c.quad[k]), nst_free(c.child[k]);
    nst_tiff_pyramid_close(c.tp);
    if (s != NST_OK) {
        fprintf(stderr, "nstbatch-dzi: error: %s\n", nst_fail_message());
        return s == NST_EINPUT ? 2 : 1;
    }
    printf("nstbatch-dzi: wrote %s and %s/ from %s: %dx%d, %d levels (%d from the TIFF), %ld tiles, %.1f MB\n", out, files, in, c.P.lv[0].w,
           c.P.lv[0].h, c.P.nlevels, c.info.nlevels, tiles, (double)bytes / 1e6);
    return 0;
}

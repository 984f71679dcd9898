/* tests/test_images.c: the image readers on every supported flavour, written here with libtiff,
 * libpng and libjpeg directly (not with nstbatch's writers), whole and by region; round trips
 * through nstbatch's writers; limits and corrupt files (clear errors, nothing allocated from a
 * lying header); the resize filter, and the streaming resampler by region against the whole.
 *
 *   build/tests/test_images [SCRATCH_DIR]    (default: a directory under /tmp)
 */
#include <png.h>
#include <stdio.h>
#include <tiffio.h>
#include <unistd.h>

#include <jpeglib.h> /* after stdio.h */

#include "../io/image/image.h"
#include "../io/image/resample.h"
#include "../io/image/source.h"
#include "../util/mem.h"
#include "test.h"

static nst_read_limits lim;

/* The value of channel k of pixel (x, y) in the test pattern, 0..maxv. */
static unsigned pattern(int x, int y, int k, unsigned maxv) { return (unsigned)((x * 37 + y * 91 + k * 53) * 7919u) % (maxv + 1); }

/* Expected float RGB of the pattern read from `spp` samples (gray replicated, alpha dropped). */
static void expect_pixel(int x, int y, int spp, unsigned maxv, int inverted, float out[3])
{
    for (int k = 0; k < 3; k++) {
        unsigned v = pattern(x, y, spp <= 2 ? 0 : k, maxv);
        if (inverted) v = maxv - v;
        out[k] = (float)v / (float)maxv;
    }
}

static float worst_diff(const nst_image *img, int spp, unsigned maxv, int inverted)
{
    float worst = 0, e[3];
    for (int y = 0; y < img->h; y++)
        for (int x = 0; x < img->w; x++) {
            expect_pixel(x, y, spp, maxv, inverted, e);
            for (int k = 0; k < 3; k++) worst = fmaxf(worst, fabsf(img->px[((size_t)y * img->w + x) * 3 + k] - e[k]));
        }
    return worst;
}

/* ---- TIFF flavours --------------------------------------------------------------------------- */

typedef struct {
    const char *name;
    int spp, bps, photometric, planar, tiled, compression, bigtiff, bigendian;
} tiff_flavour;

static int write_tiff(const char *path, const tiff_flavour *f, int w, int h)
{
    char mode[8] = "w";
    if (f->bigtiff) strcat(mode, "8");
    if (f->bigendian) strcat(mode, "b");
    TIFF *t = TIFFOpen(path, mode);
    if (!t) return 0;
    unsigned maxv = f->bps == 16 ? 65535 : 255;
    TIFFSetField(t, TIFFTAG_IMAGEWIDTH, w);
    TIFFSetField(t, TIFFTAG_IMAGELENGTH, h);
    TIFFSetField(t, TIFFTAG_SAMPLESPERPIXEL, f->spp);
    TIFFSetField(t, TIFFTAG_BITSPERSAMPLE, f->bps);
    TIFFSetField(t, TIFFTAG_PHOTOMETRIC, f->photometric);
    TIFFSetField(t, TIFFTAG_PLANARCONFIG, f->planar);
    TIFFSetField(t, TIFFTAG_COMPRESSION, f->compression);
    if (f->spp == 2 || f->spp == 4) {
        uint16_t extra = EXTRASAMPLE_UNASSALPHA;
        TIFFSetField(t, TIFFTAG_EXTRASAMPLES, 1, &extra);
    }
    if (f->compression == COMPRESSION_JPEG && f->photometric == PHOTOMETRIC_YCBCR) {
        TIFFSetField(t, TIFFTAG_JPEGQUALITY, 100);
        TIFFSetField(t, TIFFTAG_JPEGCOLORMODE, JPEGCOLORMODE_RGB);
        TIFFSetField(t, TIFFTAG_YCBCRSUBSAMPLING, 1, 1);
    }
    if (f->photometric == PHOTOMETRIC_PALETTE) {
        static uint16_t r[256], g[256], b[256];
        for (int i = 0; i < 256; i++) r[i] = g[i] = b[i] = (uint16_t)(i * 257);
        TIFFSetField(t, TIFFTAG_COLORMAP, r, g, b);
    }
    int planes = f->planar == PLANARCONFIG_SEPARATE ? f->spp : 1, per = f->planar == PLANARCONFIG_SEPARATE ? 1 : f->spp;
    size_t bsz = (size_t)f->bps / 8;
    if (f->tiled) {
        const int tw = 16, th = 16;
        TIFFSetField(t, TIFFTAG_TILEWIDTH, tw);
        TIFFSetField(t, TIFFTAG_TILELENGTH, th);
        unsigned char *buf = calloc((size_t)tw * th * per, bsz);
        for (int p = 0; p < planes; p++)
            for (int ty = 0; ty < h; ty += th)
                for (int tx = 0; tx < w; tx += tw) {
                    memset(buf, 0, (size_t)tw * th * per * bsz);
                    for (int y = 0; y < th && ty + y < h; y++)
                        for (int x = 0; x < tw && tx + x < w; x++)
                            for (int k = 0; k < per; k++) {
                                unsigned v = pattern(tx + x, ty + y, p + k, maxv);
                                size_t i = ((size_t)y * tw + x) * per + k;
                                if (bsz == 2) ((uint16_t *)buf)[i] = (uint16_t)v;
                                else buf[i] = (unsigned char)v;
                            }
                    TIFFWriteTile(t, buf, (uint32_t)tx, (uint32_t)ty, 0, (uint16_t)p);
                }
        free(buf);
    } else {
        TIFFSetField(t, TIFFTAG_ROWSPERSTRIP, 5);
        unsigned char *row = calloc((size_t)w * per, bsz);
        for (int p = 0; p < planes; p++)
            for (int y = 0; y < h; y++) {
                for (int x = 0; x < w; x++)
                    for (int k = 0; k < per; k++) {
                        unsigned v = pattern(x, y, p + k, maxv);
                        if (bsz == 2) ((uint16_t *)row)[(size_t)x * per + k] = (uint16_t)v;
                        else row[(size_t)x * per + k] = (unsigned char)v;
                    }
                TIFFWriteScanline(t, row, (uint32_t)y, (uint16_t)p);
            }
        free(row);
    }
    TIFFClose(t);
    return 1;
}

/* Regions of the file read through a source equal the same pixels of the whole read, bit for bit:
 * single pixels, rows, columns, rectangles across tile and strip borders, the last corner, and
 * the reads out of order (a region above the last one read). */
static void check_regions(const char *path, const nst_image *whole, const char *name)
{
    nst_source *src;
    nst_source_limits sl = nst_source_default_limits(256, 256);
    nst_status s = nst_source_open(path, &sl, &src);
    CHECK(s == NST_OK, "%s: open as a region source: %s", name, nst_fail_message());
    if (s != NST_OK) return;
    CHECK(src->random_access && src->w == whole->w && src->h == whole->h && src->band >= 1, "%s: source %dx%d band %d random %d", name,
          src->w, src->h, src->band, src->random_access);
    const int W = whole->w, H = whole->h;
    const nst_rect rects[] = {{0, 0, 1, 1},         {W - 1, H - 1, 1, 1}, {0, 7, W, 1},     {5, 0, 1, H},     {3, 4, 20, 13},
                              {15, 15, 2, 2},       {0, 0, W, H},         {10, 17, 27, 6},  {1, 2, 3, 4},     {W - 17, 0, 17, H}};
    float *buf = malloc((size_t)W * H * 3 * sizeof(float));
    int bad = 0;
    for (size_t k = 0; k < sizeof rects / sizeof *rects; k++) {
        nst_rect r = rects[k];
        s = nst_source_read(src, r, buf);
        CHECK(s == NST_OK, "%s: region %dx%d+%d+%d: %s", name, r.w, r.h, r.x, r.y, nst_fail_message());
        for (int y = 0; s == NST_OK && y < r.h; y++)
            if (memcmp(buf + (size_t)y * r.w * 3, whole->px + ((size_t)(r.y + y) * W + r.x) * 3, (size_t)r.w * 3 * sizeof(float))) bad++;
    }
    CHECK(bad == 0, "%s: %d region rows differ from the whole read", name, bad);
    /* a region outside the image is refused, not read */
    nst_fail_clear();
    CHECK(nst_source_read(src, nst_rect_make(W - 3, 0, 4, 1), buf) != NST_OK, "%s: a region past the edge was read", name);
    nst_fail_clear();
    free(buf);
    nst_source_close(src);
}

static void t_tiff_flavours(void)
{
    const tiff_flavour fl[] = {
        {"rgb8_strips", 3, 8, PHOTOMETRIC_RGB, PLANARCONFIG_CONTIG, 0, COMPRESSION_NONE, 0, 0},
        {"rgb16_strips_lzw", 3, 16, PHOTOMETRIC_RGB, PLANARCONFIG_CONTIG, 0, COMPRESSION_LZW, 0, 0},
        {"rgba8_tiles_deflate", 4, 8, PHOTOMETRIC_RGB, PLANARCONFIG_CONTIG, 1, COMPRESSION_ADOBE_DEFLATE, 0, 0},
        {"rgb16_tiles_planar", 3, 16, PHOTOMETRIC_RGB, PLANARCONFIG_SEPARATE, 1, COMPRESSION_NONE, 0, 0},
        {"rgba16_strips_planar_deflate", 4, 16, PHOTOMETRIC_RGB, PLANARCONFIG_SEPARATE, 0, COMPRESSION_ADOBE_DEFLATE, 0, 0},
        {"gray8", 1, 8, PHOTOMETRIC_MINISBLACK, PLANARCONFIG_CONTIG, 0, COMPRESSION_NONE, 0, 0},
        {"gray16_tiles", 1, 16, PHOTOMETRIC_MINISBLACK, PLANARCONFIG_CONTIG, 1, COMPRESSION_LZW, 0, 0},
        {"gray_alpha8", 2, 8, PHOTOMETRIC_MINISBLACK, PLANARCONFIG_CONTIG, 0, COMPRESSION_NONE, 0, 0},
        {"miniswhite8", 1, 8, PHOTOMETRIC_MINISWHITE, PLANARCONFIG_CONTIG, 0, COMPRESSION_NONE, 0, 0},
        {"palette8", 1, 8, PHOTOMETRIC_PALETTE, PLANARCONFIG_CONTIG, 0, COMPRESSION_NONE, 0, 0},
        {"bigtiff_rgb8_tiles", 3, 8, PHOTOMETRIC_RGB, PLANARCONFIG_CONTIG, 1, COMPRESSION_ADOBE_DEFLATE, 1, 0},
        {"bigendian_rgb16", 3, 16, PHOTOMETRIC_RGB, PLANARCONFIG_CONTIG, 0, COMPRESSION_NONE, 0, 1},
        {"bigendian_bigtiff_gray16_tiles", 1, 16, PHOTOMETRIC_MINISBLACK, PLANARCONFIG_CONTIG, 1, COMPRESSION_NONE, 1, 1},
        {"jpeg_ycbcr_tiles", 3, 8, PHOTOMETRIC_YCBCR, PLANARCONFIG_CONTIG, 1, COMPRESSION_JPEG, 0, 0},
    };
    const int w = 37, h = 23;
    for (size_t i = 0; i < sizeof fl / sizeof *fl; i++) {
        char name[128];
        snprintf(name, sizeof name, "%s.tif", fl[i].name);
        const char *path = test_scratch(name);
        CHECK(write_tiff(path, &fl[i], w, h), "libtiff could not write %s", name);
        nst_image img;
        nst_image_info info;
        nst_status s = nst_image_read(path, &lim, &img, &info);
        CHECK(s == NST_OK, "%s: %s", name, nst_fail_message());
        if (s != NST_OK) continue;
        CHECK(img.w == w && img.h == h && info.format == NST_FMT_TIFF, "%s: %dx%d", name, img.w, img.h);
        unsigned maxv = fl[i].bps == 16 ? 65535 : 255;
        int spp = fl[i].photometric == PHOTOMETRIC_PALETTE ? 1 : fl[i].spp;
        float tol = fl[i].compression == COMPRESSION_JPEG ? 0.25f : 1e-6f; /* JPEG of a noise pattern: lossy */
        float d = worst_diff(&img, spp, maxv, fl[i].photometric == PHOTOMETRIC_MINISWHITE);
        if (fl[i].compression == COMPRESSION_JPEG) {
            /* lossy: compare the mean error instead of the worst pixel */
            double sum = 0;
            float e[3];
            for (int y = 0; y < h; y++)
                for (int x = 0; x < w; x++) {
                    expect_pixel(x, y, 3, 255, 0, e);
                    for (int k = 0; k < 3; k++) sum += fabs(img.px[((size_t)y * w + x) * 3 + k] - e[k]);
                }
            d = (float)(sum / (w * h * 3));
            tol = 0.05f;
        }
        CHECK(d <= tol, "%s (%s): pixel error %.3g", name, info.detail, d);
        check_regions(path, &img, name);
        nst_image_free(&img);
    }
}

/* ---- PNG and JPEG flavours ------------------------------------------------------------------- */

static int write_png(const char *path, int w, int h, int color_type, int depth, int interlace, int trns)
{
    FILE *f = fopen(path, "wb");
    png_structp p = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png_create_info_struct(p);
    if (setjmp(png_jmpbuf(p))) return 0;
    png_init_io(p, f);
    png_set_IHDR(p, info, w, h, depth, color_type, interlace, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    if (color_type == PNG_COLOR_TYPE_PALETTE) {
        png_color pal[256];
        png_byte alpha[256];
        for (int i = 0; i < 256; i++) pal[i].red = pal[i].green = pal[i].blue = (png_byte)i, alpha[i] = 128;
        png_set_PLTE(p, info, pal, 256);
        if (trns) png_set_tRNS(p, info, alpha, 256, NULL);
    }
    png_write_info(p, info);
    if (depth == 16) png_set_swap(p);
    int spp = color_type == PNG_COLOR_TYPE_RGB ? 3 : color_type == PNG_COLOR_TYPE_RGBA ? 4 : color_type == PNG_COLOR_TYPE_GA ? 2 : 1;
    unsigned maxv = depth == 16 ? 65535 : 255;
    size_t bsz = depth == 16 ? 2 : 1;
    png_bytep *rows = malloc(sizeof(png_bytep) * h);
    for (int y = 0; y < h; y++) {
        rows[y] = malloc((size_t)w * spp * bsz);
        for (int x = 0; x < w; x++)
            for (int k = 0; k < spp; k++) {
                unsigned v = pattern(x, y, k, maxv);
                if (bsz == 2) ((uint16_t *)rows[y])[x * spp + k] = (uint16_t)v;
                else rows[y][x * spp + k] = (png_byte)v;
            }
    }
    png_write_image(p, rows);
    png_write_end(p, NULL);
    png_destroy_write_struct(&p, &info);
    fclose(f);
    for (int y = 0; y < h; y++) free(rows[y]);
    free(rows);
    return 1;
}

static void t_png_flavours(void)
{
    const struct {
        const char *name;
        int ct, depth, interlace, trns, spp;
    } fl[] = {{"rgb8", PNG_COLOR_TYPE_RGB, 8, PNG_INTERLACE_NONE, 0, 3},
              {"rgb16", PNG_COLOR_TYPE_RGB, 16, PNG_INTERLACE_NONE, 0, 3},
              {"rgba8_interlaced", PNG_COLOR_TYPE_RGBA, 8, PNG_INTERLACE_ADAM7, 0, 4},
              {"rgba16", PNG_COLOR_TYPE_RGBA, 16, PNG_INTERLACE_NONE, 0, 4},
              {"gray8", PNG_COLOR_TYPE_GRAY, 8, PNG_INTERLACE_NONE, 0, 1},
              {"gray16_interlaced", PNG_COLOR_TYPE_GRAY, 16, PNG_INTERLACE_ADAM7, 0, 1},
              {"gray_alpha8", PNG_COLOR_TYPE_GA, 8, PNG_INTERLACE_NONE, 0, 2},
              {"palette_trns", PNG_COLOR_TYPE_PALETTE, 8, PNG_INTERLACE_NONE, 1, 1}};
    for (size_t i = 0; i < sizeof fl / sizeof *fl; i++) {
        char name[64];
        snprintf(name, sizeof name, "%s.png", fl[i].name);
        CHECK(write_png(test_scratch(name), 29, 17, fl[i].ct, fl[i].depth, fl[i].interlace, fl[i].trns), "libpng write %s", name);
        nst_image img;
        nst_image_info info;
        nst_status s = nst_image_read(test_scratch(name), &lim, &img, &info);
        CHECK(s == NST_OK, "%s: %s", name, nst_fail_message());
        if (s != NST_OK) continue;
        float d = worst_diff(&img, fl[i].spp, fl[i].depth == 16 ? 65535 : 255, 0);
        CHECK(d <= 1e-6f && img.w == 29 && img.h == 17, "%s (%s): error %.3g", name, info.detail, d);
        nst_image_free(&img);
    }
}

static void write_jpeg(const char *path, int w, int h, int gray, int progressive)
{
    struct jpeg_compress_struct c;
    struct jpeg_error_mgr e;
    c.err = jpeg_std_error(&e);
    jpeg_create_compress(&c);
    FILE *f = fopen(path, "wb");
    jpeg_stdio_dest(&c, f);
    c.image_width = w;
    c.image_height = h;
    c.input_components = gray ? 1 : 3;
    c.in_color_space = gray ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_set_defaults(&c);
    jpeg_set_quality(&c, 100, TRUE);
    if (progressive) jpeg_simple_progression(&c);
    jpeg_start_compress(&c, TRUE);
    unsigned char *row = malloc((size_t)w * 3);
    while (c.next_scanline < c.image_height) {
        int y = (int)c.next_scanline;
        for (int x = 0; x < w; x++)
            for (int k = 0; k < c.input_components; k++) row[x * c.input_components + k] = (unsigned char)(x * 2 + y * 2 + k * 30);
        jpeg_write_scanlines(&c, &row, 1);
    }
    jpeg_finish_compress(&c);
    jpeg_destroy_compress(&c);
    fclose(f);
    free(row);
}

static void t_jpeg_flavours(void)
{
    for (int gray = 0; gray < 2; gray++)
        for (int prog = 0; prog < 2; prog++) {
            write_jpeg(test_scratch("j.jpg"), 48, 40, gray, prog);
            nst_image img;
            nst_status s = nst_image_read(test_scratch("j.jpg"), &lim, &img, NULL);
            CHECK(s == NST_OK, "jpeg gray %d progressive %d: %s", gray, prog, nst_fail_message());
            if (s != NST_OK) continue;
            double err = 0;
            for (int y = 0; y < 40; y++)
                for (int x = 0; x < 48; x++)
                    for (int k = 0; k < 3; k++)
                        err = fmax(err, fabs(img.px[((size_t)y * 48 + x) * 3 + k] * 255 - (x * 2 + y * 2 + (gray ? 0 : k) * 30)));
            CHECK(err <= 4, "jpeg gray %d progressive %d: max error %.1f/255", gray, prog, err);
            nst_image_free(&img);
        }
}

/* ---- round trips through nstbatch's writers --------------------------------------------------- */

static void t_write_read_round_trips(void)
{
    nst_image img, back;
    nst_image_alloc(&img, 31, 19);
    test_fill(img.px, (size_t)31 * 19 * 3, 3, -0.1f, 1.1f); /* out of range values get clamped */
    const char *names[] = {"rt.png", "rt.tif"};
    for (int f = 0; f < 2; f++)
        for (int bits = 8; bits <= 16; bits += 8) {
            const char *p = test_scratch(names[f]);
            CHECK(nst_image_write(p, &img, bits, 1, "[run]\nseed = 1\n") == NST_OK, "%s: %s", names[f], nst_fail_message());
            CHECK(nst_image_read(p, &lim, &back, NULL) == NST_OK, "%s", nst_fail_message());
            float worst = 0, q = bits == 16 ? 0.5f / 65535 : 0.5f / 255;
            for (size_t i = 0; i < (size_t)31 * 19 * 3; i++) {
                float want = fminf(fmaxf(img.px[i], 0.f), 1.f);
                worst = fmaxf(worst, fabsf(back.px[i] - want));
            }
            CHECK(worst <= q + 1e-6f, "%s %d-bit: error %.3g > quantisation %.3g", names[f], bits, worst, q);
            nst_image_free(&back);
        }
    /* refuses to replace an existing file unless told, and leaves it intact */
    CHECK(nst_image_write(test_scratch("rt.png"), &img, 8, 0, NULL) == NST_EINPUT && strstr(nst_fail_message(), "overwrite"), "%s",
          nst_fail_message());
    nst_fail_clear();
    CHECK(nst_image_write(test_scratch("rt.bmp"), &img, 8, 1, NULL) == NST_EINPUT, "unknown extension accepted");
    nst_fail_clear();
    CHECK(nst_image_write("/nonexistent-dir/x.png", &img, 8, 1, NULL) == NST_EINPUT && strstr(nst_fail_message(), "does not exist"),
          "%s", nst_fail_message());
    nst_fail_clear();
    /* no temporary file left behind */
    char cmd[700];
    snprintf(cmd, sizeof cmd, "ls -a %s | grep -q nstbatch- && exit 1 || exit 0", test_dir);
    CHECK(system(cmd) == 0, "a temporary file was left in %s", test_dir);
    nst_image_free(&img);
}

/* ---- limits and corrupt files ------------------------------------------------------------------ */

static void write_bytes(const char *path, const void *b, size_t n)
{
    FILE *f = fopen(path, "wb");
    fwrite(b, 1, n, f);
    fclose(f);
}

static void expect_bad(const char *path, const char *fragment)
{
    nst_image img;
    nst_fail_clear();
    nst_status s = nst_image_read(path, &lim, &img, NULL);
    CHECK(s == NST_EINPUT, "%s: status %d", path, s);
    CHECK(strstr(nst_fail_message(), fragment) != NULL, "%s: message '%s' lacks '%s'", path, nst_fail_message(), fragment);
    CHECK(strstr(nst_fail_message(), path) != NULL, "message does not name the file: %s", nst_fail_message());
}

static void truncate_copy(const char *src_name, const char *dst_name, double frac)
{
    char src[1024], dst[1024];
    snprintf(src, sizeof src, "%s", test_scratch(src_name));
    snprintf(dst, sizeof dst, "%s", test_scratch(dst_name));
    FILE *f = fopen(src, "rb");
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *b = malloc(n);
    fread(b, 1, n, f);
    fclose(f);
    write_bytes(dst, b, (size_t)(n * frac));
    free(b);
}

static void t_limits_and_corrupt_files(void)
{
    /* dimensions from the header are refused before any allocation */
    nst_read_limits small = nst_default_limits(0.0005); /* 500 pixels */
    nst_image img;
    write_png(test_scratch("big.png"), 40, 40, PNG_COLOR_TYPE_RGB, 8, PNG_INTERLACE_NONE, 0);
    nst_fail_clear();
    CHECK(nst_image_read(test_scratch("big.png"), &small, &img, NULL) == NST_EINPUT &&
              strstr(nst_fail_message(), "above input.max_megapixels"),
          "%s", nst_fail_message());
    /* a TIFF header claiming 1e6 x 1e6 pixels */
    TIFF *t = TIFFOpen(test_scratch("huge.tif"), "w");
    TIFFSetField(t, TIFFTAG_IMAGEWIDTH, 1000000);
    TIFFSetField(t, TIFFTAG_IMAGELENGTH, 1000000);
    TIFFSetField(t, TIFFTAG_SAMPLESPERPIXEL, 3);
    TIFFSetField(t, TIFFTAG_BITSPERSAMPLE, 8);
    TIFFSetField(t, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_RGB);
    TIFFSetField(t, TIFFTAG_ROWSPERSTRIP, 1);
    unsigned char row[16] = {0};
    TIFFWriteRawStrip(t, 0, row, sizeof row);
    TIFFClose(t);
    expect_bad(test_scratch("huge.tif"), "megapixels");
    /* a PNG header claiming 2^31-1 columns */
    static const unsigned char png_huge[] = {0x89, 'P', 'N', 'G', 13, 10, 26, 10, 0, 0, 0, 13, 'I', 'H', 'D', 'R',
                                             0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 1, 8, 2, 0, 0, 0, 0, 0, 0, 0};
    write_bytes(test_scratch("hugew.png"), png_huge, sizeof png_huge);
    expect_bad(test_scratch("hugew.png"), "PNG");
    /* truncated files of each format */
    write_png(test_scratch("ok.png"), 64, 48, PNG_COLOR_TYPE_RGB, 8, PNG_INTERLACE_NONE, 0);
    truncate_copy("ok.png", "trunc.png", 0.6);
    expect_bad(test_scratch("trunc.png"), "corrupt PNG");
    write_jpeg(test_scratch("ok.jpg"), 64, 48, 0, 0);
    truncate_copy("ok.jpg", "trunc.jpg", 0.6);
    expect_bad(test_scratch("trunc.jpg"), "corrupt JPEG");
    tiff_flavour rgb = {"", 3, 8, PHOTOMETRIC_RGB, PLANARCONFIG_CONTIG, 0, COMPRESSION_ADOBE_DEFLATE, 0, 0};
    write_tiff(test_scratch("ok.tif"), &rgb, 64, 48);
    truncate_copy("ok.tif", "trunc.tif", 0.5);
    expect_bad(test_scratch("trunc.tif"), "TIFF");
    /* not an image, empty, a directory, missing */
    write_bytes(test_scratch("text.png"), "hello, world\n", 13);
    expect_bad(test_scratch("text.png"), "not a PNG, JPEG or TIFF");
    write_bytes(test_scratch("empty.jpg"), "", 0);
    expect_bad(test_scratch("empty.jpg"), "not a PNG, JPEG or TIFF");
    expect_bad(test_dir, "not a regular file");
    expect_bad(test_scratch("missing.png"), "cannot open");
    /* unsupported sample layouts get a clear error, not garbage */
    tiff_flavour f32 = {"", 1, 32, PHOTOMETRIC_MINISBLACK, PLANARCONFIG_CONTIG, 0, COMPRESSION_NONE, 0, 0};
    write_tiff(test_scratch("bits32.tif"), &f32, 8, 8);
    expect_bad(test_scratch("bits32.tif"), "supported: 8 or 16");
}

/* ---- resize ------------------------------------------------------------------------------------ */

static void t_resize(void)
{
    nst_image a, b;
    nst_image_alloc(&a, 64, 48);
    for (size_t i = 0; i < (size_t)64 * 48 * 3; i++) a.px[i] = 0.3f;
    const int sizes[][2] = {{32, 24}, {13, 7}, {100, 75}, {64, 48}, {1, 1}};
    for (int k = 0; k < 5; k++) {
        CHECK(nst_image_resize(&a, sizes[k][0], sizes[k][1], &b) == NST_OK, "%s", nst_fail_message());
        float worst = 0;
        for (size_t i = 0; i < (size_t)b.w * b.h * 3; i++) worst = fmaxf(worst, fabsf(b.px[i] - 0.3f));
        CHECK(b.w == sizes[k][0] && b.h == sizes[k][1] && worst < 1e-5f, "constant image resized to %dx%d: error %.3g", b.w,
              b.h, worst);
        nst_image_free(&b);
    }
    /* shrinking a 1-pixel checkerboard by 4 low-passes it to its mean (no aliasing) */
    for (int y = 0; y < 48; y++)
        for (int x = 0; x < 64; x++)
            for (int c = 0; c < 3; c++) a.px[((size_t)y * 64 + x) * 3 + c] = (float)((x + y) & 1);
    nst_image_resize(&a, 16, 12, &b);
    float worst = 0;
    for (int y = 2; y < 10; y++)
        for (int x = 2; x < 14; x++) worst = fmaxf(worst, fabsf(b.px[((size_t)y * 16 + x) * 3] - 0.5f));
    CHECK(worst < 0.02f, "checkerboard shrunk 4x: interior deviates %.3g from 0.5", worst);
    nst_image_free(&b);
    int w, h;
    nst_fit_long_side(384, 256, 100, &w, &h);
    CHECK(w == 100 && h == 67, "fit 384x256 to 100: %dx%d", w, h);
    nst_fit_long_side(10, 1000, 50, &w, &h);
    CHECK(w == 1 && h == 50, "fit 10x1000 to 50: %dx%d", w, h);
    nst_image_free(&a);
}

/* The streaming resampler by region equals the whole image resized, bit for bit: from a tiled
 * and a striped TIFF, shrinking, enlarging, and changing one axis only, any rectangle. */
static void t_resample_regions(void)
{
    const tiff_flavour fl[] = {
        {"rs_tiles", 3, 8, PHOTOMETRIC_RGB, PLANARCONFIG_CONTIG, 1, COMPRESSION_ADOBE_DEFLATE, 0, 0},
        {"rs_strips16", 3, 16, PHOTOMETRIC_RGB, PLANARCONFIG_CONTIG, 0, COMPRESSION_LZW, 0, 0},
    };
    const int w = 203, h = 131;
    const int sizes[][2] = {{61, 40}, {500, 321}, {203, 77}, {90, 131}, {1, 1}, {203, 131}};
    for (size_t f = 0; f < 2; f++) {
        char name[64];
        snprintf(name, sizeof name, "%s.tif", fl[f].name);
        const char *path = test_scratch(name);
        CHECK(write_tiff(path, &fl[f], w, h), "libtiff could not write %s", name);
        nst_image whole, ref;
        nst_source *src;
        nst_source_limits sl = nst_source_default_limits(256, 256);
        if (nst_image_read(path, &lim, &whole, NULL) != NST_OK || nst_source_open(path, &sl, &src) != NST_OK) {
            CHECK(0, "%s: %s", name, nst_fail_message());
            continue;
        }
        for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
            int W = sizes[k][0], H = sizes[k][1];
            CHECK(nst_image_resize(&whole, W, H, &ref) == NST_OK, "%s", nst_fail_message());
            const nst_rect rects[] = {{0, 0, W, H}, {W / 3, H / 4, W / 2 + 1, H / 3 + 1}, {W - 1, H - 1, 1, 1}, {0, H / 2, W, 1}, {W / 2, 0, 1, H}};
            int bad = 0;
            for (size_t r = 0; r < sizeof rects / sizeof *rects; r++) {
                nst_rect rc = nst_rect_intersect(rects[r], nst_rect_make(0, 0, W, H));
                if (nst_rect_empty(rc)) continue;
                float *out = malloc((size_t)nst_rect_area(rc) * 3 * sizeof(float));
                nst_status s = nst_resample_rect(src, W, H, rc, out);
                CHECK(s == NST_OK, "%s -> %dx%d region %dx%d+%d+%d: %s", name, W, H, rc.w, rc.h, rc.x, rc.y, nst_fail_message());
                for (int y = 0; s == NST_OK && y < rc.h; y++)
                    if (memcmp(out + (size_t)y * rc.w * 3, ref.px + ((size_t)(rc.y + y) * W + rc.x) * 3, (size_t)rc.w * 3 * sizeof(float))) bad++;
                free(out);
            }
            CHECK(bad == 0, "%s -> %dx%d: %d rows of regions differ from the whole resize", name, W, H, bad);
            nst_image_free(&ref);
        }
        nst_source_close(src);
        nst_image_free(&whole);
    }
}

int main(int argc, char **argv)
{
    if (!test_scratch_init(argc, argv, "test-images")) return 1;
    TIFFSetWarningHandler(NULL);
    lim = nst_default_limits(256);
    RUN(t_tiff_flavours);
    RUN(t_png_flavours);
    RUN(t_jpeg_flavours);
    RUN(t_write_read_round_trips);
    RUN(t_limits_and_corrupt_files);
    RUN(t_resize);
    RUN(t_resample_regions);
    test_scratch_done();
    return test_report("test_images");
}

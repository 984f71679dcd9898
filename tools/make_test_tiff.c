/* tools/make_test_tiff.c: a synthetic RGB TIFF of any size, written with libtiff directly one row
 * of tiles (or one strip) at a time, for the large-image tests and the I/O benchmark. The pattern
 * is smooth colour ramps with a mid-frequency texture and a little hashed noise, so that deflate
 * compresses it about as much as it compresses a photograph (2-3x), not to nothing.
 *
 *   make_test_tiff OUT.tif WIDTH HEIGHT [--tile N | --strip ROWS] [--bits 8|16]
 *                  [--compression none|deflate|lzw|zstd] [--level N] [--bigtiff]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tiffio.h>

static unsigned sample(uint32_t x, uint32_t y, int c, uint32_t W, uint32_t H, unsigned maxv)
{
    uint32_t h = (x * 0x9E3779B1u) ^ (y * 0x85EBCA77u) ^ ((uint32_t)c * 0xC2B2AE3Du);
    h ^= h >> 15;
    h *= 0x2C1B3C6Du;
    h ^= h >> 12;
    double ramp = c == 0 ? (double)x / W : c == 1 ? (double)y / H : 0.5 * ((double)x / W + (double)(H - y) / H);
    int tex = (int)(((x >> 3) ^ (y >> 3)) & 7) * 3 + (int)((x * 7 + y * 3 + (uint32_t)c * 11) % 19);
    double v = 40 + 150 * ramp + tex + (double)(h & 7);
    if (v > 255) v = 255;
    return maxv == 255 ? (unsigned)v : (unsigned)(v * 257.0) ^ (h >> 24 & 0xff);
}

static int usage(void)
{
    fprintf(stderr, "usage: make_test_tiff OUT.tif WIDTH HEIGHT [--tile N | --strip ROWS] [--bits 8|16] "
                    "[--compression none|deflate|lzw|zstd] [--level N] [--bigtiff]\n");
    return 2;
}

int main(int argc, char **argv)
{
    if (argc < 4) return usage();
    const char *out = argv[1];
    uint32_t W = (uint32_t)strtoul(argv[2], NULL, 10), H = (uint32_t)strtoul(argv[3], NULL, 10);
    uint32_t tile = 512, strip = 0;
    int bits = 8, level = 6, big = 0;
    uint16_t comp = COMPRESSION_ADOBE_DEFLATE;
    for (int i = 4; i < argc; i++) {
        if (!strcmp(argv[i], "--tile") && i + 1 < argc) tile = (uint32_t)atoi(argv[++i]), strip = 0;
        else if (!strcmp(argv[i], "--strip") && i + 1 < argc) strip = (uint32_t)atoi(argv[++i]), tile = 0;
        else if (!strcmp(argv[i], "--bits") && i + 1 < argc) bits = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--level") && i + 1 < argc) level = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--bigtiff")) big = 1;
        else if (!strcmp(argv[i], "--compression") && i + 1 < argc) {
            const char *c = argv[++i];
            comp = !strcmp(c, "none") ? COMPRESSION_NONE : !strcmp(c, "lzw") ? COMPRESSION_LZW : !strcmp(c, "zstd") ? COMPRESSION_ZSTD
                                                                                                          : COMPRESSION_ADOBE_DEFLATE;
        } else return usage();
    }
    if (W == 0 || H == 0 || (bits != 8 && bits != 16) || (tile && tile % 16)) return usage();
    double raw = (double)W * H * 3 * (bits / 8);
    TIFF *t = TIFFOpen(out, big || raw > 3.9e9 ? "w8" : "w");
    if (!t) return 1;
    TIFFSetField(t, TIFFTAG_IMAGEWIDTH, W);
    TIFFSetField(t, TIFFTAG_IMAGELENGTH, H);
    TIFFSetField(t, TIFFTAG_SAMPLESPERPIXEL, 3);
    TIFFSetField(t, TIFFTAG_BITSPERSAMPLE, bits);
    TIFFSetField(t, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_RGB);
    TIFFSetField(t, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG);
    TIFFSetField(t, TIFFTAG_COMPRESSION, comp);
    if (comp != COMPRESSION_NONE) TIFFSetField(t, TIFFTAG_PREDICTOR, PREDICTOR_HORIZONTAL);
    if (comp == COMPRESSION_ADOBE_DEFLATE) TIFFSetField(t, TIFFTAG_ZIPQUALITY, level);
    const unsigned maxv = bits == 16 ? 65535 : 255;
    const size_t bps = (size_t)bits / 8;
    int ok = 1;
    if (tile) {
        TIFFSetField(t, TIFFTAG_TILEWIDTH, tile);
        TIFFSetField(t, TIFFTAG_TILELENGTH, tile);
        unsigned char *buf = malloc((size_t)tile * tile * 3 * bps);
        for (uint32_t ty = 0; ok && ty < H; ty += tile)
            for (uint32_t tx = 0; ok && tx < W; tx += tile) {
                for (uint32_t y = 0; y < tile; y++)
                    for (uint32_t x = 0; x < tile; x++)
                        for (int c = 0; c < 3; c++) {
                            unsigned v = tx + x < W && ty + y < H ? sample(tx + x, ty + y, c, W, H, maxv) : 0;
                            size_t i = ((size_t)y * tile + x) * 3 + (size_t)c;
                            if (bps == 2) ((uint16_t *)buf)[i] = (uint16_t)v;
                            else buf[i] = (unsigned char)v;
                        }
                ok = TIFFWriteTile(t, buf, tx, ty, 0, 0) >= 0;
            }
        free(buf);
    } else {
        TIFFSetField(t, TIFFTAG_ROWSPERSTRIP, strip ? strip : 16);
        unsigned char *row = malloc((size_t)W * 3 * bps);
        for (uint32_t y = 0; ok && y < H; y++) {
            for (uint32_t x = 0; x < W; x++)
                for (int c = 0; c < 3; c++) {
                    unsigned v = sample(x, y, c, W, H, maxv);
                    if (bps == 2) ((uint16_t *)row)[(size_t)x * 3 + c] = (uint16_t)v;
                    else row[(size_t)x * 3 + c] = (unsigned char)v;
                }
            ok = TIFFWriteScanline(t, row, y, 0) >= 0;
        }
        free(row);
    }
    TIFFClose(t);
    if (!ok) fprintf(stderr, "make_test_tiff: write failed\n");
    return ok ? 0 : 1;
}

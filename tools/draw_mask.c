/* tools/draw_mask.c: draws a mask for style.masks or content.mask: an 8-bit grayscale PNG, white
 * where a style (or the content term) applies, black where not.
 *
 *   draw_mask OUT.png (--size WxH | --like IMAGE) SHAPE... [--feather PX] [--invert]
 *             [--complement OUT2.png]
 *
 *   --split left|right|top|bottom:F   the named part of the picture, up to F, white
 *   --rect X0,Y0,X1,Y1                a rectangle (corners)
 *   --ellipse CX,CY,RX,RY             an ellipse (centre, radii)
 *   --polygon X,Y;X,Y;...             a polygon (even-odd rule), at least 3 corners
 *
 * Several shapes are unioned. A number with a '.' is a fraction of the width (x, radii along x)
 * or the height (y); with a '%' a percentage; otherwise pixels. --feather PX softens every edge
 * over about PX pixels (three box blurs of radius PX/2, deterministic). --invert swaps white and
 * black; --complement writes the inverse too, so that two masks split the picture between two
 * styles (they add up to white everywhere). --like takes the size of an image (PNG, JPEG, TIFF),
 * so a mask drawn for a content image has its aspect. Files are written under a temporary name
 * and renamed. Exit status 0, 1 if a file cannot be read or written, 2 for bad arguments. */
#include <errno.h>
#include <math.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../io/image/source.h"

#define MAX_SHAPES 64
#define MAX_CORNERS 256

typedef enum { SPLIT, RECT, ELLIPSE, POLYGON } shape_kind;

typedef struct {
    shape_kind kind;
    char side;      /* split: l, r, t, b */
    int n;          /* numbers (polygon: 2 per corner) */
    double v[2 * MAX_CORNERS];
} shape;

static int usage(const char *why)
{
    if (why) fprintf(stderr, "draw_mask: %s\n", why);
    fprintf(stderr, "usage: draw_mask OUT.png (--size WxH | --like IMAGE) SHAPE... [--feather PX] [--invert] [--complement OUT2.png]\n"
                    "  SHAPE: --split left|right|top|bottom:F | --rect X0,Y0,X1,Y1 | --ellipse CX,CY,RX,RY | --polygon X,Y;X,Y;...\n"
                    "  numbers: pixels, a fraction of the size with a '.', or a percentage with '%%'\n");
    return 2;
}

/* One number: pixels, a fraction (has '.'), or a percentage (ends in '%'), of `extent`. */
static int number(const char *s, int extent, double *out)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || !isfinite(v)) return -1;
    if (*end == '%') v = v / 100 * extent, end++;
    else if (strchr(s, '.') && (size_t)(strchr(s, '.') - s) < (size_t)(end - s)) v *= extent;
    if (*end) return -1;
    *out = v;
    return 0;
}

/* Numbers separated by ',' (and ';' between polygon corners), alternating x and y extents. */
static int numbers(const char *text, int w, int h, shape *sh)
{
    char buf[8192];
    snprintf(buf, sizeof buf, "%s", text);
    sh->n = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",;", &save); tok; tok = strtok_r(NULL, ",;", &save)) {
        if (sh->n == 2 * MAX_CORNERS || number(tok, sh->n % 2 ? h : w, &sh->v[sh->n]) != 0) return -1;
        sh->n++;
    }
    return 0;
}

/* Is the pixel centre (x, y) inside the shape? */
static int inside(const shape *s, double x, double y, int w, int h)
{
    switch (s->kind) {
    case SPLIT:
        return s->side == 'l' ? x < s->v[0] : s->side == 'r' ? x >= w - s->v[0] : s->side == 't' ? y < s->v[0] : y >= h - s->v[0];
    case RECT:
        return x >= fmin(s->v[0], s->v[2]) && x < fmax(s->v[0], s->v[2]) && y >= fmin(s->v[1], s->v[3]) && y < fmax(s->v[1], s->v[3]);
    case ELLIPSE: {
        double dx = (x - s->v[0]) / s->v[2], dy = (y - s->v[1]) / s->v[3];
        return dx * dx + dy * dy <= 1;
    }
    default: { /* even-odd crossings */
        int in = 0, k = s->n / 2;
        for (int i = 0, j = k - 1; i < k; j = i++) {
            double xi = s->v[2 * i], yi = s->v[2 * i + 1], xj = s->v[2 * j], yj = s->v[2 * j + 1];
            if ((yi > y) != (yj > y) && x < (xj - xi) * (y - yi) / (yj - yi) + xi) in = !in;
        }
        return in;
    }
    }
}

/* One box blur of radius r along rows (stride 1) or columns (stride w), edges clamped. */
static void box(float *m, float *tmp, int w, int h, int r, int along_rows)
{
    int n = along_rows ? w : h, lines = along_rows ? h : w;
    size_t step = along_rows ? 1 : (size_t)w;
    for (int l = 0; l < lines; l++) {
        float *p = m + (along_rows ? (size_t)l * w : (size_t)l);
        for (int i = 0; i < n; i++) {
            double s = 0;
            for (int k = -r; k <= r; k++) s += p[(size_t)(i + k < 0 ? 0 : i + k >= n ? n - 1 : i + k) * step];
            tmp[i] = (float)(s / (2 * r + 1));
        }
        for (int i = 0; i < n; i++) p[(size_t)i * step] = tmp[i];
    }
}

/* Write an 8-bit gray PNG under path.tmp, then rename it to path. */
static int write_png(const char *path, const float *m, int w, int h, int invert)
{
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    if (!f) return fprintf(stderr, "draw_mask: %s: cannot create: %s\n", path, strerror(errno)), 1;
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    unsigned char *row = malloc((size_t)w);
    if (!png || !info || !row || setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        free(row);
        fclose(f);
        remove(tmp);
        return fprintf(stderr, "draw_mask: %s: cannot write the PNG\n", path), 1;
    }
    png_init_io(png, f);
    png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, 8, PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
                 PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    for (int y = 0; y < h; y++) {
        for (int x = 0; x < w; x++) {
            unsigned char q = (unsigned char)lrintf(255 * m[(size_t)y * w + x]);
            row[x] = invert ? (unsigned char)(255 - q) : q; /* (a mask and its complement add up to 255 exactly) */
        }
        png_write_row(png, row);
    }
    png_write_end(png, info);
    png_destroy_write_struct(&png, &info);
    free(row);
    int bad = fflush(f) != 0 || fsync(fileno(f)) != 0;
    bad |= fclose(f) != 0;
    if (bad || rename(tmp, path) != 0) {
        remove(tmp);
        return fprintf(stderr, "draw_mask: %s: cannot write: %s\n", path, strerror(errno)), 1;
    }
    return 0;
}

/* The size: --size WxH, or --like IMAGE (its header). */
static int find_size(int argc, char **argv, int *w, int *h)
{
    *w = *h = 0;
    for (int i = 2; i + 1 < argc; i++) {
        if (strcmp(argv[i], "--size") == 0) {
            char x;
            if (sscanf(argv[i + 1], "%d%c%d", w, &x, h) != 3 || x != 'x' || *w < 1 || *h < 1 || *w > 65535 || *h > 65535)
                return usage("--size: WxH, each 1 to 65535");
        } else if (strcmp(argv[i], "--like") == 0) {
            nst_source_limits lim = nst_source_default_limits(1e6, 1e4);
            nst_source *src;
            if (nst_source_open(argv[i + 1], &lim, &src) != NST_OK)
                return fprintf(stderr, "draw_mask: --like: %s\n", nst_fail_message()), 1;
            *w = src->w, *h = src->h;
            nst_source_close(src);
            if (*w > 65535 || *h > 65535) return usage("--like: the image is larger than a mask PNG may be (65535 px a side)");
        }
    }
    return *w ? 0 : usage("give the size: --size WxH or --like IMAGE");
}

/* One shape option (argv[i] with its value argv[i + 1]). */
static int parse_shape(const char *opt, const char *val, int w, int h, shape *sh)
{
    memset(sh, 0, sizeof *sh);
    if (strcmp(opt, "--split") == 0) {
        const char *colon = strchr(val, ':');
        static const char *sides[] = {"left", "right", "top", "bottom"};
        int k = 0;
        while (k < 4 && !(colon && strncmp(val, sides[k], (size_t)(colon - val)) == 0 && strlen(sides[k]) == (size_t)(colon - val))) k++;
        if (k == 4) return usage("--split: left|right|top|bottom:F");
        sh->kind = SPLIT, sh->side = sides[k][0], sh->n = 1;
        return number(colon + 1, k < 2 ? w : h, &sh->v[0]) == 0 ? 0 : usage("--split: F is a number");
    }
    sh->kind = strcmp(opt, "--rect") == 0 ? RECT : strcmp(opt, "--ellipse") == 0 ? ELLIPSE : POLYGON;
    if (numbers(val, w, h, sh) != 0) return usage("a shape's numbers: pixels, fractions (with '.') or percentages");
    if ((sh->kind != POLYGON && sh->n != 4) || (sh->kind == POLYGON && (sh->n < 6 || sh->n % 2)))
        return usage(sh->kind == POLYGON ? "--polygon: at least 3 corners X,Y;X,Y;X,Y" : "--rect and --ellipse take 4 numbers");
    if (sh->kind == ELLIPSE && !(sh->v[2] > 0 && sh->v[3] > 0)) return usage("--ellipse: the radii must be positive");
    return 0;
}

/* The options after OUT: shapes, --feather, --invert, --complement (the size is found before). */
static int parse(int argc, char **argv, int w, int h, shape *shapes, int *n, int *feather, int *invert, const char **complement)
{
    *n = 0, *feather = 0, *invert = 0, *complement = NULL;
    for (int i = 2; i < argc; i++) {
        const char *o = argv[i];
        if (strcmp(o, "--invert") == 0) {
            *invert = 1;
            continue;
        }
        if (i + 1 >= argc) return usage("an option without its value");
        const char *v = argv[++i];
        if (strcmp(o, "--size") == 0 || strcmp(o, "--like") == 0) continue;
        if (strcmp(o, "--complement") == 0) {
            *complement = v;
        } else if (strcmp(o, "--feather") == 0) {
            char *end;
            long f = strtol(v, &end, 10);
            if (*end || f < 0 || f > 10000) return usage("--feather: pixels, 0 to 10000");
            *feather = (int)f;
        } else if (strcmp(o, "--split") == 0 || strcmp(o, "--rect") == 0 || strcmp(o, "--ellipse") == 0 || strcmp(o, "--polygon") == 0) {
            if (*n == MAX_SHAPES) return usage("too many shapes");
            int r = parse_shape(o, v, w, h, &shapes[(*n)++]);
            if (r) return r;
        } else {
            return usage("unknown option");
        }
    }
    return *n ? 0 : usage("give at least one shape");
}

int main(int argc, char **argv)
{
    if (argc < 2 || argv[1][0] == '-') return usage(argc >= 2 && strcmp(argv[1], "--help") == 0 ? NULL : "give OUT.png first");
    int w, h, n, feather, invert;
    const char *complement;
    static shape shapes[MAX_SHAPES];
    int r = find_size(argc, argv, &w, &h);
    if (!r) r = parse(argc, argv, w, h, shapes, &n, &feather, &invert, &complement);
    if (r) return r;
    float *m = malloc(sizeof(float) * (size_t)w * h), *tmp = malloc(sizeof(float) * (size_t)(w > h ? w : h));
    if (!m || !tmp) return fprintf(stderr, "draw_mask: out of memory\n"), 1;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            int in = 0;
            for (int k = 0; k < n && !in; k++) in = inside(&shapes[k], x + 0.5, y + 0.5, w, h);
            m[(size_t)y * w + x] = (float)in;
        }
    for (int pass = 0; feather > 1 && pass < 3; pass++) box(m, tmp, w, h, feather / 2, 1), box(m, tmp, w, h, feather / 2, 0);
    r = write_png(argv[1], m, w, h, invert);
    if (!r && complement) r = write_png(complement, m, w, h, !invert);
    free(m), free(tmp);
    return r;
}

/* tests/image_diff.c: compare two images read with nstbatch's readers (use 16-bit TIFF outputs
 * so quantisation stays below 1e-5): prints "max M mean A" of |a - b| over all samples (in
 * [0,1]), exit 0, or 2 when the sizes differ or a file cannot be read. With --chroma the same of
 * the chroma (YIQ I and Q) of each pixel instead: does a keep b's colours?
 *
 *   image_diff [--chroma] a.tif b.tif */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../io/image.h"

static const double IQ[2][3] = {{0.595716, -0.274453, -0.321263}, {0.211456, -0.522591, 0.311135}};

int main(int argc, char **argv)
{
    int chroma = argc == 4 && strcmp(argv[1], "--chroma") == 0;
    if (chroma) argv++, argc--;
    if (argc != 3) return fprintf(stderr, "usage: image_diff [--chroma] A B\n"), 2;
    nst_image a, b;
    nst_read_limits lim = nst_default_limits(1024);
    if (nst_image_read(argv[1], &lim, &a, NULL) != NST_OK || nst_image_read(argv[2], &lim, &b, NULL) != NST_OK)
        return fprintf(stderr, "image_diff: %s\n", nst_fail_message()), 2;
    if (a.w != b.w || a.h != b.h) return fprintf(stderr, "image_diff: %dx%d vs %dx%d\n", a.w, a.h, b.w, b.h), 2;
    double mx = 0, sum = 0;
    size_t n = (size_t)a.w * a.h * 3;
    if (chroma) {
        for (size_t i = 0; i < n; i += 3)
            for (int q = 0; q < 2; q++) {
                double d = 0;
                for (int c = 0; c < 3; c++) d += IQ[q][c] * ((double)a.px[i + c] - b.px[i + c]);
                if (fabs(d) > mx) mx = fabs(d);
                sum += fabs(d);
            }
        printf("max %.3g mean %.3g\n", mx, sum / (double)(n / 3 * 2));
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a.px[i] - b.px[i]);
        if (d > mx) mx = d;
        sum += d;
    }
    printf("max %.3g mean %.3g\n", mx, sum / (double)n);
    return 0;
}

/* tests/image_diff.c: compare two images read with nstbatch's readers (use 16-bit TIFF outputs
 * so quantisation stays below 1e-5): prints "max M mean A" of |a - b| over all samples (in
 * [0,1]), exit 0, or 2 when the sizes differ or a file cannot be read.
 *
 *   image_diff a.tif b.tif */
#include <math.h>
#include <stdio.h>

#include "../io/image.h"

int main(int argc, char **argv)
{
    if (argc != 3) return fprintf(stderr, "usage: image_diff A B\n"), 2;
    nst_image a, b;
    nst_read_limits lim = nst_default_limits(1024);
    if (nst_image_read(argv[1], &lim, &a, NULL) != NST_OK || nst_image_read(argv[2], &lim, &b, NULL) != NST_OK)
        return fprintf(stderr, "image_diff: %s\n", nst_fail_message()), 2;
    if (a.w != b.w || a.h != b.h) return fprintf(stderr, "image_diff: %dx%d vs %dx%d\n", a.w, a.h, b.w, b.h), 2;
    double mx = 0, sum = 0;
    size_t n = (size_t)a.w * a.h * 3;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a.px[i] - b.px[i]);
        if (d > mx) mx = d;
        sum += d;
    }
    printf("max %.3g mean %.3g\n", mx, sum / (double)n);
    return 0;
}

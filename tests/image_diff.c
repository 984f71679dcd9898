/* tests/image_diff.c: compare two images read with nstbatch's readers (use 16-bit TIFF outputs
 * so quantisation stays below 1e-5): prints "max M mean A" of |a - b| over all samples (in
 * [0,1]), exit 0, or 2 when the sizes differ or a file cannot be read. With --chroma the same of
 * the chroma (YIQ I and Q) of each pixel instead: does a keep b's colours? With --ssim the mean
 * structural similarity of the two images' luminance (Wang et al. 2004: 11x11 Gaussian window,
 * sigma 1.5, K1 = 0.01, K2 = 0.03, data range 1, windows inside the image), printed "ssim S".
 * With --fit (before --chroma or --ssim, or alone), b is first resized to a's size by nstbatch's
 * own resampler (io/image/resample.h, Lanczos-3): a print against its preview.
 * With --gradient, a and b are first-gradient files (run.first_gradient, io/gradient_file.h), a the
 * reference: the verdict of kernels/check/check.h's nst_first_verdict_judge in the less precise of
 * their two precisions, printed "share S over T rms (allowed A), loss within E (tolerance L, TERM),
 * l2 D, max M: ok" (or FAIL); with --exact every sample must be equal (a tile-exact backend).
 * With --l1, one first-gradient file: "loss L l1 G", its total loss (%.17g) and the L1 norm of its
 * gradient, which bounds how far the loss moves when every sample moves by at most q: G q, to
 * first order (tests/test_optim.sh: an output's quantisation).
 *
 *   image_diff [--fit] [--chroma | --ssim] a.tif b.tif
 *   image_diff --gradient [--exact] a.grad b.grad
 *   image_diff --l1 a.grad */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../io/gradient_file.h"
#include "../io/image/image.h"
#include "../io/image/resample.h"
#include "../kernels/check/check.h"

#include "../util/mem.h"

/* mean SSIM of two luminance planes of w x h (see the file comment) */
static double ssim(const double *x, const double *y, int w, int h)
{
    enum { R = 5 }; /* window 11 = 2R + 1 */
    double g[2 * R + 1], gs = 0;
    for (int i = -R; i <= R; i++) gs += g[i + R] = exp(-(double)(i * i) / (2 * 1.5 * 1.5));
    for (int i = 0; i <= 2 * R; i++) g[i] /= gs;
    const double c1 = 0.01 * 0.01, c2 = 0.03 * 0.03;
    double sum = 0;
    long n = 0;
    for (int cy = R; cy < h - R; cy++)
        for (int cx = R; cx < w - R; cx++) {
            double mx = 0, my = 0, xx = 0, yy = 0, xy = 0;
            for (int dy = -R; dy <= R; dy++)
                for (int dx = -R; dx <= R; dx++) {
                    double k = g[dy + R] * g[dx + R], a = x[(size_t)(cy + dy) * w + cx + dx], b = y[(size_t)(cy + dy) * w + cx + dx];
                    mx += k * a, my += k * b, xx += k * a * a, yy += k * b * b, xy += k * a * b;
                }
            double vx = xx - mx * mx, vy = yy - my * my, cov = xy - mx * my;
            sum += (2 * mx * my + c1) * (2 * cov + c2) / ((mx * mx + my * my + c1) * (vx + vy + c2));
            n++;
        }
    return n ? sum / n : 1;
}

static double *luminance(const nst_image *im)
{
    double *l = nst_alloc_array((size_t)im->w * im->h, sizeof(double), "luminance");
    for (size_t i = 0; l && i < (size_t)im->w * im->h; i++)
        l[i] = 0.299 * im->px[3 * i] + 0.587 * im->px[3 * i + 1] + 0.114 * im->px[3 * i + 2];
    return l;
}

static const double IQ[2][3] = {{0.595716, -0.274453, -0.321263}, {0.211456, -0.522591, 0.311135}};

/* A precision's storage and input roundings: the less precise of two files sets the bounds. */
static double roundoff(nst_precision p) { return nst_dtype_unit_roundoff(nst_precision_dtype(p)) + nst_precision_input_roundoff(p); }

/* --gradient [--exact] A B: the first-objective verdict (see the file comment). */
static int gradients(int exact, const char *pa, const char *pb)
{
    nst_gradient_file a, b;
    if (nst_gradient_file_read(pa, &a) != NST_OK || nst_gradient_file_read(pb, &b) != NST_OK)
        return fprintf(stderr, "image_diff: %s\n", nst_fail_message()), 2;
    if (a.w != b.w || a.h != b.h || a.depth != b.depth)
        return fprintf(stderr, "image_diff: %dx%d depth %d vs %dx%d depth %d\n", a.w, a.h, a.depth, b.w, b.h, b.depth), 2;
    int p = nst_precision_parse(a.precision), q = nst_precision_parse(b.precision);
    if (p <= NST_PREC_AUTO || q <= NST_PREC_AUTO) return fprintf(stderr, "image_diff: precision %s or %s unknown\n", a.precision, b.precision), 2;
    nst_precision worse = roundoff((nst_precision)p) >= roundoff((nst_precision)q) ? (nst_precision)p : (nst_precision)q;
    const double la[] = {a.total, a.content, a.style, a.tv, a.temporal}, lb[] = {b.total, b.content, b.style, b.tv, b.temporal};
    nst_first_verdict v;
    nst_first_verdict_judge(worse, a.depth, exact, la, lb, a.g, b.g, (size_t)a.w * a.h * 3, &v);
    char what[200];
    nst_first_verdict_describe(&v, what, sizeof what);
    printf("%s, l2 %.3g, max %.3g: %s\n", what, v.l2, v.max_err, v.ok ? "ok" : "FAIL");
    nst_gradient_file_free(&a), nst_gradient_file_free(&b);
    return 0;
}

/* --l1 A: the total loss and the gradient's L1 norm (see the file comment). */
static int gradient_l1(const char *path)
{
    nst_gradient_file a;
    if (nst_gradient_file_read(path, &a) != NST_OK) return fprintf(stderr, "image_diff: %s\n", nst_fail_message()), 2;
    double l1 = 0;
    for (size_t i = 0; i < (size_t)a.w * a.h * 3; i++) l1 += fabs((double)a.g[i]);
    printf("loss %.17g l1 %.17g\n", a.total, l1);
    nst_gradient_file_free(&a);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--l1") == 0) return gradient_l1(argv[2]);
    if (argc >= 2 && strcmp(argv[1], "--gradient") == 0) {
        int exact = argc == 5 && strcmp(argv[2], "--exact") == 0;
        if (argc != 4 + exact) return fprintf(stderr, "usage: image_diff --gradient [--exact] A.grad B.grad\n"), 2;
        return gradients(exact, argv[argc - 2], argv[argc - 1]);
    }
    int fit = argc >= 4 && strcmp(argv[1], "--fit") == 0;
    if (fit) argv++, argc--;
    int chroma = argc == 4 && strcmp(argv[1], "--chroma") == 0, structural = argc == 4 && strcmp(argv[1], "--ssim") == 0;
    if (chroma || structural) argv++, argc--;
    if (argc != 3) return fprintf(stderr, "usage: image_diff [--fit] [--chroma | --ssim] A B | --gradient [--exact] A.grad B.grad | --l1 A.grad\n"), 2;
    nst_image a, b;
    nst_read_limits lim = nst_default_limits(1024);
    if (nst_image_read(argv[1], &lim, &a, NULL) != NST_OK || nst_image_read(argv[2], &lim, &b, NULL) != NST_OK)
        return fprintf(stderr, "image_diff: %s\n", nst_fail_message()), 2;
    if (fit && (a.w != b.w || a.h != b.h)) {
        nst_image r;
        if (nst_image_resize(&b, a.w, a.h, &r) != NST_OK) return fprintf(stderr, "image_diff: %s\n", nst_fail_message()), 2;
        nst_image_free(&b);
        b = r;
    }
    if (a.w != b.w || a.h != b.h) return fprintf(stderr, "image_diff: %dx%d vs %dx%d\n", a.w, a.h, b.w, b.h), 2;
    if (structural) {
        double *la = luminance(&a), *lb = luminance(&b);
        if (!la || !lb) return 2;
        printf("ssim %.6f\n", ssim(la, lb, a.w, a.h));
        nst_free(la), nst_free(lb);
        return 0;
    }
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

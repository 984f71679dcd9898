/* bench/gram_layers.c: per-layer throughput of the Gram ops (the sums G += F^T F and the backward
 * dF += F S) on the five style layers of one image, through the backend interface: what a render
 * runs besides its convolutions, and what becomes most of a bf16 iteration where the convolutions
 * are fast (AMX).
 *
 *   build/bench/gram_layers [--device auto|cpu|cuda] [--precision auto|fp32|bf16|...]
 *                           [--size WxH] [--reps N] [--mask] [--fp64]
 *
 * relu1_1 (64 channels) at W x H, relu2_1 (128) at W/2, relu3_1 (256) at W/4, relu4_1 and relu5_1
 * (512) at W/8 and W/16, post-ReLU random features (half zeros); --mask weights the positions by a
 * random mask (the guided Gram). The sums are those renders run: the fixed-point ones where the
 * backend has them (gram_fixed, the CPU; at the bound the features need), else the fp64 ones
 * (gram_accumulate); --fp64 times the fp64 ones regardless. Two warm-up calls, then the median of --reps. FLOPs: the sums
 * compute the upper triangle, N c (c + 1) (a multiply and an add each); the backward N c^2 * 2.
 * Prints a markdown table and one JSON line per layer on stderr. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_ops.h"

static const int style_c[5] = {64, 128, 256, 512, 512}, style_div[5] = {1, 2, 4, 8, 16};
static const char *style_name[5] = {"relu1_1", "relu2_1", "relu3_1", "relu4_1", "relu5_1"};

typedef struct {
    nst_backend *be;
    nst_tensor f, df, m;
    double *g;
    float *d;
    int use_mask;
    int64_t *x; /* the fixed-point sums, where timed */
    int e;
} gram_case;

static double time_gram(gram_case *k, int bwd, int reps)
{
    double *t = nst_alloc_array((size_t)reps, sizeof(double), "timings");
    if (!t) bench_die("host memory");
    nst_rect all = nst_rect_make(0, 0, k->f.w, k->f.h);
    const nst_tensor *m = k->use_mask ? &k->m : NULL;
    for (int r = -2; r < reps; r++) {
        double t0 = bench_now();
        int emax = NST_GRAM_EMIN;
        nst_status s = bwd    ? k->be->ops->gram_backward(k->be, &k->f, all, m, k->d, 1e-3f, &k->df)
                       : k->x ? k->be->ops->gram_fixed(k->be, &k->f, all, m, k->e, k->x, &emax)
                              : k->be->ops->gram_accumulate(k->be, &k->f, all, m, k->g);
        if (s == NST_OK && emax > k->e) s = NST_ERUNTIME;
        if (s == NST_OK) s = k->be->ops->synchronize(k->be);
        if (s != NST_OK) bench_die(bwd ? "gram_backward" : "gram_accumulate");
        if (r >= 0) t[r] = bench_now() - t0;
    }
    double med = bench_median(t, reps);
    nst_free(t);
    return med;
}

/* one style layer: its tensors, d symmetric, both ops timed; returns {sums s, backward s, flops} */
static void one_layer(nst_backend *be, int l, int W, int H, int reps, int use_mask, int fp64, double out[4])
{
    const int c = style_c[l], w = W / style_div[l], h = H / style_div[l];
    gram_case k = {be, {0}, {0}, {0}, NULL, NULL, use_mask, NULL, 0};
    if (nst_tensor_alloc(be, h, w, c, be->act_dtype, &k.f) != NST_OK || nst_tensor_alloc(be, h, w, c, be->act_dtype, &k.df) != NST_OK ||
        nst_tensor_alloc(be, h, w, 1, NST_F32, &k.m) != NST_OK)
        bench_die("tensors");
    bench_fill(be, &k.f, 4.0f, 1);
    bench_fill(be, &k.m, 1.0f, 1);
    if (be->ops->alloc(be, (size_t)c * c * sizeof(double), (void **)&k.g) != NST_OK ||
        be->ops->alloc(be, (size_t)c * c * sizeof(float), (void **)&k.d) != NST_OK || be->ops->zero(be, k.g, (size_t)c * c * sizeof(double)) != NST_OK)
        bench_die("Gram buffers");
    float *d = nst_alloc_array((size_t)c * c, sizeof(float), "d");
    if (!d) bench_die("host memory");
    for (int i = 0; i < c; i++)
        for (int j = i; j < c; j++) d[i * c + j] = d[j * c + i] = bench_urand();
    if (be->ops->upload(be, k.d, d, (size_t)c * c, NST_F32) != NST_OK) bench_die("upload");
    nst_free(d);
    if (be->ops->gram_fixed && !fp64) { /* the bound the features need: a first call finds it */
        k.e = NST_GRAM_EMIN;
        if (be->ops->alloc(be, 2 * (size_t)c * c * sizeof(int64_t), (void **)&k.x) != NST_OK ||
            be->ops->gram_fixed(be, &k.f, nst_rect_make(0, 0, w, h), use_mask ? &k.m : NULL, NST_GRAM_EMIN, k.x, &k.e) != NST_OK)
            bench_die("fixed-point Gram sums");
    }
    double n = (double)w * h;
    out[0] = time_gram(&k, 0, reps), out[1] = time_gram(&k, 1, reps);
    out[2] = n * c * (c + 1.0), out[3] = 2.0 * n * c * c;
    be->ops->free(be, k.g), be->ops->free(be, k.d);
    if (k.x) be->ops->free(be, k.x);
    nst_tensor_free(be, &k.f), nst_tensor_free(be, &k.df), nst_tensor_free(be, &k.m);
}

int main(int argc, char **argv)
{
    bench_name = "gram_layers";
    const char *device = "auto", *prec = "auto";
    int W = 512, H = 384, reps = 10, use_mask = 0, fp64 = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--mask") == 0) { use_mask = 1; continue; }
        if (strcmp(a, "--fp64") == 0) { fp64 = 1; continue; }
        if (!v) goto usage;
        if (strcmp(a, "--device") == 0) device = v;
        else if (strcmp(a, "--precision") == 0) prec = v;
        else if (strcmp(a, "--size") == 0) { if (sscanf(v, "%dx%d", &W, &H) != 2) goto usage; }
        else if (strcmp(a, "--reps") == 0) reps = atoi(v);
        else goto usage;
        i++;
    }
    if (W < 16 || H < 16 || W % 16 || H % 16 || reps < 1 || nst_precision_parse(prec) < 0) goto usage;
    nst_backend_options o = {.device = device, .threads = 0, .precision = (nst_precision)nst_precision_parse(prec), .gpu = 0,
                             .gpu_sharers = 1, .memory_gb = 0, .collective_ranks = 1};
    nst_backend *be;
    if (nst_backend_open_with(&o, &be) != NST_OK) bench_die("opening the backend");
    const int fixed = be->ops->gram_fixed && !fp64;
    printf("# Gram ops, image %dx%d%s, %s sums: %s\n\n", W, H, use_mask ? ", masked" : "", fixed ? "fixed-point" : "fp64", be->description);
    printf("| layer | W x H | C | sums ms | GFLOP/s | backward ms | GFLOP/s |\n|---|---|---|---|---|---|---|\n");
    double ts = 0, tb = 0, fs = 0, fb = 0;
    for (int l = 0; l < 5; l++) {
        double r[4];
        one_layer(be, l, W, H, reps, use_mask, fp64, r);
        ts += r[0], tb += r[1], fs += r[2], fb += r[3];
        printf("| %s | %dx%d | %d | %.4f | %.3g | %.4f | %.3g |\n", style_name[l], W / style_div[l], H / style_div[l], style_c[l],
               r[0] * 1e3, r[2] / r[0] / 1e9, r[1] * 1e3, r[3] / r[1] / 1e9);
        fprintf(stderr, "{\"layer\": \"%s\", \"c\": %d, \"sums_s\": %.6e, \"backward_s\": %.6e, \"precision\": \"%s\", \"mask\": %d, \"sums\": \"%s\"}\n",
                style_name[l], style_c[l], r[0], r[1], nst_precision_name(be->precision), use_mask, fixed ? "fixed" : "fp64");
    }
    printf("| **all 5** | | | %.4f | **%.3g** | %.4f | **%.3g** |\n", ts * 1e3, fs / ts / 1e9, tb * 1e3, fb / tb / 1e9);
    if (be->report) /* a GPU's notes: which kernel the sums ran on, whatever the environment asked */
        printf("\nWhat ran (the device's notes): the sums on %s.\n",
               nst_backend_notes_count(be, "Gram sums: our own kernel") ? "our own kernel (FP64 tensor cores, upper triangle)" : "cuBLAS's FP64 GEMM");
    nst_backend_close(be);
    return 0;
usage:
    fprintf(stderr, "usage: gram_layers [--device auto|cpu|cuda] [--precision auto|fp32|bf16|...] [--size WxH (multiples of 16)] "
                    "[--reps N] [--mask] [--fp64]\n");
    return 2;
}

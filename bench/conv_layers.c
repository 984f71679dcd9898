/* bench/conv_layers.c: per-layer throughput of nstbatch's own 3x3 convolutions (forward with bias +
 * ReLU, and backward-data) on the VGG-19 shapes of one square tile, through the backend interface,
 * so it measures the calls a render makes: cuDNN with the cached algorithm on a GPU, oneDNN on the
 * CPU. Except conv1_1 on our own kernels (NSTBATCH_CUDA_CONV1=own): timed here from the network's
 * input, where a render reads the image (the preprocessing inside them, and no preprocessing
 * passes on either side here); bench/gpu_iteration.sh times whole iterations both ways. On a GPU,
 * a line under the table says what ran (the device's notes).
 *
 *   build/bench/conv_layers [--device auto|cpu|cuda] [--precision auto|fp32|tf32|bf16|fp16]
 *                           [--tile N | --size WxH] [--reps N] [--layers N (13: up to conv5_1)]
 *                           [--algorithms heuristic|timed (gpu.conv_algorithms)]
 *
 * Each layer at its resolution (conv1_x at N, conv2_x at N/2, ... conv5_x at N/16) and full width,
 * conv1_1's input in the dtype the backend keeps the network's input in (fp32 in the CPU's bf16),
 * random weights and inputs; two warm-up calls (they choose and cache the algorithm), then the
 * median of --reps timed calls, each ended by a synchronize. FLOPs: 2 * 9 * Cin * Cout * H * W per
 * direction (direct convolution; Winograd-style algorithms do fewer real operations). Prints a
 * markdown table (one row per layer, and the sum over the 16 layers as an iteration would run
 * them once each) and one JSON line per layer on stderr for scripts.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../nst/model/vgg.h"
#include "bench_ops.h"

/* The median seconds of reps calls of one direction (after 2 warm-ups). */
static double time_op(nst_backend *be, nst_conv *cv, nst_tensor *x, nst_tensor *y, nst_tensor *dy, nst_tensor *dx, int bwd, int reps)
{
    double *t = nst_alloc_array((size_t)reps, sizeof(double), "timings");
    if (!t) bench_die("host memory");
    for (int r = -2; r < reps; r++) {
        double t0 = bench_now();
        nst_status s = bwd ? be->ops->conv_backward_data(be, cv, dy, dx) : be->ops->conv_forward(be, cv, x, y, 1);
        if (s == NST_OK) s = be->ops->synchronize(be);
        if (s != NST_OK) bench_die(bwd ? "conv_backward_data" : "conv_forward");
        if (r >= 0) t[r] = bench_now() - t0;
    }
    double m = bench_median(t, reps);
    nst_free(t);
    return m;
}

/* What the device ran, from its notes (a GPU's; the CPU keeps none): the picks (each layer's
 * algorithm a direction), those timed by cuDNN's Find and those that kept the heuristics' choice
 * (Find failed or none of its fit), bias+ReLU fused or a separate kernel, conv1_1's kernels. */
static void print_what_ran(const nst_backend *be)
{
    if (!be->report) return;
    printf("\nWhat ran (the device's notes): %d picks (%d timed by cuDNN's Find, %d kept the heuristics' choice); "
           "bias+ReLU fused into cuDNN's call at %d shapes, a separate kernel at %d; conv1_1 on %s.\n",
           nst_backend_notes_count(be, ": forward ") + nst_backend_notes_count(be, ": backward-data "),
           nst_backend_notes_count(be, "; timed ") + nst_backend_notes_count(be, "; kept from an earlier timing"),
           nst_backend_notes_count(be, "; heuristics' ("), nst_backend_notes_count(be, "bias+ReLU fused into cuDNN's call"),
           nst_backend_notes_count(be, "bias+ReLU as a separate kernel"),
           nst_backend_notes_count(be, "our own kernels, forward and backward-data") ? "our own kernels (from the network's input: a render's reads the image)" : "cuDNN");
}

int main(int argc, char **argv)
{
    bench_name = "conv_layers";
    const char *device = "auto", *prec = "auto", *algos = "heuristic";
    int tile = 1024, reps = 10, nlayers = 13; /* conv1_1 .. conv5_1: the network up to relu5_1 */
    int W = 0, H = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) goto usage;
        if (strcmp(a, "--device") == 0) device = v;
        else if (strcmp(a, "--precision") == 0) prec = v;
        else if (strcmp(a, "--tile") == 0) tile = atoi(v);
        else if (strcmp(a, "--size") == 0) {
            if (sscanf(v, "%dx%d", &W, &H) != 2) goto usage;
        }
        else if (strcmp(a, "--reps") == 0) reps = atoi(v);
        else if (strcmp(a, "--layers") == 0) nlayers = atoi(v);
        else if (strcmp(a, "--algorithms") == 0 && (strcmp(v, "heuristic") == 0 || strcmp(v, "timed") == 0)) algos = v;
        else goto usage;
        i++;
    }
    if (!W) W = H = tile;
    if (W < 16 || H < 16 || W % 16 || H % 16 || reps < 1 || nlayers < 1 || nlayers > NST_VGG_NCONV || nst_precision_parse(prec) < 0)
        goto usage;

    nst_backend_options o = {.device = device, .threads = 0, .precision = (nst_precision)nst_precision_parse(prec), .gpu = 0,
                             .gpu_sharers = 1, .memory_gb = 0, .collective_ranks = 1, .conv_timed = strcmp(algos, "timed") == 0};
    nst_backend *be;
    if (nst_backend_open_with(&o, &be) != NST_OK) bench_die("opening the backend");
    printf("# conv layers, tile %dx%d: %s%s\n\n", W, H, be->description, o.conv_timed ? ", algorithms timed (gpu.conv_algorithms = timed)" : "");
    printf("| layer | W x H | Cin -> Cout | GFLOP | forward ms | TFLOP/s | backward-data ms | TFLOP/s |\n|---|---|---|---|---|---|---|---|\n");
    double sum_f = 0, sum_b = 0, sum_flop = 0;
    int cin = 3, hw = W, hh = H;
    for (int k = 0; k < nlayers; k++) {
        const nst_vgg_layer *ly = nst_vgg_layer_at(nst_vgg_conv_layer(k));
        int cout = ly->std_cout;
        if (k > 0 && nst_vgg_layer_at(nst_vgg_conv_layer(k) - 1)->op == NST_OP_POOL) hw /= 2, hh /= 2;
        size_t nw = (size_t)cout * cin * 9;
        float *w = nst_alloc_array(nw, sizeof(float), "weights"), *b = nst_alloc_array((size_t)cout, sizeof(float), "bias");
        if (!w || !b) bench_die("host memory");
        for (size_t i = 0; i < nw; i++) w[i] = bench_urand() * 0.05f;
        for (int i = 0; i < cout; i++) b[i] = bench_urand() * 0.01f;
        nst_conv *cv;
        if (be->ops->conv_create(be, cin, cout, w, b, &cv) != NST_OK) bench_die("conv_create");
        nst_tensor x, y, dy, dx;
        nst_dtype in = k == 0 ? be->in_dtype : be->act_dtype;
        if (nst_tensor_alloc(be, hh, hw, cin, in, &x) != NST_OK || nst_tensor_alloc(be, hh, hw, cout, be->act_dtype, &y) != NST_OK ||
            nst_tensor_alloc(be, hh, hw, cout, be->act_dtype, &dy) != NST_OK || nst_tensor_alloc(be, hh, hw, cin, in, &dx) != NST_OK)
            bench_die("tensors");
        bench_fill(be, &x, 1.0f, 0);
        bench_fill(be, &dy, 0.01f, 0);
        double flop = 2.0 * 9 * cin * cout * (double)hw * hh;
        double tf = time_op(be, cv, &x, &y, &dy, &dx, 0, reps), tb = time_op(be, cv, &x, &y, &dy, &dx, 1, reps);
        sum_f += tf, sum_b += tb, sum_flop += flop;
        printf("| %s | %dx%d | %d -> %d | %.3g | %.3f | %.3g | %.3f | %.3g |\n", ly->name, hw, hh, cin, cout, flop / 1e9, tf * 1e3,
               flop / tf / 1e12, tb * 1e3, flop / tb / 1e12);
        fprintf(stderr, "{\"layer\": \"%s\", \"h\": %d, \"w\": %d, \"cin\": %d, \"cout\": %d, \"flop\": %.0f, \"forward_s\": %.6e, "
                        "\"backward_data_s\": %.6e, \"precision\": \"%s\", \"device\": \"%s\"}\n",
                ly->name, hh, hw, cin, cout, flop, tf, tb, nst_precision_name(be->precision), be->name);
        nst_tensor_free(be, &x), nst_tensor_free(be, &y), nst_tensor_free(be, &dy), nst_tensor_free(be, &dx);
        be->ops->conv_destroy(be, cv);
        nst_free(w), nst_free(b);
        cin = cout;
    }
    printf("| **all %d** | | | %.3g | %.3f | **%.3g** | %.3f | **%.3g** |\n", nlayers, sum_flop / 1e9, sum_f * 1e3, sum_flop / sum_f / 1e12,
           sum_b * 1e3, sum_flop / sum_b / 1e12);
    print_what_ran(be);
    nst_backend_close(be);
    return 0;
usage:
    fprintf(stderr, "usage: conv_layers [--device auto|cpu|cuda] [--precision auto|fp32|tf32|bf16|fp16] [--tile N | --size WxH (multiples of 16)] "
                    "[--reps N] [--layers 1..16] [--algorithms heuristic|timed]\n");
    return 2;
}

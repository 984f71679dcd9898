/* bench/cpu_conv_choice.c: the measurement behind the CPU backend's convolution dependency.
 *
 * For every VGG-19 conv layer at a given output size, times the 3x3 convolution forward (bias +
 * ReLU) and backward-data with (a) oneDNN on NHWC tensors (what kernels/cpu uses), (b) oneDNN
 * choosing its own blocked layout, (c) im2col in row blocks + OpenBLAS sgemm (backward-data as
 * the forward of the transposed, flipped kernel). Prints a markdown table.
 *
 *   make bench-conv && OMP_NUM_THREADS=2 build/bench/cpu_conv_choice 512 384
 */
#include <cblas.h>
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CK(x)                                                                                     \
    do {                                                                                          \
        dnnl_status_t s_ = (x);                                                                   \
        if (s_ != dnnl_success) {                                                                 \
            fprintf(stderr, "%s failed (%d) at line %d\n", #x, s_, __LINE__);                     \
            exit(1);                                                                              \
        }                                                                                         \
    } while (0)

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static dnnl_engine_t eng;
static dnnl_stream_t st;
enum { REPS = 3 };

/* oneDNN conv forward (bias + ReLU) or backward-data; blocked: let oneDNN pick the layout */
static double time_onednn(int H, int W, int Ci, int Co, int blocked, int bwd)
{
    dnnl_dims_t sd = {1, Ci, H, W}, wd = {Co, Ci, 3, 3}, bd = {Co}, dd = {1, Co, H, W}, str = {1, 1}, pad = {1, 1};
    dnnl_memory_desc_t s, w, b, d;
    dnnl_format_tag_t at = blocked ? dnnl_format_tag_any : dnnl_nhwc;
    CK(dnnl_memory_desc_init_by_tag(&s, 4, sd, dnnl_f32, at));
    CK(dnnl_memory_desc_init_by_tag(&w, 4, wd, dnnl_f32, dnnl_format_tag_any));
    CK(dnnl_memory_desc_init_by_tag(&b, 1, bd, dnnl_f32, dnnl_x));
    CK(dnnl_memory_desc_init_by_tag(&d, 4, dd, dnnl_f32, at));
    dnnl_convolution_desc_t cd, fd;
    dnnl_primitive_desc_t pd, fpd;
    dnnl_primitive_t p;
    dnnl_primitive_attr_t attr;
    dnnl_post_ops_t po;
    CK(dnnl_primitive_attr_create(&attr));
    CK(dnnl_post_ops_create(&po));
    CK(dnnl_post_ops_append_eltwise(po, 1.f, dnnl_eltwise_relu, 0, 0));
    CK(dnnl_primitive_attr_set_post_ops(attr, po));
    CK(dnnl_convolution_forward_desc_init(&fd, dnnl_forward_training, dnnl_convolution_direct, &s, &w, &b, &d, str, pad, pad));
    CK(dnnl_primitive_desc_create(&fpd, &fd, attr, eng, NULL));
    if (bwd) {
        CK(dnnl_convolution_backward_data_desc_init(&cd, dnnl_convolution_direct, &s, &w, &d, str, pad, pad));
        CK(dnnl_primitive_desc_create(&pd, &cd, NULL, eng, fpd));
    } else {
        pd = fpd;
    }
    CK(dnnl_primitive_create(&p, pd));
    const dnnl_memory_desc_t *qs = dnnl_primitive_desc_query_md(pd, bwd ? dnnl_query_diff_src_md : dnnl_query_src_md, 0);
    const dnnl_memory_desc_t *qw = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    const dnnl_memory_desc_t *qd = dnnl_primitive_desc_query_md(pd, bwd ? dnnl_query_diff_dst_md : dnnl_query_dst_md, 0);
    dnnl_memory_t ms, mw, mb, md;
    CK(dnnl_memory_create(&ms, qs, eng, DNNL_MEMORY_ALLOCATE));
    CK(dnnl_memory_create(&mw, qw, eng, DNNL_MEMORY_ALLOCATE));
    CK(dnnl_memory_create(&mb, &b, eng, DNNL_MEMORY_ALLOCATE));
    CK(dnnl_memory_create(&md, qd, eng, DNNL_MEMORY_ALLOCATE));
    dnnl_memory_t mems[4] = {ms, mw, mb, md};
    const dnnl_memory_desc_t *mds[4] = {qs, qw, &b, qd};
    for (int i = 0; i < 4; i++) {
        void *ptr;
        CK(dnnl_memory_get_data_handle(mems[i], &ptr));
        memset(ptr, 0, dnnl_memory_desc_get_size(mds[i]));
    }
    dnnl_exec_arg_t fa[4] = {{DNNL_ARG_SRC, ms}, {DNNL_ARG_WEIGHTS, mw}, {DNNL_ARG_BIAS, mb}, {DNNL_ARG_DST, md}};
    dnnl_exec_arg_t ba[3] = {{DNNL_ARG_DIFF_SRC, ms}, {DNNL_ARG_WEIGHTS, mw}, {DNNL_ARG_DIFF_DST, md}};
    CK(dnnl_primitive_execute(p, st, bwd ? 3 : 4, bwd ? ba : fa));
    CK(dnnl_stream_wait(st));
    double t = now();
    for (int r = 0; r < REPS; r++) CK(dnnl_primitive_execute(p, st, bwd ? 3 : 4, bwd ? ba : fa));
    CK(dnnl_stream_wait(st));
    t = (now() - t) / REPS;
    dnnl_primitive_destroy(p);
    if (bwd) dnnl_primitive_desc_destroy(pd);
    dnnl_primitive_desc_destroy(fpd);
    for (int i = 0; i < 4; i++) dnnl_memory_destroy(mems[i]);
    dnnl_post_ops_destroy(po);
    dnnl_primitive_attr_destroy(attr);
    return t;
}

/* im2col (NHWC, row blocks bounded to 64 MiB) + sgemm: [rows*W, 9*Ci] x [9*Ci, Co] */
static double time_gemm(int H, int W, int Ci, int Co)
{
    float *x = calloc((size_t)H * W * Ci, 4), *y = calloc((size_t)H * W * Co, 4), *w = calloc((size_t)9 * Ci * Co, 4);
    int RB = 16;
    while (RB > 1 && (size_t)RB * W * 9 * Ci * 4 > (64u << 20)) RB /= 2;
    float *col = malloc((size_t)RB * W * 9 * Ci * 4);
    double t = now();
    for (int rep = 0; rep < REPS; rep++)
        for (int y0 = 0; y0 < H; y0 += RB) {
            int rb = H - y0 < RB ? H - y0 : RB;
#pragma omp parallel for collapse(2)
            for (int yy = 0; yy < rb; yy++)
                for (int xx = 0; xx < W; xx++) {
                    float *c = col + ((size_t)yy * W + xx) * 9 * Ci;
                    for (int ky = 0; ky < 3; ky++)
                        for (int kx = 0; kx < 3; kx++) {
                            int sy = y0 + yy + ky - 1, sx = xx + kx - 1;
                            float *cc = c + (ky * 3 + kx) * Ci;
                            if (sy < 0 || sy >= H || sx < 0 || sx >= W)
                                memset(cc, 0, (size_t)Ci * 4);
                            else
                                memcpy(cc, x + ((size_t)sy * W + sx) * Ci, (size_t)Ci * 4);
                        }
                }
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rb * W, Co, 9 * Ci, 1.f, col, 9 * Ci, w, Co, 0.f,
                        y + (size_t)y0 * W * Co, Co);
        }
    t = (now() - t) / REPS;
    free(x), free(y), free(w), free(col);
    return t;
}

int main(int argc, char **argv)
{
    int W = argc > 2 ? atoi(argv[1]) : 512, H = argc > 2 ? atoi(argv[2]) : 384;
    CK(dnnl_engine_create(&eng, dnnl_cpu, 0));
    CK(dnnl_stream_create(&st, eng, dnnl_stream_default_flags));
    static const int cfg[][3] = {{1, 3, 64},    {1, 64, 64},   {2, 64, 128},  {2, 128, 128}, {4, 128, 256},
                                 {4, 256, 256}, {4, 256, 256}, {4, 256, 256}, {8, 256, 512}, {8, 512, 512},
                                 {8, 512, 512}, {8, 512, 512}, {16, 512, 512}};
    static const char *names[] = {"conv1_1", "conv1_2", "conv2_1", "conv2_2", "conv3_1", "conv3_2", "conv3_3",
                                  "conv3_4", "conv4_1", "conv4_2", "conv4_3", "conv4_4", "conv5_1"};
    double tot[3] = {0};
    char model[128] = "unknown CPU", line[256];
    FILE *ci = fopen("/proc/cpuinfo", "r");
    while (ci && fgets(line, sizeof line, ci))
        if (strncmp(line, "model name", 10) == 0) {
            snprintf(model, sizeof model, "%s", strchr(line, ':') + 2);
            model[strcspn(model, "\n")] = 0;
            break;
        }
    if (ci) fclose(ci);
    const dnnl_version_t *v = dnnl_version();
    printf("# CPU convolution: oneDNN vs im2col + OpenBLAS\n\n");
    printf("Command: `make bench-conv` (bench/cpu_conv_choice.c). %s, %d threads; oneDNN %d.%d.%d; %s.\n\n", model,
           omp_get_max_threads(), v->major, v->minor, v->patch, openblas_get_config());
    printf("VGG-19 convs to relu5_1 at %dx%d, forward (bias+ReLU) + backward-data, ms (mean of %d)\n\n", W, H, REPS);
    printf("| layer | oneDNN NHWC fwd | bwd | oneDNN blocked fwd | bwd | im2col+sgemm fwd | bwd |\n|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < 13; i++) {
        int s = cfg[i][0], ci = cfg[i][1], co = cfg[i][2], h = H / s, w = W / s;
        double a = time_onednn(h, w, ci, co, 0, 0), b = time_onednn(h, w, ci, co, 0, 1);
        double c = time_onednn(h, w, ci, co, 1, 0), d = time_onednn(h, w, ci, co, 1, 1);
        double e = time_gemm(h, w, ci, co), f = time_gemm(h, w, co, ci); /* bwd-data: a conv co -> ci */
        printf("| %s %d->%d | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f |\n", names[i], ci, co, a * 1e3, b * 1e3, c * 1e3,
               d * 1e3, e * 1e3, f * 1e3);
        tot[0] += a + b, tot[1] += c + d, tot[2] += e + f;
    }
    printf("| **total** | %.3f s | | %.3f s | | %.3f s | |\n", tot[0], tot[1], tot[2]);
    printf("\nim2col + sgemm takes %.2fx the time of oneDNN on NHWC tensors; oneDNN's own blocked layout saves %.0f%%\n"
           "more, not worth converting every other op to it. The CPU backend uses oneDNN on NHWC (kernels/cpu/conv_cpu.c).\n",
           tot[2] / tot[0], 100.0 * (tot[0] - tot[1]) / tot[0]);
    return 0;
}

/* tests/test_cuda_emu.cpp: our own CUDA kernels, their very device code, run on the CPU through
 * tests/cuda_emu.h (a block's threads as fibers meeting at barriers, in both orders).
 *
 * The element passes (kernels/cuda/eltwise_kernels.cuh) against the CPU backend's semantics
 * (kernels/backend.h, kernels/cpu/pool_cpu.c), bit for bit: ReLU backward; 2x2 floor pooling, max
 * and average, forward and backward, with and without the ReLU below folded in, on odd sizes, ties
 * (the first maximum in scan order takes the gradient), zeros of both signs and a NaN, in both
 * index types of the backward (32-bit and 64-bit); the 8-channel kernels (ReLU backward, pooling
 * forward and backward) give the one-element kernels' bits, with vec8.cuh's vector branches run
 * as such (and checked against element by element); the preprocessing within two roundings of its
 * terms (nvcc may contract a x + b into one).
 *
 * The reductions (kernels/cuda/reduce_kernels.cuh, block_sum.cuh): the sum of squares and the
 * content MSE over a region, masked and not, and total variation, each through the blocks'
 * partials and k_finish into an exact accumulator (kernels/xsum_core.h), against the sums in
 * double over the definition; their gradients over a seed region; Adam with its step ticked on the
 * device against the step given, and PyTorch's formula. The Gram ops' own kernels
 * (kernels/cuda/gram_kernels.cuh): a region's positions from a mid-region start as doubles and
 * mask-weighted doubles, packed in the storage type, weighted or not, and a product added back,
 * against the positions picked by hand; the difference from the target read from the upper
 * triangle alone (the lower one NaN), with and without the lagged extrapolation, and its loss.
 * The own Gram sums (kernels/cuda/gram_sums_kernels.cuh, NSTBATCH_CUDA_GRAM=own), the FP64
 * tensor-core MMA through a model of its fragments (tests/cuda_emu.h): the upper triangle added
 * into g, the lower one untouched, bit for bit against the definition where the sums are exact in
 * any order, within 1e-13 of their magnitude on random fp32; diagonal and off-diagonal blocks,
 * channels short of a block, element and 8-channel loads, masks, several splits, splits of several
 * stages (the prefetch of the next); on sm_90's MMA (one m16n8k8) and on sm_80's (four m8n8k4).
 *
 * conv1_1's kernels (kernels/cuda/conv_first_kernels.cuh) against the definition computed in
 * double: forward with and without ReLU
 * and backward-data, in fp32, bf16 and fp16, over odd shapes, several output widths and both
 * paddings of the weights (cin_p 4 and 8, as conv_create lays them out), with the launchers'
 * shared memory and grids of a thread a pixel down to one block (the grid-stride loop); and the
 * backward as the forward's adjoint, <conv(x), dy> = <x, conv_backward(dy)>. The bounds: fp32
 * within 1e-5 of the terms' absolute sum (the sums' roundings), 16-bit types within one rounding
 * of the output more. The same kernels on the image (conv_forward_image, conv_backward_image: the
 * preprocessing on the way in, its backward on the way out) against the preprocessing's passes
 * and the kernels on the network input in turn, bit for bit, in every dtype. */
extern "C" {
#include "../kernels/backend.h" /* nst_adam_step, nst_xsum */
}
#include "cuda_emu.h"
#include "../kernels/cuda/vec8.cuh"
#include "../kernels/cuda/preproc.cuh"
#define sw emu_shared
#include "../kernels/cuda/conv_first_kernels.cuh"
#undef sw
#include "../kernels/cuda/eltwise_kernels.cuh"
#undef __shared__
#define __shared__ static /* block_tree_sum's array: the block's, blocks one after another */
#include "../kernels/cuda/block_sum.cuh"
#include "../kernels/xsum_core.h"
#include "../kernels/cuda/reduce_kernels.cuh"
#include "../kernels/cuda/gram_kernels.cuh"
#include "../kernels/cuda/gram_sums_kernels.cuh"
#undef __shared__

#include "test.h"

#include <random>
#include <vector>

static std::mt19937 rng(7);

/* v rounded to T */
template <typename T> static float rnd(float v)
{
    T t;
    st<T>(&t, 0, v);
    return ld<T>(&t, 0);
}
template <typename T> static double unit();
template <> double unit<float>() { return 1e-5; }
template <> double unit<__nv_bfloat16>() { return 1.0 / 256 + 1e-5; }
template <> double unit<__half>() { return 1.0 / 2048 + 1e-5; }

/* OIHW weights laid out as conv_create lays them: KRSC, cin padded to cp with zeros */
static std::vector<float> krsc(const std::vector<float> &w, int cout, int cp)
{
    std::vector<float> k((size_t)cout * 9 * cp, 0.f);
    for (int o = 0; o < cout; o++)
        for (int c = 0; c < 3; c++)
            for (int t = 0; t < 9; t++) k[((size_t)o * 9 + t) * cp + c] = w[((size_t)o * 3 + c) * 9 + t];
    return k;
}
template <typename T> static std::vector<T> to(const std::vector<float> &v)
{
    std::vector<T> o(v.size());
    for (size_t i = 0; i < v.size(); i++) st<T>(o.data(), i, v[i]);
    return o;
}

/* one case: worst errors over the bound, forward and backward; 0 when both pass */
template <typename T> static int conv_case(int H, int W, int cout, int cp, int relu, unsigned grid, unsigned threads, const char *tn)
{
    std::uniform_real_distribution<float> U(-1.f, 1.f);
    const size_t npx = (size_t)H * W;
    std::vector<float> w((size_t)cout * 27), b(cout), x(npx * 3), dy(npx * cout);
    for (auto *v : {&w, &b, &x, &dy})
        for (auto &e : *v) e = rnd<T>(U(rng));
    std::vector<T> dw = to<T>(krsc(w, cout, cp)), db = to<T>(b), dx_in = to<T>(x), ddy = to<T>(dy);
    std::vector<T> y = to<T>(std::vector<float>(npx * cout, NAN)), dx = to<T>(std::vector<float>(npx * 3, NAN));
    emu_launch(grid, threads, (size_t)28 * cout * sizeof(float),
               [&] { k_conv1_fwd<T>(conv1_in_act<T>{dx_in.data()}, dw.data(), db.data(), y.data(), H, W, cout, cp, relu, true); });
    emu_launch(grid, threads, (size_t)27 * cout * sizeof(float),
               [&] { k_conv1_bwd<T>(ddy.data(), dw.data(), conv1_out_act<T>{dx.data()}, H, W, cout, cp, true); });
    double worst_f = 0, worst_b = 0;
    for (int py = 0; py < H; py++)
        for (int px = 0; px < W; px++) {
            for (int o = 0; o < cout; o++) { /* y = relu(b + sum w x) */
                double s = b[o], mag = fabs(b[o]);
                for (int t = 0; t < 9; t++) {
                    int sy = py + t / 3 - 1, sx = px + t % 3 - 1;
                    if (sy < 0 || sy >= H || sx < 0 || sx >= W) continue;
                    for (int c = 0; c < 3; c++) {
                        double term = (double)w[((size_t)o * 3 + c) * 9 + t] * x[((size_t)sy * W + sx) * 3 + c];
                        s += term, mag += fabs(term);
                    }
                }
                if (relu && s < 0) s = 0;
                double got = ld<T>(y.data(), ((size_t)py * W + px) * cout + o), e = fabs(got - s) / (mag > 0 ? mag : 1);
                worst_f = isfinite(got) && e > worst_f ? e : isfinite(got) ? worst_f : INFINITY;
            }
            for (int c = 0; c < 3; c++) { /* dx = sum over the outputs that read this pixel */
                double s = 0, mag = 0;
                for (int t = 0; t < 9; t++) {
                    int qy = py + 1 - t / 3, qx = px + 1 - t % 3;
                    if (qy < 0 || qy >= H || qx < 0 || qx >= W) continue;
                    for (int o = 0; o < cout; o++) {
                        double term = (double)w[((size_t)o * 3 + c) * 9 + t] * dy[((size_t)qy * W + qx) * cout + o];
                        s += term, mag += fabs(term);
                    }
                }
                double got = ld<T>(dx.data(), ((size_t)py * W + px) * 3 + c), e = fabs(got - s) / (mag > 0 ? mag : 1);
                worst_b = isfinite(got) && e > worst_b ? e : isfinite(got) ? worst_b : INFINITY;
            }
        }
    CHECK(worst_f <= unit<T>() && worst_b <= unit<T>(), "%s %dx%d, %d outputs, cin_p %d, relu %d, %u blocks of %u: forward %.3g, backward %.3g > %.3g", tn,
          H, W, cout, cp, relu, grid, threads, worst_f, worst_b, unit<T>());
    return worst_f > unit<T>() || worst_b > unit<T>();
}

static const int shapes[][2] = {{1, 1}, {1, 5}, {5, 1}, {2, 2}, {7, 9}, {17, 33}};

/* every shape, width and ReLU; fp32 (full) with both weight paddings, the 16-bit types with the
 * padding they take (8). Grids of a thread a pixel up to 64 pixels (a fiber each costs), and
 * of 1 or 3 blocks striding over every shape. */
template <typename T> static void every_shape(const char *tn, int full)
{
    for (const auto &s : shapes)
        for (int cout : {8, 64})
            for (int cp : {4, 8})
                for (int relu = 0; relu < 2; relu++) {
                    if (!full && cp == 4) continue;
                    const size_t npx = (size_t)s[0] * s[1];
                    const unsigned natural = (unsigned)((npx + 31) / 32), small = natural > 3 ? 3 : 1;
                    if (npx <= 64) conv_case<T>(s[0], s[1], cout, cp, relu, natural, 32, tn); /* a thread a pixel */
                    conv_case<T>(s[0], s[1], cout, cp, relu, small, 32, tn);                  /* threads striding over several */
                }
}

static void t_fp32(void) { every_shape<float>("fp32", 1); }
static void t_bf16(void) { every_shape<__nv_bfloat16>("bf16", 0); }
static void t_fp16(void) { every_shape<__half>("fp16", 0); }

/* the widest layer the kernels take (256 outputs: the whole shared array) on the launch's 256
 * threads a block */
static void t_widest(void)
{
    conv_case<float>(9, 11, 256, 8, 1, 1, 256, "fp32");
    conv_case<__nv_bfloat16>(9, 11, 256, 8, 0, 1, 256, "bf16");
}

/* <conv(x), dy> = <x, conv_backward(dy)> without bias or ReLU: the backward is the forward's transpose */
static void t_adjoint(void)
{
    std::uniform_real_distribution<float> U(-1.f, 1.f);
    const int H = 13, W = 10, cout = 16, cp = 8;
    const size_t npx = (size_t)H * W;
    std::vector<float> w((size_t)cout * 27), b(cout, 0.f), x(npx * 3), dy(npx * cout), y(npx * cout), dx(npx * 3);
    for (auto *v : {&w, &x, &dy})
        for (auto &e : *v) e = U(rng);
    std::vector<float> k = krsc(w, cout, cp);
    emu_launch(2, 64, (size_t)28 * cout * 4,
               [&] { k_conv1_fwd<float>(conv1_in_act<float>{x.data()}, k.data(), b.data(), y.data(), H, W, cout, cp, 0, true); });
    emu_launch(2, 64, (size_t)27 * cout * 4, [&] { k_conv1_bwd<float>(dy.data(), k.data(), conv1_out_act<float>{dx.data()}, H, W, cout, cp, true); });
    double a = 0, c = 0, mag = 0;
    for (size_t i = 0; i < y.size(); i++) a += (double)y[i] * dy[i], mag += fabs((double)y[i] * dy[i]);
    for (size_t i = 0; i < x.size(); i++) c += (double)x[i] * dx[i];
    CHECK(fabs(a - c) <= 1e-5 * mag, "<conv(x), dy> %.9g, <x, conv_backward(dy)> %.9g", a, c);
}

/* conv1_1 from the image (conv_forward_image, conv_backward_image): the preprocessing applied on
 * the way in and its backward on the way out give the bits of k_pre, then the kernel on the
 * network input, and of the kernel, then k_pre_bwd: forward with ReLU and backward, BGR with
 * unequal scales, at the feature scale of each dtype (fp16's 1/8), odd shapes, a grid striding */
template <typename T> static void image_case(const char *tn, float fscale)
{
    std::uniform_real_distribution<float> U(-1.f, 1.f);
    const int cout = 16, cp = 8;
    affine3 f;
    for (int c = 0; c < 3; c++) f.a[c] = 255.f / (57.4f - 0.3f * c), f.b[c] = -(103.939f + 12.f * c) / (57.4f - 0.3f * c), f.src[c] = 2 - c;
    for (const auto &sh : shapes) {
        const int H = sh[0], W = sh[1];
        const size_t npx = (size_t)H * W;
        std::vector<float> w((size_t)cout * 27), b(cout), img(npx * 3), dy(npx * cout);
        for (auto *v : {&w, &b, &dy})
            for (auto &e : *v) e = rnd<T>(U(rng) * 0.1f);
        for (auto &e : img) e = (float)(rng() % 256) / 255.f;
        std::vector<T> dw = to<T>(krsc(w, cout, cp)), db = to<T>(b), ddy = to<T>(dy), x(npx * 3), y0(npx * cout), y1(npx * cout), gx(npx * 3);
        std::vector<float> d0(npx * 3, NAN), d1(npx * 3, NAN);
        const unsigned blocks = npx > 64 ? 2 : 1;
        const size_t fshm = (size_t)28 * cout * sizeof(float), bshm = (size_t)27 * cout * sizeof(float);
        emu_launch_sequential(1, 32, [&] { k_pre<T>(img.data(), x.data(), npx, f, fscale); });
        emu_launch(blocks, 32, fshm, [&] { k_conv1_fwd<T>(conv1_in_act<T>{x.data()}, dw.data(), db.data(), y0.data(), H, W, cout, cp, 1, true); });
        emu_launch(blocks, 32, fshm,
                   [&] { k_conv1_fwd<T>(conv1_in_image<T>{img.data(), f, fscale}, dw.data(), db.data(), y1.data(), H, W, cout, cp, 1, true); });
        emu_launch(blocks, 32, bshm, [&] { k_conv1_bwd<T>(ddy.data(), dw.data(), conv1_out_act<T>{gx.data()}, H, W, cout, cp, true); });
        emu_launch_sequential(1, 32, [&] { k_pre_bwd<T>(gx.data(), d0.data(), npx, f, 1.f / fscale); });
        emu_launch(blocks, 32, bshm, [&] { k_conv1_bwd<T>(ddy.data(), dw.data(), conv1_out_image<T>{d1.data(), f, 1.f / fscale}, H, W, cout, cp, true); });
        int fd = 0, bd = 0;
        for (size_t i = 0; i < y0.size(); i++) fd += memcmp(&y0[i], &y1[i], sizeof(T)) != 0;
        for (size_t i = 0; i < d0.size(); i++) bd += memcmp(&d0[i], &d1[i], sizeof(float)) != 0;
        CHECK(fd == 0 && bd == 0, "%s %dx%d: %d of %zu outputs and %d of %zu image gradients differ from the preprocessing's passes and the kernel in turn", tn,
              H, W, fd, y0.size(), bd, d0.size());
    }
}
static void t_conv1_image(void)
{
    image_case<float>("fp32", 1.f);
    image_case<__nv_bfloat16>("bf16", 1.f);
    image_case<__half>("fp16", 0.125f);
}

/* ---- the element passes ------------------------------------------------------------------- */

/* values with ties and zeros of both signs (a max of +0 and -0 keeps the first in scan order): a
 * few levels, some negative, one NaN */
template <typename T> static std::vector<float> levels(size_t n, int nan_at)
{
    std::vector<float> v(n);
    for (size_t i = 0; i < n; i++) {
        const int k = (int)(rng() % 8) - 2;
        v[i] = rnd<T>(k == 5 ? -0.f : (float)k * 0.375f);
    }
    if (nan_at >= 0 && (size_t)nan_at < n) v[nan_at] = NAN;
    return v;
}
static bool same_bits(float a, float b) { return (isnan(a) && isnan(b)) || memcmp(&a, &b, sizeof a) == 0; }

/* the CPU backend's pooling, forward (kernels/cpu/pool_cpu.c) */
static float pool_ref(const std::vector<float> &x, int W, int C, int r, int j, int c, int avg)
{
    const size_t p00 = ((size_t)(2 * r) * W + 2 * j) * C + c, p01 = p00 + C, p10 = p00 + (size_t)W * C, p11 = p10 + C;
    if (avg) return 0.25f * ((x[p00] + x[p01]) + (x[p10] + x[p11]));
    float m = x[p00];
    m = x[p01] > m ? x[p01] : m;
    m = x[p10] > m ? x[p10] : m;
    return x[p11] > m ? x[p11] : m;
}
/* its backward: the window's first maximum in scan order gets g (avg: each g / 4); relu: 0 where
 * !(x > 0); floor: the last odd row and column get 0 */
static float pool_bwd_ref(const std::vector<float> &x, const std::vector<float> &g, int H, int W, int C, size_t i, int avg, int relu)
{
    const int c = (int)(i % C), col = (int)(i / C % W), row = (int)(i / C / W), r = row / 2, j = col / 2, yw = W / 2;
    float v = 0.f;
    if (r < H / 2 && j < yw) {
        const float gv = g[((size_t)r * yw + j) * C + c];
        if (avg) v = 0.25f * gv;
        else {
            const size_t p[4] = {((size_t)(2 * r) * W + 2 * j) * C + c, 0, 0, 0};
            size_t q[4] = {p[0], p[0] + C, p[0] + (size_t)W * C, p[0] + (size_t)W * C + C};
            int arg = 0;
            for (int k = 1; k < 4; k++)
                if (x[q[k]] > x[q[arg]]) arg = k;
            v = arg == (row & 1) * 2 + (col & 1) ? gv : 0.f;
        }
    }
    return relu && !(x[i] > 0.f) ? 0.f : v;
}

template <typename T> static void pool_case(int H, int W, int C, int avg, const char *tn)
{
    const size_t n = (size_t)H * W * C, ny = (size_t)(H / 2) * (W / 2) * C;
    std::vector<float> x = levels<T>(n, n > 5 ? 5 : -1), g = levels<T>(ny, -1);
    std::vector<T> dx_in = to<T>(x), dg = to<T>(g), y(ny), d32(n), d64(n);
    const unsigned blocks = (unsigned)((n + 63) / 64 > 2 ? 2 : 1);
    emu_launch_sequential(blocks, 64, [&] { k_pool_fwd<T>(dx_in.data(), W, C, y.data(), H / 2, W / 2, avg); });
    int bad = 0;
    for (size_t i = 0; i < ny; i++) {
        const int c = (int)(i % C), j = (int)(i / C % (W / 2)), r = (int)(i / C / (W / 2));
        bad += !same_bits(ld<T>(y.data(), i), rnd<T>(pool_ref(x, W, C, r, j, c, avg)));
    }
    CHECK(bad == 0, "%s pool_forward %s %dx%dx%d: %d outputs differ", tn, avg ? "avg" : "max", H, W, C, bad);
    if (C % 8 == 0) { /* 8 channels a thread: the same bits in both index types */
        std::vector<T> y32(ny), y64(ny);
        const size_t n8 = ny / 8;
        emu_launch_sequential(2, 8, [&] { k_pool_fwd8<T, unsigned>(dx_in.data(), W, C, y32.data(), W / 2, (unsigned)n8, avg); });
        emu_launch_sequential(1, 8, [&] { k_pool_fwd8<T, size_t>(dx_in.data(), W, C, y64.data(), W / 2, n8, avg); });
        bad = ny && (memcmp(y32.data(), y.data(), ny * sizeof(T)) != 0 || memcmp(y64.data(), y.data(), ny * sizeof(T)) != 0);
        CHECK(bad == 0, "%s pool_forward %s %dx%dx%d, 8 channels a thread: not the bits of one a thread", tn, avg ? "avg" : "max", H, W, C);
    }
    for (int relu = 0; relu < 2; relu++) {
        emu_launch_sequential(blocks, 64, [&] { k_pool_bwd<T, unsigned>(dx_in.data(), H, W, C, dg.data(), H / 2, W / 2, d32.data(), avg, relu); });
        emu_launch_sequential(blocks, 64, [&] { k_pool_bwd<T, size_t>(dx_in.data(), H, W, C, dg.data(), H / 2, W / 2, d64.data(), avg, relu); });
        bad = 0;
        for (size_t i = 0; i < n; i++) {
            const float want = rnd<T>(pool_bwd_ref(x, g, H, W, C, i, avg, relu));
            bad += !same_bits(ld<T>(d32.data(), i), want) || !same_bits(ld<T>(d64.data(), i), want);
        }
        CHECK(bad == 0, "%s pool_backward %s%s %dx%dx%d: %d elements differ", tn, avg ? "avg" : "max", relu ? "+relu" : "", H, W, C, bad);
        if (C % 8) continue;
        /* 8 channels of a 2x2 block a thread, into buffers of NaN (every element must be written) */
        std::vector<T> e32 = to<T>(std::vector<float>(n, NAN)), e64 = e32;
        const size_t n8 = (size_t)((H + 1) / 2) * ((W + 1) / 2) * (C / 8);
        emu_launch_sequential(2, 8, [&] { k_pool_bwd8<T, unsigned>(dx_in.data(), H, W, C, dg.data(), H / 2, W / 2, e32.data(), (unsigned)n8, avg, relu); });
        emu_launch_sequential(1, 8, [&] { k_pool_bwd8<T, size_t>(dx_in.data(), H, W, C, dg.data(), H / 2, W / 2, e64.data(), n8, avg, relu); });
        bad = memcmp(e32.data(), d32.data(), n * sizeof(T)) != 0 || memcmp(e64.data(), d32.data(), n * sizeof(T)) != 0;
        CHECK(bad == 0, "%s pool_backward %s%s %dx%dx%d, 8 channels a thread: not the bits of one an element", tn, avg ? "avg" : "max",
              relu ? "+relu" : "", H, W, C);
    }
}

static void t_pooling(void)
{
    static const int sz[][3] = {{2, 2, 1}, {5, 7, 3}, {8, 6, 16}, {9, 9, 8}, {1, 4, 2}, {7, 4, 24}, {1, 5, 8}, {3, 2, 8}};
    for (const auto &s : sz)
        for (int avg = 0; avg < 2; avg++) {
            pool_case<float>(s[0], s[1], s[2], avg, "fp32");
            pool_case<__nv_bfloat16>(s[0], s[1], s[2], avg, "bf16");
            pool_case<__half>(s[0], s[1], s[2], avg, "fp16");
        }
}

/* ReLU backward, one thread an element and 8 a thread (both index types): g where y > 0, else +0;
 * the kept elements' bits untouched (a NaN's payload too) */
template <typename T> static void relu_case(size_t n, const char *tn)
{
    std::vector<float> y = levels<T>(n, 17), g = levels<T>(n, -1);
    std::vector<T> dy = to<T>(y), dg = to<T>(g);
    size_t kept_nan = 0;
    while (kept_nan < n && !(y[kept_nan] > 0.f)) kept_nan++;
    if (kept_nan < n) memset(&dg[kept_nan], 0x7f, sizeof(T)); /* a NaN with a payload where g is kept */
    std::vector<T> want = dg;
    for (size_t i = 0; i < n; i++)
        if (!(y[i] > 0.f)) st<T>(want.data(), i, 0.f);
    std::vector<T> a = dg, b = dg, c = dg;
    emu_launch_sequential(2, 64, [&] { k_relu_bwd<T>(dy.data(), a.data(), n); });
    int bad = memcmp(a.data(), want.data(), n * sizeof(T)) != 0;
    if (n % 8 == 0) {
        emu_launch_sequential(2, 8, [&] { k_relu_bwd8<T, unsigned>(dy.data(), b.data(), (unsigned)(n / 8)); });
        emu_launch_sequential(1, 8, [&] { k_relu_bwd8<T, size_t>(dy.data(), c.data(), n / 8); });
        bad += (memcmp(b.data(), want.data(), n * sizeof(T)) != 0) + (memcmp(c.data(), want.data(), n * sizeof(T)) != 0);
    }
    CHECK(bad == 0, "%s relu_backward, %zu elements: %d of the kernels differ from g where y > 0, else +0", tn, n, bad);
}

static void t_relu_backward(void)
{
    for (size_t n : {301, 304, 8}) {
        relu_case<float>(n, "fp32");
        relu_case<__nv_bfloat16>(n, "bf16");
        relu_case<__half>(n, "fp16");
    }
}

/* vec8.cuh: 8 values through the vector branch equal them element by element, both ways, on
 * values that round (ties to even) when stored */
template <typename T> static void vec8_case(const char *tn)
{
    alignas(16) T a[8], b[8];
    float v[8], u[8], w[8];
    for (int j = 0; j < 8; j++) v[j] = 1.f + (float)(2 * j + 1) * 0x1p-9f * (j % 2 ? -1 : 1) + (float)j * 0x1p-12f;
    store8<T>(a, v, true);
    store8<T>(b, v, false);
    load8<T>(a, u, true);
    load8<T>(a, w, false);
    int bad = memcmp(a, b, sizeof a) != 0 || memcmp(u, w, sizeof u) != 0;
    for (int j = 0; j < 8; j++) bad += !same_bits(w[j], ld<T>(a, j)) || !same_bits(ld<T>(a, j), rnd<T>(v[j]));
    CHECK(bad == 0, "%s load8/store8: the vector branch differs from element by element (%d)", tn, bad);
}

static void t_vec8(void)
{
    vec8_case<float>("fp32");
    vec8_case<__nv_bfloat16>("bf16");
    vec8_case<__half>("fp16");
}

/* x = (img[src c] a_c + b_c) fscale and its backward, BGR, within two roundings of the terms */
static void t_preprocess(void)
{
    const size_t npx = 37;
    affine3 f;
    for (int c = 0; c < 3; c++) f.a[c] = 255.f / (50.f + c), f.b[c] = -(100.f + c) / (50.f + c), f.src[c] = 2 - c;
    std::vector<float> img(npx * 3), dimg(npx * 3);
    for (auto &v : img) v = (float)(rng() % 256) / 255.f;
    std::vector<float> x(npx * 3), g(npx * 3);
    for (auto &v : g) v = (float)((int)(rng() % 200) - 100) / 64.f;
    emu_launch_sequential(1, 32, [&] { k_pre<float>(img.data(), x.data(), npx, f, 0.125f); });
    emu_launch_sequential(1, 32, [&] { k_pre_bwd<float>(g.data(), dimg.data(), npx, f, 8.f); });
    double worst = 0, worst_b = 0;
    for (size_t i = 0; i < npx * 3; i++) {
        const int c = (int)(i % 3);
        const double ax = (double)img[3 * (i / 3) + f.src[c]] * f.a[c], want = (ax + f.b[c]) * 0.125, wb = (double)g[i] * 8 * f.a[c];
        worst = fmax(worst, fabs(x[i] - want) / fmax((fabs(ax) + fabs(f.b[c])) * 0.125, 1e-30)); /* (a x + b cancels) */
        worst_b = fmax(worst_b, fabs(dimg[3 * (i / 3) + f.src[c]] - wb) / fmax(fabs(wb), 1e-30));
    }
    CHECK(worst <= 3e-7 && worst_b <= 3e-7, "preprocess %.3g, its backward %.3g (relative)", worst, worst_b);
}

/* ---- the reductions ------------------------------------------------------------------------ */

/* the partials of `launch` (a reduction kernel over n elements, its grid as the launchers give it)
 * finished by k_finish: into *out, and / div into acc */
static double reduce(size_t n, const std::function<void(double *)> &launch, nst_xsum *acc, double div)
{
    unsigned b = (unsigned)((n + RED_THREADS - 1) / RED_THREADS);
    b = b > RED_BLOCKS ? RED_BLOCKS : b ? b : 1;
    std::vector<double> part(RED_BLOCKS + 1, NAN);
    emu_launch(b, RED_THREADS, 0, [&] { launch(part.data()); });
    double out = NAN;
    emu_launch(1, RED_THREADS, 0, [&] { k_finish(part.data(), b, &out, acc, div); });
    return out;
}

static void t_reductions(void)
{
    std::uniform_real_distribution<float> U(-1.f, 1.f);
    const int H = 23, W = 31, C = 5;
    const size_t n = (size_t)H * W * C;
    std::vector<float> f(n), q(n), m((size_t)H * W), img((size_t)H * W * 3);
    for (auto *v : {&f, &q, &m, &img})
        for (auto &e : *v) e = rnd<__nv_bfloat16>(U(rng));
    for (auto &e : m) e = fabsf(e);
    std::vector<__nv_bfloat16> fb = to<__nv_bfloat16>(f), qb = to<__nv_bfloat16>(q);
    const region g{4, 3, 17, W, C}; /* 17 x (H - 3 - 2) positions: not whole rows */
    const int gh = H - 5;
    const size_t ne = (size_t)g.w * gh * C;
    double want_ss = 0, want_mse = 0, want_msem = 0, want_tv = 0;
    for (int y = g.y; y < g.y + gh; y++)
        for (int x = g.x; x < g.x + g.w; x++)
            for (int c = 0; c < C; c++) {
                size_t o = ((size_t)y * W + x) * C + c;
                double d = (double)f[o] - q[o];
                want_ss += (double)f[o] * f[o], want_mse += d * d, want_msem += (double)m[o / C] * d * d;
            }
    for (int y = g.y; y < g.y + gh; y++) /* the image's TV over the same region, 3 channels */
        for (int x = g.x; x < g.x + g.w; x++)
            for (int c = 0; c < 3; c++) {
                size_t o = ((size_t)y * W + x) * 3 + c;
                if (x + 1 < W) want_tv += ((double)img[o + 3] - img[o]) * ((double)img[o + 3] - img[o]);
                if (y + 1 < H) want_tv += ((double)img[o + (size_t)W * 3] - img[o]) * ((double)img[o + (size_t)W * 3] - img[o]);
            }
    nst_xsum acc;
    struct {
        const char *what;
        double want, div;
        std::function<void(double *)> k;
    } cases[] = {
        {"sumsq", want_ss, 4.0, [&](double *part) { k_sumsq<__nv_bfloat16>(fb.data(), g, ne, part); }},
        {"mse", want_mse, 1.0, [&](double *part) { k_mse<__nv_bfloat16>(fb.data(), qb.data(), NULL, g, ne, part); }},
        {"mse masked", want_msem, 1.0, [&](double *part) { k_mse<__nv_bfloat16>(fb.data(), qb.data(), m.data(), g, ne, part); }},
        {"tv", want_tv, 1.0,
         [&](double *part) { k_tv(img.data(), W, H, 3, region{g.x, g.y, g.w, W, 3}, (size_t)g.w * gh * 3, part); }},
    };
    for (auto &k : cases) {
        nst_xsum_zero(&acc);
        nst_xsum_add(&acc, 0.5); /* the accumulator adds to what it holds */
        const double out = reduce(k.what[0] == 't' ? (size_t)g.w * gh * 3 : ne, k.k, &acc, k.div);
        const double got = nst_xsum_value(&acc) - 0.5;
        CHECK(fabs(out - k.want) <= 1e-12 * fabs(k.want) && fabs(got - k.want / k.div) <= 1e-12 * fabs(k.want),
              "%s: sum %.17g, accumulated %.17g / %g, the definition %.17g", k.what, out, got, k.div, k.want);
    }
    /* the gradients over a seed region: df += scale m (f - p); dimg += scale d(TV)/dx */
    std::vector<__nv_bfloat16> df = to<__nv_bfloat16>(std::vector<float>(n, 0.25f));
    emu_launch_sequential(2, 64, [&] { k_mse_grad<__nv_bfloat16>(fb.data(), qb.data(), m.data(), g, ne, 0.5f, df.data()); });
    int bad = 0;
    for (size_t o = 0; o < n; o++) {
        const int y = (int)(o / C / W), x = (int)(o / C % W);
        const bool in = y >= g.y && y < g.y + gh && x >= g.x && x < g.x + g.w;
        const float want = in ? rnd<__nv_bfloat16>(0.25f + 0.5f * m[o / C] * (f[o] - q[o])) : 0.25f;
        bad += fabsf(ld<__nv_bfloat16>(df.data(), o) - want) > 0.0079f * fmaxf(fabsf(want), 1.f); /* a bf16 ulp */
    }
    CHECK(bad == 0, "mse gradient: %d of %zu elements off (only the seed changes)", bad, n);
    std::vector<float> dimg(img.size(), 0.f);
    emu_launch_sequential(2, 64, [&] { k_tv_grad(img.data(), W, H, 3, region{g.x, g.y, g.w, W, 3}, (size_t)g.w * gh * 3, 2.f, dimg.data()); });
    double worst = 0;
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            for (int c = 0; c < 3; c++) { /* d/dx_p of the sum over every pair: 2 (2 x_p - the neighbours' sum), scaled */
                size_t o = ((size_t)y * W + x) * 3 + c;
                const bool in = y >= g.y && y < g.y + gh && x >= g.x && x < g.x + g.w;
                double v = 0;
                if (x > 0) v += img[o] - img[o - 3];
                if (y > 0) v += img[o] - img[o - (size_t)W * 3];
                if (x + 1 < W) v -= img[o + 3] - img[o];
                if (y + 1 < H) v -= img[o + (size_t)W * 3] - img[o];
                worst = fmax(worst, fabs(dimg[o] - (in ? 2.0 * 2.0 * v : 0.0)));
            }
    CHECK(worst <= 1e-5, "tv gradient: off by %.3g (only the seed changes)", worst);
}

/* the Gram ops' kernels beside cuBLAS: chunks of a region, the difference and its loss */
/* k_chunk_f64_8 (8 channels a thread, both index types) gives k_chunk_f64's doubles, plain and
 * weighted, from a mid-region start of a region of part rows */
template <typename T> static void chunk8_case(const char *tn)
{
    std::uniform_real_distribution<float> U(-1.f, 1.f);
    const int H = 7, W = 11, C = 24;
    const nst_rect r = {2, 1, 5, 4};
    std::vector<float> f((size_t)H * W * C), m((size_t)H * W);
    for (auto &e : f) e = rnd<T>(U(rng));
    for (auto &e : m) e = fabsf(U(rng));
    std::vector<T> ft = to<T>(f);
    const size_t p0 = 3, np = 13, n = np * C;
    for (int masked = 0; masked < 2; masked++) {
        const float *w = masked ? m.data() : NULL;
        std::vector<double> o1(n, NAN), m1(n, NAN), o2(n, NAN), m2(n, NAN), o3(n, NAN), m3(n, NAN);
        emu_launch_sequential(2, 32, [&] { k_chunk_f64<T>(ft.data(), w, W, C, r, p0, o1.data(), m1.data(), n); });
        emu_launch_sequential(2, 8, [&] { k_chunk_f64_8<T, unsigned>(ft.data(), w, W, C, r, 3u, o2.data(), m2.data(), (unsigned)(n / 8)); });
        emu_launch_sequential(1, 8, [&] { k_chunk_f64_8<T, size_t>(ft.data(), w, W, C, r, p0, o3.data(), m3.data(), n / 8); });
        int bad = memcmp(o1.data(), o2.data(), n * 8) != 0 || memcmp(o1.data(), o3.data(), n * 8) != 0;
        if (masked) bad += memcmp(m1.data(), m2.data(), n * 8) != 0 || memcmp(m1.data(), m3.data(), n * 8) != 0;
        CHECK(bad == 0, "%s chunk%s, 8 channels a thread: not k_chunk_f64's doubles", tn, masked ? " (masked)" : "");
    }
}

static void t_gram_kernels(void)
{
    std::uniform_real_distribution<float> U(-1.f, 1.f);
    const int H = 9, W = 13, C = 6;
    const nst_rect r = {3, 2, 7, 5}; /* x, y, w, h: part rows */
    std::vector<float> f((size_t)H * W * C), m((size_t)H * W);
    for (auto &e : f) e = rnd<__nv_bfloat16>(U(rng));
    for (auto &e : m) e = fabsf(U(rng));
    std::vector<__nv_bfloat16> fb = to<__nv_bfloat16>(f);
    const size_t p0 = 9, np = 20, n = np * C; /* positions 9..28 of the region's 35 */
    std::vector<double> out(n, NAN), mout(n, NAN);
    std::vector<__nv_bfloat16> pk(n), pw(n);
    emu_launch_sequential(2, 32, [&] { k_chunk_f64<__nv_bfloat16>(fb.data(), m.data(), W, C, r, p0, out.data(), mout.data(), n); });
    emu_launch_sequential(2, 32, [&] { k_pack<__nv_bfloat16>(fb.data(), W, C, r, p0, pk.data(), n); });
    emu_launch_sequential(2, 32, [&] { k_pack_weighted<__nv_bfloat16>(fb.data(), m.data(), W, C, r, p0, pw.data(), n); });
    std::vector<float> src(n), df((size_t)H * W * C, 0.5f), want_df = df;
    for (size_t i = 0; i < n; i++) src[i] = U(rng);
    std::vector<float> dfo = df;
    emu_launch_sequential(2, 32, [&] { k_add_region<float>(dfo.data(), W, C, r, p0, src.data(), n); });
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        const size_t q = p0 + i / C, px = (size_t)(r.y + q / r.w) * W + r.x + q % r.w, o = px * C + i % C;
        bad += out[i] != f[o] || mout[i] != (double)m[px] * f[o] || ld<__nv_bfloat16>(pk.data(), i) != f[o] ||
               ld<__nv_bfloat16>(pw.data(), i) != rnd<__nv_bfloat16>(m[px] * f[o]);
        want_df[o] = 0.5f + src[i];
    }
    bad += memcmp(dfo.data(), want_df.data(), df.size() * sizeof(float)) != 0;
    CHECK(bad == 0, "a region's chunk: %d values not the positions picked by hand", bad);
    chunk8_case<__nv_bfloat16>("bf16");
    chunk8_case<float>("fp32");
    chunk8_case<__half>("fp16");
    /* d = g gs - a from the upper triangle (the lower one NaN), and with g_prev: (2 g - g_prev) gs - a */
    const int c = 11;
    std::vector<double> g((size_t)c * c, NAN), gp((size_t)c * c, NAN);
    std::vector<float> a((size_t)c * c), d((size_t)c * c, NAN), dl((size_t)c * c, NAN);
    for (int i = 0; i < c; i++)
        for (int j = i; j < c; j++) g[(size_t)i * c + j] = U(rng) * 4, gp[(size_t)i * c + j] = U(rng) * 4;
    for (auto &e : a) e = U(rng);
    const double gs = 0.25;
    double want = 0;
    for (int i = 0; i < c; i++)
        for (int j = 0; j < c; j++) {
            const size_t u = i <= j ? (size_t)i * c + j : (size_t)j * c + i;
            const float now = (float)(g[u] * gs) - a[(size_t)i * c + j];
            want += (double)now * now;
        }
    const double got = reduce((size_t)c * c, [&](double *part) { k_gram_diff(g.data(), NULL, gs, a.data(), c, d.data(), part); }, NULL, 1);
    reduce((size_t)c * c, [&](double *part) { k_gram_diff(g.data(), gp.data(), gs, a.data(), c, dl.data(), part); }, NULL, 1);
    bad = 0;
    for (int i = 0; i < c; i++)
        for (int j = 0; j < c; j++) {
            const size_t k = (size_t)i * c + j, u = i <= j ? k : (size_t)j * c + i;
            bad += d[k] != (float)(g[u] * gs) - a[k] || dl[k] != (float)((2 * g[u] - gp[u]) * gs) - a[k];
        }
    CHECK(bad == 0 && fabs(got - want) <= 1e-12 * want, "gram_diff: %d entries differ; loss %.17g, the definition %.17g", bad, got, want);
}

/* The own Gram sums (gram_sums_kernels.cuh: NSTBATCH_CUDA_GRAM=own) over region r of an H x W x C
 * tensor: g (its upper triangle some values, its lower one NaN) += alpha sum_p (m_p f_p[i]) f_p[j]
 * for i <= j, through the thread blocks (the tensor-core step on the model of its fragments) and
 * k_gram_sums_add, in `per` positions a split (0: gs_splits'). exact: values k/16 and weights
 * 0, 1/4, 1/2, 1, whose sums are exact in any order: the definition's bits; else random values
 * within 1e-13 of the sums' magnitude. The lower triangle stays NaN. The sums into *out. */
template <typename T>
static int gram_sums_case(const char *tn, int W, int H, int C, nst_rect r, bool masked, bool exact, size_t per, double alpha, bool vec,
                          std::vector<double> *out = NULL)
{
    std::uniform_real_distribution<float> U(-1.f, 1.f);
    std::uniform_int_distribution<int> K(-15, 15), Q(0, 3);
    static const float wq[4] = {0.f, 0.25f, 0.5f, 1.f};
    std::vector<float> f((size_t)H * W * C), m((size_t)H * W);
    for (auto &e : f) e = exact ? K(rng) / 16.f : rnd<T>(U(rng));
    for (auto &e : m) e = exact ? wq[Q(rng)] : fabsf(U(rng));
    std::vector<T> ft = to<T>(f);
    const float *w = masked ? m.data() : NULL;
    const int nb = (C + GS_BT - 1) / GS_BT, nblk = nb * (nb + 1) / 2;
    const size_t np = (size_t)r.w * r.h;
    const unsigned splits = per ? (unsigned)((np + per - 1) / per) : gs_splits(np, nb, &per);
    std::vector<double> part((size_t)splits * nblk * GS_BT * GS_BT, NAN), g((size_t)C * C, NAN);
    for (int i = 0; i < C; i++)
        for (int j = i; j < C; j++) g[(size_t)i * C + j] = 0.5 + (i - j) * 0.125;
    const std::vector<double> g0 = g;
    emu_launch(splits * nblk, GS_THREADS, 0, [&] { k_gram_sums<T>(ft.data(), w, W, C, r, nb, per, np, part.data(), vec); });
    emu_launch_sequential(2, 64, [&] { k_gram_sums_add(part.data(), C, nb, splits, alpha, g.data()); });
    int bad = 0;
    double worst = 0;
    for (int i = 0; i < C; i++)
        for (int j = 0; j < C; j++) {
            const size_t k = (size_t)i * C + j;
            if (i > j) {
                bad += !std::isnan(g[k]);
                continue;
            }
            long double sum = 0, mag = 0;
            for (size_t q = 0; q < np; q++) {
                const size_t px = (size_t)(r.y + q / r.w) * W + r.x + q % r.w;
                const long double t = (long double)((double)(w ? w[px] : 1.f) * f[px * C + i]) * f[px * C + j];
                sum += t, mag += fabsl(t);
            }
            const double want = (double)((long double)g0[k] + (long double)alpha * sum);
            const double err = fabs(g[k] - want), tol = exact ? 0 : 1e-13 * (double)(fabs(g0[k]) + alpha * mag);
            bad += !(err <= tol);
            worst = fmax(worst, err);
        }
    CHECK(bad == 0, "own Gram sums, %s, %d channels over %zu positions (%u split%s)%s%s: %d entries off (worst %.3g)%s", tn, C, np, splits,
          splits == 1 ? "" : "s", masked ? ", masked" : "", vec ? ", 8-channel loads" : "", bad, worst,
          exact ? ", exact sums expected" : "");
    if (out) *out = g;
    return bad;
}

static void t_gram_sums(void)
{
    /* the splits: the region's size and the blocks only; 0 where the partials could not fit */
    size_t per = 0;
    CHECK(gs_splits(0, 1, &per) == 0 && gs_splits(10, 1, &per) == 1 && per == 32, "splits of 0 and 10 positions: 0 and 1 (32)");
    const unsigned s1 = gs_splits((size_t)2048 * 1536, 1, &per);
    CHECK(s1 == 768 && per == GS_PX, "relu1_1 at 2048x1536: %u splits of %zu", s1, per);
    const unsigned s5 = gs_splits((size_t)128 * 96, 8, &per);
    CHECK(s5 == 15 && per == 832 && s5 * 36 >= GS_CTAS, "relu5_1 at 2048x1536 (36 blocks): cut finer, %u splits of %zu", s5, per);
    const unsigned s4 = gs_splits((size_t)4096 * 4096, 8, &per);
    CHECK(s4 * 36 <= GS_PARTS && (size_t)s4 * per >= (size_t)4096 * 4096 && per % GS_KT == 0, "16.7 M positions, 36 blocks: %u splits of %zu",
          s4, per);
    CHECK(gs_splits(100, 91, &per) == 0 && gs_splits(100, 90, &per) == 1, "4186 blocks pass the partials' bound, 4095 do not");
    for (int nb = 1, bad = 0; nb <= 8; nb++, bad = 0) {
        for (int b = 0, bi, bj; b < nb * (nb + 1) / 2; b++) {
            gs_block(b, nb, &bi, &bj);
            bad += bi > bj || bj >= nb || gs_block_index(bi, bj, nb) != b;
        }
        if (bad) CHECK(0, "%d blocks a side: the upper triangle's numbering does not go both ways", nb);
    }
    /* one diagonal block in 4 splits (the last short), with 8-channel loads and without: the same bits */
    std::vector<double> a, b;
    rng.seed(11);
    gram_sums_case<__nv_bfloat16>("bf16", 12, 10, 64, {0, 0, 12, 10}, false, true, 32, 1.0, true, &a);
    rng.seed(11); /* the same data */
    gram_sums_case<__nv_bfloat16>("bf16", 12, 10, 64, {0, 0, 12, 10}, false, true, 32, 1.0, false, &b);
    CHECK(a.size() == b.size() && memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0, "8-channel loads and single ones: the same bits");
    /* three blocks a side, the last 8 channels of its 64, a region of part rows, masked, random */
    gram_sums_case<float>("fp32", 9, 8, 136, {2, 1, 6, 5}, true, false, 0, 1.0, true);
    /* 13 channels (element loads), fp16's feature scale undone (alpha 64) */
    gram_sums_case<__half>("fp16", 7, 6, 13, {1, 2, 5, 3}, true, true, 0, 64.0, false);
    /* two blocks a side (96 channels: the second half empty), masked, 3 splits */
    gram_sums_case<__nv_bfloat16>("bf16", 10, 9, 96, {0, 1, 10, 7}, true, true, 32, 1.0, true);
    /* splits of several stages (the next stage fetched while one is summed), the last one short */
    gram_sums_case<__nv_bfloat16>("bf16", 17, 13, 96, {1, 1, 15, 12}, true, true, 96, 1.0, true);
    gram_sums_case<float>("fp32", 19, 9, 72, {0, 0, 19, 9}, false, false, 0, 1.0, true);
    /* sm_80 to sm_89's path, four m8n8k4 for each m16n8k8: the same sums, bit for bit where exact */
    emu_mma_sm80 = true;
    gram_sums_case<__nv_bfloat16>("bf16 on sm_80's MMA", 17, 13, 96, {1, 1, 15, 12}, true, true, 96, 1.0, true);
    gram_sums_case<float>("fp32 on sm_80's MMA", 9, 8, 136, {2, 1, 6, 5}, true, false, 0, 1.0, true);
    emu_mma_sm80 = false;
}

/* Adam: three steps with the step count on the device (k_adam_tick) equal three with it given */
static void t_adam(void)
{
    const size_t n = 97;
    const float lr = 0.02f, b1 = 0.9f, b2 = 0.999f, eps = 1e-8f;
    std::vector<float> x1(n), x2, m1(n, 0.f), m2(n, 0.f), v1(n, 0.f), v2(n, 0.f), g(n);
    for (size_t i = 0; i < n; i++) x1[i] = (float)(i % 10) / 9.f, g[i] = (float)((int)(i % 7) - 3) * 0.1f;
    x2 = x1;
    nst_adam_step st = {0, 0.f, 0.f};
    for (int t = 1; t <= 3; t++) {
        emu_launch_sequential(1, 1, [&] { k_adam_tick(&st, lr, b1, b2); });
        emu_launch_sequential(2, 32, [&] { k_adam(x1.data(), g.data(), m1.data(), v1.data(), n, b1, b2, eps, 0.f, 0.f, 1, &st); });
        const double bc1 = 1.0 - pow(b1, (double)t), bc2 = 1.0 - pow(b2, (double)t);
        const float step = (float)(lr / bc1), rbc2 = (float)(1.0 / sqrt(bc2));
        emu_launch_sequential(2, 32, [&] { k_adam(x2.data(), g.data(), m2.data(), v2.data(), n, b1, b2, eps, step, rbc2, 1, NULL); });
    }
    int differ = memcmp(x1.data(), x2.data(), n * sizeof(float)) != 0 || memcmp(m1.data(), m2.data(), n * sizeof(float)) != 0;
    CHECK(st.t == 3 && !differ, "the device's step count %g; the two ways %s", st.t, differ ? "differ" : "agree");
    /* and PyTorch's formula for step 1 (the moments from zero): x - lr g / (|g| + eps) */
    std::vector<float> x3(n), m3(n, 0.f), v3(n, 0.f);
    for (size_t i = 0; i < n; i++) x3[i] = 0.5f;
    nst_adam_step s1 = {0, 0.f, 0.f};
    emu_launch_sequential(1, 1, [&] { k_adam_tick(&s1, lr, b1, b2); });
    emu_launch_sequential(1, 32, [&] { k_adam(x3.data(), g.data(), m3.data(), v3.data(), n, b1, b2, eps, 0.f, 0.f, 1, &s1); });
    double worst = 0;
    for (size_t i = 0; i < n; i++) worst = fmax(worst, fabs(x3[i] - (0.5 - (g[i] ? lr * (g[i] > 0 ? 1 : -1) : 0.0))));
    CHECK(worst <= 1e-6, "Adam's first step: off PyTorch's by %.3g", worst);
}

int main(void)
{
    RUN(t_reductions);
    RUN(t_gram_kernels);
    RUN(t_gram_sums);
    RUN(t_adam);
    RUN(t_vec8);
    RUN(t_relu_backward);
    RUN(t_pooling);
    RUN(t_preprocess);
    RUN(t_fp32);
    RUN(t_bf16);
    RUN(t_fp16);
    RUN(t_widest);
    RUN(t_adjoint);
    RUN(t_conv1_image);
    return test_report("test_cuda_emu");
}

/* tests/test_cuda_emu.cpp: conv1_1's own CUDA kernels (kernels/cuda/conv_first_kernels.cuh), their
 * very device code, run on the CPU through tests/cuda_emu.h (blocks of host threads with a real
 * barrier) and judged against the definition computed in double: forward with and without ReLU
 * and backward-data, in fp32, bf16 and fp16, over odd shapes, several output widths and both
 * paddings of the weights (cin_p 4 and 8, as conv_create lays them out), with the launchers'
 * shared memory and grids of every size down to one block (the grid-stride loop); and the
 * backward as the forward's adjoint, <conv(x), dy> = <x, conv_backward(dy)>. The bounds: fp32
 * within 1e-5 of the terms' absolute sum (the sums' roundings), 16-bit types within one rounding
 * of the output more. */
#include "cuda_emu.h"
#define sw emu_shared
#include "../kernels/cuda/conv_first_kernels.cuh"
#undef sw

#include "test.h"

#include <random>

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
               [&] { k_conv1_fwd<T>(dx_in.data(), dw.data(), db.data(), y.data(), H, W, cout, cp, relu, true); });
    emu_launch(grid, threads, (size_t)27 * cout * sizeof(float), [&] { k_conv1_bwd<T>(ddy.data(), dw.data(), dx.data(), H, W, cout, cp, true); });
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

template <typename T> static void every_shape(const char *tn)
{
    for (const auto &s : shapes)
        for (int cout : {8, 64})
            for (int cp : {4, 8})
                for (int relu = 0; relu < 2; relu++) {
                    const size_t npx = (size_t)s[0] * s[1];
                    const unsigned natural = (unsigned)((npx + 31) / 32), small = natural > 3 ? 3 : 1;
                    conv_case<T>(s[0], s[1], cout, cp, relu, natural, 32, tn); /* a thread a pixel */
                    conv_case<T>(s[0], s[1], cout, cp, relu, small, 32, tn);   /* threads striding over several */
                }
}

static void t_fp32(void) { every_shape<float>("fp32"); }
static void t_bf16(void) { every_shape<__nv_bfloat16>("bf16"); }
static void t_fp16(void) { every_shape<__half>("fp16"); }

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
    emu_launch(2, 64, (size_t)28 * cout * 4, [&] { k_conv1_fwd<float>(x.data(), k.data(), b.data(), y.data(), H, W, cout, cp, 0, true); });
    emu_launch(2, 64, (size_t)27 * cout * 4, [&] { k_conv1_bwd<float>(dy.data(), k.data(), dx.data(), H, W, cout, cp, true); });
    double a = 0, c = 0, mag = 0;
    for (size_t i = 0; i < y.size(); i++) a += (double)y[i] * dy[i], mag += fabs((double)y[i] * dy[i]);
    for (size_t i = 0; i < x.size(); i++) c += (double)x[i] * dx[i];
    CHECK(fabs(a - c) <= 1e-5 * mag, "<conv(x), dy> %.9g, <x, conv_backward(dy)> %.9g", a, c);
}

int main(void)
{
    RUN(t_fp32);
    RUN(t_bf16);
    RUN(t_fp16);
    RUN(t_widest);
    RUN(t_adjoint);
    return test_report("test_cuda_emu");
}

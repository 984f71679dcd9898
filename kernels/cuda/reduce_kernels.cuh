/* kernels/cuda/reduce_kernels.cuh: the device code of the reductions and the optimiser's element
 * ops (reduce_cuda.cu launches them): sums of squares, the content MSE and its gradient, total
 * variation and its gradient, the blocks' partials finished into an exact accumulator
 * (kernels/xsum_core.h, included before this), dot products, axpby, the box of projected L-BFGS,
 * Adam and its step on the device. Included by nvcc after cuda_impl.h, and by
 * tests/test_cuda_emu.cpp after its host stand-in of CUDA's names, which runs this very code on
 * the CPU; it includes nothing itself. */

/* the block's sum of v into out[blockIdx.x] (blockDim.x == RED_THREADS) */
__device__ void block_sum(double v, double *out)
{
    double s = block_tree_sum(v);
    if (threadIdx.x == 0) out[blockIdx.x] = s;
}

/* the partials' sum into part[RED_BLOCKS]; thread 0 also sets *out to it and adds it / div into
 * the exact accumulator acc (either may be NULL): the CPU's integer arithmetic (xsum_core.h) */
__global__ void k_finish(double *part, unsigned n, double *out, nst_xsum *acc, double div)
{
    double v = 0;
    for (unsigned i = threadIdx.x; i < n; i += RED_THREADS) v += part[i];
    double s = block_tree_sum(v);
    if (threadIdx.x != 0) return;
    part[RED_BLOCKS] = s;
    if (out) *out = s;
    if (acc) nst_xsum_add_bits(acc, (uint64_t)__double_as_longlong(s / div));
}

/* a region of a tensor: element i of its rows -> offset in the tensor */
struct region {
    int x, y, w, W, C;
    __device__ size_t at(size_t i) const
    {
        size_t row = (size_t)w * C;
        return ((size_t)(y + i / row) * W + x) * C + i % row;
    }
};

/* ---- sums of squares, content MSE ------------------------------------------------------------ */
template <typename T> __global__ void k_sumsq(const T *t, region g, size_t n, double *part)
{
    double s = 0;
    GRID_STRIDE(i, n)
    {
        double v = ld<T>(t, g.at(i));
        s += v * v;
    }
    block_sum(s, part);
}

/* Content MSE. A mask m (NULL, or one weight per pixel: o / C of element o) weights each position
 * as kernels/cpu/loss_cpu.c does, (m d) d in the sum and (scale m) d in the gradient: a weight of 1
 * is exact in both, so an all-ones mask gives the bits of none. */
template <typename T> __global__ void k_mse(const T *f, const T *p, const float *m, region g, size_t n, double *part)
{
    double s = 0;
    GRID_STRIDE(i, n)
    {
        size_t o = g.at(i);
        double d = (double)ld<T>(f, o) - ld<T>(p, o);
        s += m ? ((double)m[o / g.C] * d) * d : d * d;
    }
    block_sum(s, part);
}

template <typename T> __global__ void k_mse_grad(const T *f, const T *p, const float *m, region g, size_t n, float scale, T *df)
{
    GRID_STRIDE(i, n)
    {
        size_t o = g.at(i);
        float sw = m ? scale * m[o / g.C] : scale;
        st<T>(df, o, ld<T>(df, o) + sw * (ld<T>(f, o) - ld<T>(p, o)));
    }
}

/* ---- total variation (fp32 images) ------------------------------------------------------------ */
__global__ void k_tv(const float *x, int W, int H, int C, region g, size_t n, double *part)
{
    double s = 0;
    GRID_STRIDE(i, n)
    {
        size_t row = (size_t)g.w * C;
        int y = g.y + (int)(i / row), xx = g.x + (int)((i % row) / C), c = (int)(i % C);
        const float *p = x + ((size_t)y * W + xx) * C;
        if (xx + 1 < W) {
            double d = (double)p[C + c] - p[c];
            s += d * d;
        }
        if (y + 1 < H) {
            double d = (double)p[(size_t)W * C + c] - p[c];
            s += d * d;
        }
    }
    block_sum(s, part);
}

__global__ void k_tv_grad(const float *x, int W, int H, int C, region g, size_t n, float scale, float *dimg)
{
    GRID_STRIDE(i, n)
    {
        size_t row = (size_t)g.w * C;
        int y = g.y + (int)(i / row), xx = g.x + (int)((i % row) / C), c = (int)(i % C);
        size_t o = ((size_t)y * W + xx) * C;
        const float *p = x + o;
        float v = 0.f;
        if (xx > 0) v += p[c] - p[c - C];
        if (y > 0) v += p[c] - p[c - (size_t)W * C];
        if (xx + 1 < W) v -= p[C + c] - p[c];
        if (y + 1 < H) v -= p[(size_t)W * C + c] - p[c];
        dimg[o + c] += scale * 2.f * v;
    }
}

/* ---- optimiser element ops ------------------------------------------------------------------ */
__global__ void k_dot(const float *a, const float *b, size_t n, double *part)
{
    double s = 0;
    GRID_STRIDE(i, n) s += (double)a[i] * b[i];
    block_sum(s, part);
}

__global__ void k_axpby(float *y, const float *x, size_t n, float a, float b)
{
    if (b == 0.f) {
        GRID_STRIDE(i, n) y[i] = a * x[i]; /* y's old values (perhaps uninitialised) do not take part */
    } else {
        GRID_STRIDE(i, n) y[i] = a * x[i] + b * y[i];
    }
}

/* Projected L-BFGS's box [0, 1], as kernels/cpu/optim_cpu.c: the held pixels, the projected step */
__global__ void k_box_hold(float *v, const float *x, const float *g, size_t n)
{
    GRID_STRIDE(i, n)
    {
        float xi = x[i], gi = g[i];
        if ((xi <= 0.f && gi > 0.f) || (xi >= 1.f && gi < 0.f)) v[i] = 0.f;
    }
}

__global__ void k_box_step(float *x, float *d, size_t n, float t)
{
    GRID_STRIDE(i, n)
    {
        float x0 = x[i], xi = x0 + t * d[i];
        xi = xi < 0.f ? 0.f : (xi > 1.f ? 1.f : xi);
        d[i] = xi - x0;
        x[i] = xi;
    }
}

/* PyTorch's order of operations, as kernels/cpu/optim_cpu.c; the step's scalars from s where given
 * (the device's step count: a replayed graph takes the next step's) */
__global__ void k_adam(float *x, const float *g, float *m, float *v, size_t n, float b1, float b2, float eps, float step, float rbc2,
                       int clamp, const nst_adam_step *s)
{
    if (s) step = s->step, rbc2 = s->rbc2;
    GRID_STRIDE(i, n)
    {
        float gi = g[i];
        float mi = b1 * m[i] + (1.f - b1) * gi;
        float vi = b2 * v[i] + (1.f - b2) * gi * gi;
        m[i] = mi;
        v[i] = vi;
        float xi = x[i] - step * mi / (sqrtf(vi) * rbc2 + eps);
        if (clamp) xi = xi < 0.f ? 0.f : (xi > 1.f ? 1.f : xi);
        x[i] = xi;
    }
}

/* the next step's scalars, as kernels/cpu/optim_cpu.c computes them (double, then fp32) */
__global__ void k_adam_tick(nst_adam_step *s, float lr, float b1, float b2)
{
    const double t = s->t + 1, bc1 = 1.0 - pow((double)b1, t), bc2 = 1.0 - pow((double)b2, t);
    s->t = t;
    s->step = (float)(lr / bc1);
    s->rbc2 = (float)(1.0 / sqrt(bc2));
}

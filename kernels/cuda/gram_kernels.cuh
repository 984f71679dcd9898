/* kernels/cuda/gram_kernels.cuh: the device code of the Gram ops beside their cuBLAS GEMMs
 * (gram_cuda.cu launches them): a region's positions as a dense chunk (in fp64 for the sums, with
 * the mask-weighted copy; in the storage type, weighted or not, for the backward), the difference
 * from the target with the loss's partial sums, and the fp32 product added into a region. Included
 * by nvcc after cuda_impl.h, and by tests/test_cuda_emu.cpp after its host stand-in of CUDA's
 * names, which runs this very code on the CPU; it includes nothing itself. */

/* the pixel index (y * W + x) of position p (row order) of the region (x0, y0, w wide) */
__device__ __forceinline__ size_t region_px(int W, int x0, int y0, int w, size_t p)
{
    return (size_t)(y0 + (int)(p / (size_t)w)) * W + x0 + (int)(p % (size_t)w);
}

/* positions [p0, p0 + n / C) of region r of f, as n doubles (a dense chunk x C matrix), and with
 * a mask m (one weight per pixel of f) as n doubles m_p f_p too (mout): exact, 24 + 24
 * significant bits */
template <typename T>
__global__ void k_chunk_f64(const T *f, const float *m, int W, int C, nst_rect r, size_t p0, double *out, double *mout, size_t n)
{
    GRID_STRIDE(i, n)
    {
        size_t px = region_px(W, r.x, r.y, r.w, p0 + i / C);
        double v = (double)ld<T>(f, px * C + i % C);
        out[i] = v;
        if (m) mout[i] = (double)m[px] * v;
    }
}

/* k_chunk_f64 8 channels a thread (n8 = n / 8; C a multiple of 8, f, out and mout 16-byte aligned):
 * one vector load of f, the doubles in 16-byte stores, one position's pixel index for 8 values; I
 * as GRID_STRIDE_I (cuda_impl.h). The same values. */
template <typename T, typename I>
__global__ void k_chunk_f64_8(const T *f, const float *m, int W, int C, nst_rect r, I p0, double *out, double *mout, I n8)
{
    const int C8 = C / 8;
    GRID_STRIDE_I(I, k, n8)
    {
        const I p = p0 + k / C8, px = (I)(r.y + (int)(p / (I)r.w)) * W + r.x + (int)(p % (I)r.w);
        const int c = (int)(k % C8) * 8;
        float v[8];
        load8<T>(f + px * C + c, v, true);
        alignas(16) double d[8];
#pragma unroll
        for (int l = 0; l < 8; l++) d[l] = (double)v[l];
#pragma unroll
        for (int l = 0; l < 8; l += 2) copy16(out + k * 8 + l, d + l);
        if (m) {
            const double w = (double)m[px];
#pragma unroll
            for (int l = 0; l < 8; l++) d[l] = w * d[l];
#pragma unroll
            for (int l = 0; l < 8; l += 2) copy16(mout + k * 8 + l, d + l);
        }
    }
}

/* the same positions in the storage type (packing for the backward) */
template <typename T> __global__ void k_pack(const T *f, int W, int C, nst_rect r, size_t p0, T *out, size_t n)
{
    GRID_STRIDE(i, n) out[i] = f[region_px(W, r.x, r.y, r.w, p0 + i / C) * C + i % C];
}

/* the same, each position weighted by its mask value: m_p f_p in fp32, rounded to the storage
 * type (kernels/cpu/gram_cpu.c's gather_weighted) */
template <typename T>
__global__ void k_pack_weighted(const T *f, const float *m, int W, int C, nst_rect r, size_t p0, T *out, size_t n)
{
    GRID_STRIDE(i, n)
    {
        size_t px = region_px(W, r.x, r.y, r.w, p0 + i / C);
        st<T>(out, i, m[px] * ld<T>(f, px * C + i % C));
    }
}

/* d and the loss sum from the upper triangle of the sums, as kernels/cpu/gram_cpu.c */
__global__ void k_gram_diff(const double *g, const double *gp, double gs, const float *a, int c, float *d, double *part)
{
    double s = 0;
    size_t n = (size_t)c * c;
    GRID_STRIDE(k, n)
    {
        int i = (int)(k / c), j = (int)(k % c);
        size_t u = i <= j ? (size_t)i * c + j : (size_t)j * c + i;
        float now = (float)(g[u] * gs) - a[k];
        s += (double)now * now;
        d[k] = gp ? (float)((2 * g[u] - gp[u]) * gs) - a[k] : now;
    }
    double sum = block_tree_sum(s);
    if (threadIdx.x == 0) part[blockIdx.x] = sum;
}

template <typename T> __global__ void k_add_region(T *df, int W, int C, nst_rect r, size_t p0, const float *src, size_t n)
{
    GRID_STRIDE(i, n)
    {
        size_t o = region_px(W, r.x, r.y, r.w, p0 + i / C) * C + i % C;
        st<T>(df, o, ld<T>(df, o) + src[i]);
    }
}

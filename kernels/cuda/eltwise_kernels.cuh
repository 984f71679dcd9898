/* kernels/cuda/eltwise_kernels.cuh: the device code of the element passes (eltwise_cuda.cu
 * launches them): ReLU backward, the image preprocessing and its backward, 2x2 pooling and its
 * backward with the ReLU below folded in; the ReLU backward and the pooling also 8 channels a
 * thread with vector accesses (vec8.cuh), where the channels come in eights and the tensors are
 * 16-byte aligned (eltwise_cuda.cu decides), the same values as one thread an element. Included after
 * cuda_impl.h by nvcc, and by tests/test_cuda_emu.cpp after its host stand-in of CUDA's names,
 * which runs this very code on the CPU against the CPU backend's semantics; it includes nothing
 * itself. */

template <typename T> __global__ void k_relu_bwd(const T *y, T *g, size_t n)
{
    GRID_STRIDE(i, n) if (!(ld<T>(y, i) > 0.f)) st<T>(g, i, 0.f);
}

/* Lanes of 8 values of T at p (16-byte aligned) whose bit in keep is clear set to +0, as
 * st<T>(p, j, 0.f) would, on the raw words: the kept lanes' bits are not converted at all. */
template <typename T> __device__ __forceinline__ void zero_lanes8(T *p, unsigned keep)
{
    alignas(16) unsigned w[sizeof(T) * 2]; /* 4 words of two 16-bit lanes, or 8 of one fp32 lane */
    copy16(w, p);
    if constexpr (sizeof(T) == 4) copy16(w + 4, p + 4);
#pragma unroll
    for (int i = 0; i < (int)sizeof(T) * 2; i++) {
        const unsigned m = sizeof(T) == 4 ? ((keep >> i) & 1 ? 0xffffffffu : 0u)
                                          : ((keep >> (2 * i)) & 1 ? 0xffffu : 0u) | ((keep >> (2 * i + 1)) & 1 ? 0xffff0000u : 0u);
        w[i] &= m;
    }
    copy16(p, w);
    if constexpr (sizeof(T) == 4) copy16(p + 4, w + 4);
}

/* ReLU backward, 8 elements a thread (n8 = n / 8; y and g 16-byte aligned): y in one vector access,
 * g read and written only where one of the 8 is zeroed (a region of positive outputs costs its y
 * alone); I as GRID_STRIDE_I (cuda_impl.h) */
template <typename T, typename I> __global__ void k_relu_bwd8(const T *y, T *g, I n8)
{
    GRID_STRIDE_I(I, k, n8)
    {
        float v[8];
        load8<T>(y + k * 8, v, true);
        unsigned keep = 0;
#pragma unroll
        for (int j = 0; j < 8; j++) keep |= (unsigned)(v[j] > 0.f) << j;
        if (keep != 0xffu) zero_lanes8<T>(g + k * 8, keep);
    }
}

/* the preprocessing and its backward, one value a thread: preproc.cuh's arithmetic */
template <typename T> __global__ void k_pre(const float *img, T *x, size_t npx, affine3 f, float fscale)
{
    GRID_STRIDE(i, npx * 3)
    {
        size_t p = i / 3;
        int c = (int)(i % 3);
        st<T>(x, i, pre_value(img, p, c, f, fscale));
    }
}

template <typename T> __global__ void k_pre_bwd(const T *dx, float *dimg, size_t npx, affine3 f, float inv_fscale)
{
    GRID_STRIDE(i, npx * 3)
    {
        size_t p = i / 3;
        int c = (int)(i % 3);
        dimg[3 * p + pick3(f.src, c)] = pre_grad(ld<T>(dx, i), c, f, inv_fscale);
    }
}

/* ---- pooling: floor, max routing to the first maximum in scan order ---------------------------- */
template <typename T> __global__ void k_pool_fwd(const T *x, int W, int C, T *y, int yh, int yw, int avg)
{
    size_t n = (size_t)yh * yw * C;
    GRID_STRIDE(i, n)
    {
        int c = (int)(i % C);
        size_t q = i / C;
        int j = (int)(q % yw), r = (int)(q / yw);
        size_t p00 = ((size_t)(2 * r) * W + 2 * j) * C + c, p01 = p00 + C, p10 = p00 + (size_t)W * C, p11 = p10 + C;
        float a = ld<T>(x, p00), b = ld<T>(x, p01), d = ld<T>(x, p10), e = ld<T>(x, p11);
        float o;
        if (avg) {
            o = 0.25f * ((a + b) + (d + e));
        } else {
            o = a;
            if (b > o) o = b;
            if (d > o) o = d;
            if (e > o) o = e;
        }
        st<T>(y, i, o);
    }
}

/* 8 channels of one output pixel a thread (n8 = yh yw C / 8; C a multiple of 8, x and y 16-byte
 * aligned), the same comparisons and sums as k_pool_fwd per channel; I as GRID_STRIDE_I */
template <typename T, typename I> __global__ void k_pool_fwd8(const T *x, int W, int C, T *y, int yw, I n8, int avg)
{
    const int C8 = C / 8;
    GRID_STRIDE_I(I, k, n8)
    {
        const int c = (int)(k % C8) * 8;
        const I q = k / C8;
        const int j = (int)(q % yw), r = (int)(q / yw);
        const I p00 = ((I)(2 * r) * W + 2 * j) * C + c;
        float a[8], b[8], d[8], e[8], o[8];
        load8<T>(x + p00, a, true), load8<T>(x + p00 + C, b, true);
        load8<T>(x + p00 + (I)W * C, d, true), load8<T>(x + p00 + (I)W * C + C, e, true);
#pragma unroll
        for (int l = 0; l < 8; l++) {
            if (avg) {
                o[l] = 0.25f * ((a[l] + b[l]) + (d[l] + e[l]));
            } else {
                o[l] = a[l];
                if (b[l] > o[l]) o[l] = b[l];
                if (d[l] > o[l]) o[l] = d[l];
                if (e[l] > o[l]) o[l] = e[l];
            }
        }
        store8<T>(y + q * C + c, o, true);
    }
}

/* One thread per element of dx; I the index type: 32-bit where the tensor has fewer than 2^31
 * elements (no 64-bit division per element), 64-bit otherwise. relu: the ReLU below folded in (a
 * select on this element's own x: for max, the maximum's position is the only one that gets g). */
template <typename T, typename I>
__global__ void k_pool_bwd(const T *x, int H, int W, int C, const T *gy, int yh, int yw, T *dx, int avg, int relu)
{
    const I n = (I)H * W * C;
    for (I i = blockIdx.x * (I)blockDim.x + threadIdx.x; i < n; i += (I)gridDim.x * blockDim.x) {
        int c = (int)(i % C);
        I q = i / C;
        int col = (int)(q % W), row = (int)(q / W);
        int r = row / 2, j = col / 2;
        float v = 0.f;
        if (r < yh && j < yw) {
            float g = ld<T>(gy, ((I)r * yw + j) * C + c);
            if (avg) {
                v = 0.25f * g;
            } else {
                I p00 = ((I)(2 * r) * W + 2 * j) * C + c, p01 = p00 + C, p10 = p00 + (I)W * C, p11 = p10 + C;
                float m = ld<T>(x, p00);
                int arg = 0;
                if (ld<T>(x, p01) > m) m = ld<T>(x, p01), arg = 1;
                if (ld<T>(x, p10) > m) m = ld<T>(x, p10), arg = 2;
                if (ld<T>(x, p11) > m) m = ld<T>(x, p11), arg = 3;
                if (arg == (row & 1) * 2 + (col & 1)) v = g;
            }
            if (relu && !(ld<T>(x, i) > 0.f)) v = 0.f;
        }
        st<T>(dx, i, v);
    }
}

/* 8 channels of one 2x2 block of dx a thread (n8 = ceil(H / 2) ceil(W / 2) C / 8; C a multiple of
 * 8, every tensor 16-byte aligned): the window's x and gy read once for its four positions instead of
 * once for each, then the same routing, ReLU fold and zeros as k_pool_bwd per element (a block past
 * the pooled rows or columns, which floor pooling drops, gets zeros); I as GRID_STRIDE_I */
template <typename T, typename I>
__global__ void k_pool_bwd8(const T *x, int H, int W, int C, const T *gy, int yh, int yw, T *dx, I n8, int avg, int relu)
{
    const int C8 = C / 8, bw = (W + 1) / 2;
    GRID_STRIDE_I(I, k, n8)
    {
        const int c = (int)(k % C8) * 8;
        const I q = k / C8;
        const int j = (int)(q % bw), r = (int)(q / bw);
        const I p00 = ((I)(2 * r) * W + 2 * j) * C + c, p[4] = {p00, p00 + C, p00 + (I)W * C, p00 + (I)W * C + C};
        const bool in[4] = {true, 2 * j + 1 < W, 2 * r + 1 < H, 2 * j + 1 < W && 2 * r + 1 < H};
        float v[4][8];
#pragma unroll
        for (int s = 0; s < 4; s++)
#pragma unroll
            for (int l = 0; l < 8; l++) v[s][l] = 0.f;
        if (r < yh && j < yw) { /* the whole window is inside */
            float g[8], xv[4][8];
            load8<T>(gy + ((I)r * yw + j) * C + c, g, true);
#pragma unroll
            for (int s = 0; s < 4; s++) load8<T>(x + p[s], xv[s], true);
#pragma unroll
            for (int l = 0; l < 8; l++) {
                if (avg) {
                    v[0][l] = v[1][l] = v[2][l] = v[3][l] = 0.25f * g[l];
                } else {
                    float m = xv[0][l];
                    int arg = 0;
                    if (xv[1][l] > m) m = xv[1][l], arg = 1;
                    if (xv[2][l] > m) m = xv[2][l], arg = 2;
                    if (xv[3][l] > m) m = xv[3][l], arg = 3;
#pragma unroll
                    for (int s = 0; s < 4; s++) v[s][l] = arg == s ? g[l] : 0.f; /* (no indexing by arg: registers) */
                }
                if (relu)
#pragma unroll
                    for (int s = 0; s < 4; s++)
                        if (!(xv[s][l] > 0.f)) v[s][l] = 0.f;
            }
        }
#pragma unroll
        for (int s = 0; s < 4; s++)
            if (in[s]) store8<T>(dx + p[s], v[s], true);
    }
}

/* kernels/cuda/conv_first_kernels.cuh: the device code of conv1_1's own kernels
 * (conv_first_cuda.cu launches them): k_conv1_fwd and k_conv1_bwd, with their vector accesses,
 * reading the network input and writing its gradient, or reading the image and writing the image's
 * gradient with the preprocessing on the way (preproc.cuh: the bits of its passes).
 * Included after cuda_impl.h by nvcc, and by tests/test_cuda_emu.cpp after a host stand-in of the
 * same names (tests/cuda_emu.h: blocks of host threads with a real barrier), so `make test` runs
 * this very code on the CPU against a reference; it includes nothing itself. Its 8-value vector
 * accesses are vec8.cuh's. */

/* w[o][tap][c] of the layer's KRSC weights (cin_p channels a tap) */
template <typename T> __device__ __forceinline__ float weight(const T *w, int cin_p, int o, int tap, int c)
{
    return ld<T>(w, ((size_t)o * 9 + tap) * cin_p + c);
}

/* What the forward reads, channel c of pixel q: the network input as stored, or the image with the
 * preprocessing applied and rounded to T as k_pre stores it */
template <typename T> struct conv1_in_act {
    const T *x;
    __device__ __forceinline__ float operator()(size_t q, int c) const { return ld<T>(x, q * 3 + c); }
};
template <typename T> struct conv1_in_image {
    const float *img;
    affine3 f;
    float fscale;
    __device__ __forceinline__ float operator()(size_t q, int c) const { return round_to<T>(pre_value(img, q, c, f, fscale)); }
};
/* Where the backward writes channel c of pixel p's sum v: the input's gradient, or through it (as
 * stored) the image's, as k_pre_bwd computes it */
template <typename T> struct conv1_out_act {
    T *dx;
    __device__ __forceinline__ void operator()(size_t p, int c, float v) const { st<T>(dx, p * 3 + c, v); }
};
template <typename T> struct conv1_out_image {
    float *dimg;
    affine3 f;
    float inv_fscale;
    __device__ __forceinline__ void operator()(size_t p, int c, float v) const
    {
        dimg[3 * p + pick3(f.src, c)] = pre_grad(round_to<T>(v), c, f, inv_fscale);
    }
};

template <typename T, typename In>
__global__ void k_conv1_fwd(In x, const T *w, const T *b, T *y, int H, int W, int cout, int cin_p, int relu, bool vec)
{
    extern __shared__ float sw[]; /* sw[k cout + o] = w[o][k / 3][k % 3], then the bias at 27 cout */
    for (int i = threadIdx.x; i < 27 * cout; i += blockDim.x) sw[i] = weight(w, cin_p, i % cout, i / cout / 3, i / cout % 3);
    for (int o = threadIdx.x; o < cout; o += blockDim.x) sw[27 * cout + o] = ld<T>(b, o);
    __syncthreads();
    const size_t npx = (size_t)H * W;
    GRID_STRIDE(p, npx)
    {
        const int py = (int)(p / W), px = (int)(p % W);
        float in[27];
#pragma unroll
        for (int tap = 0; tap < 9; tap++) {
            const int sy = py + tap / 3 - 1, sx = px + tap % 3 - 1;
            const bool inside = sy >= 0 && sy < H && sx >= 0 && sx < W;
            const size_t q = inside ? (size_t)sy * W + sx : 0;
#pragma unroll
            for (int c = 0; c < 3; c++) in[tap * 3 + c] = inside ? x(q, c) : 0.f;
        }
        T *out = y + p * cout;
        for (int o0 = 0; o0 < cout; o0 += 8) {
            float acc[8];
#pragma unroll
            for (int j = 0; j < 8; j++) acc[j] = 0.f;
#pragma unroll
            for (int k = 0; k < 27; k++) {
                const float *wk = sw + k * cout + o0;
#pragma unroll
                for (int j = 0; j < 8; j++) acc[j] = fmaf(wk[j], in[k], acc[j]);
            }
#pragma unroll
            for (int j = 0; j < 8; j++) {
                const float v = acc[j] + sw[27 * cout + o0 + j];
                acc[j] = relu && v < 0.f ? 0.f : v;
            }
            store8<T>(out + o0, acc, vec);
        }
    }
}

template <typename T, typename Out>
__global__ void k_conv1_bwd(const T *dy, const T *w, Out dx, int H, int W, int cout, int cin_p, bool vec)
{
    extern __shared__ float sw[]; /* sw[(tap cout + o) 3 + c] = w[o][tap][c] */
    for (int i = threadIdx.x; i < 27 * cout; i += blockDim.x) sw[i] = weight(w, cin_p, i / 3 % cout, i / 3 / cout, i % 3);
    __syncthreads();
    const size_t npx = (size_t)H * W;
    GRID_STRIDE(p, npx)
    {
        const int py = (int)(p / W), px = (int)(p % W);
        float a0 = 0.f, a1 = 0.f, a2 = 0.f;
        for (int tap = 0; tap < 9; tap++) {
            const int qy = py + 1 - tap / 3, qx = px + 1 - tap % 3;
            if (qy < 0 || qy >= H || qx < 0 || qx >= W) continue;
            const T *g = dy + ((size_t)qy * W + qx) * cout;
            const float *wt = sw + tap * cout * 3;
            for (int o0 = 0; o0 < cout; o0 += 8) {
                float d[8];
                load8<T>(g + o0, d, vec);
#pragma unroll
                for (int j = 0; j < 8; j++) {
                    const float *wo = wt + (o0 + j) * 3;
                    a0 = fmaf(wo[0], d[j], a0);
                    a1 = fmaf(wo[1], d[j], a1);
                    a2 = fmaf(wo[2], d[j], a2);
                }
            }
        }
        dx(p, 0, a0);
        dx(p, 1, a1);
        dx(p, 2, a2);
    }
}

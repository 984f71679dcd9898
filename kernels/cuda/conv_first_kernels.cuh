/* kernels/cuda/conv_first_kernels.cuh: the device code of conv1_1's own kernels
 * (conv_first_cuda.cu launches them): k_conv1_fwd and k_conv1_bwd, with their vector accesses.
 * Included after cuda_impl.h by nvcc, and by tests/test_cuda_emu.cpp after a host stand-in of the
 * same names (tests/cuda_emu.h: blocks of host threads with a real barrier), so `make test` runs
 * this very code on the CPU against a reference; it includes nothing itself. Its 8-value vector
 * accesses are vec8.cuh's. */

/* w[o][tap][c] of the layer's KRSC weights (cin_p channels a tap) */
template <typename T> __device__ __forceinline__ float weight(const T *w, int cin_p, int o, int tap, int c)
{
    return ld<T>(w, ((size_t)o * 9 + tap) * cin_p + c);
}

template <typename T>
__global__ void k_conv1_fwd(const T *x, const T *w, const T *b, T *y, int H, int W, int cout, int cin_p, int relu, bool vec)
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
            const size_t q = inside ? ((size_t)sy * W + sx) * 3 : 0;
#pragma unroll
            for (int c = 0; c < 3; c++) in[tap * 3 + c] = inside ? ld<T>(x, q + c) : 0.f;
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

template <typename T> __global__ void k_conv1_bwd(const T *dy, const T *w, T *dx, int H, int W, int cout, int cin_p, bool vec)
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
        st<T>(dx, p * 3, a0);
        st<T>(dx, p * 3 + 1, a1);
        st<T>(dx, p * 3 + 2, a2);
    }
}

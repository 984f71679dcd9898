/* kernels/cuda/conv_first_kernels.cuh: the device code of conv1_1's own kernels
 * (conv_first_cuda.cu launches them): k_conv1_fwd and k_conv1_bwd, with their vector accesses.
 * Included after cuda_impl.h by nvcc, and by tests/test_cuda_emu.cpp after a host stand-in of the
 * same names (tests/cuda_emu.h: blocks of host threads with a real barrier), so `make test` runs
 * this very code on the CPU against a reference; it includes nothing itself. Without __CUDACC__
 * the vector accesses are element by element, the same values. */

#ifdef __CUDACC__
/* two 16-bit values from two floats (rounded as st<T> rounds), and back: .x at the lower address */
__device__ __forceinline__ __nv_bfloat162 pair_of(const __nv_bfloat16 *, float a, float b) { return __floats2bfloat162_rn(a, b); }
__device__ __forceinline__ __half2 pair_of(const __half *, float a, float b) { return __floats2half2_rn(a, b); }
__device__ __forceinline__ float2 floats_of(__nv_bfloat162 h) { return __bfloat1622float2(h); }
__device__ __forceinline__ float2 floats_of(__half2 h) { return __half22float2(h); }
#endif

/* 8 consecutive values of T at p (16-byte aligned where vec): for 16-bit T, where nvcc compiles
 * them, written or read as one 16-byte vector (a thread's 8 outputs or 8 gradients in one access
 * instead of 8); element by element otherwise. The same values either way. */
template <typename T> __device__ __forceinline__ void store8(T *p, const float *v, bool vec)
{
    (void)vec;
#ifdef __CUDACC__
    if constexpr (sizeof(T) == 2)
        if (vec) {
            decltype(pair_of(p, 0.f, 0.f)) h[4];
#pragma unroll
            for (int j = 0; j < 4; j++) h[j] = pair_of(p, v[2 * j], v[2 * j + 1]);
            *reinterpret_cast<uint4 *>(p) = *reinterpret_cast<const uint4 *>(h);
            return;
        }
#endif
#pragma unroll
    for (int j = 0; j < 8; j++) st<T>(p, j, v[j]);
}
template <typename T> __device__ __forceinline__ void load8(const T *p, float *v, bool vec)
{
    (void)vec;
#ifdef __CUDACC__
    if constexpr (sizeof(T) == 2)
        if (vec) {
            const uint4 u = *reinterpret_cast<const uint4 *>(p);
            const auto *h = reinterpret_cast<const decltype(pair_of(p, 0.f, 0.f)) *>(&u);
#pragma unroll
            for (int j = 0; j < 4; j++) {
                const float2 f = floats_of(h[j]);
                v[2 * j] = f.x, v[2 * j + 1] = f.y;
            }
            return;
        }
#endif
#pragma unroll
    for (int j = 0; j < 8; j++) v[j] = ld<T>(p, j);
}

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

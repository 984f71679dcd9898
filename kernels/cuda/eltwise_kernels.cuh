/* kernels/cuda/eltwise_kernels.cuh: the device code of the element passes (eltwise_cuda.cu
 * launches them): ReLU backward, the image preprocessing and its backward, 2x2 pooling and its
 * backward with the ReLU below folded in. Included after cuda_impl.h by nvcc, and by
 * tests/test_cuda_emu.cpp after its host stand-in of CUDA's names, which runs this very code on the
 * CPU against the CPU backend's semantics; it includes nothing itself. */

template <typename T> __global__ void k_relu_bwd(const T *y, T *g, size_t n)
{
    GRID_STRIDE(i, n) if (!(ld<T>(y, i) > 0.f)) st<T>(g, i, 0.f);
}

/* x = (img[src c] a_c + b_c) fscale, the network input (struct filled by eltwise_cuda.cu) */
struct affine3 {
    float a[3], b[3];
    int src[3];
};

template <typename T> __global__ void k_pre(const float *img, T *x, size_t npx, affine3 f, float fscale)
{
    GRID_STRIDE(i, npx * 3)
    {
        size_t p = i / 3;
        int c = (int)(i % 3);
        st<T>(x, i, (img[3 * p + f.src[c]] * f.a[c] + f.b[c]) * fscale);
    }
}

template <typename T> __global__ void k_pre_bwd(const T *dx, float *dimg, size_t npx, affine3 f, float inv_fscale)
{
    GRID_STRIDE(i, npx * 3)
    {
        size_t p = i / 3;
        int c = (int)(i % 3);
        dimg[3 * p + f.src[c]] = ld<T>(dx, i) * inv_fscale * f.a[c];
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

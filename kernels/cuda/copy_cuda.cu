/* kernels/cuda/copy_cuda.cu: rectangles between tensors and host buffers, and the dtype
 * conversions of uploads and downloads. The halo exchange and the scatter/gather of images move
 * pixels with these. */
#include "cuda_impl.h"

/* one element of a rect of rows per thread: byte copies of es-sized elements as 2- or 4-byte words */
template <typename W>
__global__ void k_copy_rect(const W *src, int sw, int rx, int ry, int rw, int rh, W *dst, int dw, int dx, int dy, int c)
{
    size_t n = (size_t)rw * rh * c, row = (size_t)rw * c;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        size_t y = i / row, k = i % row;
        dst[((size_t)(dy + y) * dw + dx) * c + k] = src[((size_t)(ry + y) * sw + rx) * c + k];
    }
}

nst_status cuda_copy_rect_raw(nst_backend *be, const void *src, int sw, nst_rect r, void *dst, int dw, int dx, int dy, int c, size_t es)
{
    if (nst_rect_empty(r)) return NST_OK;
    size_t n = (size_t)r.w * r.h * c;
    cudaStream_t st = cuda_of(be)->stream;
    if (es == 4)
        k_copy_rect<float><<<cuda_blocks(n, 256), 256, 0, st>>>((const float *)src, sw, r.x, r.y, r.w, r.h, (float *)dst, dw, dx, dy, c);
    else
        k_copy_rect<unsigned short><<<cuda_blocks(n, 256), 256, 0, st>>>((const unsigned short *)src, sw, r.x, r.y, r.w, r.h,
                                                                        (unsigned short *)dst, dw, dx, dy, c);
    LAUNCH_TRY("copy_rect");
    return NST_OK;
}

nst_status cuda_copy_rect(nst_backend *be, const nst_tensor *src, nst_rect r, nst_tensor *dst, int dx, int dy)
{
    NST_TRY(cuda_check(src, "copy_rect"));
    NST_TRY(cuda_check(dst, "copy_rect"));
    NST_TRY(cuda_check_region(src, r, "copy_rect"));
    NST_TRY(cuda_check_region(dst, nst_rect_make(dx, dy, r.w, r.h), "copy_rect"));
    if (src->c != dst->c || src->dt != dst->dt) return nst_fail(NST_ERUNTIME, "copy_rect: tensors differ in channels or dtype");
    return cuda_copy_rect_raw(be, src->data, src->w, r, dst->data, dst->w, dx, dy, src->c, nst_dtype_size(src->dt));
}

/* host rects are fp32 tensors (images): packed on the device, one transfer */
nst_status cuda_download_rect(nst_backend *be, const nst_tensor *src, nst_rect r, float *host)
{
    cuda_impl *im = cuda_of(be);
    NST_TRY(cuda_check(src, "download_rect"));
    NST_TRY(cuda_check_region(src, r, "download_rect"));
    if (src->dt != NST_F32) return nst_fail(NST_ERUNTIME, "download_rect: fp32 tensors only");
    size_t bytes = (size_t)nst_rect_area(r) * src->c * sizeof(float);
    if (!bytes) return NST_OK;
    NST_TRY(cuda_scratch(be, &im->s1, &im->s1_cap, bytes));
    NST_TRY(cuda_copy_rect_raw(be, src->data, src->w, r, im->s1, r.w, 0, 0, src->c, 4));
    CUDA_TRY(cudaMemcpyAsync(host, im->s1, bytes, cudaMemcpyDeviceToHost, im->stream));
    CUDA_TRY(cudaStreamSynchronize(im->stream));
    return NST_OK;
}

nst_status cuda_upload_rect(nst_backend *be, const float *host, nst_tensor *dst, nst_rect r)
{
    cuda_impl *im = cuda_of(be);
    NST_TRY(cuda_check(dst, "upload_rect"));
    NST_TRY(cuda_check_region(dst, r, "upload_rect"));
    if (dst->dt != NST_F32) return nst_fail(NST_ERUNTIME, "upload_rect: fp32 tensors only");
    size_t bytes = (size_t)nst_rect_area(r) * dst->c * sizeof(float);
    if (!bytes) return NST_OK;
    NST_TRY(cuda_scratch(be, &im->s1, &im->s1_cap, bytes));
    CUDA_TRY(cudaMemcpyAsync(im->s1, host, bytes, cudaMemcpyHostToDevice, im->stream));
    NST_TRY(cuda_copy_rect_raw(be, im->s1, r.w, nst_rect_make(0, 0, r.w, r.h), dst->data, dst->w, r.x, r.y, dst->c, 4));
    CUDA_TRY(cudaStreamSynchronize(im->stream)); /* host is pageable and the caller may reuse it */
    return NST_OK;
}

template <typename T> __global__ void k_to(T *dst, const float *src, size_t n, float scale)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        st<T>(dst, i, src[i] * scale);
}

template <typename T> __global__ void k_from(float *dst, const T *src, size_t n, float scale)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        dst[i] = ld<T>(src, i) * scale;
}

nst_status cuda_convert_to(nst_backend *be, void *dst, nst_dtype dt, const float *src, size_t n, float scale)
{
    cudaStream_t s = cuda_of(be)->stream;
    if (!n) return NST_OK;
#define TO(T) (k_to<T><<<cuda_blocks(n, 256), 256, 0, s>>>((T *)dst, src, n, scale), 0)
    CUDA_DISPATCH(dt, TO);
#undef TO
    LAUNCH_TRY("convert");
    return NST_OK;
}

nst_status cuda_convert_from(nst_backend *be, float *dst, const void *src, nst_dtype dt, size_t n, float scale)
{
    cudaStream_t s = cuda_of(be)->stream;
    if (!n) return NST_OK;
#define FROM(T) (k_from<T><<<cuda_blocks(n, 256), 256, 0, s>>>(dst, (const T *)src, n, scale), 0)
    CUDA_DISPATCH(dt, FROM);
#undef FROM
    LAUNCH_TRY("convert");
    return NST_OK;
}

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

/* Host rects are fp32 tensors (images), packed. A rect of whole rows is contiguous on the device
 * and goes in one transfer; other rects are packed on the device through s1, in pieces of at most
 * CUDA_CHUNK_ELEMS elements so the scratch stays bounded whatever the tile: bands of whole rows
 * of the rect, or runs of one row where a row is longer. Each piece is contiguous in the host copy.
 * p->h == 0 asks for the first piece; returns 0 after the last. */
static int next_piece(nst_rect r, int c, nst_rect *p)
{
    const size_t row = (size_t)r.w * c;
    if (row <= CUDA_CHUNK_ELEMS) {
        int y = p->h ? p->y + p->h : r.y, rows = (int)(CUDA_CHUNK_ELEMS / row);
        if (y >= r.y + r.h) return 0;
        *p = nst_rect_make(r.x, y, r.w, r.y + r.h - y < rows ? r.y + r.h - y : rows);
        return 1;
    }
    int x = p->h ? p->x + p->w : r.x, y = p->h ? p->y : r.y, cols = (int)(CUDA_CHUNK_ELEMS / (size_t)c);
    if (x >= r.x + r.w) x = r.x, y++;
    if (y >= r.y + r.h) return 0;
    *p = nst_rect_make(x, y, r.x + r.w - x < cols ? r.x + r.w - x : cols, 1);
    return 1;
}

/* where piece p of rect r starts in the packed host copy, in elements */
static size_t piece_offset(nst_rect r, nst_rect p, int c) { return ((size_t)(p.y - r.y) * r.w + (size_t)(p.x - r.x)) * c; }

static size_t piece_cap(nst_rect r, int c)
{
    size_t n = (size_t)nst_rect_area(r) * c;
    return n < CUDA_CHUNK_ELEMS ? n : CUDA_CHUNK_ELEMS;
}

/* wait: return once host holds the rect (download_rect), or queue it (download_rect_queued:
 * pinned host memory, read after the next wait) */
static nst_status download_rect(nst_backend *be, const nst_tensor *src, nst_rect r, float *host, int wait)
{
    cuda_impl *im = cuda_of(be);
    NST_TRY(cuda_check(src, "download_rect"));
    NST_TRY(cuda_check_region(src, r, "download_rect"));
    if (src->dt != NST_F32) return nst_fail(NST_ERUNTIME, "download_rect: fp32 tensors only");
    if (!wait) NST_TRY(cuda_not_recorded("download_rect_queued (host memory: a step between segments)")); /* as the stand-in */
    if (nst_rect_empty(r)) return NST_OK;
    const int c = src->c;
    if (r.x == 0 && r.w == src->w) {
        CUDA_TRY(cudaMemcpyAsync(host, (const float *)src->data + (size_t)r.y * r.w * c, (size_t)nst_rect_area(r) * c * sizeof(float),
                                 cudaMemcpyDeviceToHost, im->stream));
    } else {
        NST_TRY(cuda_scratch(be, &im->s1, &im->s1_cap, piece_cap(r, c) * sizeof(float)));
        nst_rect p = nst_rect_make(0, 0, 0, 0);
        while (next_piece(r, c, &p)) { /* the next piece's packing queues behind this transfer */
            NST_TRY(cuda_copy_rect_raw(be, src->data, src->w, p, im->s1, p.w, 0, 0, c, 4));
            CUDA_TRY(cudaMemcpyAsync(host + piece_offset(r, p, c), im->s1, (size_t)nst_rect_area(p) * c * sizeof(float),
                                     cudaMemcpyDeviceToHost, im->stream));
        }
    }
    if (wait) NST_TRY(cuda_wait(be, 1));
    return NST_OK;
}

nst_status cuda_download_rect(nst_backend *be, const nst_tensor *src, nst_rect r, float *host)
{
    return download_rect(be, src, r, host, 1);
}

nst_status cuda_download_rect_queued(nst_backend *be, const nst_tensor *src, nst_rect r, float *host)
{
    return download_rect(be, src, r, host, 0);
}

/* wait: return once host may be reused (upload_rect), or queue it (upload_rect_queued: pinned
 * host memory, left as it is until the next wait) */
static nst_status upload_rect(nst_backend *be, const float *host, nst_tensor *dst, nst_rect r, int wait)
{
    cuda_impl *im = cuda_of(be);
    NST_TRY(cuda_check(dst, "upload_rect"));
    NST_TRY(cuda_check_region(dst, r, "upload_rect"));
    if (dst->dt != NST_F32) return nst_fail(NST_ERUNTIME, "upload_rect: fp32 tensors only");
    if (!wait) NST_TRY(cuda_not_recorded("upload_rect_queued (host memory: a step between segments)")); /* as the stand-in */
    if (nst_rect_empty(r)) return NST_OK;
    const int c = dst->c;
    if (r.x == 0 && r.w == dst->w) {
        CUDA_TRY(cudaMemcpyAsync((float *)dst->data + (size_t)r.y * r.w * c, host, (size_t)nst_rect_area(r) * c * sizeof(float),
                                 cudaMemcpyHostToDevice, im->stream));
    } else {
        NST_TRY(cuda_scratch(be, &im->s1, &im->s1_cap, piece_cap(r, c) * sizeof(float)));
        nst_rect p = nst_rect_make(0, 0, 0, 0);
        while (next_piece(r, c, &p)) { /* the next piece's transfer queues behind this unpacking */
            CUDA_TRY(cudaMemcpyAsync(im->s1, host + piece_offset(r, p, c), (size_t)nst_rect_area(p) * c * sizeof(float),
                                     cudaMemcpyHostToDevice, im->stream));
            NST_TRY(cuda_copy_rect_raw(be, im->s1, p.w, nst_rect_make(0, 0, p.w, p.h), dst->data, dst->w, p.x, p.y, c, 4));
        }
    }
    if (wait) NST_TRY(cuda_wait(be, 0)); /* host is pageable and the caller may reuse it */
    return NST_OK;
}

nst_status cuda_upload_rect(nst_backend *be, const float *host, nst_tensor *dst, nst_rect r)
{
    return upload_rect(be, host, dst, r, 1);
}

nst_status cuda_upload_rect_queued(nst_backend *be, const float *host, nst_tensor *dst, nst_rect r)
{
    return upload_rect(be, host, dst, r, 0);
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

nst_status cuda_upload_convert(nst_backend *be, void *dst, nst_dtype dt, const float *host, size_t n, float scale)
{
    cuda_impl *im = cuda_of(be);
    if (!n) return NST_OK;
    if (dt == NST_F32 && scale == 1.f) {
        CUDA_TRY(cudaMemcpyAsync(dst, host, n * sizeof(float), cudaMemcpyHostToDevice, im->stream));
    } else {
        const size_t es = nst_dtype_size(dt);
        NST_TRY(cuda_scratch(be, &im->s1, &im->s1_cap, (n < CUDA_CHUNK_ELEMS ? n : CUDA_CHUNK_ELEMS) * sizeof(float)));
        for (size_t o = 0; o < n; o += CUDA_CHUNK_ELEMS) {
            const size_t k = n - o < CUDA_CHUNK_ELEMS ? n - o : CUDA_CHUNK_ELEMS;
            CUDA_TRY(cudaMemcpyAsync(im->s1, host + o, k * sizeof(float), cudaMemcpyHostToDevice, im->stream));
            NST_TRY(cuda_convert_to(be, (unsigned char *)dst + o * es, dt, (const float *)im->s1, k, scale));
        }
    }
    NST_TRY(cuda_wait(be, 0));
    return NST_OK;
}

nst_status cuda_download_convert(nst_backend *be, float *host, const void *src, nst_dtype dt, size_t n, float scale)
{
    cuda_impl *im = cuda_of(be);
    if (!n) return NST_OK;
    if (dt == NST_F32 && scale == 1.f) {
        CUDA_TRY(cudaMemcpyAsync(host, src, n * sizeof(float), cudaMemcpyDeviceToHost, im->stream));
    } else {
        const size_t es = nst_dtype_size(dt);
        NST_TRY(cuda_scratch(be, &im->s1, &im->s1_cap, (n < CUDA_CHUNK_ELEMS ? n : CUDA_CHUNK_ELEMS) * sizeof(float)));
        for (size_t o = 0; o < n; o += CUDA_CHUNK_ELEMS) {
            const size_t k = n - o < CUDA_CHUNK_ELEMS ? n - o : CUDA_CHUNK_ELEMS;
            NST_TRY(cuda_convert_from(be, (float *)im->s1, (const unsigned char *)src + o * es, dt, k, scale));
            CUDA_TRY(cudaMemcpyAsync(host + o, im->s1, k * sizeof(float), cudaMemcpyDeviceToHost, im->stream));
        }
    }
    NST_TRY(cuda_wait(be, 1));
    return NST_OK;
}

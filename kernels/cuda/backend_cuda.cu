/* kernels/cuda/backend_cuda.cu: the CUDA backend's set-up, memory (the arena), transfers and op
 * table. See cuda_impl.h for the storage and scaling conventions. */
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda.h"
#include "cuda_impl.h"

extern "C" {
#include "../../util/log.h"
#include "../../util/mem.h"
#include "../../util/nvidia.h"
}

/* A failed CUDA, cuDNN or cuBLAS call is a device fault: fatal to the job once the program has
 * installed its handler, or a peer may wait for this rank in a collective forever (kernels/backend.h).
 * The arena's out-of-memory is not reported here: cu_alloc returns NST_ENOMEM, which the planner handles. */
/* While an iteration is recorded (graph_begin to graph_end) a failed call is the recording's
 * (a call that cannot be captured): not a device fault; graph_end reports it and the caller runs
 * the work itself. One process drives one GPU from one thread. */
static int recording, recording_failed;

nst_status cuda_fail(const char *lib, const char *call, const char *what, const char *file, int line)
{
    if (recording) {
        recording_failed = 1;
        return nst_fail(NST_ERUNTIME, "%s %s while recording a CUDA graph: %s (%s:%d)", lib, call, what, file, line);
    }
    return nst_backend_fault("%s %s: %s (%s:%d)", lib, call, what, file, line);
}

/* ---- memory ---------------------------------------------------------------------------------- */
static nst_status cu_alloc(nst_backend *be, size_t bytes, void **ptr)
{
    cuda_impl *im = cuda_of(be);
    size_t off;
    *ptr = NULL;
    NST_TRY(nst_backend_check_limit(be, bytes));
    if (nst_arena_alloc(&im->arena, bytes, &off) != 0) {
        be->alloc_failures++;
        return nst_fail(NST_ENOMEM,
                        "GPU %d: out of device memory allocating %.1f MiB (%.1f MiB of the rank's %.1f MiB arena in use, largest "
                        "free block %.1f MiB); set tiling.tile_size smaller or run.memory_gb",
                        im->device, (double)bytes / (1 << 20), (double)im->arena.used / (1 << 20),
                        (double)im->arena.capacity / (1 << 20), (double)nst_arena_largest_free(&im->arena) / (1 << 20));
    }
    *ptr = im->base + off;
    be->bytes_in_use = im->arena.used;
    if (be->bytes_in_use > be->bytes_peak) be->bytes_peak = be->bytes_in_use;
    return NST_OK;
}

static void cu_free(nst_backend *be, void *ptr)
{
    cuda_impl *im = cuda_of(be);
    if (!ptr) return;
    /* the side may read it: the next user of the offset comes after the side's work (a failed
     * join is a device fault, recorded) */
    if (im->side_pending) (void)cuda_join(be);
    nst_arena_release(&im->arena, (size_t)((unsigned char *)ptr - im->base));
    be->bytes_in_use = im->arena.used;
}

/* Every recorded segment destroyed: they are recorded together and dropped together. */
static void cuda_graphs_drop(cuda_impl *im)
{
    for (int k = 0; k < im->graphs; k++) cudaGraphExecDestroy(im->graph[k]);
    memset(im->graph, 0, sizeof im->graph);
    im->graphs = 0;
}

nst_status cuda_not_recorded(const char *what)
{
    if (!recording) return NST_OK;
    recording_failed = 1;
    return nst_fail(NST_ERUNTIME, "%s while an iteration was recorded", what);
}

nst_status cuda_scratch(nst_backend *be, void **buf, size_t *cap, size_t bytes)
{
    cuda_impl *im = cuda_of(be);
    /* s2 is the side's (the Gram sums'): the main stream takes it after the side's work */
    if (im->side_pending && !im->on_side && buf == &im->s2) NST_TRY(cuda_join(be));
    if (bytes <= *cap) return NST_OK;
    if (im->side_pending) NST_TRY(cuda_join(be)); /* the old buffer is freed below: see cu_free */
    char what[96];
    snprintf(what, sizeof what, "a scratch buffer had to grow to %zu bytes", bytes);
    NST_TRY(cuda_not_recorded(what)); /* nodes recorded before would address the freed buffer */
    cuda_graphs_drop(im); /* a recorded iteration uses the old scratch: it is dropped (graph_segments then says so) */
    if (*buf) cu_free(be, *buf);
    *buf = NULL;
    *cap = 0;
    /* the stream may still read the old scratch: freeing it returns the offset to the arena,
     * and the next user of that offset is queued on the same stream after the readers */
    NST_TRY(cu_alloc(be, bytes, buf));
    *cap = bytes;
    return NST_OK;
}

/* fp32 host <-> a buffer of dtype dt: fp32 goes straight, 16-bit types through fp32 scratch on
 * the device in pieces of at most CUDA_CHUNK_ELEMS (copy_cuda.cu), so a whole tensor never needs
 * scratch of its size. Activation dtypes carry the feature scale. Both wait for the copy: the
 * host buffer is pageable and may be reused at once. */
static nst_status cu_upload(nst_backend *be, void *dst, const float *src, size_t n, nst_dtype dt)
{
    return cuda_upload_convert(be, dst, dt, src, n, cuda_act_scale(cuda_of(be), dt));
}

static nst_status cu_download(nst_backend *be, float *dst, const void *src, size_t n, nst_dtype dt)
{
    return cuda_download_convert(be, dst, src, dt, n, 1.f / cuda_act_scale(cuda_of(be), dt));
}

static nst_status cu_zero(nst_backend *be, void *ptr, size_t bytes)
{
    CUDA_TRY(cudaMemsetAsync(ptr, 0, bytes, cuda_of(be)->stream));
    return NST_OK;
}

static nst_status cu_copy(nst_backend *be, void *dst, const void *src, size_t bytes)
{
    CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, cuda_of(be)->stream));
    return NST_OK;
}

nst_status cuda_wait(nst_backend *be, int read)
{
    NST_TRY(cuda_join(be)); /* the host sees the side's work done too */
    nst_backend_count_wait(be, read);
    CUDA_TRY(cudaStreamSynchronize(cuda_of(be)->stream)); /* the counted wait */
    return NST_OK;
}

static nst_status cu_sync(nst_backend *be) { return cuda_wait(be, 0); }

/* ---- the side stream (kernels/backend.h: side, join) ------------------------------------------ */
/* Events order the two streams, in a recorded iteration too: a capture follows an event from the
 * recorded stream into the side and back, so the graph holds both branches. */
static nst_status cu_side(nst_backend *be, int on)
{
    cuda_impl *im = cuda_of(be);
    if (!im->overlap) return NST_OK;
    if (!on) {
        im->on_side = 0;
        return NST_OK;
    }
    if (im->on_side) return nst_fail(NST_ERUNTIME, "side: the side stream opened twice");
    CUDA_TRY(cudaEventRecord(im->forked, im->stream));
    CUDA_TRY(cudaStreamWaitEvent(im->side, im->forked, 0));
    im->on_side = 1, im->side_pending = 1;
    return NST_OK;
}

nst_status cuda_join(nst_backend *be)
{
    cuda_impl *im = cuda_of(be);
    if (!im->side_pending) return NST_OK;
    im->side_pending = im->on_side; /* a join from inside the side's own work (its scratch grown): the rest is pending */
    CUDA_TRY(cudaEventRecord(im->joined, im->side));
    CUDA_TRY(cudaStreamWaitEvent(im->stream, im->joined, 0));
    return NST_OK;
}

/* The ops that move data between the host and the device, or wait: each joins the side first, so
 * that what it queues (a copy of the Gram sums, say) comes after the side's work, and the host
 * never sees that work unfinished (kernels/backend.h: side) */
#define JOIN_FIRST(fn, params, args)            \
    static nst_status joined_##fn params         \
    {                                            \
        NST_TRY(cuda_join(be));                  \
        return fn args;                          \
    }
JOIN_FIRST(cu_upload, (nst_backend * be, void *dst, const float *src, size_t n, nst_dtype dt), (be, dst, src, n, dt))
JOIN_FIRST(cu_download, (nst_backend * be, float *dst, const void *src, size_t n, nst_dtype dt), (be, dst, src, n, dt))
JOIN_FIRST(cuda_download_rect, (nst_backend * be, const nst_tensor *src, nst_rect r, float *host), (be, src, r, host))
JOIN_FIRST(cuda_upload_rect, (nst_backend * be, const float *host, nst_tensor *dst, nst_rect r), (be, host, dst, r))
JOIN_FIRST(cuda_dot, (nst_backend * be, const float *a, const float *b, size_t n, double *out), (be, a, b, n, out))
JOIN_FIRST(cuda_download_rect_queued, (nst_backend * be, const nst_tensor *src, nst_rect r, float *host), (be, src, r, host))
JOIN_FIRST(cuda_upload_rect_queued, (nst_backend * be, const float *host, nst_tensor *dst, nst_rect r), (be, host, dst, r))
#undef JOIN_FIRST

static nst_status cu_read(nst_backend *be, void *host, const void *src, size_t bytes)
{
    cuda_impl *im = cuda_of(be);
    NST_TRY(cuda_join(be)); /* the copy after the side's work (see JOIN_FIRST) */
    CUDA_TRY(cudaMemcpyAsync(host, src, bytes, cudaMemcpyDeviceToHost, im->stream));
    return cuda_wait(be, 1);
}

static nst_status cu_write(nst_backend *be, void *dst, const void *host, size_t bytes)
{
    cuda_impl *im = cuda_of(be);
    NST_TRY(cuda_join(be)); /* the copy after the side's work (see JOIN_FIRST) */
    CUDA_TRY(cudaMemcpyAsync(dst, host, bytes, cudaMemcpyHostToDevice, im->stream));
    return cuda_wait(be, 0);
}

/* Host memory for the queued transfers: page-locked (their copies then need not wait), or, where
 * the node has none left, pageable (the copies then follow the driver's rules for pageable memory,
 * maybe waiting: right either way, as the host touches the buffers only after a wait). A header
 * before the block says which, for cu_host_free. */
#define HOST_HEADER 64
static nst_status cu_host_alloc(nst_backend *be, size_t bytes, void **ptr)
{
    (void)be;
    unsigned char *p = NULL;
    if (cudaMallocHost((void **)&p, bytes + HOST_HEADER) != cudaSuccess) {
        cudaGetLastError(); /* not sticky: the context is intact */
        p = (unsigned char *)nst_alloc_array(bytes + HOST_HEADER, 1, "host transfer memory");
        if (!p) return NST_ENOMEM;
        p[0] = 0;
    } else {
        p[0] = 1;
    }
    *ptr = p + HOST_HEADER;
    return NST_OK;
}

static void cu_host_free(nst_backend *be, void *ptr)
{
    (void)be;
    if (!ptr) return;
    unsigned char *p = (unsigned char *)ptr - HOST_HEADER;
    if (p[0]) cudaFreeHost(p); /* (teardown: the caller synchronized before) */
    else nst_free(p);
}

/* A stamp is a one-thread kernel reading the GPU's global nanosecond timer (PTX %globaltimer)
 * when the stream reaches it: it adds the time since the last stamp to the slot's clock. */
__global__ void k_stamp(unsigned long long *clocks, int slot)
{
    unsigned long long now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    if (slot >= 0 && clocks[0] && now > clocks[0]) clocks[1 + slot] += now - clocks[0]; /* (a timer that stepped back adds nothing) */
    clocks[0] = now;
}

nst_status cuda_stamp(nst_backend *be, int slot)
{
    cuda_impl *im = cuda_of(be);
    if (slot < -1 || slot >= NST_CLOCKS) return nst_fail(NST_ERUNTIME, "stamp: clock %d (-1 to %d)", slot, NST_CLOCKS - 1);
    k_stamp<<<1, 1, 0, im->stream>>>(im->clocks, slot);
    LAUNCH_TRY("stamp");
    return NST_OK;
}

nst_status cuda_clocks_read(nst_backend *be, int n, double *sec)
{
    cuda_impl *im = cuda_of(be);
    if (n < 0 || n > NST_CLOCKS) return nst_fail(NST_ERUNTIME, "clocks_read: %d clocks (0 to %d)", n, NST_CLOCKS);
    NST_TRY(cuda_join(be)); /* the copy after the side's work (see JOIN_FIRST) */
    unsigned long long ns[NST_CLOCKS];
    if (n) CUDA_TRY(cudaMemcpyAsync(ns, im->clocks + 1, n * sizeof *ns, cudaMemcpyDeviceToHost, im->stream));
    if (n) CUDA_TRY(cudaMemsetAsync(im->clocks + 1, 0, n * sizeof *ns, im->stream));
    NST_TRY(cuda_wait(be, 1));
    for (int i = 0; i < n; i++) sec[i] = ns[i] * 1e-9;
    return NST_OK;
}

/* ---- CUDA graphs ------------------------------------------------------------------------------ */
/* Thread-local mode: a call that would run once instead of being recorded (a synchronous
 * allocation, copy or memset inside a library) fails while recording, so the recording fails and
 * the iteration runs as before, rather than a replay silently missing it. The arena's bookkeeping
 * is host code alone. */
static nst_status cu_graph_begin(nst_backend *be, int seg)
{
    cuda_impl *im = cuda_of(be);
    if (seg < 0 || seg >= NST_GRAPH_SEGMENTS || (seg > 0 && seg != im->graphs)) /* in order, from 0 */
        return nst_fail(NST_ERUNTIME, "CUDA graphs: segment %d recorded after %d held (%d at most)", seg, im->graphs, NST_GRAPH_SEGMENTS);
    if (seg == 0) cuda_graphs_drop(im);
    NST_TRY(cuda_join(be)); /* a capture starts joined: a join inside it may not wait for work from before it */
    cudaError_t e = cudaStreamBeginCapture(im->stream, cudaStreamCaptureModeThreadLocal);
    if (e != cudaSuccess) { /* a recording that could not start, not a device fault: the caller runs the work */
        cudaGetLastError();
        return nst_fail(NST_ERUNTIME, "CUDA graphs: cudaStreamBeginCapture: %s", cudaGetErrorString(e));
    }
    im->graph_seg = seg;
    recording = 1, recording_failed = 0;
    return NST_OK;
}

/* Whether a recording holds memory nodes: a library's cudaMallocAsync inside it. Such a graph
 * replays once; its next launch fails with cudaErrorInvalidValue while the first's allocation is
 * unfreed (cudaGraphLaunch), and the memory is outside the arena's budget. 1, 0, or -1 (unknown). */
static int graph_allocates(cudaGraph_t g, size_t nodes)
{
    cudaGraphNode_t *v = (cudaGraphNode_t *)malloc(nodes * sizeof *v);
    if (!v || cudaGraphGetNodes(g, v, &nodes) != cudaSuccess) {
        free(v);
        return -1;
    }
    int found = 0;
    for (size_t i = 0; i < nodes && !found; i++) {
        cudaGraphNodeType t;
        if (cudaGraphNodeGetType(v[i], &t) != cudaSuccess) found = -1;
        else if (t == cudaGraphNodeTypeMemAlloc || t == cudaGraphNodeTypeMemFree) found = 1;
    }
    free(v);
    return found;
}

static nst_status cu_graph_end(nst_backend *be)
{
    cuda_impl *im = cuda_of(be);
    (void)cuda_join(be); /* a capture ends joined (else: cudaErrorStreamCaptureUnjoined); a failure is the recording's */
    cudaGraph_t g = NULL;
    cudaError_t e = cudaStreamEndCapture(im->stream, &g); /* ends it even when it was invalidated */
    const int failed = recording_failed;
    recording = 0, recording_failed = 0;
    char why[256];
    snprintf(why, sizeof why, "%s", failed ? nst_fail_message() : "");
    if (failed) nst_fail_clear(); /* replaced by the message below */
    cudaGetLastError(); /* a failed recording leaves no sticky error: the context is intact */
    if (e != cudaSuccess || failed || !g) {
        if (g) cudaGraphDestroy(g);
        return nst_fail(NST_ERUNTIME, "the iteration could not be recorded as a CUDA graph: %s",
                        failed ? why : e != cudaSuccess ? cudaGetErrorString(e) : "nothing was recorded");
    }
    size_t nodes = 0;
    e = cudaGraphGetNodes(g, NULL, &nodes);
    cudaGraphExec_t x = NULL;
    if (e == cudaSuccess && nodes == 0) { /* nothing recorded (a host step first): no segment */
        cudaGraphDestroy(g);
        return NST_OK;
    }
    const int allocates = e == cudaSuccess ? graph_allocates(g, nodes) : 0;
    if (allocates != 0) {
        cudaGraphDestroy(g);
        cudaGetLastError();
        return nst_fail(NST_ERUNTIME, "the recorded iteration %s", allocates > 0 ? "allocates memory (a library's cudaMallocAsync): its replays would fail"
                                                                               : "could not be inspected for memory nodes");
    }
    if (e == cudaSuccess) e = cudaGraphInstantiate(&x, g, 0);
    cudaGraphDestroy(g);
    if (e != cudaSuccess) {
        cudaGetLastError();
        return nst_fail(NST_ERUNTIME, "the recorded iteration could not be instantiated as a CUDA graph: %s", cudaGetErrorString(e));
    }
    im->graph[im->graph_seg] = x;
    im->graphs = im->graph_seg + 1;
    return NST_OK;
}

static nst_status cu_graph_launch(nst_backend *be, int seg, int *launched)
{
    cuda_impl *im = cuda_of(be);
    *launched = seg >= 0 && seg < im->graphs;
    if (*launched) CUDA_TRY(cudaGraphLaunch(im->graph[seg], im->stream));
    return NST_OK;
}

static int cu_graph_segments(nst_backend *be)
{
    return cuda_of(be)->graphs;
}

static void cu_range_push(nst_backend *be, const char *name)
{
    (void)be;
    nvtxRangePushA(name);
}

static void cu_range_pop(nst_backend *be)
{
    (void)be;
    nvtxRangePop();
}

static const nst_backend_ops cuda_ops = {
    cu_alloc, cu_free, joined_cu_upload, joined_cu_download, cu_zero, cu_copy, cu_sync, /* (cuda_wait joins) */
    cuda_copy_rect, joined_cuda_download_rect, joined_cuda_upload_rect,
    cuda_conv_create, cuda_conv_destroy, cuda_conv_forward, cuda_conv_backward_data,
    cuda_relu_backward, cuda_pool_forward, cuda_pool_backward, cuda_preprocess, cuda_preprocess_backward,
    cuda_gram_accumulate, cuda_gram_diff, cuda_gram_backward,
    cuda_mse, cuda_tv, cuda_adam, cuda_adam_tick, cuda_sumsq, joined_cuda_dot, cuda_axpby, cuda_box_hold, cuda_box_step,
    cu_read, cu_write, cu_range_push, cu_range_pop,
    NULL, NULL, /* gram_fixed, dot_exact: the CPU's exact paths */
    cuda_stamp, cuda_clocks_read,
    cu_graph_begin, cu_graph_end, cu_graph_launch, cu_graph_segments,
    cu_host_alloc, cu_host_free, joined_cuda_download_rect_queued, joined_cuda_upload_rect_queued,
    cu_side, cuda_join,
    cuda_conv_reads_image, cuda_conv_forward_image, cuda_conv_backward_image,
};

/* ---- set-up ------------------------------------------------------------------------------------ */
static void cuda_destroy(nst_backend *be)
{
    cuda_impl *im = cuda_of(be);
    if (im) {
        if (im->stream) cudaStreamSynchronize(im->stream); /* teardown: not a counted wait */
        if (im->side) cudaStreamSynchronize(im->side);     /* teardown: not a counted wait */
        cuda_graphs_drop(im);
        if (im->red_host) cudaFreeHost(im->red_host);
        if (im->base) cudaFree(im->base);
        if (im->blas) im->cb->destroy(im->blas);
        if (im->blas_side) im->cb->destroy(im->blas_side);
        if (im->forked) cudaEventDestroy(im->forked);
        if (im->joined) cudaEventDestroy(im->joined);
        if (im->side) cudaStreamDestroy(im->side);
        if (im->dnn) cudnnDestroy(im->dnn);
        if (im->stream) cudaStreamDestroy(im->stream);
        nst_arena_destroy(&im->arena);
        nst_free(im->notes);
        nst_free(im);
    }
    nst_free(be);
}

/* Memory left outside the arena for what the libraries allocate themselves: the CUDA context's
 * growth, cuDNN's and cuBLAS's internal buffers, NCCL's channels. */
#define RESERVE_BYTES ((size_t)3 << 29) /* 1.5 GiB */
/* cuBLAS's workspace, given from the arena (cublasSetWorkspace): the same buffer in an iteration
 * run and in one recorded as a CUDA graph. Left to itself, cuBLAS takes its workspace with
 * cudaMallocAsync while a stream is recorded (memory nodes in the graph, from the driver's pool,
 * outside the arena and this budget). 32 MiB: cuBLAS's recommended size on Hopper (4 MiB on the
 * others); 256-byte aligned, as it requires (the arena's alignment). */
#define CUBLAS_WORKSPACE_BYTES ((size_t)32 << 20)
#define ARENA_ALIGN 256

/* A cuBLAS handle on stream s, its scalars from the host (the main one and the side's alike) */
static nst_status blas_open(nst_backend *be, cublasHandle_t *h, cudaStream_t s)
{
    const cuda_impl *im = cuda_of(be);
    CUBLAS_TRY(im->cb->create(h));
    CUBLAS_TRY(im->cb->set_stream(*h, s));
    CUBLAS_TRY(im->cb->set_pointer_mode(*h, CUBLAS_POINTER_MODE_HOST));
    return NST_OK;
}

/* A handle's workspace from the arena (after set_stream, which resets it) */
static nst_status blas_workspace(nst_backend *be, cublasHandle_t h)
{
    void *ws = NULL;
    NST_TRY(cu_alloc(be, CUBLAS_WORKSPACE_BYTES, &ws));
    CUBLAS_TRY(cuda_of(be)->cb->set_workspace(h, ws, CUBLAS_WORKSPACE_BYTES));
    return NST_OK;
}

/* The precision's data types and math modes for cuDNN and cuBLAS, and the backend's dtypes. */
static nst_status set_precision(nst_backend *be, cuda_impl *im, const nst_backend_options *o)
{
    nst_precision p = o->precision == NST_PREC_AUTO ? NST_PREC_BF16 : o->precision;
    im->prec = p;
    im->blas_math = CUBLAS_DEFAULT_MATH;
    im->fscale = 1.f;
    switch (p) {
    case NST_PREC_FP32:
        be->act_dtype = NST_F32, im->dnn_type = CUDNN_DATA_FLOAT, im->blas_type = CUDA_R_32F;
        im->blas_compute = CUBLAS_COMPUTE_32F, im->math = CUDNN_FMA_MATH;
        im->blas_math = CUBLAS_PEDANTIC_MATH;
        break;
    case NST_PREC_TF32:
        be->act_dtype = NST_F32, im->dnn_type = CUDNN_DATA_FLOAT, im->blas_type = CUDA_R_32F;
        /* TENSOR_OP on fp32 data is TF32 on sm_80+; ALLOW_CONVERSION would permit fp16, whose range
         * Caffe-scaled activations exceed */
        im->blas_compute = CUBLAS_COMPUTE_32F_FAST_TF32, im->math = CUDNN_TENSOR_OP_MATH;
        im->blas_math = CUBLAS_TF32_TENSOR_OP_MATH;
        break;
    case NST_PREC_FP16:
        be->act_dtype = NST_F16, im->dnn_type = CUDNN_DATA_HALF, im->blas_type = CUDA_R_16F;
        im->blas_compute = CUBLAS_COMPUTE_32F, im->math = CUDNN_TENSOR_OP_MATH;
        break;
    default:
        be->act_dtype = NST_BF16, im->dnn_type = CUDNN_DATA_BFLOAT16, im->blas_type = CUDA_R_16BF;
        im->blas_compute = CUBLAS_COMPUTE_32F, im->math = CUDNN_TENSOR_OP_MATH;
        break;
    }
    CUBLAS_TRY(im->cb->set_math_mode(im->blas, im->blas_math));
    be->precision = p;
    im->fscale = nst_feature_scale(be->act_dtype); /* kernels/precision.h: the policy the CPU follows too */
    be->in_dtype = be->act_dtype; /* (the CPU keeps a bf16 network's input in fp32; not done here yet) */
    const char *fuse = getenv("NSTBATCH_CUDA_FUSE");
    im->fuse = !(fuse && strcmp(fuse, "0") == 0);
    const char *conv1 = getenv("NSTBATCH_CUDA_CONV1");
    im->conv1_own = conv1 && strcmp(conv1, "own") == 0;
    const char *vec8 = getenv("NSTBATCH_CUDA_VEC8");
    im->vec8 = !(vec8 && strcmp(vec8, "0") == 0);
    const char *gram = getenv("NSTBATCH_CUDA_GRAM");
    im->gram_own = gram && strcmp(gram, "own") == 0;
    if (im->gram_own) cuda_note(im, "Gram sums: our own kernel on the FP64 tensor cores, upper triangle (NSTBATCH_CUDA_GRAM=own)");

    return NST_OK;
}

/* The arena (its capacity in *cap) and the scratch reserve, on a GPU shared by `sharers` ranks. */
static nst_status open_arena(nst_backend *be, cuda_impl *im, const nst_backend_options *o, size_t *cap_out, int *sharers_out)
{
    /* the arena: this rank's share of the free memory, less the libraries' reserve, or run.memory_gb.
     * Ranks sharing the GPU take their shares of one figure they agreed on before any of them
     * allocated (o->gpu_free_bytes): measured here, each would see the arenas of those before it. */
    size_t free_b = o->gpu_free_bytes, total_b = 0;
    if (!free_b) CUDA_TRY(cudaMemGetInfo(&free_b, &total_b));
    int sharers = o->gpu_sharers > 0 ? o->gpu_sharers : 1;
    size_t share = free_b / (size_t)sharers;
    /* NCCL's, created after the arena, when this rank sums Grams through it (cuda.h) */
    size_t reserve = RESERVE_BYTES / (size_t)sharers + (o->collective_ranks > 1 && sharers == 1 ? NST_CUDA_NCCL_RESERVE_BYTES : 0);
    size_t cap = share > reserve ? share - reserve : 0;
    cap = (size_t)((double)cap * 0.95);
    if (o->memory_gb > 0) {
        size_t want = (size_t)(o->memory_gb * (double)(1ull << 30));
        if (want > cap)
            return nst_fail(NST_EINPUT, "run.memory_gb = %g: GPU %d has %.2f GiB free for this rank (%d rank%s on it)", o->memory_gb,
                            o->gpu, (double)cap / (1ull << 30), sharers, sharers == 1 ? "" : "s");
        cap = want;
    }
    if (cap < ((size_t)64 << 20))
        return nst_fail(NST_ERUNTIME, "GPU %d: only %.0f MiB of device memory free for this rank", o->gpu, (double)cap / (1 << 20));
    cudaError_t e = cudaMalloc((void **)&im->base, cap);
    if (e != cudaSuccess)
        return nst_fail(NST_ENOMEM, "GPU %d: cudaMalloc of the %.2f GiB arena: %s", o->gpu, (double)cap / (1ull << 30),
                        cudaGetErrorString(e));
    if (nst_arena_init(&im->arena, cap, ARENA_ALIGN) != 0) return NST_ENOMEM;
    be->capacity = im->arena.capacity;
    im->ws_limit = (size_t)1 << 30;
    /* The scratch the ops grow on first use (cuda_impl.h), at its largest: the cuDNN workspace
     * (ws_limit); the Gram ops and the rect transfers, which go in pieces of CUDA_CHUNK_ELEMS
     * elements: a chunk in fp64 (s2; the Gram sums take half a chunk and its mask-weighted copy),
     * its fp32 product or transfer (s1), its packed copy (s0, and 256 bytes to place a weighted
     * chunk at the in-place alignment), 16 bytes an element, and d in bf16 (gtmp, 1 MiB at
     * c = 512); conv1_1's padded input or gradient (s0), 16 bytes a pixel of the largest window
     * (3 channels padded to 8 x 2 bytes, or 4 x 4 in fp32), at most 1/24 of that window's
     * activations, which the layout fits within the capacity: they hold conv1_1's 64 outputs and
     * two gradient buffers as large, 3 x 64 x 2 bytes a pixel and more (nst_acts_bytes); and room
     * for fragmentation. */
    be->reserve = im->ws_limit + CUDA_CHUNK_ELEMS * 16 + 256 + ((size_t)1 << 20) + be->capacity / 24 + be->capacity / 32;
    NST_TRY(cu_alloc(be, sizeof(double) * (RED_BLOCKS + 1), (void **)&im->red));
    NST_TRY(cu_alloc(be, sizeof(unsigned long long) * (NST_CLOCKS + 1), (void **)&im->clocks));
    NST_TRY(blas_workspace(be, im->blas));
    CUDA_TRY(cudaMemsetAsync(im->clocks, 0, sizeof(unsigned long long) * (NST_CLOCKS + 1), im->stream));
    CUDA_TRY(cudaMallocHost((void **)&im->red_host, sizeof(double)));

    *cap_out = cap, *sharers_out = sharers;
    return NST_OK;
}

/* NSTBATCH_CUDA_OVERLAP=1: the side stream of the Gram sums, its events, and a cuBLAS handle set as
 * the main one (the same math mode and workspace size: the same GEMMs, the same bits) */
static nst_status open_side(nst_backend *be, cuda_impl *im)
{
    const char *v = getenv("NSTBATCH_CUDA_OVERLAP");
    im->overlap = v && strcmp(v, "1") == 0;
    if (!im->overlap) return NST_OK;
    CUDA_TRY(cudaStreamCreateWithFlags(&im->side, cudaStreamNonBlocking));
    CUDA_TRY(cudaEventCreateWithFlags(&im->forked, cudaEventDisableTiming));
    CUDA_TRY(cudaEventCreateWithFlags(&im->joined, cudaEventDisableTiming));
    NST_TRY(blas_open(be, &im->blas_side, im->side));
    CUBLAS_TRY(im->cb->set_math_mode(im->blas_side, im->blas_math));
    NST_TRY(blas_workspace(be, im->blas_side));
    cuda_note(im, "Gram sums: on a second stream beside the next layers (NSTBATCH_CUDA_OVERLAP=1), unless NSTBATCH_PROFILE times op by op");
    return NST_OK;
}

/* gpu.conv_algorithms = timed: where the choices are kept, and what a timing holds for (one GPU
 * model, one cuDNN, one precision) */
static nst_status open_choices(cuda_impl *im, const nst_backend_options *o, const cudaDeviceProp *prop)
{
    im->conv_timed = o->conv_timed;
    if (o->conv_memory) im->conv_memory = *o->conv_memory;
    snprintf(im->conv_device, sizeof im->conv_device, "%.64s sm_%d%d | cuDNN %zu | %s", prop->name, prop->major, prop->minor,
             cudnnGetVersion(), nst_precision_name(im->prec));
    return NST_OK;
}

static nst_status open_impl(nst_backend *be, cuda_impl *im, const nst_backend_options *o)
{
    CUDA_TRY(cudaSetDevice(o->gpu));
    CUDA_TRY(cudaFree(0)); /* create the context now, so the free-memory figure below counts it */
    CUDA_TRY(cudaDeviceGetPCIBusId(im->bus_id, sizeof im->bus_id, o->gpu));
    CUDA_TRY(cudaStreamCreateWithFlags(&im->stream, cudaStreamNonBlocking));
    CUDNN_TRY(cudnnCreate(&im->dnn));
    CUDNN_TRY(cudnnSetStream(im->dnn, im->stream));
    char older[160];
    if (nst_cudnn_older(CUDNN_VERSION, cudnnGetVersion(), older, sizeof older)) /* (an H200 node's system cuDNN was) */
        nst_warn("%s: cuDNN promises to run only builds of its own minor version or older ones; the self-test checks every op "
                 "against the CPU on this pair; put a cuDNN %d.%d or newer first on LD_LIBRARY_PATH (PyTorch's nvidia-cudnn wheel "
                 "has one; the bundle's env.sh takes one it finds, or NSTBATCH_CUDA_SEARCH=\"ITS_FOLDER OTHER_FOLDERS\", the "
                 "folders it printed for the other libraries after it)\n",
                 older, CUDNN_MAJOR, CUDNN_MINOR);
    char why[256];
    if (!(im->cb = nst_cublas(why, sizeof why))) return nst_fail(NST_ERUNTIME, "cuBLAS: %s", why);
    NST_TRY(blas_open(be, &im->blas, im->stream));

    NST_TRY(set_precision(be, im, o));
    size_t cap = 0;
    int sharers = 1;
    NST_TRY(open_arena(be, im, o, &cap, &sharers));
    NST_TRY(open_side(be, im));

    cudaDeviceProp prop;
    CUDA_TRY(cudaGetDeviceProperties(&prop, o->gpu));
    be->gpu_index = o->gpu;
    snprintf(be->gpu_bus_id, sizeof be->gpu_bus_id, "%s", im->bus_id);
    be->gpu_stream = im->stream;
    snprintf(be->description, sizeof be->description, "CUDA, %s, GPU %d %.48s (%.16s), %.1f GiB arena%s", nst_precision_name(im->prec),
             o->gpu, prop.name, im->bus_id, (double)cap / (1ull << 30), sharers > 1 ? ", shared GPU" : "");
    return open_choices(im, o, &prop);
}

extern "C" nst_status nst_cuda_backend_open(const nst_backend_options *o, nst_backend **out)
{
    *out = NULL;
    nst_backend *be = (nst_backend *)nst_calloc(sizeof *be, "the CUDA backend");
    cuda_impl *im = (cuda_impl *)nst_calloc(sizeof *im, "the CUDA backend");
    if (!be || !im) {
        nst_free(be);
        nst_free(im);
        return NST_ENOMEM;
    }
    be->impl = im;
    be->ops = &cuda_ops;
    be->destroy = cuda_destroy;
    be->threads = 1;
    im->device = o->gpu;
    snprintf(be->name, sizeof be->name, "cuda");
    be->tiles_exact = 0; /* cuDNN and cuBLAS pick algorithms per shape: tiles agree within tolerances (kernels/check/) */
    cuda_report_install(be);
    nst_status s = open_impl(be, im, o);
    if (s != NST_OK) {
        nst_fail_context(s, "rank's GPU %d", o->gpu);
        cuda_destroy(be);
        return s;
    }
    *out = be;
    return NST_OK;
}

/* nst/run/device.c: binding, backend and Gram-sum path of a rank (see device.h). */
#include "device.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../kernels/cpu/backend_cpu.h"
#include "../../kernels/cuda/cuda.h"
#include "../../mpi/comm.h"
#include "../../util/log.h"
#include "../../util/mem.h"
#include "conv_store.h"

/* Every rank must compute with the same backend kind and precision: one Gram sum of mixed
 * precisions would be neither, and tiles would not match. run.device = auto or run.precision =
 * auto can resolve differently on different nodes (a GPU missing, a CPU without bf16). */
/* FNV-1a of a string, exact in a double (32 bits) */
static double text_hash(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
    return (double)h;
}

#define ARITH_CHARS 200

/* Ranks whose CPU arithmetic differs (another instruction-set level, another convolution
 * implementation: AMX on some nodes, AVX512_BF16 on others) would not give the one-tile render's
 * bits: one line naming each kind of node and its ranks, on every rank's word. */
static nst_status agree_level(const nst_backend *be)
{
    const int R = nst_comm_size(), me = nst_comm_rank();
    double mine = text_hash(be->arith), lo, hi, sum;
    NST_TRY(nst_comm_agree(nst_comm_stats(&mine, &lo, &hi, &sum, 1)));
    if (lo == hi) return NST_OK;
    char *all = nst_calloc((size_t)R * ARITH_CHARS, "the ranks' arithmetic");
    nst_status s = nst_comm_agree(all ? NST_OK : NST_ENOMEM);
    if (s == NST_OK) {
        nst_cpu_level lv;
        nst_cpu_level_get(&lv);
        snprintf(all + (size_t)me * ARITH_CHARS, ARITH_CHARS, "%.40s, %s (%.120s)", nst_comm_host(), lv.name, be->arith);
        s = nst_comm_agree(nst_comm_merge_bytes(all, (size_t)R * ARITH_CHARS));
    }
    if (s == NST_OK && me == 0) {
        char msg[1024] = "";
        size_t len = 0;
        for (int r = 0; r < R && len < sizeof msg; r++) { /* each kind once, with its first and last rank */
            const char *k = all + (size_t)r * ARITH_CHARS;
            int first = 1, last = r;
            for (int q = 0; q < r && first; q++) first = strcmp(all + (size_t)q * ARITH_CHARS, k) != 0;
            if (!first) continue;
            for (int q = r + 1; q < R; q++)
                if (strcmp(all + (size_t)q * ARITH_CHARS, k) == 0) last = q;
            char who[32];
            if (last > r) snprintf(who, sizeof who, "ranks %d-%d", r, last);
            else snprintf(who, sizeof who, "rank %d", r);
            len += (size_t)snprintf(msg + len, sizeof msg - len, "%s%s on %s", len ? "; " : "", who, k);
        }
        nst_fail(NST_EINPUT, "the ranks' CPUs compute at different instruction-set levels, so tiles would not give the one-tile render's "
                             "bits: %s; set ONEDNN_MAX_CPU_ISA to the lowest of these levels for every rank, or run on one kind of node",
                 msg);
    }
    nst_free(all);
    return nst_comm_agree(s == NST_OK ? (me == 0 ? NST_EINPUT : NST_OK) : s);
}

static nst_status agree_arithmetic(const nst_config *cfg, const nst_backend *be)
{
    double mine[2] = {be->gpu_stream ? 1 : 0, (double)be->precision}, lo[2], hi[2], sum[2];
    NST_TRY(nst_comm_agree(nst_comm_stats(mine, lo, hi, sum, 2)));
    if (lo[0] == hi[0] && lo[1] == hi[1]) return be->gpu_stream ? NST_OK : agree_level(be);
    if (nst_comm_rank() == 0) {
        if (lo[0] != hi[0])
            nst_fail(NST_EINPUT, "some ranks have a GPU and some do not (run.device = %s resolves per node): set run.device = cpu, or "
                                 "start ranks only where a GPU is", cfg->run_device);
        else
            nst_fail(NST_EINPUT, "the ranks resolved run.precision = %s differently (%s on some, %s on others: their %s differ): set "
                                 "run.precision to one every node has (fp32 runs everywhere)", cfg->run_precision,
                     nst_precision_name((nst_precision)lo[1]), nst_precision_name((nst_precision)hi[1]), lo[0] ? "GPUs" : "CPUs");
    }
    return nst_comm_agree(NST_EINPUT);
}

#define BUS 32

/* A device's identity as text: its UUID, as nvidia-smi writes it without the GPU-/MIG- prefix. */
static void uuid_text(const unsigned char *u, char *out, size_t cap)
{
    snprintf(out, cap, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1], u[2], u[3], u[4], u[5],
             u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
}

/* gpu.binding: the GPU this rank drives (d->gpu, -1 on the CPU), its identity and PCI bus id (for
 * messages). Collective over the node: CPU ranks take part with an empty view. */
static nst_status bind_gpu(const nst_config *cfg, nst_device *d, int *ngpu, char *id, char *bus)
{
    char why[256] = "";
    *ngpu = strcmp(cfg->run_device, "cpu") == 0 ? 0 : nst_cuda_probe(why, sizeof why);
    nst_gpu_view v;
    memset(&v, 0, sizeof v);
    v.n = nst_cuda_has_ops() ? *ngpu : 0;
    for (int i = 0; i < v.n && i < NST_GPU_VIEW_MAX; i++) nst_cuda_uuid(i, v.uuid[i]); /* zeros if unknown */
    NST_TRY(nst_comm_gpu_bind(cfg->gpu_binding, &v, &d->gpu));
    if (d->gpu < 0) return NST_OK;
    nst_cuda_bus_id(d->gpu, bus, BUS);
    unsigned char u[NST_GPU_UUID_BYTES];
    if (nst_cuda_uuid(d->gpu, u) == 0) uuid_text(u, id, NST_GPU_ID_CHARS);
    else snprintf(id, NST_GPU_ID_CHARS, "bus %.31s", bus); /* no UUID: the bus id is the best identity left */
    return NST_OK;
}

/* Who shares this rank's GPU (every rank takes part, CPU ranks with an empty id), refused unless
 * gpu.share = true. */
static nst_status find_sharers(const nst_config *cfg, nst_device *d, nst_status s, int ngpu, const char *id, const char *bus)
{
    nst_status q = nst_comm_gpu_sharers(s == NST_OK ? id : "", &d->sharers, &d->max_sharers);
    if (s != NST_OK) return s;
    if (q == NST_OK && d->sharers > 1 && !cfg->gpu_share)
        q = nst_fail(NST_EINPUT,
                     "gpu.share = false, but %d ranks on %s drive GPU %d (%s; %d visible to each, gpu.binding = %s): start at most one "
                     "rank per GPU, give each rank its own GPU (e.g. srun --gpus-per-task=1), or set gpu.share = true",
                     d->sharers, nst_comm_host(), d->gpu, bus, ngpu, cfg->gpu_binding);
    return q;
}

/* Ranks sharing a GPU size their arenas from one free-memory figure (nst_backend_options
 * gpu_free_bytes): each creates its context, then, after a node barrier, reads the free memory,
 * which now counts every sharer's context and no one's arena, and the smallest reading is agreed.
 * A rank alone on its GPU measures at backend open, as before (0 here). */
static nst_status agree_free_memory(const nst_device *d, const char *id, size_t *free_b)
{
    char why[256];
    const int shared = d->gpu >= 0 && d->sharers > 1;
    nst_status s = NST_OK;
    size_t mine = 0;
    if (shared && nst_cuda_context(d->gpu, why, sizeof why) != 0)
        s = nst_fail(NST_ERUNTIME, "rank %d (%s): %s", nst_comm_world_rank(), nst_comm_host(), why);
    nst_status b = nst_comm_node_barrier();
    if (s == NST_OK && b == NST_OK && shared && nst_cuda_free_bytes(d->gpu, &mine, why, sizeof why) != 0)
        s = nst_fail(NST_ERUNTIME, "rank %d (%s): %s", nst_comm_world_rank(), nst_comm_host(), why);
    nst_status a = nst_comm_gpu_min_free(shared ? id : "", mine, free_b);
    if (s == NST_OK) s = b != NST_OK ? b : a;
    return nst_comm_agree(s);
}

/* The device's free memory now (0 where unknown: the CPU) */
static size_t device_free_now(nst_backend *be)
{
    size_t free_b = 0, total = 0;
    return be->device_free && be->device_free(be, &free_b, &total) == 0 ? free_b : 0;
}

/* NCCL allocates outside the arena, in the room kept for it (NST_CUDA_NCCL_RESERVE_BYTES, an
 * estimate): its communicator as it opens, its channels at the first collective, each peer's
 * buffers at the first send to it (runtime connect). What the world's communicator, the first sum
 * and the first exchange took is marked (the memory diagnostics) and logged by the rank that logs,
 * so a run on a node of several GPUs measures the estimate; peers first reached later, and rank
 * groups' communicators, are not measured. */
static void nccl_took(nst_backend *be, size_t before, const char *what)
{
    const size_t after = device_free_now(be);
    nst_backend_mark(be, what);
    if (before && after)
        nst_info("%s: the free device memory %s by %.0f MiB, to %.0f MiB (kept for NCCL outside the arena: %.0f MiB)\n", what,
                 after <= before ? "fell" : "rose", fabs((double)before - (double)after) / (1 << 20), (double)after / (1 << 20),
                 (double)NST_CUDA_NCCL_RESERVE_BYTES / (1 << 20));
}

/* The Gram path, agreed: NCCL only when every rank runs on a GPU of its own (one CPU rank or a
 * shared GPU: MPI through host memory).
 *
 * The world's NCCL communicator is made here, right after the backends opened, not at the first
 * Gram sum: its device memory then exists before the planner and the render loop run, and a
 * shortfall shows at open. Not before the backend: whether NCCL is used is known only once every
 * rank's backend is open and their arithmetic agreed, and the backend allocates its arena as it
 * opens. That arena left NST_CUDA_NCCL_RESERVE_BYTES outside itself for this communicator (collective_ranks
 * > 1 on an unshared GPU, kernels/cuda/backend_cuda.cu); NCCL connects its channels at the first
 * collective too (runtime connect), so that reserve would be needed in either order. */
static nst_status choose_gram_path(nst_device *d)
{
    double mine = d->be->gpu_stream && d->max_sharers == 1 && nst_comm_nccl_built() ? 1 : 0, lo, hi, sum;
    NST_TRY(nst_comm_agree(nst_comm_stats(&mine, &lo, &hi, &sum, 1)));
    d->nccl = lo > 0;
    if (d->nccl) {
        const size_t before = device_free_now(d->be);
        NST_TRY(nst_comm_nccl_open(d->nccl_timeout));
        if (nst_comm_world_size() > 1) nccl_took(d->be, before, "NCCL's communicator opened"); /* (one rank opens none) */
    }
    char ver[64];
    nst_comm_nccl_version(ver, sizeof ver);
    if (d->nccl)
        snprintf(d->gram_path, sizeof d->gram_path, "%s allreduce on device buffers", ver);
    else if (d->be->gpu_stream)
        snprintf(d->gram_path, sizeof d->gram_path, "MPI allreduce through host memory (%s)",
                 d->max_sharers > 1 ? "ranks share GPUs: NCCL needs one GPU per rank"
                 : !nst_comm_nccl_built() ? "no NCCL in this build" : "some ranks run on the CPU");
    else
        snprintf(d->gram_path, sizeof d->gram_path, "MPI allreduce (CPU backend)");
    return NST_OK;
}

nst_status nst_device_open(const nst_config *cfg, int threads, nst_device *d)
{
    memset(d, 0, sizeof *d);
    d->gpu = -1;
    d->nccl_timeout = cfg->gpu_nccl_timeout;
    char id[NST_GPU_ID_CHARS] = "", bus[BUS] = "";
    int prec = nst_precision_parse(cfg->run_precision), ngpu = 0;
    if (prec < 0) return nst_comm_agree(nst_fail(NST_EINPUT, "run.precision = '%s': expected auto, fp32, tf32, bf16 or fp16", cfg->run_precision));
    nst_status s = bind_gpu(cfg, d, &ngpu, id, bus);
    s = nst_comm_agree(find_sharers(cfg, d, s, ngpu, id, bus));
    if (s != NST_OK) return s;
    size_t free_b = 0;
    NST_TRY(agree_free_memory(d, id, &free_b));
    const int timed = strcmp(cfg->gpu_conv_algorithms, "timed") == 0;
    nst_conv_memory kept;
    if (timed && d->gpu >= 0) /* (the CPU's convolutions are oneDNN's: nothing to time) */
        s = nst_conv_store_open(cfg->gpu_conv_choices, &d->conv_store, &kept);
    s = nst_comm_agree(s); /* every rank, those on the CPU too */
    nst_backend_options o = {.device = cfg->run_device, .threads = threads, .precision = (nst_precision)prec, .gpu = d->gpu < 0 ? 0 : d->gpu,
                             .gpu_sharers = d->sharers, .memory_gb = cfg->run_memory_gb, .collective_ranks = nst_comm_size(),
                             .gpu_free_bytes = free_b, .conv_timed = timed, .conv_memory = d->conv_store ? &kept : NULL};
    if (s == NST_OK) s = nst_comm_agree(nst_backend_open_with(&o, &d->be));
    if (s != NST_OK) { /* (another rank's failure: this one's backend may be open; it goes first, its store after) */
        nst_backend_close(d->be);
        d->be = NULL;
        nst_conv_store_close(d->conv_store);
        d->conv_store = NULL;
        return s;
    }
    nst_backend_mark(d->be, "the backend opened");
    NST_TRY(agree_arithmetic(cfg, d->be));
    return choose_gram_path(d);
}

static nst_status sum_doubles(void *ctx, double *buf, size_t n)
{
    (void)ctx;
    return nst_comm_sum_doubles(buf, n);
}

/* Gram sums in backend memory: in place on the CPU, NCCL on distinct GPUs, else staged (the CPU
 * under the graph stand-in too, as a GPU without NCCL: its reads wait, kernels/graph_standin.h) */
static nst_status sum_grams(void *ctx, double *buf, size_t n)
{
    nst_device *d = ctx;
    nst_backend *be = d->be;
    if (!be->gpu_stream && !be->graph_standin) return nst_comm_sum_doubles(buf, n);
    if (nst_comm_size() == 1) return NST_OK;
    if (d->nccl) {
        nst_backend_count_wait(be, 0); /* the host waits for NCCL's end on the stream (mpi/nccl.c: wait_for) */
        const size_t before = d->nccl_summed ? 0 : device_free_now(be);
        NST_TRY(nst_comm_nccl_sum_doubles(buf, n, be->gpu_stream, d->nccl_timeout));
        if (!d->nccl_summed++) nccl_took(be, before, "NCCL's first Gram sum");
        return NST_OK;
    }
    if (n > d->stage_cap) {
        double *p = nst_alloc_array(n, sizeof(double), "Gram staging");
        if (!p) return NST_ENOMEM;
        nst_free(d->stage);
        d->stage = p;
        d->stage_cap = n;
    }
    NST_TRY(be->ops->read(be, d->stage, buf, n * sizeof(double)));
    NST_TRY(nst_comm_sum_doubles(d->stage, n));
    return be->ops->write(be, buf, d->stage, n * sizeof(double));
}

static nst_status check(void *ctx, nst_status mine)
{
    (void)ctx;
    return nst_comm_check(mine);
}

static nst_status agree(void *ctx, nst_status mine)
{
    (void)ctx;
    return nst_comm_agree(mine);
}

static nst_status bcast(void *ctx, void *buf, size_t bytes)
{
    (void)ctx;
    return nst_comm_bcast(buf, bytes, 0);
}

static nst_status sum_int64(void *ctx, int64_t *buf, size_t n)
{
    (void)ctx;
    return nst_comm_sum_int64(buf, n);
}

static nst_status max_ints(void *ctx, int *buf, size_t n)
{
    (void)ctx;
    return nst_comm_max_ints(buf, n);
}

/* MPI between copies of the messages in host memory: the GPU's buffers read out, exchanged, the
 * received ones written back (NSTBATCH_EXCHANGE=device on GPUs without NCCL: a test hook, so the
 * packing kernels run on a GPU that ranks share) */
static nst_status exchange_staged(nst_backend *be, nst_comm_msg *m, int nsend, int nrecv)
{
    nst_status s = NST_OK;
    for (int i = 0; s == NST_OK && i < nsend + nrecv; i++) { /* each message's buffer becomes a host copy */
        void *dev = m[i].buf, *host = nst_alloc_array(m[i].bytes ? m[i].bytes : 1, 1, "exchange staging");
        if (!host) s = NST_ENOMEM;
        else if (i < nsend) s = be->ops->read(be, host, dev, m[i].bytes);
        m[i].buf = host;
    }
    if (s != NST_OK) nst_comm_abort(1, "the halo exchange's host staging failed"); /* the peers are in the exchange already */
    return nst_comm_exchange(m, nsend, m + nsend, nrecv); /* (the caller writes back and frees: exchange_resident) */
}

/* The halo exchange between buffers in backend memory: NCCL between distinct GPUs; with
 * NSTBATCH_EXCHANGE=device (a test hook) MPI from them on the CPU, whose backend memory is the
 * host's, and through host copies on GPUs without NCCL, so the exchange's packing into backend
 * buffers runs where there is no NCCL */
static nst_status exchange_resident(void *ctx, const nst_peer_msg *sends, int nsend, const nst_peer_msg *recvs, int nrecv)
{
    nst_device *d = ctx;
    nst_backend *be = d->be;
    if (nsend + nrecv == 0) return NST_OK; /* point to point only: a rank with no message waits for none */
    nst_comm_msg *m = nst_alloc_array((size_t)(nsend + nrecv), sizeof *m, "exchange messages");
    if (!m) nst_comm_abort(1, "out of memory for the halo exchange messages"); /* the peers are in the exchange already */
    for (int i = 0; i < nsend; i++) m[i] = (nst_comm_msg){sends[i].peer, sends[i].buf, sends[i].bytes};
    for (int i = 0; i < nrecv; i++) m[nsend + i] = (nst_comm_msg){recvs[i].peer, recvs[i].buf, recvs[i].bytes};
    nst_status s;
    if (d->nccl) {
        nst_backend_count_wait(be, 0); /* as for the Gram sums: the host waits for the stream */
        const size_t before = d->nccl_exchanged ? 0 : device_free_now(be);
        s = nst_comm_nccl_exchange(m, nsend, m + nsend, nrecv, be->gpu_stream, d->nccl_timeout);
        if (s == NST_OK && !d->nccl_exchanged++) nccl_took(be, before, "NCCL's first halo exchange");
    } else if (!be->gpu_stream) {
        s = nst_comm_exchange(m, nsend, m + nsend, nrecv);
    } else {
        s = exchange_staged(be, m, nsend, nrecv);
        for (int i = 0; i < nrecv; i++)
            if (s == NST_OK) s = be->ops->write(be, recvs[i].buf, m[nsend + i].buf, recvs[i].bytes);
        for (int i = 0; i < nsend + nrecv; i++) nst_free(m[i].buf);
    }
    nst_free(m);
    return s;
}

static int exchange_hook(void)
{
    const char *v = getenv("NSTBATCH_EXCHANGE");
    return v && strcmp(v, "device") == 0;
}

nst_collectives nst_device_collectives(nst_device *d)
{
    nst_collectives c = {d, sum_doubles, sum_grams, check, bcast, sum_int64, max_ints, agree, NULL};
    /* (the ranks agree on the path before they use it: nst/render/exchange.c) */
    if (d->nccl || exchange_hook()) c.exchange = exchange_resident;
    return c;
}

void nst_device_close(nst_device *d)
{
    /* the world's NCCL communicator holds memory and streams on this GPU: released while the
     * backend's context stands (a group's went when the group was freed) */
    nst_comm_nccl_close();
    nst_backend_close(d->be);
    nst_conv_store_close(d->conv_store); /* after the backend, which adds to it */
    nst_free(d->stage);
    memset(d, 0, sizeof *d);
}

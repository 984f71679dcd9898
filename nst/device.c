/* nst/device.c: binding, backend and Gram-sum path of a rank (see device.h). */
#include "device.h"

#include <stdio.h>
#include <string.h>

#include "../kernels/cuda/cuda.h"
#include "../mpi/comm.h"
#include "../util/mem.h"

/* Every rank must compute with the same backend kind and precision: one Gram sum of mixed
 * precisions would be neither, and tiles would not match. run.device = auto or run.precision =
 * auto can resolve differently on different nodes (a GPU missing, a CPU without bf16). */
static nst_status agree_arithmetic(const nst_config *cfg, const nst_backend *be)
{
    double mine[2] = {be->gpu_stream ? 1 : 0, (double)be->precision}, lo[2], hi[2], sum[2];
    NST_TRY(nst_comm_agree(nst_comm_stats(mine, lo, hi, sum, 2)));
    if (lo[0] == hi[0] && lo[1] == hi[1]) return NST_OK;
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

nst_status nst_device_open(const nst_config *cfg, int threads, nst_device *d)
{
    memset(d, 0, sizeof *d);
    d->gpu = -1;
    d->nccl_timeout = cfg->gpu_nccl_timeout;
    char why[256] = "", bus[32] = "";
    int prec = nst_precision_parse(cfg->run_precision);
    if (prec < 0) return nst_comm_agree(nst_fail(NST_EINPUT, "run.precision = '%s': expected auto, fp32, tf32, bf16 or fp16", cfg->run_precision));
    int ngpu = strcmp(cfg->run_device, "cpu") == 0 ? 0 : nst_cuda_probe(why, sizeof why);
    if (ngpu > 0 && nst_cuda_has_ops()) {
        d->gpu = nst_gpu_choose(cfg->gpu_binding, nst_comm_local_rank(), ngpu);
        nst_cuda_bus_id(d->gpu, bus, sizeof bus);
    }
    /* who shares a GPU: every rank takes part (CPU ranks with an empty id) */
    nst_status s = nst_comm_gpu_sharers(bus, &d->sharers, &d->max_sharers);
    if (s == NST_OK && d->sharers > 1 && !cfg->gpu_share)
        s = nst_fail(NST_EINPUT,
                     "gpu.share = false, but %d ranks on %s drive GPU %d (%s; %d visible to each, gpu.binding = %s): start at most one "
                     "rank per GPU, give each rank its own GPU (e.g. srun --gpus-per-task=1), or set gpu.share = true",
                     d->sharers, nst_comm_host(), d->gpu, bus, ngpu, cfg->gpu_binding);
    s = nst_comm_agree(s);
    if (s != NST_OK) return s;
    nst_backend_options o = {cfg->run_device, threads, (nst_precision)prec, d->gpu < 0 ? 0 : d->gpu, d->sharers, cfg->run_memory_gb,
                             nst_comm_size()};
    s = nst_comm_agree(nst_backend_open_with(&o, &d->be));
    if (s != NST_OK) return s;
    NST_TRY(agree_arithmetic(cfg, d->be));
    /* NCCL only when every rank runs on a GPU of its own (one CPU rank or shared GPU: MPI) */
    double mine = d->be->gpu_stream && d->max_sharers == 1 && nst_comm_nccl_built() ? 1 : 0, lo, hi, sum;
    s = nst_comm_agree(nst_comm_stats(&mine, &lo, &hi, &sum, 1));
    if (s != NST_OK) return s;
    d->nccl = lo > 0;
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

static nst_status sum_doubles(void *ctx, double *buf, size_t n)
{
    (void)ctx;
    return nst_comm_sum_doubles(buf, n);
}

/* Gram sums in backend memory: in place on the CPU, NCCL on distinct GPUs, else staged */
static nst_status sum_grams(void *ctx, double *buf, size_t n)
{
    nst_device *d = ctx;
    nst_backend *be = d->be;
    if (!be->gpu_stream) return nst_comm_sum_doubles(buf, n);
    if (nst_comm_size() == 1) return NST_OK;
    if (d->nccl) return nst_comm_nccl_sum_doubles(buf, n, be->gpu_stream, d->nccl_timeout);
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

static nst_status bcast(void *ctx, void *buf, size_t bytes)
{
    (void)ctx;
    return nst_comm_bcast(buf, bytes, 0);
}

nst_collectives nst_device_collectives(nst_device *d)
{
    nst_collectives c = {d, sum_doubles, sum_grams, check, bcast};
    return c;
}

void nst_device_close(nst_device *d)
{
    nst_backend_close(d->be);
    nst_free(d->stage);
    memset(d, 0, sizeof *d);
}

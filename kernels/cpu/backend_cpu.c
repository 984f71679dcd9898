/* kernels/cpu/backend_cpu.c: the CPU backend's op table, memory functions and set-up. */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include <omp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>

#include "../../util/mem.h"
#include "../../util/timer.h"
#include "backend_cpu.h"
#include "cpu.h"

nst_status cpu_check_f32(const nst_tensor *t, const char *op)
{
    if (t->dt != NST_F32) return nst_fail(NST_ERUNTIME, "%s: expected an fp32 tensor", op);
    return nst_tensor_check(t, op);
}

nst_status cpu_check_act(const nst_tensor *t, const char *op)
{
    if (t->dt != NST_F32 && t->dt != NST_BF16) return nst_fail(NST_ERUNTIME, "%s: the CPU backend stores fp32 or bf16", op);
    return nst_tensor_check(t, op);
}

nst_status cpu_check_same_dt(const nst_tensor *a, const nst_tensor *b, const char *op)
{
    NST_TRY(cpu_check_act(a, op));
    NST_TRY(cpu_check_act(b, op));
    if (a->dt != b->dt) return nst_fail(NST_ERUNTIME, "%s: tensors of different dtypes", op);
    return NST_OK;
}

/* Each buffer carries its size in a 64-byte header (alignment kept) for the byte accounting. */
#define HEADER 64

static nst_status cpu_alloc(nst_backend *be, size_t bytes, void **ptr)
{
    *ptr = NULL;
    NST_TRY(nst_backend_check_limit(be, bytes));
    unsigned char *p = nst_alloc(bytes + HEADER, "backend buffer");
    if (!p) {
        be->alloc_failures++;
        return nst_fail(NST_ENOMEM, "out of memory allocating %zu bytes (%.1f MiB already in use by this rank)", bytes,
                        (double)be->bytes_in_use / (1 << 20));
    }
    *(size_t *)p = bytes;
    be->bytes_in_use += bytes;
    if (be->bytes_in_use > be->bytes_peak) be->bytes_peak = be->bytes_in_use;
    *ptr = p + HEADER;
    return NST_OK;
}

static void cpu_free(nst_backend *be, void *ptr)
{
    if (!ptr) return;
    unsigned char *p = (unsigned char *)ptr - HEADER;
    be->bytes_in_use -= *(size_t *)p;
    nst_free(p);
}

/* The calls that on a GPU make the host wait are counted here as there (kernels/backend.h). */
static nst_status cpu_upload(nst_backend *be, void *dst, const float *src, size_t n, nst_dtype dt)
{
    nst_backend_count_wait(be, 0);
    if (dt != NST_F32 && dt != NST_BF16) return nst_fail(NST_ERUNTIME, "upload: the CPU backend stores fp32 or bf16");
    cpu_from_f32(dst, src, n, dt);
    return NST_OK;
}

static nst_status cpu_download(nst_backend *be, float *dst, const void *src, size_t n, nst_dtype dt)
{
    nst_backend_count_wait(be, 1);
    if (dt != NST_F32 && dt != NST_BF16) return nst_fail(NST_ERUNTIME, "download: the CPU backend stores fp32 or bf16");
    cpu_to_f32(dst, src, n, dt);
    return NST_OK;
}

static nst_status cpu_zero(nst_backend *be, void *ptr, size_t bytes)
{
    (void)be;
    memset(ptr, 0, bytes);
    return NST_OK;
}

static nst_status cpu_copy(nst_backend *be, void *dst, const void *src, size_t bytes)
{
    (void)be;
    memmove(dst, src, bytes);
    return NST_OK;
}

static nst_status cpu_sync(nst_backend *be)
{
    nst_backend_count_wait(be, 0);
    return NST_OK;
}

static nst_status cpu_read(nst_backend *be, void *host, const void *src, size_t bytes)
{
    nst_backend_count_wait(be, 1);
    memcpy(host, src, bytes);
    return NST_OK;
}

static nst_status cpu_write(nst_backend *be, void *dst, const void *host, size_t bytes)
{
    nst_backend_count_wait(be, 0);
    memcpy(dst, host, bytes);
    return NST_OK;
}

static nst_status cpu_stamp(nst_backend *be, int slot)
{
    cpu_impl *im = cpu_of(be);
    if (slot < -1 || slot >= NST_CLOCKS) return nst_fail(NST_ERUNTIME, "stamp: clock %d (-1 to %d)", slot, NST_CLOCKS - 1);
    const double now = nst_now();
    if (slot >= 0 && im->last_stamp > 0) im->clock[slot] += now - im->last_stamp;
    im->last_stamp = now;
    return NST_OK;
}

static nst_status cpu_clocks_read(nst_backend *be, int n, double *sec)
{
    cpu_impl *im = cpu_of(be);
    if (n < 0 || n > NST_CLOCKS) return nst_fail(NST_ERUNTIME, "clocks_read: %d clocks (0 to %d)", n, NST_CLOCKS);
    nst_backend_count_wait(be, 1);
    for (int i = 0; i < n; i++) sec[i] = im->clock[i], im->clock[i] = 0;
    return NST_OK;
}

static nst_status counted_download_rect(nst_backend *be, const nst_tensor *src, nst_rect r, float *host)
{
    nst_backend_count_wait(be, 1);
    return cpu_download_rect(be, src, r, host);
}

/* The queued transfers: done when they return, as every CPU op; no wait to count. */
static nst_status cpu_host_alloc(nst_backend *be, size_t bytes, void **ptr)
{
    (void)be;
    *ptr = nst_alloc_array(bytes ? bytes : 1, 1, "host transfer memory");
    return *ptr ? NST_OK : NST_ENOMEM;
}

static void cpu_host_free(nst_backend *be, void *ptr)
{
    (void)be;
    nst_free(ptr);
}

static void cpu_range_push(nst_backend *be, const char *name) { (void)be, (void)name; }
static void cpu_range_pop(nst_backend *be) { (void)be; }

/* ---- the device-fault test hook ---------------------------------------------------------------- */
/* NSTBATCH_DEVICE_FAULT=OP:N: the N-th call (from 1) of op OP (dot, for dot and dot_exact; gram_diff,
 * upload_rect, read or write) in this process fails as a device fault (kernels/backend.h), as a sticky CUDA error would
 * surface in an op that sits between two collectives. Set it on one rank with mpirun's MPMD form:
 * mpirun -np 1 nstbatch a.ini : -np 1 env NSTBATCH_DEVICE_FAULT=dot:3 nstbatch a.ini */
static struct {
    char op[16];
    long long at, calls;
} fault;

static void fault_arm(void)
{
    const char *e = getenv("NSTBATCH_DEVICE_FAULT");
    memset(&fault, 0, sizeof fault);
    if (e && sscanf(e, "%15[a-z_]:%lld", fault.op, &fault.at) != 2) fault.at = 0;
}

/* NST_OK, or the injected fault when this call of op is the one */
static nst_status fault_check(const char *op)
{
    if (fault.at <= 0 || strcmp(op, fault.op) != 0 || ++fault.calls != fault.at) return NST_OK;
    return nst_backend_fault("CPU %s: injected device fault at call %lld (NSTBATCH_DEVICE_FAULT=%s)", op, fault.at,
                             getenv("NSTBATCH_DEVICE_FAULT"));
}

static nst_status hooked_read(nst_backend *be, void *host, const void *src, size_t bytes)
{
    NST_TRY(fault_check("read"));
    return cpu_read(be, host, src, bytes);
}

static nst_status hooked_write(nst_backend *be, void *dst, const void *host, size_t bytes)
{
    NST_TRY(fault_check("write"));
    return cpu_write(be, dst, host, bytes);
}

static nst_status hooked_dot(nst_backend *be, const float *a, const float *b, size_t n, double *out)
{
    nst_backend_count_wait(be, 1);
    NST_TRY(fault_check("dot"));
    return cpu_dot(be, a, b, n, out);
}

/* L-BFGS's exact dot products count as op "dot" too */
static nst_status hooked_dot_exact(nst_backend *be, const float *a, const float *b, int w, int h, int seg, nst_xsum *acc)
{
    nst_backend_count_wait(be, 1);
    NST_TRY(fault_check("dot"));
    return cpu_dot_exact(be, a, b, w, h, seg, acc);
}

static nst_status hooked_gram_diff(nst_backend *be, const double *g, const double *g_prev, double g_scale, const float *a, int c,
                                   float *d, double *sumsq)
{
    NST_TRY(fault_check("gram_diff"));
    return cpu_gram_diff(be, g, g_prev, g_scale, a, c, d, sumsq);
}

/* upload_rect's fault hook covers its queued form too (the same transfer), which has no wait to count */
static nst_status hooked_upload_rect_queued(nst_backend *be, const float *host, nst_tensor *dst, nst_rect r)
{
    NST_TRY(fault_check("upload_rect"));
    return cpu_upload_rect(be, host, dst, r);
}

static nst_status hooked_upload_rect(nst_backend *be, const float *host, nst_tensor *dst, nst_rect r)
{
    nst_backend_count_wait(be, 0);
    return hooked_upload_rect_queued(be, host, dst, r);
}

static const nst_backend_ops cpu_ops = {
    .alloc = cpu_alloc,
    .free = cpu_free,
    .upload = cpu_upload,
    .download = cpu_download,
    .zero = cpu_zero,
    .copy = cpu_copy,
    .synchronize = cpu_sync,
    .copy_rect = cpu_copy_rect,
    .download_rect = counted_download_rect,
    .upload_rect = hooked_upload_rect,
    .host_alloc = cpu_host_alloc,
    .host_free = cpu_host_free,
    .download_rect_queued = cpu_download_rect,
    .upload_rect_queued = hooked_upload_rect_queued,
    .conv_create = cpu_conv_create,
    .conv_destroy = cpu_conv_destroy,
    .conv_forward = cpu_conv_forward,
    .conv_backward_data = cpu_conv_backward_data,
    .relu_backward = cpu_relu_backward,
    .pool_forward = cpu_pool_forward,
    .pool_backward = cpu_pool_backward,
    .preprocess = cpu_preprocess,
    .preprocess_backward = cpu_preprocess_backward,
    .gram_accumulate = cpu_gram_accumulate,
    .gram_fixed = cpu_gram_fixed,
    .dot_exact = hooked_dot_exact,
    .gram_diff = hooked_gram_diff,
    .gram_backward = cpu_gram_backward,
    .mse = cpu_mse,
    .tv = cpu_tv,
    .adam = cpu_adam,
    .adam_tick = cpu_adam_tick,
    .sumsq = cpu_sumsq,
    .dot = hooked_dot,
    .axpby = cpu_axpby,
    .box_hold = cpu_box_hold,
    .box_step = cpu_box_step,
    .read = hooked_read,
    .write = hooked_write,
    .range_push = cpu_range_push,
    .range_pop = cpu_range_pop,
    .stamp = cpu_stamp,
    .clocks_read = cpu_clocks_read,
};

static void cpu_destroy(nst_backend *be)
{
    cpu_impl *impl = cpu_of(be);
    if (impl) {
        nst_free(impl->scratch);
        nst_free(impl->dscratch);
        nst_free(impl->cscratch);
        if (impl->stream) dnnl_stream_destroy(impl->stream);
        if (impl->eng) dnnl_engine_destroy(impl->eng);
        nst_free(impl);
    }
    nst_free(be);
}

void nst_cpu_level_get(nst_cpu_level *l)
{
    const dnnl_cpu_isa_t i = dnnl_get_effective_cpu_isa();
#define HAS(x) ((i & (x)) == (x))
    snprintf(l->name, sizeof l->name, "%s",
             HAS(dnnl_cpu_isa_avx512_core_amx)    ? "AVX512_CORE_AMX"
             : HAS(dnnl_cpu_isa_avx512_core_bf16) ? "AVX512_CORE_BF16"
             : HAS(dnnl_cpu_isa_avx512_core_vnni) ? "AVX512_CORE_VNNI"
             : HAS(dnnl_cpu_isa_avx512_core)      ? "AVX512_CORE"
             : HAS(dnnl_cpu_isa_avx2)             ? "AVX2"
             : HAS(dnnl_cpu_isa_avx)              ? "AVX"
                                                  : "SSE41");
    l->bf16_native = HAS(dnnl_cpu_isa_avx512_core_bf16);
    l->amx = HAS(dnnl_cpu_isa_avx512_core_amx);
#undef HAS
    l->amd = __builtin_cpu_is("amd");
}

nst_precision nst_cpu_auto_precision(const nst_cpu_level *l, char *why, size_t cap)
{
    /* bf16 where its convolutions are the faster ones (bench/results/auto_precision.md): on AMX
     * (oneDNN's direct AMX convolution: about 6x its AVX512_BF16 one); on AMD cores with
     * AVX512_BF16 (Zen 4, Zen 5), whose VDPBF16PS issues at the rate of their fp32 FMAs with two
     * products each (measured 2.0x fp32). Not on Intel cores with AVX512_BF16 but no AMX tiles
     * (Cooper Lake; Sapphire and Emerald Rapids where Linux withholds AMX), whose VDPBF16PS goes
     * to one port where fp32 FMAs take two (measured 0.60x fp32 on Emerald Rapids). */
    if (l->amx) {
        snprintf(why, cap, "precision auto: bf16, the convolutions run on AMX (%s)", l->name);
        return NST_PREC_BF16;
    }
    if (l->bf16_native && l->amd) {
        snprintf(why, cap, "precision auto: bf16, this AMD core's bf16 dot products run at twice its fp32 rate (%s)", l->name);
        return NST_PREC_BF16;
    }
    if (l->bf16_native)
        snprintf(why, cap, "precision auto: fp32, this core's bf16 dot products without AMX are slower than its fp32 (%s)", l->name);
    else
        snprintf(why, cap, "precision auto: fp32, the CPU has no native bf16 dot products (%s)", l->name);
    return NST_PREC_FP32;
}

nst_status nst_cpu_backend_open(int threads, nst_precision precision, nst_backend **out)
{
    if (precision != NST_PREC_FP32 && precision != NST_PREC_BF16)
        return nst_fail(NST_ERUNTIME, "the CPU backend opens in fp32 or bf16, not %s", nst_precision_name(precision));
    nst_backend *be = nst_calloc(sizeof *be, "the CPU backend");
    cpu_impl *impl = nst_calloc(sizeof *impl, "the CPU backend");
    if (!be || !impl) {
        nst_free(be);
        nst_free(impl);
        return NST_ENOMEM;
    }
    be->impl = impl;
    be->ops = &cpu_ops;
    fault_arm();
    be->act_dtype = precision == NST_PREC_BF16 ? NST_BF16 : NST_F32;
    be->in_dtype = NST_F32;
    be->precision = precision;
    be->destroy = cpu_destroy;
    snprintf(be->name, sizeof be->name, "cpu");
    be->tiles_exact = 1;
    if (threads > 0) omp_set_num_threads(threads);
    impl->threads = omp_get_max_threads();
    dnnl_status_t st = dnnl_engine_create(&impl->eng, dnnl_cpu, 0);
    if (st == dnnl_success) st = dnnl_stream_create(&impl->stream, impl->eng, dnnl_stream_default_flags);
    if (st != dnnl_success) {
        cpu_destroy(be);
        return cpu_dnnl_fail(st, "dnnl_engine_create", __FILE__, __LINE__);
    }
    nst_cpu_level lv;
    nst_cpu_level_get(&lv);
    /* the CPU ops apply no feature scale: the shared policy (kernels/precision.h) must give 1 */
    if (nst_feature_scale(be->act_dtype) != 1.f) {
        cpu_destroy(be);
        return nst_fail(NST_ERUNTIME, "the CPU backend stores no scaled features");
    }
    if (precision == NST_PREC_BF16) {
        /* bf16 where oneDNN has convolutions for it: natively, or emulated on AVX-512 cores */
        if (cpu_conv_probe(be) != NST_OK) {
            cpu_destroy(be);
            nst_fail_clear(); /* oneDNN's "unimplemented", replaced by what the user can do */
            return nst_fail(NST_EINPUT, "run.precision = bf16 on this CPU (%s): oneDNN has no bf16 convolution for it; valid here: "
                                        "auto, fp32", lv.name);
        }
    }
    char convs[112];
    nst_status cs = cpu_conv_survey(be, convs, sizeof convs);
    if (cs != NST_OK) {
        cpu_destroy(be);
        return cs;
    }
    const dnnl_version_t *v = dnnl_version();
    /* the parent's mask, not the machine's cores: a mask the user set (taskset, a container, a
     * batch system's cpuset) is inherited by the launcher too, and is no binding of the launcher's */
    cpu_set_t mask;
    const int online = (int)sysconf(_SC_NPROCESSORS_ONLN);
    be->cores_allowed = sched_getaffinity(0, sizeof mask, &mask) == 0 ? CPU_COUNT(&mask) : online;
    be->cores_launcher = sched_getaffinity(getppid(), sizeof mask, &mask) == 0 ? CPU_COUNT(&mask) : be->cores_allowed;
    be->threads = impl->threads;
    snprintf(be->description, sizeof be->description, "CPU, %s, oneDNN %d.%d.%d (%s: %s), %d thread%s",
             precision == NST_PREC_FP32 ? "fp32" : lv.bf16_native ? "bf16 (fp32 accumulation)" : "bf16 (emulated: slower than fp32)",
             v->major, v->minor, v->patch, lv.name, convs, impl->threads, impl->threads == 1 ? "" : "s");
    /* what a result's bits depend on besides the data and the precision: ranks must agree on it */
    snprintf(be->arith, sizeof be->arith, "%.110s; own kernels %s", convs,
             cpu_isa_level_name(cpu_kernels_isa_for(precision == NST_PREC_FP32 ? NST_F32 : NST_BF16)));
    *out = be;
    return NST_OK;
}

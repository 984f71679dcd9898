/* kernels/backend.c: choosing and opening a backend (run.device), tensor allocation, and the
 * values of the fixed-point Gram sums. */
#define _GNU_SOURCE /* sched_getaffinity */
#include "backend.h"

#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cpu/backend_cpu.h"
#include "graph_standin.h"
#include "profile.h"
#include "cuda/cuda.h"
#include "../util/mem.h"

int nst_default_threads(int ranks_on_node)
{
    cpu_set_t mask;
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    int allowed = sched_getaffinity(0, sizeof mask, &mask) == 0 ? CPU_COUNT(&mask) : (int)online;
    int share = (int)(online / (ranks_on_node > 0 ? ranks_on_node : 1));
    int t = share < allowed ? share : allowed;
    return t < 1 ? 1 : t;
}

/* The allocation-limit test hook, or 0. */
static size_t env_limit(void)
{
    const char *e = getenv("NSTBATCH_MEMORY_LIMIT_MB");
    char *end;
    double mb = e && *e ? strtod(e, &end) : 0;
    return mb > 0 && !*end ? (size_t)(mb * (double)(1 << 20)) : 0;
}

static nst_status open_device(const nst_backend_options *o, nst_backend **out);
static nst_status cpu_precision(nst_precision asked, nst_precision *out, char *choice, size_t n);

nst_status nst_backend_open_with(const nst_backend_options *o, nst_backend **out)
{
    NST_TRY(open_device(o, out));
    (*out)->limit = env_limit();
    const char *gs = getenv("NSTBATCH_GRAPH_STANDIN"); /* a test hook: graphs' logic on the CPU */
    if (gs && strcmp(gs, "1") == 0 && strcmp((*out)->name, "cpu") == 0) {
        nst_status s = nst_graph_standin_attach(*out);
        if (s != NST_OK) {
            nst_backend_close(*out);
            *out = NULL;
            return s;
        }
    }
    const char *prof = getenv("NSTBATCH_PROFILE");
    if (prof && *prof && strcmp(prof, "0") != 0) {
        nst_status s = nst_profile_attach(*out);
        if (s != NST_OK) {
            nst_backend_close(*out);
            *out = NULL;
            return s;
        }
    }
    return NST_OK;
}

static nst_status open_device(const nst_backend_options *o, nst_backend **out)
{
    char why[256] = "", gpu[160] = "";
    const char *device = o->device;
    *out = NULL;
    if (strcmp(device, "cpu") != 0 && strcmp(device, "cuda") != 0 && strcmp(device, "auto") != 0)
        return nst_fail(NST_EINPUT, "run.device = '%s': expected one of auto, cpu, cuda", device);
    int ngpu = strcmp(device, "cpu") == 0 ? 0 : nst_cuda_probe(why, sizeof why);
    if (strcmp(device, "cuda") == 0) {
        if (ngpu == 0) return nst_fail(NST_EINPUT, "run.device = cuda: %s; valid here: auto, cpu", why);
        if (!nst_cuda_has_ops()) return nst_fail(NST_EINPUT, "run.device = cuda: this build has no CUDA backend (rebuild where nvcc, cuDNN and cuBLAS exist); valid: auto, cpu");
        if (o->gpu < 0 || o->gpu >= ngpu) return nst_fail(NST_ERUNTIME, "GPU %d chosen, but %d visible", o->gpu, ngpu);
    }
    if (ngpu > 0 && nst_cuda_has_ops()) {
        nst_cuda_describe(o->gpu, gpu, sizeof gpu);
        NST_TRY(nst_cuda_backend_open(o, out));
        if (strcmp(device, "auto") == 0) snprintf((*out)->choice, sizeof (*out)->choice, "auto: %s", gpu);
        return NST_OK;
    }
    nst_precision prec = NST_PREC_FP32;
    char choice[160];
    NST_TRY(cpu_precision(o->precision, &prec, choice, sizeof choice));
    NST_TRY(nst_cpu_backend_open(o->threads, prec, out));
    char *c = (*out)->choice;
    size_t n = sizeof (*out)->choice;
    if (strcmp(device, "auto") == 0) {
        if (ngpu == 0) snprintf(c, n, "auto: %.140s, so the CPU", why);
        else snprintf(c, n, "auto: %d GPU%s, but this build has no CUDA ops", ngpu, ngpu == 1 ? "" : "s");
    }
    if (choice[0]) snprintf(c + strlen(c), n - strlen(c), "%s%s", c[0] ? "; " : "", choice);
    return NST_OK;
}

/* run.precision on the CPU: fp32 or bf16; auto by nst_cpu_auto_precision's rule, saying why in
 * choice. fp16 and tf32 are GPU precisions. */
static nst_status cpu_precision(nst_precision asked, nst_precision *out, char *choice, size_t n)
{
    choice[0] = 0;
    if (asked == NST_PREC_FP16 || asked == NST_PREC_TF32)
        return nst_fail(NST_EINPUT, "run.precision = %s: a GPU precision, but this rank computes on the CPU; valid on the CPU: auto, "
                                    "fp32, bf16 (or run on a GPU: run.device = cuda)",
                        nst_precision_name(asked));
    if (asked != NST_PREC_AUTO) {
        *out = asked;
        return NST_OK;
    }
    nst_cpu_level lv;
    nst_cpu_level_get(&lv);
    *out = nst_cpu_auto_precision(&lv, choice, n);
    return NST_OK;
}

nst_status nst_backend_open(const char *device, int threads, nst_backend **out)
{
    /* the reference: fp32 on the CPU (bf16 is asked for by name), the GPU's default there */
    nst_backend_options o = {.device = device, .threads = threads, .precision = strcmp(device, "cpu") == 0 ? NST_PREC_FP32 : NST_PREC_AUTO,
                             .gpu = 0, .gpu_sharers = 1, .memory_gb = 0, .collective_ranks = 1};
    return nst_backend_open_with(&o, out);
}

void nst_backend_close(nst_backend *be)
{
    if (be && be->profile) nst_profile_detach(be, stderr);
    if (be && be->graph_standin) nst_graph_standin_detach(be);
    if (be && be->destroy) be->destroy(be);
}

static nst_backend_fatal_fn fatal_handler;

void nst_backend_mark(nst_backend *be, const char *phase)
{
    if (be->nmarks == NST_MAX_MARKS) { /* the latest are kept: the first contact's last phases tell most */
        memmove(be->marks, be->marks + 1, sizeof be->marks - sizeof *be->marks);
        be->nmarks--;
    }
    nst_memory_mark *m = &be->marks[be->nmarks++];
    memset(m, 0, sizeof *m);
    snprintf(m->phase, sizeof m->phase, "%s", phase);
    size_t total = 0;
    if (be->device_free && be->device_free(be, &m->device_free, &total) != 0) m->device_free = 0;
    m->in_use = be->bytes_in_use, m->peak = be->bytes_peak;
}

void nst_backend_diagnostics(const nst_backend *be, char *out, size_t cap, const char *indent)
{
    size_t len = 0;
    if (cap) out[0] = 0;
    const double mib = 1 << 20;
    for (int i = 0; i < be->nmarks && len < cap; i++) {
        const nst_memory_mark *m = &be->marks[i];
        char dev[48] = "";
        if (be->device_free) snprintf(dev, sizeof dev, "device free %.0f MiB, ", (double)m->device_free / mib);
        len += (size_t)snprintf(out + len, cap - len, "%smemory after %s: %sbackend buffers %.1f MiB (peak %.1f MiB)\n", indent, m->phase, dev,
                                (double)m->in_use / mib, (double)m->peak / mib);
    }
    if (be->report && len < cap) {
        char *text = nst_alloc_array(cap, 1, "the device report");
        if (!text) return;
        be->report((nst_backend *)be, text, cap); /* reads the backend's state only */
        for (const char *p = text; *p && len < cap;) { /* each line indented */
            const char *nl = strchr(p, '\n');
            int n = nl ? (int)(nl - p) : (int)strlen(p);
            len += (size_t)snprintf(out + len, cap - len, "%s%.*s\n", indent, n, p);
            p += n + (nl != NULL);
        }
        nst_free(text);
    }
}

int nst_backend_notes_count(const nst_backend *be, const char *what)
{
    const size_t cap = 1 << 18;
    char *text = be->report && *what ? nst_alloc_array(cap, 1, "the device report") : NULL;
    int n = 0;
    if (!text) return 0;
    text[0] = 0;
    be->report((nst_backend *)be, text, cap);
    for (const char *p = text; (p = strstr(p, what)); p += strlen(what)) n++;
    nst_free(text);
    return n;
}

void nst_backend_set_fatal_handler(nst_backend_fatal_fn fn) { fatal_handler = fn; }

nst_status nst_backend_fault(const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (fatal_handler) fatal_handler(msg); /* ends the job */
    return nst_fail(NST_ERUNTIME, "%s", msg);
}

nst_status nst_backend_check_limit(nst_backend *be, size_t bytes)
{
    if (!be->limit || bytes <= be->limit - (be->bytes_in_use < be->limit ? be->bytes_in_use : be->limit)) return NST_OK;
    be->alloc_failures++;
    return nst_fail(NST_ENOMEM, "out of backend memory allocating %.1f MiB (%.1f MiB in use, limit %.1f MiB from NSTBATCH_MEMORY_LIMIT_MB)",
                    (double)bytes / (1 << 20), (double)be->bytes_in_use / (1 << 20), (double)be->limit / (1 << 20));
}

nst_status nst_tensor_check(const nst_tensor *t, const char *op)
{
    if (!t->data || t->h < 0 || t->w < 0 || t->c < 1) return nst_fail(NST_ERUNTIME, "%s: invalid tensor", op);
    return NST_OK;
}

nst_status nst_tensor_check_region(const nst_tensor *t, nst_rect r, const char *op)
{
    if (!nst_rect_contains(nst_tensor_rect(t), r))
        return nst_fail(NST_ERUNTIME, "%s: region %dx%d+%d+%d outside the %dx%d tensor", op, r.w, r.h, r.x, r.y, t->w, t->h);
    return NST_OK;
}

nst_status nst_tensor_check_mask(const nst_tensor *f, const nst_tensor *m, const char *op)
{
    if (m && (m->dt != NST_F32 || m->c != 1 || m->h != f->h || m->w != f->w))
        return nst_fail(NST_ERUNTIME, "%s: a mask must be fp32 %dx%dx1 like the features; got %dx%dx%d%s", op, f->h, f->w, m->h,
                        m->w, m->c, m->dt != NST_F32 ? " (not fp32)" : "");
    return NST_OK;
}

nst_status nst_tensor_alloc(nst_backend *be, int h, int w, int c, nst_dtype dt, nst_tensor *t)
{
    t->h = h;
    t->w = w;
    t->c = c;
    t->dt = dt;
    t->data = NULL;
    size_t bytes = (size_t)h * w * c * nst_dtype_size(dt);
    NST_TRY(be->ops->alloc(be, bytes, &t->data));
    return be->ops->zero(be, t->data, bytes);
}

void nst_tensor_free(nst_backend *be, nst_tensor *t)
{
    if (t->data) be->ops->free(be, t->data);
    t->data = NULL;
}

void nst_gram_fixed_to_double(const int64_t *acc, int c, int e, int bad, double *g)
{
    for (int i = 0; i < c; i++)
        for (int j = i; j < c; j++) {
            const size_t at = (size_t)i * c + j;
            const int64_t hi = acc[(size_t)c * c + at] + (acc[at] >> NST_GRAM_LO_BITS), lo = acc[at] & ((1LL << NST_GRAM_LO_BITS) - 1);
            g[(size_t)i * c + j] = bad ? NAN : ldexp(ldexp((double)hi, NST_GRAM_LO_BITS) + (double)lo, 2 * e - 43); /* hi < 2^53: exact */
        }
}

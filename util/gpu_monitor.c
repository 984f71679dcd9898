/* util/gpu_monitor.c: NVML through dlopen and a sampling thread (see gpu_monitor.h). */
#define _GNU_SOURCE
#include "gpu_monitor.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "timer.h"

/* The few NVML declarations used (nvml.h is not needed to build). */
typedef int nvml_ret;
typedef void *nvml_dev;
typedef struct { unsigned int gpu, memory; } nvml_util;
typedef struct { unsigned long long total, free, used; } nvml_mem;
enum { NVML_TEMPERATURE_GPU = 0, NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2 };

typedef struct {
    void *lib;
    nvml_ret (*init)(void);
    nvml_ret (*shutdown)(void);
    nvml_ret (*count)(unsigned int *);
    nvml_ret (*by_index)(unsigned int, nvml_dev *);
    nvml_ret (*by_uuid)(const char *, nvml_dev *);
    nvml_ret (*by_bus)(const char *, nvml_dev *);
    nvml_ret (*name)(nvml_dev, char *, unsigned int);
    nvml_ret (*util)(nvml_dev, nvml_util *);
    nvml_ret (*mem)(nvml_dev, nvml_mem *);
    nvml_ret (*temp)(nvml_dev, int, unsigned int *);
    nvml_ret (*power)(nvml_dev, unsigned int *);
    nvml_ret (*limit)(nvml_dev, unsigned int *);
    nvml_ret (*clock)(nvml_dev, int, unsigned int *);
    const char *(*error)(nvml_ret);
} nvml_api;

struct nst_gpu_monitor {
    nvml_api api;
    nvml_dev dev;
    double interval;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    int stop;
    nst_gpu_sample acc; /* accumulating since the last take */
    double util_sum, power_sum, settled_sum;
    double settled_from; /* CLOCK_MONOTONIC seconds: utilisation sampled before this is not settled */
};

/* NVML's longest utilisation window (nvmlUtilization_t: between 1/6 s and 1 s by product) */
static const double NVML_UTIL_WINDOW_S = 1.0;

static const char *err(const nvml_api *a, nvml_ret r)
{
    static char buf[32];
    if (a->error) return a->error(r);
    snprintf(buf, sizeof buf, "NVML error %d", r);
    return buf;
}

/* One sample into the accumulator (lock held). */
static void sample(nst_gpu_monitor *m)
{
    const nvml_api *a = &m->api;
    nvml_util u = {0, 0};
    nvml_mem mem = {0, 0, 0};
    unsigned int t = 0, pw = 0, lim = 0, sm = 0, mc = 0;
    if (a->util(m->dev, &u) != 0) return;
    a->mem(m->dev, &mem);
    a->temp(m->dev, NVML_TEMPERATURE_GPU, &t);
    a->power(m->dev, &pw);
    a->limit(m->dev, &lim);
    a->clock(m->dev, NVML_CLOCK_SM, &sm);
    a->clock(m->dev, NVML_CLOCK_MEM, &mc);
    nst_gpu_sample *s = &m->acc;
    if (s->samples == 0 || u.gpu < s->util_min) s->util_min = u.gpu;
    if ((double)mem.used > s->mem_used) s->mem_used = (double)mem.used;
    s->mem_total = (double)mem.total;
    if (t > s->temp_max) s->temp_max = t;
    if (pw / 1000.0 > s->power_max_w) s->power_max_w = pw / 1000.0;
    s->power_limit_w = lim / 1000.0;
    s->sm_clock_mhz = sm, s->mem_clock_mhz = mc;
    m->util_sum += u.gpu;
    if (nst_now() >= m->settled_from) m->settled_sum += u.gpu, s->util_settled++;
    m->power_sum += pw / 1000.0;
    s->samples++;
}

static void *run(void *p)
{
    nst_gpu_monitor *m = p;
    pthread_mutex_lock(&m->lock);
    while (!m->stop) {
        sample(m);
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        double t = ts.tv_sec + ts.tv_nsec * 1e-9 + m->interval;
        ts.tv_sec = (time_t)t;
        ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
        while (!m->stop && pthread_cond_timedwait(&m->wake, &m->lock, &ts) != ETIMEDOUT) {
        }
    }
    pthread_mutex_unlock(&m->lock);
    return NULL;
}

static int load(nvml_api *a, char *why, size_t cap)
{
    memset(a, 0, sizeof *a);
    a->lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!a->lib) {
        snprintf(why, cap, "NVML not loaded (%s)", dlerror());
        return -1;
    }
#define SYM(field, name) *(void **)&a->field = dlsym(a->lib, name)
    SYM(init, "nvmlInit_v2");
    SYM(shutdown, "nvmlShutdown");
    SYM(count, "nvmlDeviceGetCount_v2");
    SYM(by_index, "nvmlDeviceGetHandleByIndex_v2");
    SYM(by_uuid, "nvmlDeviceGetHandleByUUID");
    SYM(by_bus, "nvmlDeviceGetHandleByPciBusId_v2");
    SYM(name, "nvmlDeviceGetName");
    SYM(util, "nvmlDeviceGetUtilizationRates");
    SYM(mem, "nvmlDeviceGetMemoryInfo");
    SYM(temp, "nvmlDeviceGetTemperature");
    SYM(power, "nvmlDeviceGetPowerUsage");
    SYM(limit, "nvmlDeviceGetEnforcedPowerLimit");
    SYM(clock, "nvmlDeviceGetClockInfo");
    SYM(error, "nvmlErrorString");
#undef SYM
    if (!a->init || !a->shutdown || !a->count || !a->by_index || !a->name || !a->util || !a->mem || !a->temp || !a->power || !a->limit ||
        !a->clock) {
        snprintf(why, cap, "libnvidia-ml.so.1 lacks an NVML function this build uses");
        dlclose(a->lib);
        return -1;
    }
    return 0;
}

/* The NVML device of this rank (see the header). */
static int pick(const nvml_api *a, int local_rank, const char *bus_id, nvml_dev *dev, int *index, char *why, size_t cap)
{
    unsigned int n = 0;
    nvml_ret r = a->count(&n);
    if (r != 0 || n == 0) {
        snprintf(why, cap, "NVML sees no GPU (%s)", r ? err(a, r) : "count 0");
        return -1;
    }
    /* the backend's own device, by bus id: NVML numbers all GPUs, CUDA only the visible ones */
    if (bus_id && *bus_id && a->by_bus && a->by_bus(bus_id, dev) == 0) {
        *index = -1;
        return 0;
    }
    const char *vis = getenv("CUDA_VISIBLE_DEVICES");
    char entry[128] = "";
    if (vis && *vis) {
        int k = 0, len = 0;
        for (const char *p = vis; *p; p++) len += *p == ',';
        len++;
        int want = local_rank % len;
        for (const char *p = vis; *p && k <= want; k++) {
            const char *e = strchr(p, ',');
            size_t l = e ? (size_t)(e - p) : strlen(p);
            if (k == want) snprintf(entry, sizeof entry, "%.*s", (int)l, p);
            p += l + (e ? 1 : 0);
        }
    }
    if (strncmp(entry, "GPU-", 4) == 0 && a->by_uuid) {
        *index = -1;
        r = a->by_uuid(entry, dev);
    } else {
        *index = entry[0] ? atoi(entry) : local_rank % (int)n;
        r = a->by_index((unsigned int)*index, dev);
    }
    if (r != 0) {
        snprintf(why, cap, "NVML cannot open GPU %s (%s)", entry[0] ? entry : "by index", err(a, r));
        return -1;
    }
    return 0;
}

int nst_gpu_monitor_start(int local_rank, const char *bus_id, double interval_s, nst_gpu_monitor **out, char *why, size_t cap)
{
    *out = NULL;
    nst_gpu_monitor *m = calloc(1, sizeof *m);
    if (!m) {
        snprintf(why, cap, "out of memory");
        return -1;
    }
    if (load(&m->api, why, cap) != 0) {
        free(m);
        return -1;
    }
    nvml_ret r = m->api.init();
    int index = 0;
    if (r != 0) {
        snprintf(why, cap, "nvmlInit failed (%s)", err(&m->api, r));
    } else if (pick(&m->api, local_rank, bus_id, &m->dev, &index, why, cap) == 0) {
        m->interval = interval_s;
        m->settled_from = nst_now() + NVML_UTIL_WINDOW_S;
        m->acc.index = index;
        m->api.name(m->dev, m->acc.name, sizeof m->acc.name);
        pthread_mutex_init(&m->lock, NULL);
        pthread_cond_init(&m->wake, NULL);
        if (pthread_create(&m->thread, NULL, run, m) == 0) {
            *out = m;
            return 0;
        }
        snprintf(why, cap, "cannot start the sampling thread");
    }
    if (r == 0) m->api.shutdown();
    dlclose(m->api.lib);
    free(m);
    return -1;
}

void nst_gpu_monitor_take(nst_gpu_monitor *m, nst_gpu_sample *out)
{
    pthread_mutex_lock(&m->lock);
    if (m->acc.samples == 0) sample(m);
    *out = m->acc;
    if (out->samples) {
        out->util_mean = m->util_sum / out->samples;
        out->power_w = m->power_sum / out->samples;
    }
    if (out->util_settled) out->util_settled_mean = m->settled_sum / out->util_settled;
    int index = m->acc.index;
    char name[sizeof m->acc.name];
    memcpy(name, m->acc.name, sizeof name);
    memset(&m->acc, 0, sizeof m->acc);
    m->acc.index = index;
    memcpy(m->acc.name, name, sizeof name);
    m->util_sum = m->power_sum = m->settled_sum = 0;
    pthread_mutex_unlock(&m->lock);
}

void nst_gpu_monitor_fence(nst_gpu_monitor *m)
{
    if (!m) return;
    pthread_mutex_lock(&m->lock);
    m->settled_from = nst_now() + NVML_UTIL_WINDOW_S;
    pthread_mutex_unlock(&m->lock);
}

void nst_gpu_monitor_identity(nst_gpu_monitor *m, int *index, char *name, size_t cap)
{
    pthread_mutex_lock(&m->lock);
    *index = m->acc.index;
    snprintf(name, cap, "%s", m->acc.name);
    pthread_mutex_unlock(&m->lock);
}

void nst_gpu_monitor_stop(nst_gpu_monitor *m)
{
    if (!m) return;
    pthread_mutex_lock(&m->lock);
    m->stop = 1;
    pthread_cond_signal(&m->wake);
    pthread_mutex_unlock(&m->lock);
    pthread_join(m->thread, NULL);
    m->api.shutdown();
    dlclose(m->api.lib);
    pthread_mutex_destroy(&m->lock);
    pthread_cond_destroy(&m->wake);
    free(m);
}

/* tests/fake_nvml.c: a stand-in libnvidia-ml.so.1 for the GPU-monitoring tests on machines
 * without a GPU. It implements the NVML calls util/gpu_monitor.c makes and reports one GPU whose
 * readings come from the environment (FAKE_NVML_UTIL percent, FAKE_NVML_MEM_USED_GB /
 * FAKE_NVML_MEM_TOTAL_GB, FAKE_NVML_TEMP C, FAKE_NVML_POWER_W / FAKE_NVML_LIMIT_W), so that the
 * sampling thread, the reductions, the JSON lines and the warnings can be checked. Built as
 * build/tests/fake-nvml/libnvidia-ml.so.1 and found through LD_LIBRARY_PATH. */
#include <stdlib.h>
#include <string.h>

typedef struct { unsigned int gpu, memory; } nvml_util;
typedef struct { unsigned long long total, free, used; } nvml_mem;

static double env(const char *name, double def)
{
    const char *v = getenv(name);
    return v && *v ? atof(v) : def;
}

static int dev_token; /* the one device's handle points here */

int nvmlInit_v2(void) { return 0; }
int nvmlShutdown(void) { return 0; }
int nvmlDeviceGetCount_v2(unsigned int *n) { *n = 1; return 0; }
int nvmlDeviceGetHandleByIndex_v2(unsigned int i, void **dev)
{
    if (i != 0) return 2; /* NVML_ERROR_INVALID_ARGUMENT */
    *dev = &dev_token;
    return 0;
}
int nvmlDeviceGetHandleByUUID(const char *uuid, void **dev)
{
    (void)uuid;
    *dev = &dev_token;
    return 0;
}
int nvmlDeviceGetName(void *dev, char *name, unsigned int len)
{
    (void)dev;
    strncpy(name, "Fake GPU (tests/fake_nvml.c)", len);
    if (len) name[len - 1] = 0;
    return 0;
}
int nvmlDeviceGetUtilizationRates(void *dev, nvml_util *u)
{
    (void)dev;
    u->gpu = (unsigned int)env("FAKE_NVML_UTIL", 95);
    u->memory = 50;
    return 0;
}
int nvmlDeviceGetMemoryInfo(void *dev, nvml_mem *m)
{
    (void)dev;
    m->total = (unsigned long long)(env("FAKE_NVML_MEM_TOTAL_GB", 80) * 1e9);
    m->used = (unsigned long long)(env("FAKE_NVML_MEM_USED_GB", 10) * 1e9);
    m->free = m->total - m->used;
    return 0;
}
int nvmlDeviceGetTemperature(void *dev, int sensor, unsigned int *t)
{
    (void)dev, (void)sensor;
    *t = (unsigned int)env("FAKE_NVML_TEMP", 60);
    return 0;
}
int nvmlDeviceGetPowerUsage(void *dev, unsigned int *mw)
{
    (void)dev;
    *mw = (unsigned int)(env("FAKE_NVML_POWER_W", 300) * 1000);
    return 0;
}
int nvmlDeviceGetEnforcedPowerLimit(void *dev, unsigned int *mw)
{
    (void)dev;
    *mw = (unsigned int)(env("FAKE_NVML_LIMIT_W", 700) * 1000);
    return 0;
}
int nvmlDeviceGetClockInfo(void *dev, int type, unsigned int *mhz)
{
    (void)dev;
    *mhz = type == 1 ? 1980 : 2619;
    return 0;
}
const char *nvmlErrorString(int r) { return r ? "fake NVML error" : "success"; }

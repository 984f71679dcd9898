/* util/gpu_monitor.h: GPU health sampled through NVML, loaded at run time.
 *
 * libnvidia-ml.so.1 is opened with dlopen (nothing to link, nothing needed on CPU machines); a
 * thread samples the rank's GPU every interval: utilisation, memory used and total, temperature,
 * power draw and its enforced limit, SM and memory clocks. The render takes a summary of the
 * samples since the previous one at every print interval. Without the library or a GPU, start
 * says why and the run goes on without monitoring.
 *
 * Which GPU: the entry of CUDA_VISIBLE_DEVICES (an index or a GPU-UUID) picked by the node-local
 * rank modulo its length, else the node-local rank modulo NVML's device count, which is the
 * binding policy of run.device = cuda (gpu.binding = auto). */
#ifndef NST_GPU_MONITOR_H
#define NST_GPU_MONITOR_H

#include <stddef.h>

typedef struct nst_gpu_monitor nst_gpu_monitor;

typedef struct {
    int samples;                 /* since the previous take (0: nothing measured) */
    int index;                   /* NVML device index */
    char name[96];
    double util_mean, util_min;  /* percent */
    int util_settled;            /* samples taken a whole NVML window after the last fence */
    double util_settled_mean;    /* percent, over those (0 when there are none) */
    double mem_used, mem_total;  /* bytes; the largest used */
    double temp_max;             /* Celsius */
    double power_w, power_max_w; /* mean and largest draw */
    double power_limit_w;
    double sm_clock_mhz, mem_clock_mhz; /* the last sample */
} nst_gpu_sample;

/* 0 and *out on success; -1 with a reason in why otherwise. bus_id: the PCI bus id of the GPU the
 * backend drives ("" when unknown: then chosen from CUDA_VISIBLE_DEVICES by node-local rank). */
int nst_gpu_monitor_start(int local_rank, const char *bus_id, double interval_s, nst_gpu_monitor **out, char *why, size_t cap);
/* The summary since the previous call (the latest sample is taken now if none arrived since). */
void nst_gpu_monitor_take(nst_gpu_monitor *m, nst_gpu_sample *out);
/* From now on: utilisation read within NVML's window of now (at most 1 s: "each sample period may
 * be between 1 second and 1/6 second, depending on the product") also covers what came before,
 * so samples count in util_settled only from a window after this call. Called when a level starts,
 * so that the idle GPU of the start-up (reading weights, planning) does not show as the level's
 * (called at the job's first level only: idle time between levels and frames is the job's own). */
void nst_gpu_monitor_fence(nst_gpu_monitor *m);
/* The GPU sampled: NVML index (-1 when chosen by UUID) and name. */
void nst_gpu_monitor_identity(nst_gpu_monitor *m, int *index, char *name, size_t cap);
void nst_gpu_monitor_stop(nst_gpu_monitor *m);

#endif

/* nst/run/selftest_impl.h: the self-test's table of results, shared by its checks (selftest_checks.c)
 * and its report (selftest.c). Each rank fills one table; rank 0 merges them by op and precision. */
#ifndef NST_SELFTEST_IMPL_H
#define NST_SELFTEST_IMPL_H

#include "../../kernels/check/check.h"
#include "device.h"

typedef struct {
    char op[48], prec[24], worst[120];
    int cases, failed, rank;
    int late;        /* not run: the time budget was spent (st_add_late) */
    double err, tol; /* of the worst case (largest err / tol) */
} st_row;

/* Room for every row the checks make: the device, the renders, the graphs, the allreduce and the
 * halo (under 16), and each pass of the op harness (at most NST_CHECK_ROWS rows, its "late" and
 * "stream after the ops" rows). The last row is kept for rows past the room (st_lost). */
#define ST_HARNESS_PASSES 6
#define ST_MAX_ROWS (16 + ST_HARNESS_PASSES * (NST_CHECK_ROWS + 2) + 1)

typedef struct {
    int n;
    char device[256]; /* "host: backend description" */
    double start, deadline; /* nst_now(): the self-test's start, and past which no optional check starts */
    char diag[8192];        /* the device's diagnostics (kernels/backend.h: nst_backend_diagnostics) for the report */
    st_row row[ST_MAX_ROWS];
} st_table;

/* One comparison (cases = 0: a check that could not apply here, with the reason in `worst`); its
 * row, or NULL where the table had no room (st_lost). */
st_row *st_add(st_table *t, const char *op, const char *prec, int cases, int failed, double err, double tol, const char *worst);
/* Rows that found no room (n of them): counted as failures in the table's last row, which says so,
 * so that a verdict never passes over rows it did not keep. */
#define ST_LOST_OP "self-test table"
void st_lost(st_table *t, int n);
/* The rows before that last one: ST_MAX_ROWS - 1 (8 with NSTBATCH_PLANT=tablefull). */
int st_room(void);
/* A check left out because the time budget was spent (what: which parts). */
void st_add_late(st_table *t, const char *op, const char *prec, const char *what);
/* 1 once the budget is spent. */
int st_late(const st_table *t);

/* The device a rank's render used, kept for the harness, which opens its own backends on it
 * once the render's has closed (each takes run.memory_gb of the GPU). */
typedef struct {
    int gpu;     /* -1: the CPU */
    int sharers; /* ranks of this node on that GPU */
} st_device;

/* Whether the rank uses a GPU: ok naming it; a failed row where an NVIDIA GPU is present but CUDA
 * cannot use it (run.device = auto would quietly render on the CPU); else a row that does not apply. */
void st_gpu(st_table *t, const nst_backend *be, const char *run_device);
/* The op harness on that device, in each precision it has. */
nst_status st_harness(st_table *t, const st_device *d, const nst_config *cfg, int threads);
/* A small render on one tile against several, on d's backend. */
nst_status st_render(st_table *t, nst_backend *be, int threads);
/* CUDA graphs (gpu.graphs) on be: a short render replayed against the same render run as it is. */
nst_status st_graphs(st_table *t, nst_backend *be, int threads);
/* The Gram allreduce over the ranks on every path d has, against the exact sum. Collective. */
nst_status st_allreduce(st_table *t, nst_device *d);
/* The halo exchange in backend memory (NCCL between GPUs), where d has it: a ring of messages,
 * every value checked. Collective. */
nst_status st_halo(st_table *t, nst_device *d);

#endif

/* nst/run/selftest.h: nstbatch --self-test, the first command on a new machine.
 *
 * Every rank checks its own device, so a bad GPU on one node of many is found and named:
 *   - the op harness (kernels/check/: the table of ops, shapes and tolerances make test runs) in
 *     every precision the device has, against the CPU backend in fp32: on a GPU fp32, tf32, bf16,
 *     fp16 and bf16 with bias+ReLU as a separate kernel; on a CPU its bf16 backend;
 *   - a small render on one tile against the same render on several tiles, in the precision a
 *     render would take: equal bit for bit on the CPU; within a stated tolerance on a GPU, whose
 *     convolution algorithms may differ with the tile's shape;
 *   - on several ranks, the Gram allreduce against the exact sum: NCCL and the host-staged path
 *     on GPUs, MPI on CPUs.
 * Rank 0 prints one table (op, precision, max error, tolerance, verdict) and one closing line;
 * --report FILE also writes the versions, every rank's device and the failing rows. */
#ifndef NST_SELFTEST_H
#define NST_SELFTEST_H

#include "../../io/config/config.h"

typedef struct {
    const char *report;    /* --report FILE (NULL: none) */
    const char *versions;  /* the --version text, for the report */
    const char *command;   /* the command line, for the report */
    int threads;           /* CPU threads per rank */
    /* ends the job on a device fault (kernels/backend.h), installed around the allreduce only: a
     * rank whose device fails inside it would leave its peers waiting there. Elsewhere a fault is
     * a failed row of the table. */
    void (*fault)(const char *msg);
} nst_selftest_opts;

/* Collective over the world. NST_OK with *failed the comparisons that failed (0: every check
 * passed) and the table printed on rank 0; an error when the self-test itself could not run (a
 * device that does not open, the report not written). */
nst_status nst_selftest_run(const nst_config *cfg, const nst_selftest_opts *o, int *failed);

#endif

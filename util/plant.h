/* util/plant.h: defects planted on purpose, so that the tests can prove a check fails when what
 * it guards is broken (a check that cannot fail proves nothing). NSTBATCH_PLANT is a comma-
 * separated list of:
 *   halo       after each halo exchange, every window pixel as far from the core as the deepest
 *              layer's exact halo, or farther, is zeroed: a halo one pixel short of that need
 *   allreduce  the Gram sums are not added over the ranks: each rank sees only its own tiles
 *   unmet      the world's last rank takes no part in the ranks' first exchange (mpi/first_contact.c):
 *              the others never hear from it, as from a rank MPI cannot connect
 *   late       the world's last rank enters the barrier after MPI_Init (mpi/launch_fence.c) 3 s
 *              late, and rank 0 says how long it waited there: not a defect, the case the
 *              barrier must hold (rank 0, on another node, waits the 3 s too)
 *   readback   the objective reads its loss terms to the host in every iteration, rows or not
 *              (nst/optimise/objective.c): the waits between rows that a GPU must not make
 *   adamhost   Adam's step count goes in from the host (nst/render/tiles.c), as before it lived on
 *              the device: a replayed iteration (gpu.graphs) repeats its recording's step
 *   exchangewait  the halo exchange sends without waiting for its queued downloads into the send
 *              buffers (nst/render/exchange.c): on a GPU, and on the graph stand-in, which holds a
 *              queued download back until a wait, the peers receive stale halos
 *   graphstep  a replayed iteration (gpu.graphs) skips its second step between ranks (with more
 *              than one rank: the Gram sums added over ranks; nst/render/recorded.c)
 *   graphwait  this process waits for its device while it records an iteration (nst/render/render.c),
 *              which fails its recording: set on one rank only, every rank must give graphs up together
 *   sidejoin   the forward does not join the Gram sums' side stream (nst/optimise/objective.c): on a
 *              GPU with NSTBATCH_CUDA_OVERLAP=1, and on the graph stand-in, which runs the side's sums
 *              at the join, the sums are read before they are done
 *   sidelate   the same join after every tile's forward instead of each one's: the next tile's
 *              forward overwrites the features the side's sums read
 *   exchangeoffset  the halo exchange in backend memory (nst/render/exchange.c) unpacks each rect
 *              but a peer's first one pixel further into its receive buffer
 *   race       two CUDA kernels with a shared-memory hazard run once (kernels/cuda/reduce_cuda.cu), named
 *              after the first and last names racecheck is filtered to: it must report them
 *   tablefull  the self-test's table has room for 8 rows (nst/run/selftest_checks.c): the rows past
 *              it must fail the self-test, as a GPU's would past its real room
 *   nanloss    the style and total loss read at a row are -NaN, the sign x86 gives a NaN
 *              (nst/optimise/objective.c): not a defect, a diverged run's terms (an fp16 overflow on a
 *              GPU; no CPU input was found to give one), which the metrics log and the run record must
 *              still write as valid JSON, and the Prometheus file as its format spells NaN
 * Used by tests/test_gpu_render.sh (PLANT=...; race directly), tests/test_selftest.sh, tests/test_hosts.sh,
 * tests/test_optim.sh and tests/test_metrics.sh.
 * Never set otherwise; a process with one warns once. */
#ifndef NST_PLANT_H
#define NST_PLANT_H

/* 1 when `name` is planted in this process. */
int nst_planted(const char *name);

#endif

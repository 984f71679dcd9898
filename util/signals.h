/* util/signals.h: SIGUSR1 and SIGTERM ask for a checkpoint and a clean stop.
 *
 * The handler only records the signal (async-signal-safe); the render acts on it at the next
 * iteration boundary, where every rank agrees that one of them was signalled, writes a
 * checkpoint and stops with exit status 75 (requeue me). Slurm sends SIGUSR1 ahead of a time
 * limit (--signal=B:USR1@120, forwarded by the batch script) and SIGTERM on preemption or
 * scancel; mpirun and srun forward both to every rank. */
#ifndef NST_SIGNALS_H
#define NST_SIGNALS_H

/* Install the handlers (after MPI_Init, so that they are ours and not the launcher library's). */
void nst_signals_install(void);
/* The signal received and not yet handled (SIGUSR1 or SIGTERM), or 0. */
int nst_signal_pending(void);
/* Its name, "SIGUSR1" / "SIGTERM" / "signal N". */
const char *nst_signal_name(int sig);

#endif

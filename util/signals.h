/* util/signals.h: SIGUSR1 and SIGTERM (and, without a launcher, Ctrl-C) ask for a checkpoint and a
 * clean stop.
 *
 * The handler only records the signal (async-signal-safe); the render acts on it at the next
 * iteration boundary, where every rank agrees that one of them was signalled, writes a
 * checkpoint and stops with exit status 75 (requeue me). Slurm sends SIGUSR1 ahead of a time
 * limit (--signal=B:USR1@120, forwarded by the batch script) and SIGTERM on preemption or
 * scancel; mpirun and srun forward both to every rank. A run without a launcher (started from a
 * terminal) takes Ctrl-C the same way, since no mpirun turns it into SIGTERM: the first stops the
 * run at the next boundary, with a checkpoint; the second stops it at once. */
#ifndef NST_SIGNALS_H
#define NST_SIGNALS_H

/* Install the handlers (after MPI_Init, so that they are ours and not the launcher library's). */
void nst_signals_install(void);
/* For a run without a launcher, after nst_signals_install: SIGINT (Ctrl-C) asks for the stop too,
 * and a second SIGINT ends the process at once. (mpirun keeps each rank out of the terminal's
 * process group and sends the ranks SIGTERM on Ctrl-C.) */
void nst_signals_install_interrupt(void);
/* The signal received and not yet handled (SIGUSR1, SIGTERM or SIGINT), or 0. */
int nst_signal_pending(void);
/* Its name, "SIGUSR1" / "SIGTERM" / "SIGINT (Ctrl-C)" / "signal N". */
const char *nst_signal_name(int sig);

#endif

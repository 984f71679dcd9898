/* util/signals.h: SIGUSR1, SIGTERM, SIGHUP and SIGINT (Ctrl-C) ask for a checkpoint and a clean
 * stop.
 *
 * The handler only records the signal (async-signal-safe); the render acts on it at the next
 * iteration boundary, where every rank agrees that one of them was signalled, writes a
 * checkpoint and stops with exit status 75 (requeue me). Slurm sends SIGUSR1 ahead of a time
 * limit (--signal=B:USR1@120, forwarded by the batch script) and SIGTERM on preemption or
 * scancel; mpirun and srun forward both to every rank. Ctrl-C, where it reaches the ranks (a run
 * without a launcher, started from a terminal; `srun -X`, which forwards it), is taken the same
 * way: the first stops the run at the next boundary, with a checkpoint; the second stops it at
 * once. (srun's default double Ctrl-C sends SIGINT too, but kills the step straight after.)
 * SIGHUP (a run without a launcher whose terminal or ssh session closed; mpirun sends its ranks
 * SIGTERM for it) stops the same way, so a lost session leaves a checkpoint; under nohup it stays
 * ignored. SIGPIPE is ignored: a reader of the output that has gone loses the lines, not the run. */
#ifndef NST_SIGNALS_H
#define NST_SIGNALS_H

/* Install the handlers of SIGUSR1, SIGTERM and SIGHUP, and ignore SIGPIPE (again after MPI_Init,
 * so that they are ours and not the launcher library's). */
void nst_signals_install(void);
/* Once a stop can be checkpointed (the render's jobs about to run): SIGINT (Ctrl-C) asks for the
 * stop too (`says`: and this process says so on stderr: rank 0), and one more, a second or more
 * later, ends the process at once; an ignored SIGINT (a script's background job) stays ignored. A
 * terminal's Ctrl-C reaches a run without a launcher itself; `srun -X` passes one on to its tasks
 * (its default double Ctrl-C also sends SIGINT, then kills the step at once); mpirun keeps its
 * ranks out of the terminal's process group and sends them SIGTERM. The first signal received names the stop. */
void nst_signals_install_interrupt(int says);
/* The signal received and not yet handled (SIGUSR1, SIGTERM, SIGHUP or SIGINT), or 0. */
int nst_signal_pending(void);
/* Its name, "SIGUSR1" / "SIGTERM" / "SIGINT (Ctrl-C)" / "SIGHUP (its terminal closed)" / "signal N". */
const char *nst_signal_name(int sig);

#endif

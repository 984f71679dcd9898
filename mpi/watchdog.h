/* mpi/watchdog.h: a multi-rank job that stops making progress, or loses a rank, ends with one
 * line and exit status 75 (requeue me) instead of waiting in a collective until the wall-clock
 * limit (docs/CHECKPOINTS.md, "A lost node, a stalled network").
 *
 * Every rank of a world of two or more runs a watchdog thread, started by nst_comm_init and
 * stopped by nst_comm_finalize, with a lifeline to world rank 0 beside MPI (lifeline.h). The
 * render loop reports its progress through the four calls below, and the job names its other
 * phases (nst_watchdog_phase). The thread ends the job when
 * - a rank's process is gone (its lifeline closed without a goodbye): rank 0 names the ranks and
 *   their host;
 * - no iteration has finished for run.stall_timeout seconds: rank 0 asks every rank whether it
 *   is alive and what it does, names the ranks that do not answer (stopped, or cut off by the
 *   network) and ends the job; while a rank answers that it is computing (not waiting in MPI), or
 *   began its wait lately, the iteration is slow but moving and the watchdog waits on;
 * - outside the loops (from the end of the ranks' first exchange, which first_contact.c bounds):
 *   a wait inside MPI passes the phase's limit, and rank 0's questions find a rank silent, or
 *   every rank waiting inside MPI; or rank 0's own questions, once per limit, find a rank silent.
 * Rank 0 lost or silent: the deputy (the lowest rank on another host) says so, and a rank that
 * found it says so itself where the job has not ended 10 s later. A tick more than 10 s late (the
 * job suspended) starts the clocks again. The clocks and the rules are in watchdog_clock.c.
 * It ends the job with MPI_Abort(75) (and _exit(75) if that does not return in time: a rank cut
 * off from its launcher). The line goes to stderr and, when NSTBATCH_END_NOTE names a file, to
 * that file as "75 LINE": tools/nstbatch-mpirun and slurm/launch.sh read it, so that the user sees
 * 75 even where mpirun itself cannot end (a daemon it cannot reach). */
#ifndef NST_WATCHDOG_H
#define NST_WATCHDOG_H

/* The iterations of a render loop begin: `where` names it in the messages ("level 2"), it0 is its
 * first iteration, setting is run.stall_timeout (0: auto, nst_watchdog_limit). */
void nst_watchdog_arm(double setting, const char *where, long long it0);
/* Iteration `done` has finished (its checkpoint and preview included). */
void nst_watchdog_beat(long long done);
/* The loop has ended: the watch goes on as the phase "after LEVEL, iteration N" (the outputs, the
 * next level's or job's set-up, a clip's work between frames). */
void nst_watchdog_disarm(void);

/* A phase outside the render loops begins (`what` names it in the messages, with its preposition:
 * "in the set-up (...)"). Phases have no iterations to count, so there the watch is on MPI itself:
 * a rank whose one marked MPI wait (comm.c, nccl.c) has gone on past nst_watchdog_phase_limit
 * without a request completing asks rank 0, which ends the job when a rank does not answer, or
 * when every rank has waited inside MPI for half that limit or more (a network that stopped);
 * while a rank computes, or came out of MPI more recently, the job is moving. Rank 0 also asks
 * every rank once per limit on its own, so that a stopped rank is found however the others wait
 * (in HDF5's MPI-IO, say). A phase that `encloses` render loops of its own (the self-test) is
 * where their ends return to. `key` is the test hook's name for the phase:
 * NSTBATCH_FREEZE=RANK:KEY stops that rank (SIGSTOP) as the phase begins, RANK:KEY:SECONDS keeps
 * it computing that long; a comma-separated list sets several ranks. */
void nst_watchdog_phase(const char *key, const char *what, int encloses);
/* The test hook's stopped network (NSTBATCH_SLOW=RANK:ITERATION:hang, nst/render/render.c): this
 * rank waits as if inside MPI, for ever, until the job is ended. */
_Noreturn void nst_watchdog_hang(void);
/* run.stall_timeout (0: auto), once the config is read: the phases before the first loop use it. */
void nst_watchdog_setting(double setting);
/* A phase's limit: the larger of run.stall_timeout (setting, 0: auto) and auto's limit, so that a
 * limit set for short iterations does not judge a long broadcast or gather. Pure. */
double nst_watchdog_phase_limit(double setting, double slowest, int seen);
/* A round's answers (bit 31: inside MPI; below it, seconds in that state) say the job is moving:
 * a rank is computing, or has been inside MPI for less than half the limit; in a loop and in a phase
 * alike. Every rank answered (a silent rank is a stall either way); mine is rank 0's own state. Pure.
 * nst_watchdog_slow: the answer of a rank that has computed for half the limit or more (the slow
 * iteration's rank the warning names). */
int nst_watchdog_moving(double limit, unsigned mine, const unsigned *state, int n);
int nst_watchdog_slow(double limit, unsigned st);
/* What a run started again resumes from, for the messages ("the checkpoint of level 1, iteration
 * 60 in ck is in force"). */
void nst_watchdog_saved(const char *what);

/* The seconds without a finished iteration after which the job stalls: setting when it is > 0;
 * auto (0): 20 times the slowest iteration seen so far, at least 5 minutes, and 30 minutes before
 * the first iteration has finished (it warms up: JIT, autotuning, first touches). Pure. */
double nst_watchdog_limit(double setting, double slowest, int seen);
/* This rank's limit now (in a loop or a phase, as its clock judges; 0 when nothing is watched). */
double nst_watchdog_limit_now(void);

#endif

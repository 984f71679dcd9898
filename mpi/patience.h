/* mpi/patience.h: how a rank waits for the others without holding a core (patience.c).
 *
 * MPI's blocking calls spin: Open MPI 4.1 polls its progress engine until the request completes,
 * a core at 100 % for as long as the wait lasts. A rank waiting for a slow, stopped or cut-off
 * peer (until the watchdog's verdict: many seconds) then takes a core from the ranks at work
 * wherever ranks share cores (CPU ranks on a shared node, oversubscribed runs). nstbatch's waits
 * test the request instead: at once and over and over for the first `spin` seconds (SPIN, 2 ms),
 * so a wait among ranks in step ends as soon as it would in MPI_Wait, then between naps that grow
 * with the time waited (1/64 of it, 50 us to 2 ms), so a long wait ends at most about 1.6 % (and
 * never more than 2 ms) later than it could and costs a few hundred wake-ups a second.
 *
 * The spin itself follows the machine. Where the thread got less than half of its core while it
 * spun (another process was ready to run there: Open MPI's progress engine hands the core over
 * when asked to yield, the kernel at its tick), or more threads were ready to run than the
 * machine has cores (/proc/loadavg: the spinning core was one that another thread, often the
 * very peer this rank waits for, could have had), spinning slowed the others and this rank alike:
 * the thread's next spin is a quarter as long, down to SPIN_MIN; otherwise it doubles back to
 * SPIN. So ranks sharing cores with other work (oversubscribed runs, a busy node) nap at once,
 * and ranks with cores of their own spin as MPI would. Timing only: no result
 * depends on it. */
#ifndef NST_PATIENCE_H
#define NST_PATIENCE_H

#define NST_PATIENCE_SPIN 0.002     /* the longest spin: seconds of testing without a nap */
#define NST_PATIENCE_SPIN_MIN 1e-6  /* the shortest: a test or two (under contention every test
                                     * yields the core, Open MPI's progress asked to: measured, a
                                     * 20 us floor kept 40 % of the loss of spinning) */
#define NST_PATIENCE_SHARED 0.5     /* a spin with less than this share of its core: the core is shared */
#define NST_PATIENCE_NAP_MIN 50e-6  /* nanosleep's own slack is about this */
#define NST_PATIENCE_NAP_MAX 0.002
#define NST_PATIENCE_NAP_SHARE 64.0 /* a nap is the time waited over this */

/* Seconds to nap before the next test, after `waited` seconds of waiting with this thread's
 * `spin` (0: test at once). Pure. */
static inline double nst_patience_nap(double waited, double spin)
{
    if (!(waited >= spin)) return 0;
    double nap = waited / NST_PATIENCE_NAP_SHARE;
    return nap < NST_PATIENCE_NAP_MIN ? NST_PATIENCE_NAP_MIN : nap > NST_PATIENCE_NAP_MAX ? NST_PATIENCE_NAP_MAX : nap;
}

/* Whether a spin of `spun` seconds in which the thread ran `cpu` seconds spun on a shared core:
 * it got under half of it, or more threads were ready to run on the machine (`runnable`, this
 * one among them) than it has cores (`cores`): one of them waited for a core that spinning held.
 * Pure. */
static inline int nst_patience_shared(double spun, double cpu, int runnable, int cores)
{
    return cpu < NST_PATIENCE_SHARED * spun || (cores > 0 && runnable > cores);
}

/* The next spin after one of `spun` seconds (the wait's end or the spin's, whichever came first),
 * `shared` or not. Too short to tell (under SPIN_MIN): unchanged. Pure. */
static inline double nst_patience_spin(double spin, double spun, int shared)
{
    if (!(spun >= NST_PATIENCE_SPIN_MIN)) return spin;
    double next = shared ? spin / 4 : spin * 2;
    return next < NST_PATIENCE_SPIN_MIN ? NST_PATIENCE_SPIN_MIN : next > NST_PATIENCE_SPIN ? NST_PATIENCE_SPIN : next;
}

/* One wait's clocks: its start on the wall and on the thread's CPU, and whether its spin was judged. */
typedef struct {
    double t0, c0;
    int judged;
} nst_wait_clock;

/* The pacing above for a wait that is not an MPI request's (NCCL's, mpi/nccl.c): begin, then
 * after every test that found it unfinished, more (a return at once within the spin, else a
 * nap), and end once it is done (the spin judged for the thread's next wait). */
nst_wait_clock nst_patience_begin(void);
void nst_patience_more(nst_wait_clock *w);
void nst_patience_end(nst_wait_clock *w);

#endif

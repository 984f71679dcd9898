/* mpi/patience.h: how a rank waits for the others without holding a core (patience.c).
 *
 * MPI's blocking calls spin: Open MPI 4.1 polls its progress engine until the request completes,
 * a core at 100 % for as long as the wait lasts. A rank waiting for a slow, stopped or cut-off
 * peer (until the watchdog's verdict: many seconds) then takes a core from the ranks at work
 * wherever ranks share cores (CPU ranks on a shared node, oversubscribed runs). nstbatch's waits
 * test the request instead: at once and over and over for the first SPIN seconds, so a wait
 * among ranks in step ends as soon as it would in MPI_Wait, then between naps that grow with the
 * time waited (1/64 of it, 50 us to 2 ms), so a long wait ends at most about 1.6 % (and never more
 * than 2 ms) later than it could and costs a few hundred wake-ups a second. */
#ifndef NST_PATIENCE_H
#define NST_PATIENCE_H

#define NST_PATIENCE_SPIN 0.002     /* seconds of testing without a nap */
#define NST_PATIENCE_NAP_MIN 50e-6  /* nanosleep's own slack is about this */
#define NST_PATIENCE_NAP_MAX 0.002
#define NST_PATIENCE_NAP_SHARE 64.0 /* a nap is the time waited over this */

/* Seconds to nap before the next test, after `waited` seconds of waiting (0: test at once). Pure. */
static inline double nst_patience_nap(double waited)
{
    if (!(waited >= NST_PATIENCE_SPIN)) return 0;
    double nap = waited / NST_PATIENCE_NAP_SHARE;
    return nap < NST_PATIENCE_NAP_MIN ? NST_PATIENCE_NAP_MIN : nap > NST_PATIENCE_NAP_MAX ? NST_PATIENCE_NAP_MAX : nap;
}

#endif

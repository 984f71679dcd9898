/* mpi/first_contact.h: for the files of mpi/ (and its tests) only: the ranks' first exchanges over
 * MPI, made at the start and bounded in time (first_contact.c says why). */
#ifndef NST_FIRST_CONTACT_H
#define NST_FIRST_CONTACT_H

#include "../util/status.h"

/* The bound: begun before nst_comm_init's exchanges, ended after them. Past the limit below the
 * job ends with one line naming the ranks not met, and exit status 75. */
void nst_first_contact_begin(double init_seconds);
/* The limit, seconds: the watchdog's floor (5 minutes; its test hook lowers it), at least 20 s, and
 * at least 20 times this rank's MPI_Init (init_seconds), whole seconds. Pure. */
double nst_first_contact_limit(double floor, double init_seconds);
void nst_first_contact_end(void);
/* Every rank exchanges one message with each of its peers (below); collective on the world,
 * after nst_lifeline_open (whose host names the line uses). */
nst_status nst_first_contact_pairs(void);
/* The world ranks that rank `me` of `size` meets, ascending, into peer[] (room for size): every
 * other up to 256 ranks, else those at distances +-1, +-2, +-4, ... Symmetric. Pure. */
int nst_first_contact_peers(int me, int size, int *peer);

#endif

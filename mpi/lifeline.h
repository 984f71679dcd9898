/* mpi/lifeline.h: for the files of mpi/ only: a TCP connection from every rank to world rank 0,
 * beside MPI, for the watchdog (watchdog.c). A process that dies closes its end at once, whatever
 * killed it, so rank 0 learns which rank is gone while MPI only sees a collective that never ends
 * (or aborts the survivors before they can say a word); and the watchdogs can ask each other
 * whether a rank is alive while every rank's main thread is blocked inside MPI.
 *
 * Messages are fixed 8-byte records: a type letter and a 32-bit value. The links are best effort:
 * a rank that cannot reach rank 0 (a firewall, no common address) has none, and the watchdog
 * then judges by its own clock alone. */
#ifndef NST_LIFELINE_H
#define NST_LIFELINE_H

#include <stddef.h>
#include <stdint.h>

#include "../util/status.h"

typedef struct {
    char type;
    uint32_t value;
} nst_lifeline_msg;

/* Collective on the world (size >= 2): rank 0 listens, every other rank connects and is greeted.
 * Also gathers every rank's host name (nst_lifeline_host). A link that cannot be made is left out
 * without failing; only a failed MPI call fails. */
nst_status nst_lifeline_open(void);
void nst_lifeline_close(void);
/* The links: rank 0 has one per connected rank, the others one (to rank 0) or none. */
int nst_lifeline_count(void);
int nst_lifeline_fd(int i);
int nst_lifeline_peer(int i); /* the world rank at the far end */
/* The host name of world rank r (after nst_lifeline_open; "?" before). */
const char *nst_lifeline_host(int r);
/* "ranks 2, 3 on nsth-b; rank 5 on nsth-c": world ranks rank[0..n) grouped by host, in the order
 * of each host's first rank, into out (cap bytes, cut short at a whole entry). */
void nst_lifeline_ranks_by_host(const int *rank, int n, char *out, size_t cap);
/* Send one message on link i without blocking (dropped when the socket is full or gone). */
void nst_lifeline_send(int i, char type, uint32_t value);
/* Read what link i has: 1 with a whole message in *m, 0 when nothing more is there now, -1 when
 * the far end closed or failed. */
int nst_lifeline_read(int i, nst_lifeline_msg *m);

#endif

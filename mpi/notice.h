/* mpi/notice.h: "stop" notices between a batch's rank groups.
 *
 * Groups render different jobs without waiting for each other, so no collective can tell them
 * that a job elsewhere failed (batch.on_error = stop). Instead the failing group's rank 0 posts a
 * notice to every other group's rank 0 (one small non-blocking message on the world), and each
 * group's rank 0 looks for notices before it starts a job. nst_notice_finish, collective on the
 * world once every group is done, receives the notices still in flight and completes the sends,
 * so none is left behind at MPI_Finalize. */
#ifndef NST_NOTICE_H
#define NST_NOTICE_H

#include "../util/status.h"

/* Post a notice to world rank `to` (never blocks). */
nst_status nst_notice_post(int to);
/* 1 when a notice has reached this rank (received without blocking), else 0. */
int nst_notice_received(void);
/* Collective on the world: drain and complete every notice. */
nst_status nst_notice_finish(void);

#endif

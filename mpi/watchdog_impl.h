/* mpi/watchdog_impl.h: for watchdog.c and watchdog_clock.c only: the render's clock and this
 * rank's state inside or outside MPI (watchdog_clock.c), as the watchdog's thread reads them. */
#ifndef NST_WATCHDOG_IMPL_H
#define NST_WATCHDOG_IMPL_H

#include <stddef.h>
#include <stdint.h>

#define WD_AUTO_FACTOR 20 /* auto: this many times the slowest iteration (watchdog.h) */

/* What the thread reads of the clock at a tick. */
typedef struct {
    double since;   /* seconds this rank's clock has run (-1: not armed); in a phase only while inside MPI */
    double limit;   /* this rank's limit now */
    int phase;      /* between the loops */
    char how[256];  /* the limit, in words */
    char where[400]; /* "at level 1, iteration 41", or the phase's words */
} wd_clock;

/* The test hook NSTBATCH_STALL_FLOOR, read once (the thread never calls getenv: the self-test
 * sets variables while it runs); called by nst_watchdog_start before the thread starts. */
void wd_floor_read(void);
void wd_clock_read(wd_clock *c);
/* Restart the clock without counting the wait as an iteration (rank 0 found the job moving, or
 * the whole job was suspended). */
void wd_clock_extend(void);
/* What a run started again resumes from, in words. */
void wd_saved_read(char *out, size_t cap);
/* This rank's state for a ping's answer: bit 31 set while inside MPI, the seconds since this rank
 * last entered or left MPI (or, inside, since a request of its wait completed) below. */
uint32_t wd_my_state(void);
/* Restart the MPI-state clock at the thread's start. */
void wd_mpi_reset(void);

#endif

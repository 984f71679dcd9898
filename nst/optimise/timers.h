/* nst/optimise/timers.h: named per-phase timers of the render loop (CoMD style). Each rank accumulates
 * seconds per phase; the run reports min, max and mean over ranks. A collective phase includes
 * the wait for the slowest rank, which is where load imbalance shows. */
#ifndef NST_TIMERS_H
#define NST_TIMERS_H

#include "../../kernels/backend.h"
#include "../../util/timer.h"

enum {
    NST_T_EXCHANGE,    /* halo exchange (and cheap-mode blending) */
    NST_T_FORWARD,     /* network forward of the tiles, Gram sums */
    NST_T_GRAM_REDUCE, /* the Gram allreduce, with the wait for the other ranks */
    NST_T_BACKWARD,    /* loss seeding and the input-gradient backward */
    NST_T_REDUCE,      /* scalar loss sums across ranks */
    NST_T_OPTIM,       /* gradient extraction and the Adam step */
    NST_T_COUNT
};

typedef struct {
    double t[NST_T_COUNT];
    /* Each phase ends at a stamp on the backend's queue, which adds the phase's time to the
     * backend's clock for it; the clocks are read in one wait at nst_timers_flush (a report). On
     * a GPU a phase is billed the time from the end of the last one's kernels to the end of its
     * own, with no wait per phase, so an iteration between two reports waits for nothing
     * (kernels/backend.h); on the CPU the clock is the host's. */
    nst_backend *be;
} nst_timers;

static inline const char *nst_timer_name(int i)
{
    static const char *names[NST_T_COUNT] = {"halo exchange", "forward", "Gram allreduce", "backward", "loss reduce", "optimiser"};
    return names[i];
}

static inline const char *nst_timer_key(int i)
{
    static const char *keys[NST_T_COUNT] = {"exchange", "forward", "gram_reduce", "backward", "reduce", "optimiser"};
    return keys[i];
}

/* Phase p ends when the work queued so far is done: its time since the previous lap or start is
 * added to it (tm may be NULL: nothing). */
void nst_timer_lap(nst_timers *tm, int p);
/* A phase starts now: the time since the last lap is no phase's (reports, checkpoints). */
void nst_timer_start(nst_timers *tm);
/* The backend's clocks added to the phases (one wait for the backend): before t[] is read. */
nst_status nst_timers_flush(nst_timers *tm);
/* Use be's clocks from now on; t[] is kept. */
nst_status nst_timers_use(nst_timers *tm, nst_backend *be);

#endif

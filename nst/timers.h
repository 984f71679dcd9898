/* nst/timers.h: named per-phase timers of the render loop (CoMD style). Each rank accumulates
 * seconds per phase; the run reports min, max and mean over ranks. A collective phase includes
 * the wait for the slowest rank, which is where load imbalance shows. */
#ifndef NST_TIMERS_H
#define NST_TIMERS_H

#include "../util/timer.h"

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

/* Add the time since *mark to phase p (tm may be NULL) and move the mark. */
static inline void nst_timer_lap(nst_timers *tm, int p, double *mark)
{
    double now = nst_now();
    if (tm) tm->t[p] += now - *mark;
    *mark = now;
}

#endif

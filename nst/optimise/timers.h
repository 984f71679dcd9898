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
    nst_backend *sync; /* a GPU backend whose stream each lap waits for; NULL on the CPU */
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

/* Add the time since *mark to phase p (tm may be NULL) and move the mark. A GPU backend's ops
 * only queue work on its stream, so the lap waits for the stream first: without it a phase's
 * kernels are billed to the next phase that waits for them (the forward's and the Grams' to the
 * Gram allreduce, Adam's to the next halo exchange). A sync costs microseconds, a phase
 * milliseconds. Its status is not needed here: a failed sync is a device fault, fatal to the job
 * (kernels/backend.h), and without the handler the stream's next op reports the sticky error. */
static inline void nst_timer_lap(nst_timers *tm, int p, double *mark)
{
    if (tm && tm->sync) (void)tm->sync->ops->synchronize(tm->sync);
    double now = nst_now();
    if (tm) tm->t[p] += now - *mark;
    *mark = now;
}

#endif

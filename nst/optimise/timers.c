/* nst/optimise/timers.c: the render's phase timers on the backend's clocks (see timers.h). */
#include "timers.h"

_Static_assert(NST_T_COUNT <= NST_CLOCKS, "a backend clock for every phase");

/* A failed stamp is a device fault (fatal to the job: kernels/backend.h); the phase then goes
 * unbilled. */
void nst_timer_lap(nst_timers *tm, int p)
{
    if (tm && tm->be) (void)tm->be->ops->stamp(tm->be, p);
}

void nst_timer_start(nst_timers *tm)
{
    if (tm && tm->be) (void)tm->be->ops->stamp(tm->be, -1);
}

nst_status nst_timers_flush(nst_timers *tm)
{
    if (!tm || !tm->be) return NST_OK;
    double sec[NST_T_COUNT];
    NST_TRY(tm->be->ops->clocks_read(tm->be, NST_T_COUNT, sec));
    for (int p = 0; p < NST_T_COUNT; p++) tm->t[p] += sec[p];
    return NST_OK;
}

nst_status nst_timers_use(nst_timers *tm, nst_backend *be)
{
    NST_TRY(nst_timers_flush(tm));
    tm->be = be;
    double stale[NST_T_COUNT]; /* what the clocks hold from before (another render's phases) */
    NST_TRY(be->ops->clocks_read(be, NST_T_COUNT, stale));
    return be->ops->stamp(be, -1);
}

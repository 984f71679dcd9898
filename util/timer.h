/* util/timer.h: monotonic wall clock in seconds. */
#ifndef NST_TIMER_H
#define NST_TIMER_H

#include <time.h>

static inline double nst_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

#endif

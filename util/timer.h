/* util/timer.h: monotonic wall clock in seconds, and a sleep of a given length. */
#ifndef NST_TIMER_H
#define NST_TIMER_H

#include <time.h>

static inline double nst_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Sleep `secs` seconds in all, resumed after signals (the tests' hooks: a rank busy that long). */
static inline void nst_sleep(double secs)
{
    struct timespec t = {(time_t)secs, (long)((secs - (double)(time_t)secs) * 1e9)};
    while (nanosleep(&t, &t) != 0) continue;
}

#endif

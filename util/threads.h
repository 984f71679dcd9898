/* util/threads.h: the OpenMP thread queries, also for code built without OpenMP (the fuzzers):
 * then there is one thread. */
#ifndef NST_THREADS_H
#define NST_THREADS_H

#ifdef _OPENMP
#include <omp.h>
static inline int nst_thread_num(void) { return omp_get_thread_num(); }
static inline int nst_max_threads(void) { return omp_get_max_threads(); }
#else
static inline int nst_thread_num(void) { return 0; }
static inline int nst_max_threads(void) { return 1; }
#endif

#endif

/* kernels/cpu/backend_cpu.h: opening the CPU backend (see kernels/backend.h for the interface). */
#ifndef NST_BACKEND_CPU_H
#define NST_BACKEND_CPU_H

#include "../backend.h"

/* threads: 0 = every core this process may use. */
nst_status nst_cpu_backend_open(int threads, nst_backend **out);

#endif

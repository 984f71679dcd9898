/* kernels/profile.h: per-op timing of a backend (NSTBATCH_PROFILE=1; see profile.c). */
#ifndef NST_PROFILE_H
#define NST_PROFILE_H

#include <stdio.h>

#include "backend.h"

/* Wrap be's compute ops with timers. */
nst_status nst_profile_attach(nst_backend *be);
/* Print the rows to f (NULL: nothing) and restore the real ops. */
void nst_profile_detach(nst_backend *be, FILE *f);

#endif

/* nst/optimise/host_step.h: a step of an iteration that runs on the host between ranks (the halo
 * exchange, the Gram sums added over ranks through the host), which a recorded iteration (CUDA
 * graphs, nst/render/recorded.h) cannot hold: it runs between two recorded segments instead.
 *
 * The code that has such a step calls nst_host_step(hook, fn, arg): with no hook, or no recording
 * under way, fn(arg) runs at once; while an iteration is recorded, the hook ends the segment
 * there, keeps fn(arg) to run at that point of every replay (it does not run now: nothing
 * recorded has run), and records the rest as the next segment. So fn must do the same thing at
 * every replay, with arg alive as long as the recording. */
#ifndef NST_HOST_STEP_H
#define NST_HOST_STEP_H

#include "../../util/status.h"

typedef nst_status (*nst_host_fn)(void *arg);

typedef struct nst_host_hook {
    nst_status (*at)(struct nst_host_hook *, nst_host_fn fn, void *arg);
} nst_host_hook;

static inline nst_status nst_host_step(nst_host_hook *hook, nst_host_fn fn, void *arg)
{
    return hook ? hook->at(hook, fn, arg) : fn(arg);
}

#endif

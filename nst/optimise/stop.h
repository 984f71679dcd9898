/* nst/optimise/stop.h: the stopping rule of a level (optim.stop_tolerance, .stop_window, .stop_min).
 *
 * A level ends early once its loss has stopped falling: after at least stop_min iterations (and two
 * windows), when the mean of the last `window` losses is within `tolerance` (a fraction) of the
 * mean of the `window` before them. Only a plateau fires it: a window with a spike, or a loss still
 * falling or climbing, differs by more; the minimum keeps a level from ending in its first
 * transient.
 *
 * The rule must end a level at the same iteration on every tiling, or tiled would not equal one
 * tile: it reads the total loss, which on the CPU is the same number whatever the tiling (the Gram
 * sums in fixed point; the content, TV and temporal sums exact, kernels/xsum.h; the rest computed
 * alike from them). Every rank holds the same terms (its sums are added exactly, or in rank order,
 * and the results broadcast), so every rank decides the same with no message.
 *
 * The history (the last two windows) is part of a checkpoint, so a resumed level stops where the
 * uninterrupted one would.
 */
#ifndef NST_STOP_H
#define NST_STOP_H

#include "../../util/status.h"

struct nst_ckpt_io;

typedef struct {
    double tolerance;   /* 0: the rule is off */
    int window;
    long long min;      /* iterations before it may fire */
    double *ring;       /* the last 2 windows of losses, oldest first once full */
    long long seen;     /* losses fed so far in this level */
    double last_drop;   /* the last relative drop computed (for the log), NAN before one */
} nst_stop;

/* The rule of a level: off when tolerance is 0 (no allocation). */
nst_status nst_stop_init(nst_stop *s, double tolerance, int window, long long min);
void nst_stop_free(nst_stop *s);
/* Feed the loss at iteration `seen` (the image before that iteration's step); 1: the level ends
 * here, before the step. */
int nst_stop_feed(nst_stop *s, double loss);
/* The history to a checkpoint record, or back (io's direction); nothing when the rule is off. */
nst_status nst_stop_state(nst_stop *s, const struct nst_ckpt_io *io);

#endif

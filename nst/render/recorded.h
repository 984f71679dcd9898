/* nst/render/recorded.h: an iteration recorded once as CUDA graphs and replayed (gpu.graphs).
 *
 * With one rank the whole iteration is one segment. With more, the steps that go between ranks
 * through the host (the halo exchange, the Gram sums added over ranks: nst/optimise/host_step.h)
 * cannot be recorded: each ends a segment and runs between two at every replay, so a replay is
 * segment, step, segment, ... in the recorded order, the same on every rank.
 *
 * The recording runs the iteration's host code once with the device work recorded, not run, and
 * the host steps kept, not run (their data does not exist yet); the caller then replays it, which
 * is that iteration's work. A failed recording ran nothing: the caller runs the iteration as it is. */
#ifndef NST_RECORDED_H
#define NST_RECORDED_H

#include "../optimise/objective.h" /* (the backend, and the host steps) */

typedef struct {
    int seg;        /* >= 0: launch this segment; -1: run the host step */
    nst_host_fn fn;
    void *arg;
} nst_recorded_item;

typedef struct {
    nst_host_hook hook; /* the host steps come through it (nst_recorded_hook); first: at() casts back */
    nst_backend *be;
    int split;          /* host steps end a segment (more than one rank); else they run in it */
    int recording;      /* between nst_recorded_begin and nst_recorded_end */
    int open, nseg, n;
    nst_recorded_item item[2 * NST_GRAPH_SEGMENTS];
} nst_recorded;

/* split: more than one rank (the same on every rank). */
void nst_recorded_init(nst_recorded *rc, nst_backend *be, int split);
nst_host_hook *nst_recorded_hook(nst_recorded *rc);

/* Recording: begin, the iteration's code (its host steps through the hook), end with that code's
 * status; NST_OK where every segment was recorded. */
nst_status nst_recorded_begin(nst_recorded *rc);
nst_status nst_recorded_end(nst_recorded *rc, nst_status s);

/* Whether the backend still holds every segment (a scratch buffer that grew drops them all). */
int nst_recorded_held(const nst_recorded *rc);

/* One replay: the segments launched and the host steps run in order. agree(actx, s) is called
 * before each host step but a first one and at the end with this rank's status, and returns
 * every rank's (so no rank enters a step between ranks while another has failed). */
nst_status nst_recorded_replay(nst_recorded *rc, nst_status (*agree)(void *actx, nst_status), void *actx);

#endif

/* nst/render/recorded.c: an iteration recorded as CUDA graph segments and replayed (see recorded.h). */
#include "recorded.h"

#include <string.h>

#include "../../util/plant.h"

static nst_status add(nst_recorded *rc, int seg, nst_host_fn fn, void *arg)
{
    if (rc->n == (int)(sizeof rc->item / sizeof rc->item[0]))
        return nst_fail(NST_ERUNTIME, "CUDA graphs: more than %d host steps in one iteration", NST_GRAPH_SEGMENTS - 1);
    rc->item[rc->n++] = (nst_recorded_item){seg, fn, arg};
    return NST_OK;
}

/* End the segment being recorded: it becomes the next item, unless nothing was recorded in it
 * (the backend then holds no segment for it). */
static nst_status close_segment(nst_recorded *rc)
{
    nst_backend *be = rc->be;
    rc->open = 0;
    NST_TRY(be->ops->graph_end(be));
    if (be->ops->graph_segments(be) == rc->nseg) return NST_OK;
    return add(rc, rc->nseg++, NULL, NULL);
}

static nst_status open_segment(nst_recorded *rc)
{
    if (rc->nseg == NST_GRAPH_SEGMENTS)
        return nst_fail(NST_ERUNTIME, "CUDA graphs: more than %d segments in one iteration", NST_GRAPH_SEGMENTS);
    NST_TRY(rc->be->ops->graph_begin(rc->be, rc->nseg));
    rc->open = 1;
    return NST_OK;
}

/* A host step: at once, unless it splits a recording (then kept for the replays, not run now). */
static nst_status at(nst_host_hook *hook, nst_host_fn fn, void *arg)
{
    nst_recorded *rc = (nst_recorded *)hook;
    if (!rc->recording || !rc->split) return fn(arg);
    NST_TRY(close_segment(rc));
    NST_TRY(add(rc, -1, fn, arg));
    return open_segment(rc);
}

void nst_recorded_init(nst_recorded *rc, nst_backend *be, int split)
{
    memset(rc, 0, sizeof *rc);
    rc->hook.at = at;
    rc->be = be;
    rc->split = split;
}

nst_host_hook *nst_recorded_hook(nst_recorded *rc) { return &rc->hook; }

nst_status nst_recorded_begin(nst_recorded *rc)
{
    rc->n = rc->nseg = 0;
    NST_TRY(open_segment(rc)); /* segment 0 drops what the backend held */
    rc->recording = 1;
    return NST_OK;
}

nst_status nst_recorded_end(nst_recorded *rc, nst_status s)
{
    rc->recording = 0;
    if (!rc->open) return s == NST_OK ? nst_fail(NST_ERUNTIME, "CUDA graphs: the recording ended without a segment open") : s;
    if (s != NST_OK) {
        rc->open = 0;
        (void)rc->be->ops->graph_end(rc->be); /* ended in every case; s says why */
        return s;
    }
    NST_TRY(close_segment(rc));
    return rc->nseg > 0 ? NST_OK : nst_fail(NST_ERUNTIME, "CUDA graphs: the iteration recorded nothing");
}

int nst_recorded_held(const nst_recorded *rc)
{
    return rc->nseg > 0 && rc->be->ops->graph_segments(rc->be) == rc->nseg;
}

nst_status nst_recorded_replay(nst_recorded *rc, nst_status (*agree)(void *actx, nst_status), void *actx)
{
    nst_backend *be = rc->be;
    nst_status s = NST_OK;
    int steps = 0;
    for (int i = 0; i < rc->n; i++) {
        const nst_recorded_item *it = &rc->item[i];
        if (it->seg >= 0) {
            int launched = 0;
            if (s == NST_OK) s = be->ops->graph_launch(be, it->seg, &launched);
            if (s == NST_OK && !launched) /* dropped in the middle: a host step grew a scratch buffer */
                s = nst_fail(NST_ERUNTIME, "CUDA graphs: segment %d of the recorded iteration was dropped during its replay", it->seg);
            continue;
        }
        if (i > 0) s = agree(actx, s); /* every rank enters the step, or none (a launch or a step may have failed) */
        if (s != NST_OK) return s;
        if (steps++ > 0 && nst_planted("graphstep")) continue; /* planted: a step missed in the replays (the tests must catch it) */
        s = it->fn(it->arg);
    }
    return agree(actx, s);
}

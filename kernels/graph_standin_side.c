/* kernels/graph_standin_side.c: the CUDA backend's side stream on the CPU (NSTBATCH_CUDA_OVERLAP=1;
 * kernels/backend.h: side, join), for the graph stand-in (see graph_standin.h). */
#include "../util/mem.h"
#include "graph_standin_impl.h"

/* A GPU runs the side's Gram sums at any time between their fork (side(1): after the work queued
 * before) and the join; the stand-in runs them at the latest, at the join, so that a main-stream op
 * that reads the sums before the join (they are not there yet), or writes the features they read
 * (they read the new values), changes the render, and a missing join shows. The ops held back are
 * recorded at the join while an iteration is recorded, as a capture follows the join's event. */
static nst_status s_side(nst_backend *be, int on)
{
    struct nst_graph_standin *g = G(be);
    if (on && g->side_open) return nst_fail(NST_ERUNTIME, "graph stand-in: the side stream opened twice");
    g->side_open = on;
    return NST_OK;
}

nst_status gs_side_join(nst_backend *be)
{
    struct nst_graph_standin *g = G(be);
    nst_status s = g->side_status;
    rec_list l = g->side; /* taken off first: an op run here that joined again would find it empty */
    g->side = (rec_list){0};
    g->side_status = NST_OK;
    for (size_t i = 0; s == NST_OK && i < l.n; i++) {
        if (g->recording) {
            rec *r = gs_add(g, l.v[i].op);
            if (!r) s = NST_ENOMEM;
            else *r = l.v[i];
        } else {
            s = gs_replay(be, &l.v[i]);
        }
    }
    l.n = 0;
    if (!g->side.v) g->side = l; /* the list's memory kept for the next */
    else nst_free(l.v);
    return s;
}

static nst_status s_join(nst_backend *be)
{
    if (G(be)->side_open) return gs_off_side("join");
    return gs_side_join(be);
}

/* a free joins first, as the CUDA backend's: the side may still read the buffer */
static void s_free(nst_backend *be, void *ptr)
{
    struct nst_graph_standin *g = G(be);
    if (ptr && g->side.n) {
        nst_status s = gs_side_join(be);
        if (g->side_status == NST_OK) g->side_status = s;
    }
    REAL(be)->free(be, ptr);
}

void gs_side_install(nst_backend_ops *o) { o->side = s_side, o->join = s_join, o->free = s_free; }

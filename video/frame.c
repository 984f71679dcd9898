/* video/frame.c: one frame on the current group (see frame.h). */
#include "frame.h"

#include <stdlib.h>
#include <string.h>

#include "../io/image/source.h"
#include "../mpi/comm.h"
#include "../util/mem.h"
#include "../util/timer.h"

/* The result's cores, from the ranks that own them to rank 0's whole image (tile order: each
 * rank sends its tiles in increasing order, which is the order rank 0 receives them in). */
static nst_status gather(const nst_layout *L, float **cores, int W, int H, nst_image *out)
{
    const int me = nst_comm_rank();
    nst_status s = me == 0 ? nst_image_alloc(out, W, H) : NST_OK;
    s = nst_comm_agree(s);
    if (s != NST_OK) return s;
    float *buf = NULL;
    for (int t = 0, li = 0; s == NST_OK && t < L->grid.ntiles; t++) {
        nst_rect core = nst_grid_core(&L->grid, t);
        size_t bytes = (size_t)nst_rect_area(core) * 3 * sizeof(float);
        if (L->owner[t] == me && me != 0) s = nst_comm_send(cores[li], bytes, 0);
        if (me == 0 && L->owner[t] == 0) nst_image_place(out, core, cores[li]);
        if (me == 0 && L->owner[t] != 0) {
            float *b = realloc(buf, bytes);
            if (!b) nst_comm_abort(1, "out of memory receiving a frame's tiles");
            buf = b;
            s = nst_comm_recv(buf, bytes, L->owner[t]);
            if (s == NST_OK) nst_image_place(out, core, buf);
        }
        if (L->owner[t] == me) li++;
    }
    free(buf);
    return nst_comm_agree(s);
}

/* The frame's level plan: a cold frame's from the config (its pyramid), a warm frame's one level. */
static nst_status plan(const nst_frame_env *e, const nst_loss_spec *spec, int warm, long long its, nst_level_plan *p)
{
    if (!warm) return nst_comm_agree(nst_levels_plan(e->cfg, spec, e->W, e->H, e->W, e->H, p)); /* (a clip's frames: one size) */
    memset(p, 0, sizeof *p);
    p->n = 1, p->w[0] = e->W, p->h[0] = e->H, p->iterations[0] = its;
    return NST_OK;
}

/* Rank 0's in-memory sources: the content, the initial image, the temporal term's. */
static nst_status wrap_all(const nst_frame_inputs *fi, nst_inputs *in, nst_temporal_sources *ts)
{
    if (nst_comm_rank() != 0) return NST_OK;
    NST_TRY(nst_source_wrap(fi->content, "the frame", &in->content));
    if (fi->init) NST_TRY(nst_source_wrap(fi->init, "the previous result, warped", &in->init));
    if (fi->target) NST_TRY(nst_source_wrap(fi->target, "the temporal target", &ts->target));
    if (fi->c) NST_TRY(nst_source_wrap(fi->c, "the temporal weights", &ts->c));
    return NST_OK;
}

nst_status nst_frame_render(const nst_frame_env *e, const nst_frame_inputs *fi, nst_image *out, nst_frame_stats *st)
{
    double t0 = nst_now();
    memset(st, 0, sizeof *st);
    int flags[2] = {fi && fi->init, fi && fi->target}; /* rank 0 knows: warm, temporal */
    NST_TRY(nst_comm_bcast(flags, sizeof flags, 0));
    long long its = fi ? fi->iterations : 0;
    NST_TRY(nst_comm_bcast(&its, sizeof its, 0));
    nst_loss_spec spec = *e->spec;
    if (!flags[1]) spec.temporal_weight = 0;
    nst_config *cfg = nst_alloc(sizeof *cfg, "a frame's config");
    nst_status s = nst_comm_agree(cfg ? NST_OK : NST_ENOMEM);
    if (s != NST_OK) return s;
    *cfg = *e->cfg;
    if (flags[0]) snprintf(cfg->optim_init, sizeof cfg->optim_init, "image");
    /* optim.method = auto is Adam for a clip's frames: the temporal term, the warm starts and
     * their iteration counts were measured with it (bench/results/video.md), L-BFGS was not */
    if (strcmp(cfg->optim_method, "auto") == 0) snprintf(cfg->optim_method, sizeof cfg->optim_method, "adam");

    nst_inputs in;
    nst_temporal_sources ts = {NULL, NULL};
    memset(&in, 0, sizeof in);
    in.W = e->W, in.H = e->H;
    s = nst_comm_agree(wrap_all(fi, &in, &ts));
    nst_level_plan p;
    if (s == NST_OK) s = plan(e, &spec, flags[0], its, &p);
    nst_layout L;
    memset(&L, 0, sizeof L);
    float **cores = NULL;
    nst_level_report rep[NST_MAX_LEVELS];
    memset(rep, 0, sizeof rep);
    if (s == NST_OK) {
        if (e->progress) nst_progress_job(e->progress, "", p.n, p.w, p.h, p.iterations);
        nst_levels_ctx lc = {cfg, &spec, e->be, e->weights, e->shapes, e->coll, &in, e->styles, e->cache, e->budget,
                             NULL, e->progress, NULL, 0, 0, e->masks, flags[1] ? &ts : NULL};
        s = nst_levels_run(&lc, &p, &L, &cores, rep);
    }
    if (s == NST_OK) s = gather(&L, cores, e->W, e->H, out);
    if (s == NST_OK) {
        st->first = rep[0].first, st->last = rep[p.n - 1].last;
        for (int k = 0; k < p.n; k++) st->iterations += rep[k].iterations; /* taken: the stopping rule may cut them */
    }
    for (int i = 0; cores && i < L.nlocal; i++) nst_free(cores[i]);
    nst_free(cores);
    nst_layout_free(&L);
    nst_inputs_close(&in);
    nst_source_close(ts.target);
    nst_source_close(ts.c);
    nst_free(cfg);
    st->seconds = nst_now() - t0;
    return s;
}

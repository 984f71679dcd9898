/* video/unit.c: a unit's frames, one after another (see unit.h). Rank 0 of the group holds the
 * frames, the flows and the earlier results; the other ranks take part in each frame's render. */
#include "unit.h"

#include <stdio.h>
#include <string.h>

#include "../flow/warp.h"
#include "../mpi/comm.h"
#include "../mpi/notice.h"
#include "../util/log.h"
#include "../util/mem.h"
#include "../util/signals.h"
#include "../util/text.h"
#include "passes.h"
#include "temporal.h"

/* Rank 0's state across a unit's frames: the earlier results by r modulo the ring's size, and the
 * previous content frame (for the input's flicker). */
typedef struct {
    int size;
    nst_image result[NST_MAX_TEMPORAL + 1];
    long long have[NST_MAX_TEMPORAL + 1]; /* the r each slot holds, -1: none */
    nst_image prev_content;
} ring;

/* (r < 0: a frame before the clip, never held) */
static nst_image *ring_at(ring *g, long long r) { return r >= 0 && g->have[r % g->size] == r ? &g->result[r % g->size] : NULL; }

static void ring_free(ring *g)
{
    for (int k = 0; k <= NST_MAX_TEMPORAL; k++) nst_image_free(&g->result[k]);
    nst_image_free(&g->prev_content);
}

/* Resuming at frame `from`: the earlier results the temporal term needs, from their states. */
static nst_status ring_load(const nst_unit_ctx *u, ring *g, const nst_clip_unit *unit, long long from)
{
    for (int k = 0; k < u->fs->nj; k++) {
        long long r = from - u->fs->j[k];
        if (r < unit->start) break;
        nst_image *slot = &g->result[r % g->size];
        NST_TRY(nst_clip_store_state(u->store, r, u->fe->W, u->fe->H, slot));
        g->have[r % g->size] = r;
    }
    return NST_OK;
}

/* A warm frame's inputs: the temporal target and weights (c as gray RGB) and the initial image. */
static nst_status warm_inputs(const nst_unit_ctx *u, ring *g, const nst_fed_frame *fr, nst_image *init, nst_image *target, nst_image *c,
                              double *kept)
{
    const int W = u->fe->W, H = u->fe->H;
    nst_temporal_prev prev[NST_MAX_TEMPORAL];
    int n = 0;
    for (int k = 0; k < fr->nflows; k++) {
        const nst_image *res = ring_at(g, fr->r - u->fs->j[k]);
        if (!res) return nst_fail(NST_ERUNTIME, "frame %lld: the result of frame %lld is not at hand", fr->r, fr->r - u->fs->j[k]);
        prev[n++] = (nst_temporal_prev){u->fs->j[k], res->px, &fr->fwd[k], &fr->bwd[k]};
    }
    NST_TRY(nst_image_alloc(init, W, H));
    NST_TRY(nst_image_alloc(target, W, H));
    NST_TRY(nst_image_alloc(c, W, H));
    NST_TRY(nst_temporal_build(W, H, prev, n, fr->frame.px, target->px, c->px + (size_t)2 * W * H, init->px, kept));
    nst_temporal_weights_rgb(c->px, (size_t)W * H);
    return NST_OK;
}

/* A finished frame on rank 0: into the store, its flicker measured, on the log, into the ring. */
static nst_status finish_frame(const nst_unit_ctx *u, ring *g, const nst_clip_unit *unit, nst_fed_frame *fr, nst_image *res,
                               const nst_frame_stats *st, double kept)
{
    const long long r = fr->r;
    if (u->passes > 1) { /* the later passes read them back; the frame's image comes after the last */
        NST_TRY(nst_clip_store_put_inputs(u->store, r, &fr->frame, fr->nflows ? &fr->fwd[0] : NULL, fr->nflows ? &fr->bwd[0] : NULL));
        NST_TRY(nst_clip_store_put_pass(u->store, 1, r, res));
    } else {
        NST_TRY(nst_clip_store_put(u->store, r, res));
    }
    nst_clip_totals *t = u->tot;
    t->frames++, t->render_seconds += st->seconds, t->flow_seconds += fr->flow_seconds, t->decode_seconds += fr->decode_seconds;
    char fl[200] = "", ev[800], evf[300] = "", n[5][NST_JSON_NUM];
    const nst_image *prev = ring_at(g, r - 1);
    const int measured = fr->nflows > 0 && prev && g->prev_content.px;
    double errs[4] = {0, 0, 0, 0}; /* the result's and the input's, Ruder's and Lai's */
    if (measured) { /* along the flow to the previous frame */
        const float *cur[2] = {res->px, fr->frame.px}, *before[2] = {prev->px, g->prev_content.px};
        nst_flicker fk[2];
        NST_TRY(nst_flicker_along(&fr->fwd[0], &fr->bwd[0], 2, cur, before, fk));
        const nst_flicker out = fk[0], in = fk[1];
        errs[0] = out.ruder, errs[1] = out.lai, errs[2] = in.ruder, errs[3] = in.lai;
        t->flicker_ruder += out.ruder, t->flicker_lai += out.lai, t->floor_ruder += in.ruder, t->floor_lai += in.lai, t->measured++;
        snprintf(fl, sizeof fl, "; warping error %.3e (input %.3e), Lai %.3e (input %.3e)", out.ruder, in.ruder, out.lai, in.lai);
        snprintf(evf, sizeof evf, ", \"warping_error\": %s, \"warping_error_lai\": %s, \"input_warping_error\": %s, "
                 "\"input_warping_error_lai\": %s", nst_json_num(n[0], "%.6e", out.ruder), nst_json_num(n[1], "%.6e", out.lai),
                 nst_json_num(n[2], "%.6e", in.ruder), nst_json_num(n[3], "%.6e", in.lai));
    }
    snprintf(ev, sizeof ev, "\"frame\": %lld, \"shot\": %d, \"cold\": %s, \"iterations\": %lld, \"loss\": %s, \"content\": %s, "
             "\"style\": %s, \"tv\": %s, \"temporal\": %s, \"seconds\": %.3f, \"flow_seconds\": %.3f%s", r, unit->shot,
             r == unit->start ? "true" : "false", st->iterations, nst_json_num(n[0], "%.6e", st->last.total),
             nst_json_num(n[1], "%.6e", st->last.content), nst_json_num(n[2], "%.6e", st->last.style), nst_json_num(n[3], "%.6e", st->last.tv),
             nst_json_num(n[4], "%.6e", st->last.temporal), st->seconds, fr->flow_seconds, evf);
    nst_progress_event(u->fe->progress, "frame", ev);
    nst_progress_frame(u->fe->progress, t->frames, u->total_frames, measured ? errs : NULL);
    nst_info("frame %lld/%lld (shot %d%s): %lld its, loss %.4e -> %.4e (style %.3e, content %.3e, temporal %.3e, %.0f%% held), %.2f s, "
             "flow %.2f s%s\n", r + 1, u->total_frames, unit->shot + 1, r == unit->start ? ", cold" : "", st->iterations, st->first.total,
             st->last.total, st->last.style, st->last.content, st->last.temporal, 100 * kept, st->seconds, fr->flow_seconds, fl);
    const long long old = r - g->size + 1; /* no later frame of the unit holds to it */
    if (old >= unit->start && u->passes == 1) nst_clip_store_drop_state(u->store, old);
    nst_image *slot = &g->result[r % g->size];
    nst_image_free(slot);
    *slot = *res, g->have[r % g->size] = r;
    memset(res, 0, sizeof *res);
    nst_image_free(&g->prev_content);
    g->prev_content = fr->frame;
    memset(&fr->frame, 0, sizeof fr->frame);
    return NST_OK;
}

/* A signal here or another group's notice: every rank of the group learns it. */
nst_status nst_unit_stop_asked(void)
{
    int st = nst_comm_rank() == 0 ? nst_signal_pending() : 0;
    if (nst_comm_rank() == 0 && !st && nst_notice_received()) st = -1;
    NST_TRY(nst_comm_bcast(&st, sizeof st, 0));
    if (!st) return NST_OK;
    return nst_fail(NST_EINTERRUPTED, "stopped by %s at a frame boundary: the finished frames are kept in video.work; run the same command "
                    "again to resume", st > 0 ? nst_signal_name(st) : "another group");
}

/* Frame fr (rank 0's; NULL elsewhere) rendered and finished. */
static nst_status one_frame(const nst_unit_ctx *u, ring *g, const nst_clip_unit *unit, nst_fed_frame *fr)
{
    nst_image init = {0}, target = {0}, c = {0}, res = {0};
    nst_frame_inputs fi = {0};
    double kept = 0;
    nst_status s = NST_OK;
    if (fr) {
        int warm = u->temporal && fr->r > unit->start;
        if (warm) s = warm_inputs(u, g, fr, &init, &target, &c, &kept);
        fi = (nst_frame_inputs){&fr->frame, warm ? &init : NULL, warm ? &target : NULL, warm ? &c : NULL, u->warm_iterations};
    }
    s = nst_comm_agree(s);
    nst_frame_stats st;
    if (s == NST_OK) s = nst_frame_render(u->fe, fr ? &fi : NULL, &res, &st);
    nst_image_free(&init), nst_image_free(&target), nst_image_free(&c);
    if (s == NST_OK && fr) s = finish_frame(u, g, unit, fr, &res, &st, kept);
    nst_image_free(&res);
    return nst_comm_agree(s);
}

/* Rank 0: the unit's first frame not done in the first pass (with several passes: whose first
 * pass's result is not kept), or the unit's end when every frame's image is there. */
static long long first_undone(const nst_unit_ctx *u, const nst_clip_unit *unit)
{
    const long long end = unit->start + unit->count;
    long long r = unit->start;
    while (r < end && nst_clip_store_done(u->store, r)) r++;
    if (r == end || u->passes == 1) return r;
    for (r = unit->start; r < end && nst_clip_store_has_pass(u->store, 1, r);) r++;
    return r;
}

nst_status nst_unit_render(const nst_unit_ctx *u, const nst_clip_unit *unit)
{
    const int root = nst_comm_rank() == 0;
    const long long end = unit->start + unit->count;
    long long from = root ? first_undone(u, unit) : 0;
    int images = root && u->passes > 1 && from == end && nst_clip_store_done(u->store, end - 1); /* all there: the unit is done */
    NST_TRY(nst_comm_bcast(&from, sizeof from, 0));
    NST_TRY(nst_comm_bcast(&images, sizeof images, 0));
    if (from == end) return u->passes > 1 && !images ? nst_passes_run(u, unit) : NST_OK;
    if (from > unit->start) nst_info("shot %d: resuming at frame %lld (frames %lld-%lld are done)\n", unit->shot + 1, from + 1, unit->start + 1, from);
    ring g;
    memset(&g, 0, sizeof g);
    g.size = (u->fs->nj ? u->fs->j[u->fs->nj - 1] : 0) + 1;
    for (int k = 0; k <= NST_MAX_TEMPORAL; k++) g.have[k] = -1;
    nst_feeder *fd = NULL;
    nst_status s = root && u->temporal ? ring_load(u, &g, unit, from) : NST_OK;
    if (s == NST_OK && root) s = nst_feeder_start(u->fs, unit->start, from, end, &fd);
    s = nst_comm_agree(s);
    for (long long r = from; s == NST_OK && r < end; r++) {
        s = nst_unit_stop_asked();
        nst_fed_frame *fr = NULL;
        if (s == NST_OK && root) s = nst_feeder_next(fd, &fr);
        s = nst_comm_agree(s);
        if (s == NST_OK) s = one_frame(u, &g, unit, fr);
        nst_fed_frame_free(fr);
    }
    nst_feeder_stop(fd);
    if (s == NST_OK && root && u->passes == 1) /* the unit is done: no frame needs its states any more */
        for (long long r = end - g.size; r < end; r++)
            if (r >= unit->start) nst_clip_store_drop_state(u->store, r);
    ring_free(&g);
    if (s == NST_OK && u->passes > 1) s = nst_passes_run(u, unit);
    return s;
}

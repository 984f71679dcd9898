/* video/passes.c: the passes after the first (see passes.h). */
#include "passes.h"

#include <string.h>

#include "../flow/warp.h"
#include "../mpi/comm.h"
#include "../util/log.h"
#include "temporal.h"

/* Rank 0: frame r's inputs in pass `pass` going `dir` (-1: backward) from neighbour nb: the
 * temporal target and weights (c gray in RGB) and the start, its last result blended towards the
 * neighbour's warped one. */
static nst_status inputs(const nst_unit_ctx *u, int pass, int dir, long long r, const nst_image *nb, nst_image *content, nst_image *init,
                         nst_image *target, nst_image *c)
{
    const int W = u->fe->W, H = u->fe->H;
    nst_flow f = {0}, b = {0}; /* stored with frame k: k - 1 -> k (f) and back (b) */
    nst_image last = {0};
    long long k = dir < 0 ? r + 1 : r;
    nst_status s = nst_clip_store_inputs(u->store, r, W, H, content, NULL, NULL);
    if (s == NST_OK) s = nst_clip_store_inputs(u->store, k, W, H, NULL, &f, &b);
    if (s == NST_OK) s = nst_clip_store_pass(u->store, pass - 1, r, W, H, &last);
    if (s == NST_OK) s = nst_image_alloc(init, W, H);
    if (s == NST_OK) s = nst_image_alloc(target, W, H);
    if (s == NST_OK) s = nst_image_alloc(c, W, H);
    if (s == NST_OK) { /* the neighbour is the earlier frame: fwd from it to r, bwd from r to it */
        nst_temporal_prev p = {1, nb->px, dir < 0 ? &b : &f, dir < 0 ? &f : &b};
        const float *c1 = c->px + (size_t)2 * W * H; /* the weights, one per pixel, until spread to RGB */
        s = nst_temporal_build(W, H, &p, 1, content->px, target->px, c->px + (size_t)2 * W * H, init->px, NULL);
        for (size_t q = 0; s == NST_OK && q < (size_t)W * H; q++) {
            float a = (float)u->pass_blend * c1[q];
            for (int ch = 0; ch < 3; ch++) init->px[3 * q + ch] = last.px[3 * q + ch] + a * (target->px[3 * q + ch] - last.px[3 * q + ch]);
        }
        if (s == NST_OK) nst_temporal_weights_rgb(c->px, (size_t)W * H);
    }
    nst_flow_free(&f), nst_flow_free(&b);
    nst_image_free(&last);
    return s;
}

/* Frame r of pass `pass`: skipped when done (its result read for the next), kept as it was for the
 * pass's first, else rendered. nb: rank 0's neighbour result, replaced by r's. Collective. */
static nst_status one(const nst_unit_ctx *u, int pass, int dir, long long r, int first, nst_image *nb)
{
    const int root = nst_comm_rank() == 0, W = u->fe->W, H = u->fe->H;
    int what = root ? (nst_clip_store_has_pass(u->store, pass, r) ? 1 : first ? 2 : 0) : 0;
    NST_TRY(nst_comm_bcast(&what, sizeof what, 0));
    nst_image res = {0};
    nst_status s = NST_OK;
    if (what) { /* done, or the pass's first: its result as it is */
        if (root) s = nst_clip_store_pass(u->store, what == 1 ? pass : pass - 1, r, W, H, &res);
        if (root && s == NST_OK && what == 2) s = nst_clip_store_put_pass(u->store, pass, r, &res);
    } else {
        nst_image content = {0}, init = {0}, target = {0}, c = {0};
        if (root) s = inputs(u, pass, dir, r, nb, &content, &init, &target, &c);
        s = nst_comm_agree(s);
        nst_frame_inputs fi = {&content, &init, &target, &c, u->pass_iterations};
        nst_frame_stats st;
        if (s == NST_OK) s = nst_frame_render(u->fe, root ? &fi : NULL, &res, &st);
        if (s == NST_OK && root) s = nst_clip_store_put_pass(u->store, pass, r, &res);
        if (s == NST_OK)
            nst_info("pass %d (%s) frame %lld/%lld: %lld its, loss %.4e -> %.4e (style %.3e, temporal %.3e), %.2f s\n", pass,
                     dir < 0 ? "backward" : "forward", r + 1, u->total_frames, st.iterations, st.first.total, st.last.total, st.last.style,
                     st.last.temporal, st.seconds);
        nst_image_free(&content), nst_image_free(&init), nst_image_free(&target), nst_image_free(&c);
    }
    if (root && s == NST_OK) {
        nst_image_free(nb);
        *nb = res;
    } else {
        nst_image_free(&res);
    }
    return nst_comm_agree(s);
}

/* The warping error of result x of frame r against the previous frame's, px, along the flows
 * stored with frame r. */
static nst_status pair_error(const nst_unit_ctx *u, long long r, const nst_image *x, const nst_image *px, nst_flicker *e)
{
    nst_flow f = {0}, b = {0};
    nst_status s = nst_clip_store_inputs(u->store, r, u->fe->W, u->fe->H, NULL, &f, &b);
    if (s == NST_OK) s = nst_flicker_along(&f, &b, 1, (const float *const[]){x->px}, (const float *const[]){px->px}, e);
    nst_flow_free(&f), nst_flow_free(&b);
    return s;
}

/* Rank 0: the last pass's results as the frames' images (their warping error on the log), then the
 * unit's pass files removed. */
static nst_status finish(const nst_unit_ctx *u, const nst_clip_unit *unit)
{
    const long long end = unit->start + unit->count;
    nst_status s = NST_OK;
    nst_image prev = {0};
    double sum = 0;
    for (long long r = unit->start; s == NST_OK && r < end; r++) {
        nst_image img = {0};
        nst_flicker e;
        s = nst_clip_store_pass(u->store, u->passes, r, u->fe->W, u->fe->H, &img);
        if (s == NST_OK) s = nst_clip_store_put_frame(u->store, r, &img);
        if (s == NST_OK && prev.px) {
            s = pair_error(u, r, &img, &prev, &e);
            sum += s == NST_OK ? e.ruder : 0;
        }
        nst_image_free(&prev);
        prev = img;
    }
    nst_image_free(&prev);
    if (s == NST_OK && unit->count > 1)
        nst_info("shot %d after %d passes: mean warping error %.4e over %lld frame pairs\n", unit->shot + 1, u->passes, sum / (double)(unit->count - 1),
                 unit->count - 1);
    for (long long r = unit->start; s == NST_OK && r < end; r++) nst_clip_store_drop_pass(u->store, u->passes, r);
    return s;
}

nst_status nst_passes_run(const nst_unit_ctx *u, const nst_clip_unit *unit)
{
    const long long n = unit->count;
    nst_status s = NST_OK;
    for (int pass = 2; s == NST_OK && pass <= u->passes; pass++) {
        const int dir = pass % 2 == 0 ? -1 : 1;
        nst_image nb = {0};
        for (long long k = 0; s == NST_OK && k < n; k++) {
            long long r = dir < 0 ? unit->start + n - 1 - k : unit->start + k;
            s = nst_unit_stop_asked();
            if (s == NST_OK) s = one(u, pass, dir, r, k == 0, &nb);
        }
        nst_image_free(&nb);
    }
    if (s == NST_OK) s = nst_comm_agree(nst_comm_rank() == 0 ? finish(u, unit) : NST_OK);
    return s;
}

/* nst/render/exchange.c: the halo exchange and the cheap mode's blend (see exchange.h). */
#include "exchange.h"

#include <stdlib.h>
#include <string.h>

#include "../../mpi/comm.h"
#include "../../util/mem.h"
#include "../../util/plant.h"

void nst_exchange_free(nst_backend *be, nst_exchange *ex)
{
    if (ex->npeers) (void)be->ops->synchronize(be); /* the last uploads from the receive buffers are done */
    for (int p = 0; p < ex->npeers; p++) {
        be->ops->host_free(be, ex->sendbuf[p]);
        be->ops->host_free(be, ex->recvbuf[p]);
        if (ex->dsend) be->ops->free(be, ex->dsend[p]);
        if (ex->drecv) be->ops->free(be, ex->drecv[p]);
    }
    nst_free(ex->dsend);
    nst_free(ex->drecv);
    for (int i = 0; ex->stage && i < ex->ntr; i++) nst_free(ex->stage[i]);
    nst_free(ex->stage);
    nst_free(ex->from);
    nst_free(ex->sendbuf);
    nst_free(ex->recvbuf);
    nst_free(ex->sendn);
    nst_free(ex->recvn);
    nst_free(ex->peers);
    free(ex->tr);
    memset(ex, 0, sizeof *ex);
}

static int peer_slot(const nst_exchange *ex, int rank)
{
    for (int p = 0; p < ex->npeers; p++)
        if (ex->peers[p] == rank) return p;
    return -1;
}

/* Whether every rank exchanges in backend memory: each has the path and room for its buffers
 * beside the layout's model within the budget (the planner's largest model over ranks, plus this
 * rank's buffers), and in a GPU's arena (what neither the render's allocations nor the backend's
 * reserve take). Their bytes then count in the model the run reports (render.h: exchange_bytes).
 * One sum over the ranks whatever this rank's answer, so every rank makes the same calls. */
static nst_status choose_resident(nst_backend *be, const nst_layout *L, const nst_collectives *coll, nst_exchange *ex)
{
    size_t bytes = 0;
    for (int p = 0; p < ex->npeers; p++) bytes += (ex->sendn[p] + ex->recvn[p] + 2) * sizeof(float) + 512; /* (the arena's alignment) */
    const size_t used = be->bytes_in_use + be->reserve;
    const int in_limit = !be->limit || (be->limit > be->bytes_in_use && be->limit - be->bytes_in_use >= bytes); /* (a test hook's) */
    const int in_budget = L->mem_budget > 0 && L->mem_total <= L->mem_budget && L->mem_budget - L->mem_total >= bytes;
    const int in_arena = !be->capacity || (be->capacity > used && be->capacity - used >= bytes);
    int mine = coll->exchange && !L->cheap && in_budget && in_arena && in_limit;
    double not_ready = !mine;
    if (L->nranks > 1 && coll->sum_doubles) NST_TRY(coll->sum_doubles(coll->ctx, &not_ready, 1));
    ex->resident = not_ready == 0 && L->nranks > 1; /* (the same on every rank) */
    if (ex->resident) ex->resident_bytes = bytes;
    return NST_OK;
}

/* The buffers in backend memory. The room was checked, but an arena's free space may lie in pieces:
 * where any rank's allocation fails, every rank frees its own and goes through host memory (the
 * refusal undone: it is not the render's, whose tiles would otherwise be halved). Collective. */
static nst_status resident_buffers(nst_backend *be, const nst_layout *L, const nst_collectives *coll, nst_exchange *ex)
{
    const int failures0 = be->alloc_failures;
    ex->dsend = nst_calloc(sizeof(float *) * (size_t)L->nranks, "exchange buffers");
    ex->drecv = nst_calloc(sizeof(float *) * (size_t)L->nranks, "exchange buffers");
    nst_status s = ex->dsend && ex->drecv ? NST_OK : NST_ENOMEM;
    for (int p = 0; s == NST_OK && p < ex->npeers; p++) {
        s = be->ops->alloc(be, (ex->sendn[p] + 1) * sizeof(float), (void **)&ex->dsend[p]);
        if (s == NST_OK) s = be->ops->alloc(be, (ex->recvn[p] + 1) * sizeof(float), (void **)&ex->drecv[p]);
    }
    double failed = s != NST_OK;
    if (coll->sum_doubles) NST_TRY(coll->sum_doubles(coll->ctx, &failed, 1));
    if (failed == 0) return NST_OK;
    for (int p = 0; p < ex->npeers; p++) {
        if (ex->dsend) be->ops->free(be, ex->dsend[p]);
        if (ex->drecv) be->ops->free(be, ex->drecv[p]);
    }
    nst_free(ex->dsend), nst_free(ex->drecv);
    ex->dsend = ex->drecv = NULL, ex->resident = 0, ex->resident_bytes = 0;
    be->alloc_failures = failures0;
    nst_fail_clear();
    return NST_OK;
}

/* The transfers this rank takes part in, its peers and the floats to and from each. */
static nst_status plan_transfers(const nst_layout *L, nst_exchange *ex)
{
    int n;
    nst_transfer *all = L->cheap ? nst_plan_window_overlaps(&L->grid, &n) : nst_plan_core_to_window(&L->grid, &n);
    if (!all) return nst_fail(NST_ENOMEM, "out of memory planning the halo exchange");
    ex->tr = all;
    int k = 0;
    for (int i = 0; i < n; i++)
        if (L->owner[all[i].src] == L->rank || L->owner[all[i].dst] == L->rank) all[k++] = all[i];
    ex->ntr = k;
    ex->peers = nst_alloc_array((size_t)L->nranks, sizeof(int), "exchange peers");
    ex->sendbuf = nst_calloc(sizeof(float *) * (size_t)L->nranks, "exchange buffers");
    ex->recvbuf = nst_calloc(sizeof(float *) * (size_t)L->nranks, "exchange buffers");
    ex->sendn = nst_calloc(sizeof(size_t) * (size_t)L->nranks, "exchange sizes");
    ex->recvn = nst_calloc(sizeof(size_t) * (size_t)L->nranks, "exchange sizes");
    if (!ex->peers || !ex->sendbuf || !ex->recvbuf || !ex->sendn || !ex->recvn) return NST_ENOMEM;
    for (int i = 0; i < ex->ntr; i++) {
        int so = L->owner[ex->tr[i].src], dof = L->owner[ex->tr[i].dst];
        if (so == dof) continue;
        int other = so == L->rank ? dof : so;
        int p = peer_slot(ex, other);
        if (p < 0) ex->peers[p = ex->npeers++] = other;
        size_t floats = (size_t)nst_rect_area(ex->tr[i].rect) * 3;
        if (so == L->rank)
            ex->sendn[p] += floats;
        else
            ex->recvn[p] += floats;
    }
    return NST_OK;
}

nst_status nst_exchange_plan(nst_backend *be, const nst_layout *L, const nst_collectives *coll, nst_exchange *ex)
{
    memset(ex, 0, sizeof *ex);
    nst_status s = plan_transfers(L, ex);
    if (coll->check) s = coll->check(coll->ctx, s); /* every rank on to the choice between ranks below, or none */
    NST_TRY(s);
    NST_TRY(choose_resident(be, L, coll, ex));
    if (ex->resident) NST_TRY(resident_buffers(be, L, coll, ex));
    for (int p = 0; !ex->resident && p < ex->npeers; p++) { /* page-locked on a GPU: their transfers are queued (exchange_run) */
        NST_TRY(be->ops->host_alloc(be, (ex->sendn[p] + 1) * sizeof(float), (void **)&ex->sendbuf[p]));
        NST_TRY(be->ops->host_alloc(be, (ex->recvn[p] + 1) * sizeof(float), (void **)&ex->recvbuf[p]));
    }
    if (L->cheap) {
        ex->stage = nst_calloc(sizeof(float *) * (size_t)(ex->ntr + 1), "blend staging");
        ex->from = nst_calloc(sizeof(float *) * (size_t)(ex->ntr + 1), "blend staging");
        if (!ex->stage || !ex->from) return NST_ENOMEM;
    }
    return NST_OK;
}

/* Index of grid tile t among the local tiles (they are sorted), or -1. */
static int local_index(const nst_layout *L, int t)
{
    int lo = 0, hi = L->nlocal - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (L->local[mid] == t) return mid;
        if (L->local[mid] < t)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

/* Where a transfer's pixels are in the source's optimised pixels: its core (exact) or window (cheap). */
static nst_rect src_rect(const nst_layout *L, const nst_tile *src, const nst_transfer *tr)
{
    nst_rect origin = L->cheap ? src->window : src->core;
    return nst_rect_translate(tr->rect, -origin.x, -origin.y);
}

/* n = r.w x r.h pixels of 3 fp32 channels at p, in backend memory: a rect packed in a buffer */
static nst_tensor packed(float *p, nst_rect r)
{
    nst_tensor t = {r.h, r.w, 3, NST_F32, p};
    return t;
}

/* The messages to and from every peer: through host memory (MPI), or between the buffers in backend
 * memory (coll.exchange: NCCL between GPUs) */
static nst_status send_all(const nst_render_ctx *ctx, nst_exchange *ex)
{
    nst_peer_msg *m = nst_alloc_array((size_t)ex->npeers, 2 * sizeof(nst_peer_msg), "exchange messages");
    if (!m) nst_comm_abort(1, "out of memory for the halo exchange messages");
    for (int p = 0; p < ex->npeers; p++) {
        m[p] = (nst_peer_msg){ex->peers[p], ex->resident ? (void *)ex->dsend[p] : ex->sendbuf[p], ex->sendn[p] * sizeof(float)};
        m[ex->npeers + p] = (nst_peer_msg){ex->peers[p], ex->resident ? (void *)ex->drecv[p] : ex->recvbuf[p], ex->recvn[p] * sizeof(float)};
    }
    nst_status s;
    if (ex->resident) {
        s = ctx->coll.exchange(ctx->coll.ctx, m, ex->npeers, m + ex->npeers, ex->npeers);
    } else {
        nst_comm_msg *c = (nst_comm_msg *)nst_alloc_array((size_t)ex->npeers, 2 * sizeof(nst_comm_msg), "exchange messages");
        if (!c) nst_comm_abort(1, "out of memory for the halo exchange messages");
        for (int i = 0; i < 2 * ex->npeers; i++) c[i] = (nst_comm_msg){m[i].peer, m[i].buf, m[i].bytes};
        s = nst_comm_exchange(c, ex->npeers, c + ex->npeers, ex->npeers);
        nst_free(c);
    }
    nst_free(m);
    return s;
}

/* Pack what this rank sends, exchange with the peers, and place (exact) or stage (cheap) what it
 * receives; transfers between two local tiles are copied directly (exact) or staged (cheap). The
 * rects to and from the peers' buffers are queued: one wait for all that is sent (before the
 * messages), none for what is received (its uploads are done before the buffers are written
 * again, by the next exchange's messages, which follow its wait; or before they are freed). With
 * the buffers in backend memory (ex->resident) the rects are copied there and back on the backend's
 * queue, and the messages follow them there: nothing through the host, whose one wait is the
 * exchange's own (coll.exchange). */
static nst_status exchange_run(const nst_render_ctx *ctx, nst_tile *tiles, nst_tile_state *st, nst_exchange *ex)
{
    const nst_layout *L = ctx->layout;
    nst_backend *be = ctx->be;
    size_t *off = nst_calloc(sizeof(size_t) * (size_t)(ex->npeers + 1), "exchange offsets");
    nst_status s = off ? NST_OK : NST_ENOMEM;
    for (int i = 0; s == NST_OK && i < ex->ntr; i++) { /* pack, in the global order */
        const nst_transfer *tr = &ex->tr[i];
        if (L->owner[tr->src] != L->rank) continue;
        int si = local_index(L, tr->src);
        nst_rect r = src_rect(L, &tiles[si], tr);
        if (L->owner[tr->dst] == L->rank) {
            if (L->cheap) {
                if (!ex->stage[i]) ex->stage[i] = nst_alloc_array((size_t)nst_rect_area(r) * 3, sizeof(float), "blend staging");
                s = ex->stage[i] ? be->ops->download_rect(be, &st[si].x, r, ex->stage[i]) : NST_ENOMEM;
                ex->from[i] = ex->stage[i];
            } else {
                nst_tile *dst = &tiles[local_index(L, tr->dst)];
                s = be->ops->copy_rect(be, &st[si].x, r, &dst->img, tr->rect.x - dst->window.x, tr->rect.y - dst->window.y);
            }
        } else {
            int p = peer_slot(ex, L->owner[tr->dst]);
            nst_tensor v = ex->resident ? packed(ex->dsend[p] + off[p], r) : (nst_tensor){0};
            s = ex->resident ? be->ops->copy_rect(be, &st[si].x, r, &v, 0, 0)
                             : be->ops->download_rect_queued(be, &st[si].x, r, ex->sendbuf[p] + off[p]);
            off[p] += (size_t)nst_rect_area(r) * 3;
        }
    }
    if (s == NST_OK && ex->npeers && !ex->resident && !nst_planted("exchangewait")) /* planted: the tests must catch a missing wait */
        s = be->ops->synchronize(be); /* the send buffers hold what was queued */
    s = nst_render_agree(ctx, s); /* nobody enters the exchange if a rank could not pack */
    if (s == NST_OK && ex->npeers) s = send_all(ctx, ex);
    if (off) memset(off, 0, sizeof(size_t) * (size_t)(ex->npeers + 1));
    const size_t skew = ex->resident && nst_planted("exchangeoffset") ? 3 : 0; /* planted: the tests must catch a wrong offset */
    for (int i = 0; s == NST_OK && i < ex->ntr; i++) { /* unpack, in the same order */
        const nst_transfer *tr = &ex->tr[i];
        if (L->owner[tr->dst] != L->rank || L->owner[tr->src] == L->rank) continue;
        int p = peer_slot(ex, L->owner[tr->src]);
        const size_t o = off[p];
        off[p] += (size_t)nst_rect_area(tr->rect) * 3;
        if (L->cheap) {
            ex->from[i] = ex->recvbuf[p] + o; /* valid until the next exchange */
        } else {
            nst_tile *dst = &tiles[local_index(L, tr->dst)];
            const nst_rect at = nst_rect_translate(tr->rect, -dst->window.x, -dst->window.y);
            nst_tensor v = ex->resident ? packed(ex->drecv[p] + o + (o ? skew : 0), tr->rect) : (nst_tensor){0};
            s = ex->resident ? be->ops->copy_rect(be, &v, nst_tensor_rect(&v), &dst->img, at.x, at.y)
                             : be->ops->upload_rect_queued(be, ex->recvbuf[p] + o, &dst->img, at);
        }
    }
    nst_free(off);
    return s;
}

/* Cheap mode: every local window becomes the feather-weighted mean of all windows covering each
 * pixel, summed in tile order so every tile computes the same values. */
static nst_status blend_run(const nst_render_ctx *ctx, nst_tile *tiles, nst_tile_state *st, nst_exchange *ex)
{
    const nst_layout *L = ctx->layout;
    nst_backend *be = ctx->be;
    nst_status s = exchange_run(ctx, tiles, st, ex);
    for (int li = 0; s == NST_OK && li < L->nlocal; li++) {
        const nst_tile *t = &tiles[li];
        nst_rect w = t->window;
        size_t n = (size_t)w.w * w.h;
        float *own = nst_alloc_array(n * 3, sizeof(float), "blend window");
        float *acc = nst_calloc(n * 3 * sizeof(float), "blend sums"), *wsum = nst_calloc(n * sizeof(float), "blend weights");
        if (!own || !acc || !wsum) s = NST_ENOMEM;
        if (s == NST_OK) s = be->ops->download(be, own, st[li].x.data, n * 3, NST_F32);
        int own_done = 0;
        /* contributions in increasing source tile order; the transfers are ordered by (dst, src) */
        for (int i = 0; s == NST_OK && i <= ex->ntr; i++) {
            const nst_transfer *tr = i < ex->ntr ? &ex->tr[i] : NULL;
            if (tr && tr->dst != t->index) continue;
            if (!own_done && (!tr || tr->src > t->index)) {
                for (int y = 0; y < w.h; y++)
                    for (int x = 0; x < w.w; x++) {
                        float wt = nst_blend_weight(&L->grid, t->index, w.x + x, w.y + y, L->blend_width, L->blend_cosine);
                        size_t k = (size_t)y * w.w + x;
                        wsum[k] += wt;
                        for (int c = 0; c < 3; c++) acc[3 * k + c] += wt * own[3 * k + c];
                    }
                own_done = 1;
            }
            if (!tr) break;
            const float *vals = ex->from[i];
            for (int y = 0; y < tr->rect.h; y++)
                for (int x = 0; x < tr->rect.w; x++) {
                    int gx = tr->rect.x + x, gy = tr->rect.y + y;
                    float wt = nst_blend_weight(&L->grid, tr->src, gx, gy, L->blend_width, L->blend_cosine);
                    size_t k = (size_t)(gy - w.y) * w.w + (gx - w.x);
                    wsum[k] += wt;
                    for (int c = 0; c < 3; c++) acc[3 * k + c] += wt * vals[((size_t)y * tr->rect.w + x) * 3 + c];
                }
        }
        if (s == NST_OK) {
            for (size_t k = 0; k < n; k++)
                for (int c = 0; c < 3; c++) own[3 * k + c] = acc[3 * k + c] / wsum[k];
            s = be->ops->upload(be, st[li].x.data, own, n * 3, NST_F32);
        }
        nst_free(own), nst_free(acc), nst_free(wsum);
    }
    return s;
}

/* NSTBATCH_PLANT=halo (util/plant.h): every window pixel at the exact halo's distance from the
 * core or beyond zeroed, as a halo one pixel short of what the deepest layer needs (not of its
 * stride-aligned size: the pixels past the need do not matter) would leave it, for the tests
 * that must catch it. */
static nst_status plant_short_halo(const nst_render_ctx *ctx, nst_tile *tiles)
{
    const int need = nst_vgg_gradient_halo(ctx->spec->deepest);
    nst_status s = NST_OK;
    for (int i = 0; s == NST_OK && i < ctx->layout->nlocal; i++) {
        nst_rect w = tiles[i].window, c = nst_rect_translate(tiles[i].core, -w.x, -w.y);
        float *zero = nst_calloc((size_t)w.w * w.h * 3 * sizeof(float), "a planted defect");
        if (!zero) return NST_ENOMEM;
        const int l = c.x - need + 1, r = c.x + c.w - 1 + need, t = c.y - need + 1, b = c.y + c.h - 1 + need;
        const nst_rect side[4] = {{0, 0, l, w.h}, {r, 0, w.w - r, w.h}, {0, 0, w.w, t}, {0, b, w.w, w.h - b}};
        for (int k = 0; s == NST_OK && k < 4; k++)
            if (side[k].w > 0 && side[k].h > 0) s = ctx->be->ops->upload_rect(ctx->be, zero, &tiles[i].img, side[k]);
        nst_free(zero);
    }
    return s;
}

/* Make the windows current: exact mode refills them from the cores; cheap mode blends them. */
nst_status nst_exchange_refresh(const nst_render_ctx *ctx, nst_tile *tiles, nst_tile_state *st, nst_exchange *ex)
{
    if (ctx->layout->cheap) return blend_run(ctx, tiles, st, ex);
    nst_status s = exchange_run(ctx, tiles, st, ex);
    if (s == NST_OK && nst_planted("halo")) s = plant_short_halo(ctx, tiles);
    return s;
}

/* nst/plan/move.c: moving rectangles of pixels between layouts (see move.h). */
#include "move.h"

#include <string.h>

#include "../../mpi/comm.h"
#include "../../util/mem.h"

nst_status nst_move_run(const nst_move *mv, size_t held, size_t *peak)
{
    const int rank = nst_comm_rank(), nranks = nst_comm_size();
    const size_t px = mv->px_bytes;
    size_t *sendn = nst_calloc(sizeof(size_t) * 3 * (size_t)nranks, "move sizes");
    if (!sendn) return NST_ENOMEM;
    size_t *recvn = sendn + nranks, *off = sendn + 2 * nranks;
    for (int i = 0; i < mv->ntr; i++) {
        int so = mv->src_owner[mv->tr[i].src], dof = mv->dst_owner[mv->tr[i].dst];
        size_t n = (size_t)nst_rect_area(mv->tr[i].rect) * px;
        if (so == rank && dof != rank) sendn[dof] += n;
        if (dof == rank && so != rank) recvn[so] += n;
    }
    nst_comm_msg *sends = nst_calloc(sizeof(nst_comm_msg) * 2 * (size_t)nranks, "move messages");
    nst_status s = sends ? NST_OK : NST_ENOMEM;
    nst_comm_msg *recvs = sends ? sends + nranks : NULL;
    int nsend = 0, nrecv = 0;
    size_t inflight = 0;
    int *slot = nst_alloc_array((size_t)nranks, sizeof(int), "move slots");
    if (!slot) s = NST_ENOMEM;
    for (int r = 0; s == NST_OK && r < nranks; r++) {
        slot[r] = -1;
        if (!sendn[r]) continue;
        slot[r] = nsend;
        sends[nsend] = (nst_comm_msg){r, nst_alloc(sendn[r], "a send buffer"), sendn[r]};
        if (!sends[nsend++].buf) s = NST_ENOMEM;
        inflight += sendn[r];
    }
    /* produce, in plan order; a source is done after its last cut */
    for (int i = 0; s == NST_OK && i < mv->ntr; i++) {
        const nst_transfer *t = &mv->tr[i];
        if (mv->src_owner[t->src] != rank) continue;
        int dof = mv->dst_owner[t->dst];
        if (dof == rank) {
            nst_rect d = mv->dst_rect[t->dst];
            size_t stride = (size_t)d.w * px;
            mv->produce(mv->ctx, t->src, t->rect, mv->dst_px[t->dst] + (size_t)(t->rect.y - d.y) * stride + (size_t)(t->rect.x - d.x) * px, stride);
        } else {
            mv->produce(mv->ctx, t->src, t->rect, (unsigned char *)sends[slot[dof]].buf + off[dof], (size_t)t->rect.w * px);
            off[dof] += (size_t)nst_rect_area(t->rect) * px;
        }
        if (mv->done && (i + 1 == mv->ntr || mv->tr[i + 1].src != t->src)) mv->done(mv->ctx, t->src);
    }
    /* the receive buffers only now: the sources a caller frees in `done` are gone */
    for (int r = 0; s == NST_OK && r < nranks; r++) {
        if (!recvn[r]) continue;
        recvs[nrecv] = (nst_comm_msg){r, nst_alloc(recvn[r], "a receive buffer"), recvn[r]};
        if (!recvs[nrecv++].buf) s = NST_ENOMEM;
        inflight += recvn[r];
    }
    if (peak && held + inflight > *peak) *peak = held + inflight;
    s = nst_comm_agree(s); /* nobody enters the exchange if a rank could not allocate */
    if (s == NST_OK) s = nst_comm_exchange(sends, nsend, recvs, nrecv);
    if (s == NST_OK) {
        memset(off, 0, sizeof(size_t) * (size_t)nranks);
        for (int i = 0; i < mv->ntr; i++) {
            const nst_transfer *t = &mv->tr[i];
            int so = mv->src_owner[t->src];
            if (mv->dst_owner[t->dst] != rank || so == rank) continue;
            int m = 0;
            while (recvs[m].peer != so) m++;
            nst_rect d = mv->dst_rect[t->dst];
            size_t stride = (size_t)d.w * px, row = (size_t)t->rect.w * px;
            const unsigned char *in = (const unsigned char *)recvs[m].buf + off[so];
            unsigned char *o = mv->dst_px[t->dst] + (size_t)(t->rect.y - d.y) * stride + (size_t)(t->rect.x - d.x) * px;
            for (int y = 0; y < t->rect.h; y++) memcpy(o + (size_t)y * stride, in + (size_t)y * row, row);
            off[so] += (size_t)t->rect.h * row;
        }
    }
    for (int i = 0; sends && i < nsend; i++) nst_free(sends[i].buf);
    for (int i = 0; recvs && i < nrecv; i++) nst_free(recvs[i].buf);
    nst_free(sends);
    nst_free(slot);
    nst_free(sendn);
    return s;
}

void nst_produce_floats(void *ctx, int src, nst_rect r, unsigned char *dst, size_t stride)
{
    const nst_float_rects *fr = ctx;
    nst_rect s = fr->rect[src];
    const size_t c = (size_t)fr->channels;
    for (int y = 0; y < r.h; y++)
        memcpy(dst + (size_t)y * stride, fr->px[src] + ((size_t)(r.y - s.y + y) * s.w + (size_t)(r.x - s.x)) * c,
               (size_t)r.w * c * sizeof(float));
}

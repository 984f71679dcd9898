/* nst/output/tile_batches.c: a level's tiles encoded by their owners, stored by rank 0 (see
 * tile_batches.h). */
#include "tile_batches.h"

#include <stdint.h>
#include <string.h>

#include "../../mpi/comm.h"
#include "../../util/mem.h"
#include "../../util/threads.h"
#include "../../util/timer.h"

#define BATCH_BYTES ((size_t)32 << 20) /* uncompressed bytes per rank per batch */

/* This rank's batch b: tiles [b K, min((b + 1) K, n)) of its list, encoded into one buffer:
 * K 64-bit lengths, then the bytes. */
static nst_status encode_batch(const nst_tile_codec *codec, const nst_pyramid *P, const nst_tileset *set, int first, int count, int K,
                               unsigned char **msg, size_t *msg_len)
{
    unsigned char **parts = nst_calloc(sizeof(unsigned char *) * (size_t)(count + 1), "encoded tiles");
    uint64_t *lens = nst_calloc(sizeof(uint64_t) * (size_t)K, "compressed tile sizes");
    nst_status s = parts && lens ? NST_OK : NST_ENOMEM;
    int failed = 0;
    char why[1024] = "";
    if (s == NST_OK) {
#pragma omp parallel for schedule(dynamic, 1) num_threads(codec->nthreads)
        for (int i = 0; i < count; i++) {
            if (failed) continue;
            nst_rect r = nst_tileset_rect(P, set, first + i);
            const unsigned char *bytes;
            size_t len;
            nst_status e = codec->encode(codec->ctx, nst_thread_num(), set->px[first + i], r.w, r.h, &bytes, &len);
            if (e == NST_OK) {
                parts[i] = nst_alloc(len, "an encoded tile");
                if (parts[i]) memcpy(parts[i], bytes, len);
                lens[i] = len;
            }
            if (e != NST_OK || !parts[i]) {
#pragma omp critical(nst_tile_encode_failure)
                if (!failed) {
                    failed = 1;
                    nst_fail_take(why, sizeof why); /* the worker thread's message */
                }
            }
        }
        if (failed) s = nst_fail(NST_ERUNTIME, "%s", why);
    }
    size_t total = (size_t)K * sizeof(uint64_t);
    for (int i = 0; s == NST_OK && i < count; i++) total += (size_t)lens[i];
    if (s == NST_OK) {
        *msg = nst_alloc(total, "a batch of encoded tiles");
        if (!*msg) s = NST_ENOMEM;
    }
    if (s == NST_OK) {
        memcpy(*msg, lens, (size_t)K * sizeof(uint64_t));
        size_t off = (size_t)K * sizeof(uint64_t);
        for (int i = 0; i < count; i++) {
            memcpy(*msg + off, parts[i], (size_t)lens[i]);
            off += (size_t)lens[i];
        }
        *msg_len = total;
    }
    for (int i = 0; parts && i < count; i++) nst_free(parts[i]);
    nst_free(parts);
    nst_free(lens);
    return s;
}

/* How a level's tiles travel: every rank's count of tiles (known to all from the owners), on
 * rank 0 each rank's tiles in ascending order (list[start[r]...]), in batches of K per rank. */
typedef struct {
    int *count, *list, *start;
    int K, batches;
} tile_batches;

static nst_status plan_batches(const nst_pyramid *P, const nst_tileset *set, tile_batches *tb)
{
    const int rank = nst_comm_rank(), nranks = nst_comm_size();
    const nst_level *lv = &set->lv;
    const size_t tile_bytes = (size_t)P->tile * P->tile * 3 * (size_t)set->sample_bytes;
    nst_status s = NST_OK;
    tb->K = BATCH_BYTES / tile_bytes > 1 ? (int)(BATCH_BYTES / tile_bytes) : 1;
    tb->count = nst_calloc(sizeof(int) * (size_t)nranks, "tiles per rank");
    tb->list = rank == 0 ? nst_alloc_array((size_t)lv->ntiles, sizeof(int), "tile lists") : NULL;
    tb->start = rank == 0 ? nst_calloc(sizeof(int) * (size_t)(nranks + 1), "tile lists") : NULL;
    if (!tb->count || (rank == 0 && (!tb->list || !tb->start))) s = NST_ENOMEM;
    if (s == NST_OK) {
        for (int t = 0; t < lv->ntiles; t++) tb->count[set->owner[t]]++;
        for (int r = 0; r < nranks; r++)
            if ((tb->count[r] + tb->K - 1) / tb->K > tb->batches) tb->batches = (tb->count[r] + tb->K - 1) / tb->K;
        if (rank == 0) { /* rank r's tiles, ascending, at list[start[r]] */
            for (int r = 0; r < nranks; r++) tb->start[r + 1] = tb->start[r] + tb->count[r];
            int *fill = nst_calloc(sizeof(int) * (size_t)nranks, "tile lists");
            if (!fill) s = NST_ENOMEM;
            for (int t = 0; s == NST_OK && t < lv->ntiles; t++) tb->list[tb->start[set->owner[t]] + fill[set->owner[t]]++] = t;
            nst_free(fill);
        }
    }
    return nst_comm_agree(s);
}

/* Rank 0: the batch from `first` of every rank (its own in msg, the others received) written in
 * rank order. A write failure still receives every batch, then reports. */
static nst_status store_batch(nst_sink *sk, const nst_tile_codec *codec, const tile_batches *tb, int first, const unsigned char *msg)
{
    nst_status s = NST_OK, w = NST_OK;
    for (int r = 0; r < nst_comm_size() && s == NST_OK; r++) {
        int n = tb->count[r] - first < tb->K ? tb->count[r] - first : tb->K;
        if (n <= 0) continue;
        const unsigned char *data = msg;
        unsigned char *got = NULL;
        if (r != 0) {
            uint64_t len = 0;
            s = nst_comm_recv(&len, sizeof len, r);
            got = s == NST_OK ? nst_alloc((size_t)len, "a received batch of tiles") : NULL;
            if (s == NST_OK && !got) nst_comm_abort(1, "out of memory receiving encoded tiles");
            if (s == NST_OK) s = nst_comm_recv(got, (size_t)len, r);
            data = got;
        }
        const uint64_t *lens = (const uint64_t *)data;
        size_t off = (size_t)tb->K * sizeof(uint64_t);
        double t0 = nst_now();
        for (int i = 0; s == NST_OK && w == NST_OK && i < n; i++) {
            w = codec->store(codec->ctx, tb->list[tb->start[r] + first + i], data + off, (size_t)lens[i]);
            off += (size_t)lens[i];
        }
        sk->io_seconds += nst_now() - t0;
        nst_free(got);
    }
    return s == NST_OK ? w : s;
}

/* The other ranks: their batch from `first` (mine tiles) to rank 0, its length first. */
static nst_status send_batch(int mine, const unsigned char *msg, size_t msg_len)
{
    if (mine <= 0) return NST_OK;
    uint64_t len = msg_len;
    NST_TRY(nst_comm_send(&len, sizeof len, 0));
    return nst_comm_send(msg, msg_len, 0);
}

nst_status nst_tile_batches_write(nst_sink *sk, const nst_pyramid *P, const nst_tileset *set, const nst_tile_codec *codec)
{
    const int rank = nst_comm_rank();
    double t_start = nst_now();
    tile_batches tb;
    memset(&tb, 0, sizeof tb);
    nst_status s = plan_batches(P, set, &tb);
    for (int b = 0; s == NST_OK && b < tb.batches; b++) {
        int first = b * tb.K, mine = set->nown - first < tb.K ? set->nown - first : tb.K;
        if (mine < 0) mine = 0;
        unsigned char *msg = NULL;
        size_t msg_len = 0;
        if (mine > 0) s = encode_batch(codec, P, set, first, mine, tb.K, &msg, &msg_len);
        s = nst_comm_agree(s); /* nobody waits for a batch that will not come */
        if (s != NST_OK) {
            nst_free(msg);
            break;
        }
        s = rank != 0 ? send_batch(mine, msg, msg_len) : store_batch(sk, codec, &tb, first, msg);
        nst_free(msg);
        s = nst_comm_agree(s);
    }
    nst_free(tb.count);
    nst_free(tb.list);
    nst_free(tb.start);
    sk->seconds += nst_now() - t_start;
    return s;
}

/* mpi/comm.c: ranks, broadcasts, status agreement and sums over MPI (see comm.h). */
#include "comm.h"
#include "comm_mpi.h"
#include "first_contact.h"
#include "launch_fence.h"
#include "lifeline.h"
#include "singleton.h"

#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../util/log.h"
#include "../util/mem.h"
#include "../util/plant.h"
#include "../util/timer.h"

static int world_rank, world_size = 1, local_rank, local_size = 1, initialised;
static char host[256] = "?";
static MPI_Comm node_comm = MPI_COMM_NULL; /* this node's ranks (shared memory) */

/* The group the calls act on: the world, or a group pushed on top of it (a batch's rank group,
 * the ranks of a coarse pyramid level). cur_rank and cur_size describe it. */
struct nst_group {
    MPI_Comm comm;
    int rank, size;
    void *nccl; /* the group's NCCL communicator: the world's from nst_comm_nccl_open, a group's split from its parent's */
};
#define STACK_MAX 8
static struct nst_group world_group = {MPI_COMM_NULL, 0, 1, NULL};
static struct nst_group *cur_group = &world_group;
static struct nst_group *stack[STACK_MAX];
static int depth;
static MPI_Comm cur = MPI_COMM_NULL;
static int cur_rank, cur_size = 1;

static void set_current(struct nst_group *g)
{
    cur_group = g;
    cur = g->comm;
    cur_rank = g->rank;
    cur_size = g->size;
}

MPI_Comm nst_comm_mpi(void) { return cur; }
MPI_Comm nst_comm_node_mpi(void) { return node_comm; }
void **nst_comm_nccl_slot(void) { return &cur_group->nccl; }
void **nst_comm_nccl_world_slot(void) { return &world_group.nccl; }

nst_status nst_comm_mpi_fail(int rc, const char *call)
{
    char err[MPI_MAX_ERROR_STRING] = "";
    int n = 0;
    MPI_Error_string(rc, err, &n);
    return nst_fail(NST_ERUNTIME, "%s failed on rank %d (%s): %s", call, world_rank, host, err);
}

#define MPI_TRY NST_MPI_TRY
#define MPI_TRY_WAIT NST_MPI_TRY_WAIT

/* No message before every rank has returned from MPI_Init (launch_fence.c: Open MPI 4.1 under
 * srun --mpi=pmix); a failed fence leaves that unknown, so this rank ends the job. */
static nst_status launch_fenced(void)
{
    char why[256];
    if (world_size < 2) return NST_OK;
    const int late = nst_planted("late"); /* planted: the barrier must hold rank 0 for the last rank */
    if (late && world_rank == world_size - 1) nst_sleep(3.0);
    const double t0 = nst_now();
    const int r = nst_launch_fence(why, sizeof why);
    if (late && world_rank == 0)
        fprintf(stderr, "nstbatch: planted late: rank 0 waited %.1f s in the barrier after MPI_Init (%s)\n", nst_now() - t0,
                r > 0 ? "made" : r == 0 ? "no PMIx client: none made" : "failed");
    if (r >= 0) return NST_OK;
    char line[512];
    snprintf(line, sizeof line, "the launcher's barrier after MPI_Init (PMIx_Fence) failed: %s: the launcher could not gather "
             "every rank; ending the job with exit status 75: run again (or requeue)", why);
    nst_comm_abort(NST_EXIT_REQUEUE, line);
}

/* A barrier, the node's ranks, the watchdog's lifeline (a world of 2 or more: the stall and
 * lost-rank watchdog, watchdog.h), then every pair of ranks meets (first_contact.h). */
static nst_status first_exchanges(void)
{
    /* The first message: a barrier whose wait naps (patience.h). Where the network cannot carry it
     * (a firewall between the nodes) every rank waits here until the bound ends the job, napping,
     * where the node split's blocking collective spun a core each (test_hosts' refused ports: 45
     * CPU seconds in 4 ranks over the 20 s bound). Where it can, the split follows at once. */
    MPI_Request first;
    MPI_TRY_WAIT(MPI_Ibarrier(MPI_COMM_WORLD, &first), &first);
    MPI_TRY(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, world_rank, MPI_INFO_NULL, &node_comm));
    MPI_TRY(MPI_Comm_set_errhandler(node_comm, MPI_ERRORS_RETURN));
    MPI_TRY(MPI_Comm_rank(node_comm, &local_rank));
    MPI_TRY(MPI_Comm_size(node_comm, &local_size));
    NST_TRY(nst_watchdog_start());
    return nst_first_contact_pairs();
}

nst_status nst_comm_init(int *argc, char ***argv)
{
    gethostname(host, sizeof host - 1);
    nst_singleton_begin(); /* (without a launcher) */
    const double t0 = nst_now();
    int rc = MPI_Init(argc, argv);
    if (rc != MPI_SUCCESS) return nst_fail(NST_ERUNTIME, "MPI_Init failed on %s", host);
    const double init_seconds = nst_now() - t0;
    initialised = 1;
    MPI_TRY(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    MPI_TRY(MPI_Comm_rank(MPI_COMM_WORLD, &world_rank));
    MPI_TRY(MPI_Comm_size(MPI_COMM_WORLD, &world_size));
    world_group = (struct nst_group){MPI_COMM_WORLD, world_rank, world_size, NULL};
    set_current(&world_group);
    nst_first_contact_begin(init_seconds); /* the exchanges below are the ranks' first: bounded (first_contact.c) */
    nst_status s = launch_fenced();
    if (s == NST_OK) s = first_exchanges();
    nst_first_contact_end();
    return s;
}

void nst_comm_finalize(void)
{
    nst_comm_nccl_release(&world_group.nccl);
    nst_watchdog_stop();
    if (node_comm != MPI_COMM_NULL) MPI_Comm_free(&node_comm);
    if (initialised) MPI_Finalize();
    initialised = 0;
    nst_singleton_end();
}

int nst_comm_rank(void) { return cur_rank; }
int nst_comm_size(void) { return cur_size; }
int nst_comm_world_rank(void) { return world_rank; }
int nst_comm_world_size(void) { return world_size; }

/* A group around the new communicator c. */
static nst_status group_make(MPI_Comm c, nst_group **out)
{
    nst_group *g = nst_calloc(sizeof *g, "a rank group");
    if (!g) {
        MPI_Comm_free(&c);
        return NST_ENOMEM;
    }
    g->comm = c;
    MPI_TRY(MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN));
    MPI_TRY(MPI_Comm_rank(c, &g->rank));
    MPI_TRY(MPI_Comm_size(c, &g->size));
    *out = g;
    return NST_OK;
}

nst_status nst_comm_split(int color, int key, nst_group **out)
{
    *out = NULL;
    MPI_Comm c;
    MPI_TRY(MPI_Comm_split(cur, color < 0 ? MPI_UNDEFINED : color, key, &c));
    nst_group *g = NULL;
    nst_status s = c == MPI_COMM_NULL ? NST_OK : group_make(c, &g);
    /* The group's NCCL communicator is split from its parent's as the group is made, sharing its
     * resources (mpi/nccl.c), not made at the group's first Gram sum, where a fresh communicator
     * allocated device memory outside the arena in the middle of an iteration, at every level's
     * and every retry's first. Every rank of the parent takes part, in the group or not. */
    void *nccl = NULL;
    nst_status n = nst_comm_nccl_split(cur_group->nccl, g ? color : -1, key, g ? g->size : 0, &nccl);
    if (g) g->nccl = nccl;
    if (s == NST_OK) s = n;
    if (s != NST_OK) {
        nst_comm_group_free(g);
        return s;
    }
    *out = g;
    return NST_OK;
}

void nst_comm_push(nst_group *g)
{
    if (depth == STACK_MAX) nst_comm_abort(1, "rank groups nested too deep");
    stack[depth++] = g;
    set_current(g);
}

void nst_comm_pop(void)
{
    if (depth > 0) depth--;
    set_current(depth ? stack[depth - 1] : &world_group);
}

void nst_comm_group_free(nst_group *g)
{
    if (!g) return;
    nst_comm_nccl_release(&g->nccl);
    (void)NST_MPI_MARKED(MPI_Comm_free(&g->comm)); /* collective: it may wait for the group */
    nst_free(g);
}

nst_status nst_comm_idle_barrier(void)
{
    if (cur_size == 1) return NST_OK;
    MPI_Request r;
    MPI_TRY_WAIT(MPI_Ibarrier(cur, &r), &r); /* asleep between the tests (patience.h), a waiting rank to the watchdog */
    return NST_OK;
}
/* ", 5" or "-7" after rank `from`: the run of ranks on host h that starts there; its end in *end. */
static int host_run(const char *h, int from, int *end)
{
    int r = from;
    while (r + 1 < world_size && strcmp(nst_lifeline_host(r + 1), h) == 0) r++;
    *end = r;
    return r > from;
}

int nst_comm_hosts(char *out, size_t cap)
{
    size_t len = 0;
    int hosts = 0;
    out[0] = 0;
    if (world_size < 2) {
        snprintf(out, cap, "%s (rank 0)", host);
        return 1;
    }
    for (int r = 0; r < world_size; r++) {
        const char *h = nst_lifeline_host(r);
        int seen = 0;
        for (int q = 0; q < r && !seen; q++) seen = strcmp(nst_lifeline_host(q), h) == 0;
        if (seen) continue;
        hosts++;
        if (len + 64 > cap) continue; /* counted, no longer listed */
        len += (size_t)snprintf(out + len, cap - len, "%s%s (ranks ", len ? ", " : "", h);
        for (int q = r, k = 0, end; q < world_size && len + 24 < cap; q++) {
            if (strcmp(nst_lifeline_host(q), h) != 0) continue;
            int run = host_run(h, q, &end);
            len += (size_t)snprintf(out + len, cap - len, run ? "%s%d-%d" : "%s%d", k++ ? ", " : "", q, end);
            q = end;
        }
        len += (size_t)snprintf(out + len, cap - len, ")");
    }
    return hosts;
}

int nst_comm_local_rank(void) { return local_rank; }
int nst_comm_local_size(void) { return local_size; }
const char *nst_comm_host(void) { return host; }

nst_status nst_comm_bcast(void *buf, size_t bytes, int root)
{
    unsigned char *p = buf;
    MPI_Request r;
    while (bytes > 0) { /* MPI counts are int: send in chunks of 1 GiB */
        int n = bytes > (1u << 30) ? (1 << 30) : (int)bytes;
        MPI_TRY_WAIT(MPI_Ibcast(p, n, MPI_BYTE, root, cur, &r), &r);
        p += n;
        bytes -= (size_t)n;
    }
    return NST_OK;
}

nst_status nst_comm_merge_bytes(void *buf, size_t bytes)
{
    unsigned char *p = buf;
    MPI_Request r;
    while (bytes > 0) {
        int n = bytes > (1u << 30) ? (1 << 30) : (int)bytes;
        MPI_TRY_WAIT(MPI_Iallreduce(MPI_IN_PLACE, p, n, MPI_BYTE, MPI_BOR, cur, &r), &r);
        p += n;
        bytes -= (size_t)n;
    }
    return NST_OK;
}

nst_status nst_comm_bcast_alloc(unsigned char **buf, size_t *len, int root)
{
    unsigned long long n = cur_rank == root ? *len : 0;
    MPI_Request r;
    MPI_TRY_WAIT(MPI_Ibcast(&n, 1, MPI_UNSIGNED_LONG_LONG, root, cur, &r), &r);
    if (cur_rank != root) {
        *len = (size_t)n;
        *buf = nst_alloc(n ? (size_t)n : 1, "a broadcast buffer");
        if (!*buf) nst_comm_abort(1, "out of memory receiving a broadcast"); /* the root would wait forever */
    }
    return nst_comm_bcast(*buf, (size_t)n, root);
}

#define CHUNK (1u << 30)

nst_status nst_comm_send(const void *buf, size_t bytes, int dest)
{
    const unsigned char *p = buf;
    MPI_Request r;
    do {
        int n = bytes > CHUNK ? (int)CHUNK : (int)bytes;
        MPI_TRY_WAIT(MPI_Isend(p, n, MPI_BYTE, dest, 7, cur, &r), &r);
        p += n;
        bytes -= (size_t)n;
    } while (bytes > 0);
    return NST_OK;
}

nst_status nst_comm_recv(void *buf, size_t bytes, int src)
{
    unsigned char *p = buf;
    MPI_Request r;
    do {
        int n = bytes > CHUNK ? (int)CHUNK : (int)bytes;
        MPI_TRY_WAIT(MPI_Irecv(p, n, MPI_BYTE, src, 7, cur, &r), &r);
        p += n;
        bytes -= (size_t)n;
    } while (bytes > 0);
    return NST_OK;
}

nst_status nst_comm_exchange(const nst_comm_msg *sends, int nsend, const nst_comm_msg *recvs, int nrecv)
{
    MPI_Request *req = nst_alloc_array((size_t)(nsend + nrecv) + 1, sizeof(MPI_Request), "exchange requests");
    int *done = nst_alloc_array((size_t)(nsend + nrecv) + 1, sizeof(int), "exchange indices");
    if (!req || !done) {
        nst_free(req), nst_free(done);
        return NST_ENOMEM;
    }
    int n = 0, rc = MPI_SUCCESS;
    nst_watchdog_mpi(1);
    for (int i = 0; i < nrecv && rc == MPI_SUCCESS; i++) {
        if (!recvs[i].bytes) continue;
        if (recvs[i].bytes > INT_MAX) rc = MPI_ERR_COUNT;
        else rc = MPI_Irecv(recvs[i].buf, (int)recvs[i].bytes, MPI_BYTE, recvs[i].peer, 11, cur, &req[n++]);
    }
    for (int i = 0; i < nsend && rc == MPI_SUCCESS; i++) {
        if (!sends[i].bytes) continue;
        if (sends[i].bytes > INT_MAX) rc = MPI_ERR_COUNT;
        else rc = MPI_Isend(sends[i].buf, (int)sends[i].bytes, MPI_BYTE, sends[i].peer, 11, cur, &req[n++]);
    }
    /* request by request, so that the watchdog sees a long exchange (a level's move, the output's
     * gather: gigabytes over a slow network) moving, not stalled */
    for (int left = n, k = 0; rc == MPI_SUCCESS && left > 0; left -= k) {
        rc = nst_mpi_waitsome(n, req, &k, done);
        if (rc != MPI_SUCCESS || k == MPI_UNDEFINED) break;
        nst_watchdog_mpi_progress();
    }
    nst_watchdog_mpi(0);
    nst_free(req);
    nst_free(done);
    /* a half-done exchange leaves peers waiting: there is no clean way back */
    if (rc != MPI_SUCCESS) {
        nst_comm_mpi_fail(rc, "MPI halo exchange");
        nst_comm_abort(1, nst_fail_message());
    }
    return NST_OK;
}

nst_status nst_comm_check(nst_status mine)
{
    if (cur_size == 1) return mine;
    int me = (int)mine, worst = 0;
    MPI_Request r;
    int rc = NST_MPI_MARKED(nst_mpi_wait(MPI_Iallreduce(&me, &worst, 1, MPI_INT, MPI_MAX, cur, &r), &r));
    if (rc != MPI_SUCCESS) nst_comm_abort(1, "MPI_Iallreduce failed while ranks checked their status");
    return (nst_status)worst;
}

nst_status nst_comm_stats(const double *in, double *mn, double *mx, double *sum, size_t n)
{
    if (n > INT_MAX) return nst_fail(NST_ERUNTIME, "nst_comm_stats: too many values");
    MPI_Request r;
    MPI_TRY_WAIT(MPI_Iallreduce(in, mn, (int)n, MPI_DOUBLE, MPI_MIN, cur, &r), &r);
    MPI_TRY_WAIT(MPI_Iallreduce(in, mx, (int)n, MPI_DOUBLE, MPI_MAX, cur, &r), &r);
    MPI_TRY_WAIT(MPI_Iallreduce(in, sum, (int)n, MPI_DOUBLE, MPI_SUM, cur, &r), &r);
    return NST_OK;
}

nst_status nst_comm_agree(nst_status mine)
{
    if (cur_size == 1) return mine;
    /* the lowest rank that failed with a message of its own (ranks that only heard of a failure
     * through nst_comm_check have none), and the worst status, in one reduction: the worst status
     * as the least of its negation */
    int me[2] = {mine != NST_OK && nst_fail_pending() ? cur_rank : cur_size, -(int)mine}, all[2];
    MPI_Request r;
    int rc = NST_MPI_MARKED(nst_mpi_wait(MPI_Iallreduce(me, all, 2, MPI_INT, MPI_MIN, cur, &r), &r));
    if (rc != MPI_SUCCESS) nst_comm_abort(1, "MPI_Iallreduce failed while ranks agreed on a status");
    all[1] = -all[1];
    if (all[1] == NST_OK) return NST_OK;
    if (all[0] == cur_size) { /* failed, but nobody said why: the lowest failing rank speaks */
        me[0] = mine != NST_OK ? cur_rank : cur_size;
        if (NST_MPI_MARKED(nst_mpi_wait(MPI_Iallreduce(&me[0], &all[0], 1, MPI_INT, MPI_MIN, cur, &r), &r)) != MPI_SUCCESS)
            nst_comm_abort(1, "MPI_Iallreduce failed while ranks agreed on a status");
    }
    char msg[2048];
    snprintf(msg, sizeof msg, "%s", nst_fail_message());
    if (NST_MPI_MARKED(nst_mpi_wait(MPI_Ibcast(msg, sizeof msg, MPI_CHAR, all[0], cur, &r), &r)) != MPI_SUCCESS)
        nst_comm_abort(1, "MPI_Ibcast failed while ranks agreed on a status");
    msg[sizeof msg - 1] = 0;
    nst_fail_clear();
    return nst_fail((nst_status)all[1], "%s", msg);
}

/* Sums in a fixed order: MPI_Allreduce's reduction order may depend on the algorithm chosen
 * for the message size; gathering to rank 0, adding in rank order and broadcasting is exact
 * and reproducible. The payloads (Gram sums, a few scalars) are small. */
nst_status nst_comm_sum_doubles(double *buf, size_t n)
{
    if (cur_size == 1 || n == 0) return NST_OK;
    if (n > (size_t)1 << 28) return nst_fail(NST_ERUNTIME, "sum of %zu values is too large for one call", n);
    double *all = NULL;
    if (cur_rank == 0) {
        all = nst_alloc_array((size_t)cur_size * n, sizeof(double), "a reduction buffer");
        if (!all) nst_comm_abort(1, "out of memory for a reduction buffer on rank 0");
    }
    MPI_Request r;
    MPI_TRY_WAIT(MPI_Igather(buf, (int)n, MPI_DOUBLE, all, (int)n, MPI_DOUBLE, 0, cur, &r), &r);
    if (cur_rank == 0) { /* buf already holds rank 0's part: add ranks 1.. in order */
        for (int q = 1; q < cur_size; q++)
            for (size_t i = 0; i < n; i++) buf[i] += all[(size_t)q * n + i];
        nst_free(all);
    }
    MPI_TRY_WAIT(MPI_Ibcast(buf, (int)n, MPI_DOUBLE, 0, cur, &r), &r);
    return NST_OK;
}

nst_status nst_comm_sum_int64(int64_t *buf, size_t n)
{
    if (cur_size == 1 || n == 0) return NST_OK;
    if (n > INT_MAX) return nst_fail(NST_ERUNTIME, "sum of %zu integers is too large for one call", n);
    MPI_Request r;
    MPI_TRY_WAIT(MPI_Iallreduce(MPI_IN_PLACE, buf, (int)n, MPI_INT64_T, MPI_SUM, cur, &r), &r);
    return NST_OK;
}

nst_status nst_comm_max_ints(int *buf, size_t n)
{
    if (cur_size == 1 || n == 0) return NST_OK;
    if (n > INT_MAX) return nst_fail(NST_ERUNTIME, "maximum of %zu integers is too large for one call", n);
    MPI_Request r;
    MPI_TRY_WAIT(MPI_Iallreduce(MPI_IN_PLACE, buf, (int)n, MPI_INT, MPI_MAX, cur, &r), &r);
    return NST_OK;
}

void nst_comm_library_version(char *out, size_t cap)
{
    char v[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    int n = 0;
    MPI_Get_library_version(v, &n);
    char *cut = strpbrk(v, ",\n");
    if (cut) *cut = 0;
    snprintf(out, cap, "%s", v);
}

void nst_comm_abort(int exit_code, const char *msg)
{
    fprintf(stderr, "nstbatch: error: rank %d (%s): %s\n", world_rank, host, msg);
    fflush(stderr);
    nst_watchdog_aborting(); /* rank 0's watchdog must not take this rank's end for a lost node */
    if (initialised) MPI_Abort(MPI_COMM_WORLD, exit_code);
    exit(exit_code);
}

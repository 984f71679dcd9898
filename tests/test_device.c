/* tests/test_device.c: the device-independent parts of the GPU path, which CI checks without a
 * GPU: the arena sub-allocator (kernels/arena.c), the binding policy over made-up views of a node's
 * GPUs, shared-GPU detection and the free-memory agreement (mpi/gpu_bind.c, run under mpirun with
 * 3 ranks and made-up UUIDs), the precision names, and the stall watchdog's limit (mpi/watchdog.c;
 * its thread runs in every multi-rank test, this one included), the barrier after MPI_Init
 * (mpi/launch_fence.c), and the waits that nap instead of spinning (mpi/patience.c). */
#include "../kernels/arena.h"
#include "../kernels/backend.h"
#include "../mpi/comm.h"
#include "../mpi/first_contact.h"
#include "../mpi/launch_fence.h"
#include "../mpi/patience.h"
#include "../mpi/watchdog.h"
#include "../util/mem.h"
#include "../util/timer.h"
#include "test.h"

#include <dlfcn.h>
#include <time.h>

static void t_arena_first_fit_alignment_and_coalescing(void)
{
    nst_arena a;
    CHECK(nst_arena_init(&a, 10000, 256) == 0, "init");
    CHECK(a.capacity == 9984, "capacity rounded down to the alignment: %zu", a.capacity);
    size_t o[6];
    CHECK(nst_arena_alloc(&a, 1, &o[0]) == 0 && o[0] == 0, "first block at 0");
    CHECK(nst_arena_alloc(&a, 300, &o[1]) == 0 && o[1] == 256, "second at 256: %zu", o[1]);
    CHECK(nst_arena_alloc(&a, 0, &o[2]) == 0 && o[2] == 768, "a 0-byte block takes one unit: %zu", o[2]);
    CHECK(a.used == 1024 && a.peak == 1024, "used %zu", a.used);
    CHECK(nst_arena_alloc(&a, 9000, &o[3]) != 0, "too large refused");
    CHECK(nst_arena_largest_free(&a) == 9984 - 1024, "largest free %zu", nst_arena_largest_free(&a));
    CHECK(nst_arena_release(&a, o[1]) == 512, "release returns the size");
    CHECK(nst_arena_release(&a, o[1]) == 0, "a double free is refused");
    CHECK(nst_arena_release(&a, 12345) == 0, "an unknown offset is refused");
    CHECK(nst_arena_alloc(&a, 200, &o[4]) == 0 && o[4] == 256, "first fit reuses the hole: %zu", o[4]);
    CHECK(nst_arena_alloc(&a, 256, &o[5]) == 0 && o[5] == 512, "and the rest of it: %zu", o[5]);
    /* free everything in a scattered order: one free block again */
    nst_arena_release(&a, o[5]);
    nst_arena_release(&a, o[0]);
    nst_arena_release(&a, o[2]);
    nst_arena_release(&a, o[4]);
    CHECK(a.used == 0 && a.nfree == 1 && a.free_[0].size == a.capacity, "coalesced: %d free blocks, used %zu", a.nfree, a.used);
    CHECK(a.peak == 1024, "peak kept: %zu", a.peak);
    nst_arena_destroy(&a);
    CHECK(nst_arena_init(&a, 100, 3) != 0, "alignment must be a power of two");
}

/* a random workload against a shadow map of bytes: no two live blocks overlap, all inside */
static void t_arena_random_workload(void)
{
    nst_arena a;
    const size_t cap = 1 << 20;
    nst_arena_init(&a, cap, 256);
    unsigned char *owner = nst_calloc(cap, "shadow");
    size_t off[200], sz[200];
    int live[200] = {0}, bad = 0, fails = 0;
    unsigned r = 7;
    for (int step = 0; step < 20000; step++) {
        r = r * 1103515245u + 12345u;
        int i = (int)((r >> 8) % 200);
        if (live[i]) {
            for (size_t k = off[i]; k < off[i] + sz[i]; k++) owner[k] = 0;
            bad += nst_arena_release(&a, off[i]) == 0;
            live[i] = 0;
        } else {
            sz[i] = 1 + (r >> 12) % 40000;
            if (nst_arena_alloc(&a, sz[i], &off[i]) != 0) {
                fails++;
                continue;
            }
            bad += off[i] % 256 != 0 || off[i] + sz[i] > cap;
            for (size_t k = off[i]; k < off[i] + sz[i] && k < cap; k++) bad += owner[k]++ != 0;
            live[i] = 1;
        }
    }
    CHECK(bad == 0, "%d overlaps, misalignments or refused frees", bad);
    CHECK(fails > 0 && fails < 20000, "some allocations found the arena full (%d)", fails);
    for (int i = 0; i < 200; i++)
        if (live[i]) nst_arena_release(&a, off[i]);
    CHECK(a.used == 0 && a.nfree == 1, "all returned and coalesced: %d blocks", a.nfree);
    nst_free(owner);
    nst_arena_destroy(&a);
}

/* A node's views: views[r] sees the GPUs numbered first[r] .. first[r] + count[r] - 1 (UUID byte 0
 * holds the number, byte 15 a mark, so no UUID is all zeros). */
static void make_views(nst_gpu_view *views, int nranks, const int *first, const int *count)
{
    memset(views, 0, (size_t)nranks * sizeof *views);
    for (int r = 0; r < nranks; r++) {
        views[r].n = count[r];
        for (int k = 0; k < count[r]; k++) views[r].uuid[k][0] = (unsigned char)(first[r] + k), views[r].uuid[k][15] = 0xa5;
    }
}

/* The physical GPU each rank of a node drives under policy (-1: none), into gpu[]. */
static void choose_all(const char *policy, const nst_gpu_view *views, int nranks, int *gpu)
{
    for (int r = 0; r < nranks; r++) {
        int i = nst_gpu_choose(policy, r, views, nranks);
        gpu[r] = i < 0 ? -1 : views[r].uuid[i][0];
    }
}

/* How many ranks drive the busiest GPU. */
static int most_on_one(const int *gpu, int nranks)
{
    int most = 0;
    for (int r = 0; r < nranks; r++) {
        int n = 0;
        for (int q = 0; q < nranks; q++) n += gpu[q] == gpu[r];
        if (gpu[r] >= 0 && n > most) most = n;
    }
    return most;
}

static void t_binding_all_ranks_see_all_gpus(void)
{
    nst_gpu_view v[8];
    int first[8] = {0}, count[8] = {8, 8, 8, 8, 8, 8, 8, 8}, gpu[8];
    make_views(v, 8, first, count);
    choose_all("auto", v, 8, gpu);
    for (int r = 0; r < 8; r++) CHECK(gpu[r] == r, "rank %d drives GPU %d", r, gpu[r]);
    choose_all("local_rank", v, 8, gpu);
    for (int r = 0; r < 8; r++) CHECK(gpu[r] == r, "local_rank: rank %d drives GPU %d", r, gpu[r]);
    choose_all("visible0", v, 8, gpu);
    CHECK(most_on_one(gpu, 8) == 8, "visible0: every rank on its first GPU (%d)", most_on_one(gpu, 8));
}

/* srun --gpus-per-task=1: each rank sees one GPU, a different one, as its device 0 */
static void t_binding_one_gpu_per_task(void)
{
    nst_gpu_view v[8];
    int first[8] = {0, 1, 2, 3, 4, 5, 6, 7}, count[8] = {1, 1, 1, 1, 1, 1, 1, 1}, gpu[8];
    make_views(v, 8, first, count);
    for (int r = 0; r < 8; r++) CHECK(nst_gpu_choose("auto", r, v, 8) == 0, "rank %d: index %d", r, nst_gpu_choose("auto", r, v, 8));
    choose_all("auto", v, 8, gpu);
    for (int r = 0; r < 8; r++) CHECK(gpu[r] == r, "rank %d drives GPU %d", r, gpu[r]);
    choose_all("visible0", v, 8, gpu);
    CHECK(most_on_one(gpu, 8) == 1, "visible0: one rank per GPU (%d)", most_on_one(gpu, 8));
}

/* srun --gpu-bind=closest on two sockets: each rank sees its socket's 4 GPUs */
static void t_binding_closest_two_numa_halves(void)
{
    nst_gpu_view v[8];
    int first[8] = {0, 0, 0, 0, 4, 4, 4, 4}, count[8] = {4, 4, 4, 4, 4, 4, 4, 4}, gpu[8];
    make_views(v, 8, first, count); /* block distribution: ranks 0-3 on socket 0, 4-7 on socket 1 */
    choose_all("auto", v, 8, gpu);
    for (int r = 0; r < 8; r++) CHECK(gpu[r] == r, "rank %d drives GPU %d", r, gpu[r]);
    CHECK(most_on_one(gpu, 8) == 1, "each rank its own GPU (%d on one)", most_on_one(gpu, 8));
    /* cyclic over sockets (Slurm's block:cyclic): even ranks see GPUs 0-3, odd ranks 4-7. The local
     * rank modulo 4 gives ranks 0 and 4 GPU 0, ranks 2 and 6 GPU 2, and leaves GPUs 1 and 3 idle */
    int firstc[8] = {0, 4, 0, 4, 0, 4, 0, 4};
    make_views(v, 8, firstc, count);
    choose_all("auto", v, 8, gpu);
    CHECK(most_on_one(gpu, 8) == 1, "cyclic: each rank its own GPU (%d on one)", most_on_one(gpu, 8));
    CHECK(gpu[0] == 0 && gpu[2] == 1 && gpu[4] == 2 && gpu[6] == 3 && gpu[1] == 4 && gpu[7] == 7, "cyclic: GPUs %d %d %d %d, %d %d",
          gpu[0], gpu[2], gpu[4], gpu[6], gpu[1], gpu[7]);
    choose_all("local_rank", v, 8, gpu);
    CHECK(gpu[0] == 0 && gpu[4] == 0 && most_on_one(gpu, 8) == 2, "local_rank keeps its meaning (local rank modulo the GPUs seen)");
}

/* more ranks than GPUs: they share, evenly */
static void t_binding_more_ranks_than_gpus(void)
{
    nst_gpu_view v[8];
    int first[8] = {0}, count[8] = {2, 2, 2, 2, 2, 2, 2, 2}, gpu[8];
    make_views(v, 8, first, count);
    choose_all("auto", v, 8, gpu);
    for (int r = 0; r < 8; r++) CHECK(gpu[r] == r % 2, "rank %d drives GPU %d", r, gpu[r]);
    CHECK(most_on_one(gpu, 8) == 4, "4 ranks per GPU (%d)", most_on_one(gpu, 8));
    /* a CPU rank among them (sees none) takes no GPU and moves no one */
    v[3].n = 0;
    choose_all("auto", v, 8, gpu);
    CHECK(gpu[3] == -1 && gpu[4] == 1 && gpu[5] == 0, "CPU rank 3: %d; ranks 4, 5: %d %d", gpu[3], gpu[4], gpu[5]);
}

static void t_binding_policy(void)
{
    nst_gpu_view v[6];
    int first[6] = {0}, count[6] = {4, 4, 4, 4, 4, 4};
    make_views(v, 6, first, count);
    CHECK(nst_gpu_choose("auto", 5, v, 6) == 1, "auto: position among equal views modulo GPUs");
    CHECK(nst_gpu_choose("local_rank", 3, v, 6) == 3, "local_rank");
    CHECK(nst_gpu_choose("visible0", 3, v, 6) == 0, "visible0");
    v[2].n = 0;
    CHECK(nst_gpu_choose("auto", 2, v, 6) == -1, "no GPU: -1");
    CHECK(nst_gpu_choose("auto", 6, v, 6) == -1, "a rank outside the node: -1");
    CHECK(nst_precision_parse("bf16") == NST_PREC_BF16 && nst_precision_parse("fp16") == NST_PREC_FP16 &&
              nst_precision_parse("tf32") == NST_PREC_TF32 && nst_precision_parse("auto") == NST_PREC_AUTO && nst_precision_parse("fp8") < 0,
          "precision names");
    CHECK(strcmp(nst_precision_name(NST_PREC_FP32), "fp32") == 0, "name of fp32");
}

/* ranks 0 and 1 claim one GPU UUID, rank 2 another (3 ranks on one node); then MIG: three slices
 * of one GPU (one PCI bus id) have three UUIDs, so no one shares */
static void t_shared_gpus_found_by_uuid(void)
{
    if (nst_comm_world_size() != 3 || nst_comm_local_size() != 3) SKIP("needs 3 ranks on one node (mpirun -np 3)");
    int r = nst_comm_world_rank(), sharers = 0, most = 0;
    const char *id = r < 2 ? "6f2a0c1e-5b3d-4e7a-9c1f-0a1b2c3d4e5f" : "6f2a0c1e-5b3d-4e7a-9c1f-0a1b2c3d4e60";
    CHECK(nst_comm_gpu_sharers(id, &sharers, &most) == NST_OK, "%s", nst_fail_message());
    CHECK(sharers == (r < 2 ? 2 : 1), "rank %d: %d sharers", r, sharers);
    CHECK(most == 2, "rank %d: most %d", r, most);
    CHECK(nst_comm_gpu_sharers(r == 0 ? "" : id, &sharers, &most) == NST_OK, "%s", nst_fail_message());
    CHECK(sharers == 1 && most == 1, "a CPU rank (empty id) and distinct GPUs: rank %d sharers %d most %d", r, sharers, most);
    const char *mig[3] = {"a1000000-0000-5000-8000-000000000001", "a1000000-0000-5000-8000-000000000002", "a1000000-0000-5000-8000-000000000003"};
    CHECK(nst_comm_gpu_sharers(mig[r], &sharers, &most) == NST_OK, "%s", nst_fail_message());
    CHECK(sharers == 1 && most == 1, "MIG slices of one GPU are distinct devices: rank %d sharers %d most %d", r, sharers, most);
}

/* the GPU's sharers agree on the smallest of their free-memory readings; others keep 0 */
static void t_sharers_agree_on_free_memory(void)
{
    if (nst_comm_world_size() != 3 || nst_comm_local_size() != 3) SKIP("needs 3 ranks on one node (mpirun -np 3)");
    int r = nst_comm_world_rank();
    const size_t gib = (size_t)1 << 30;
    const size_t mine[3] = {40 * gib, 38 * gib + 12345, 70 * gib};
    const char *id = r < 2 ? "6f2a0c1e-5b3d-4e7a-9c1f-0a1b2c3d4e5f" : "";
    size_t agreed = 1;
    CHECK(nst_comm_node_barrier() == NST_OK, "barrier: %s", nst_fail_message());
    CHECK(nst_comm_gpu_min_free(id, mine[r], &agreed) == NST_OK, "%s", nst_fail_message());
    CHECK(agreed == (r < 2 ? 38 * gib + 12345 : 0), "rank %d: agreed %zu", r, agreed);
    /* a figure above 4 GiB survives the exchange (64-bit) */
    CHECK(nst_comm_gpu_min_free(r == 2 ? "x" : id, mine[r], &agreed) == NST_OK, "%s", nst_fail_message());
    CHECK(agreed == (r < 2 ? 38 * gib + 12345 : 70 * gib), "rank %d alone on its GPU: agreed %zu", r, agreed);
}

/* run.stall_timeout: a number is the limit; auto is 20 times the slowest iteration seen, at least
 * 300 s (a small render ends within 10 minutes of a stall), and 1800 s before the first iteration
 * has finished; a slow iteration raises it, so a big render is not cut short by a slow one. */
static void t_watchdog_limit(void)
{
    CHECK(nst_watchdog_limit(8, 100, 1) == 8 && nst_watchdog_limit(8, 0, 0) == 8, "a set limit is the limit");
    CHECK(nst_watchdog_limit(0, 0, 0) == 1800, "auto before the first iteration: %g", nst_watchdog_limit(0, 0, 0));
    CHECK(nst_watchdog_limit(0, 0.13, 1) == 300, "auto, iterations of 0.13 s: %g", nst_watchdog_limit(0, 0.13, 1));
    CHECK(nst_watchdog_limit(0, 0.9, 1) + 5 + 60 < 600, "auto, iterations under a second: the job ends within 10 minutes");
    CHECK(nst_watchdog_limit(0, 60, 1) == 1200, "auto, iterations of a minute: %g", nst_watchdog_limit(0, 60, 1));
    CHECK(nst_watchdog_limit(0, 600, 1) == 12000, "auto follows the slowest iteration: %g", nst_watchdog_limit(0, 600, 1));
}

/* Outside the render loops the limit is the larger of run.stall_timeout and auto's, so a limit set
 * for short iterations never judges a long set-up, broadcast or gather. */
static void t_watchdog_phase_limit(void)
{
    CHECK(nst_watchdog_phase_limit(8, 0.13, 1) == 300, "a set 8 s after iterations of 0.13 s: %g", nst_watchdog_phase_limit(8, 0.13, 1));
    CHECK(nst_watchdog_phase_limit(8, 0, 0) == 1800, "a set 8 s before the first iteration: %g", nst_watchdog_phase_limit(8, 0, 0));
    CHECK(nst_watchdog_phase_limit(5000, 0.13, 1) == 5000, "a set limit above auto's is the limit: %g", nst_watchdog_phase_limit(5000, 0.13, 1));
    CHECK(nst_watchdog_phase_limit(0, 60, 1) == 1200, "auto after iterations of a minute: %g", nst_watchdog_phase_limit(0, 60, 1));
}

/* A round's answers (bit 31: inside MPI; below: seconds in that state), limit 8 s (half: 4), the
 * same rule in a loop and a phase: a rank computing at all, or back inside MPI less than half the
 * limit ago, moves the job (a slow iteration's rank just done with its work, as a loaded machine
 * once showed to be a false stall); every rank inside MPI for half of it or more is a stalled
 * network. nst_watchdog_slow names the ranks that computed for half the limit. */
static void t_watchdog_moving(void)
{
    const unsigned in = 0x80000000u;
    const unsigned waiting[2] = {in | 9, in | 4}, one_busy[2] = {in | 9, 5}, one_new[2] = {in | 9, 1}, one_back[2] = {in | 9, in | 1},
                   one_edge[2] = {in | 9, in | 3};
    CHECK(!nst_watchdog_moving(8, in | 9, waiting, 2), "every rank inside MPI 4 s or more: a stall");
    CHECK(nst_watchdog_moving(8, in | 9, one_busy, 2), "a rank computing 5 s: moving");
    CHECK(nst_watchdog_moving(8, in | 9, one_new, 2), "a rank computing 1 s (out of MPI since): moving");
    CHECK(nst_watchdog_moving(8, in | 9, one_back, 2), "a rank back inside MPI 1 s ago (it computed until then): moving");
    CHECK(nst_watchdog_moving(8, in | 9, one_edge, 2), "3 s inside MPI (3 to 4 s, rounded down): moving");
    CHECK(nst_watchdog_moving(8, 0, waiting, 2) && nst_watchdog_moving(8, in | 2, waiting, 2) && !nst_watchdog_moving(8, in | 5, waiting, 2),
          "rank 0's own state counts as any rank's");
    CHECK(!nst_watchdog_moving(8, in | 4, NULL, 0) && nst_watchdog_moving(8, 0, NULL, 0), "a world of rank 0 alone: inside MPI a stall, computing not");
    CHECK(nst_watchdog_slow(8, 4) && nst_watchdog_slow(8, 5) && !nst_watchdog_slow(8, 3) && !nst_watchdog_slow(8, in | 9),
          "the slow ranks named: computing 4 s or more of a limit of 8 (3 s: not)");
}

/* The ranks' first exchange: every pair up to 256 ranks; beyond, the pairs at distances 2^k (both
 * ways round the ring). Always symmetric, so every message sent there has a receiver, ascending,
 * without the rank itself or a rank twice. */
static void t_first_contact_peers(void)
{
    static const int sizes[] = {2, 3, 4, 7, 256, 257, 300, 1000};
    static int peer[1000], back[1000];
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        const int size = sizes[k];
        int bad = 0, lo = size, hi = 0;
        for (int me = 0; me < size && !bad; me++) {
            int n = nst_first_contact_peers(me, size, peer);
            lo = n < lo ? n : lo, hi = n > hi ? n : hi;
            for (int i = 0; i < n && !bad; i++) {
                bad |= peer[i] == me || peer[i] < 0 || peer[i] >= size || (i && peer[i] <= peer[i - 1]);
                int m = nst_first_contact_peers(peer[i], size, back), found = 0;
                for (int j = 0; j < m; j++) found |= back[j] == me;
                bad |= !found;
            }
        }
        CHECK(!bad, "%d ranks: peers symmetric, ascending, without self or repeats", size);
        if (size <= 256) CHECK(lo == size - 1 && hi == size - 1, "%d ranks: every pair meets (%d-%d peers)", size, lo, hi);
        else {
            int bits = 0;
            while ((1 << bits) < size) bits++;
            CHECK(hi <= 2 * bits && lo >= 2, "%d ranks: at most 2 x %d peers each (%d-%d)", size, bits, lo, hi);
        }
    }
    int n = nst_first_contact_peers(5, 1000, peer), near = 0;
    for (int i = 0; i < n; i++) near += peer[i] == 4 || peer[i] == 6 || peer[i] == 1 || peer[i] == 9 || peer[i] == 517;
    CHECK(near == 5, "1000 ranks: rank 5 meets 4 and 6 (+-1), 1 and 9 (+-4) and 517 (+512)");
    n = nst_first_contact_peers(0, 1000, peer);
    CHECK(n > 0 && peer[n - 1] == 999, "1000 ranks: rank 0 meets rank 999 (-1, round the ring)");
}

/* The first exchange's limit: the watchdog's floor in whole seconds, at least 20 s (the floor's
 * test hook), and at least 20 times this rank's MPI_Init, so a machine loaded many times over,
 * whose every rank starts slowly, stretches it. */
static void t_first_contact_limit(void)
{
    static const struct { double floor, init, want; } c[] = {
        {300, 0.2, 300}, {5, 0.2, 20}, {5, 0, 20}, {5, -1, 20}, {30.4, 0.1, 30}, {5, 2.5, 50}, {300, 30, 600}, {5, 1.03, 21},
    };
    for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
        const double got = nst_first_contact_limit(c[i].floor, c[i].init);
        CHECK(got == c[i].want, "floor %g s, MPI_Init %g s: %g s (want %g)", c[i].floor, c[i].init, got, c[i].want);
    }
}

/* The barrier after MPI_Init (mpi/launch_fence.c), through the PMIx client Open MPI loaded: made,
 * with its data, under mpirun (nst_comm_init made it once already; it is collective, so again). */
static void t_launch_fence(void)
{
    if (nst_comm_world_size() < 2) SKIP("one rank: nst_comm_init makes no fence (run under mpirun -np 3)");
    void *lib = dlopen("libpmix.so.2", RTLD_NOW | RTLD_NOLOAD);
    if (!lib) {
        char why[64];
        CHECK(nst_launch_fence(why, sizeof why) == 0, "no PMIx client loaded: no fence, no error");
        SKIP("Open MPI runs on no libpmix.so.2 here (a PMIx of its own, or another MPI): the fence is not made");
    }
    dlclose(lib);
    char why[256] = "";
    const int r = nst_launch_fence(why, sizeof why);
    CHECK(r == 1, "the PMIx fence with data collection made on every rank (%d%s%s)", r, why[0] ? ": " : "", why);
}

/* The waits' schedule (mpi/patience.h): tests without a nap for the thread's spin (2 ms at most),
 * so ranks in step meet as soon as in MPI_Wait; then naps of 1/64 of the time waited, 50 us to
 * 2 ms, so a wait ends at most that much after its request completed. */
static void t_patience_schedule(void)
{
    const double S = NST_PATIENCE_SPIN;
    CHECK(nst_patience_nap(0, S) == 0 && nst_patience_nap(0.0019, S) == 0, "no nap in the first 2 ms of the longest spin");
    CHECK(nst_patience_nap(30e-6, 20e-6) == 50e-6, "past a short spin, a nap at once: %g", nst_patience_nap(30e-6, 20e-6));
    CHECK(nst_patience_nap(0.002, S) == 50e-6, "the shortest nap, 50 us: %g", nst_patience_nap(0.002, S));
    CHECK(nst_patience_nap(0.064, S) == 0.001, "1/64 of the time waited: %g", nst_patience_nap(0.064, S));
    CHECK(nst_patience_nap(30, S) == 0.002 && nst_patience_nap(1e9, S) == 0.002, "the longest nap, 2 ms");
    int late = 0;
    for (double w = 0.002; w < 100; w *= 1.01) late += nst_patience_nap(w, S) > 50e-6 + w / 64 || nst_patience_nap(w, S) > 0.002;
    CHECK(late == 0, "%d waits could end later than 1/64 of their length (or 50 us) after their request", late);
}

/* The spin follows the machine (mpi/patience.h): a spin on a shared core (under half of it, or
 * more threads ready to run than cores) makes the next a quarter as long, down to 1 us, and one
 * on a core of its own doubles it back to 2 ms; a spin too short to tell changes nothing. From the
 * longest spin, 6 spins on a shared core reach the shortest (so a busy node's ranks soon nap at
 * once), and 11 on a core of their own bring it back. */
static void t_patience_spin_follows_the_machine(void)
{
    const double S = NST_PATIENCE_SPIN, M = NST_PATIENCE_SPIN_MIN;
    CHECK(nst_patience_shared(1e-3, 0.3e-3, 1, 2) && !nst_patience_shared(1e-3, 0.6e-3, 2, 2), "under half of the core: shared; over: not");
    CHECK(nst_patience_shared(1e-3, 1e-3, 3, 2) && !nst_patience_shared(1e-3, 1e-3, 3, 0), "3 threads ready on 2 cores: shared; cores unknown: by the share");
    CHECK(nst_patience_spin(S, S, 1) == S / 4, "shared: a quarter (%g)", nst_patience_spin(S, S, 1));
    CHECK(nst_patience_spin(S / 4, S / 4, 0) == S / 2, "a core of its own: twice (%g)", nst_patience_spin(S / 4, S / 4, 0));
    CHECK(nst_patience_spin(S, S, 0) == S && nst_patience_spin(M, M, 1) == M, "within 1 us and 2 ms");
    CHECK(nst_patience_spin(S, 0.5e-6, 1) == S, "a wait of 0.5 us tells nothing: %g", nst_patience_spin(S, 0.5e-6, 1));
    double s = S;
    int shared = 0, own = 0;
    while (s > M && shared < 100) s = nst_patience_spin(s, s, 1), shared++;
    while (s < S && own < 100) s = nst_patience_spin(s, s, 0), own++;
    CHECK(shared == 6 && own == 11, "2 ms to 1 us in %d shared spins (expected 6), back in %d (expected 11)", shared, own);
}

/* Process CPU seconds (every thread: MPI's and the watchdog's too). */
static double cpu_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Ranks waiting in a collective for a rank that is late (0.6 s asleep) nap (mpi/patience.c): their
 * CPU time over the wait is a small share of it, where MPI_Allreduce's spin took a core each; the
 * late rank's status still reaches every rank. */
static void t_waits_nap(void)
{
    if (nst_comm_world_size() < 2) SKIP("one rank: nobody waits (run under mpirun -np 3)");
    const int r = nst_comm_world_rank();
    CHECK(nst_comm_check(NST_OK) == NST_OK, "the ranks line up");
    const double t0 = nst_now(), c0 = cpu_seconds();
    if (r == 0) nst_sleep(0.6);
    const nst_status s = nst_comm_check(r == 0 ? NST_EINPUT : NST_OK);
    double share = r == 0 ? 0 : (cpu_seconds() - c0) / (nst_now() - t0), lo, hi, sum;
    CHECK(nst_comm_stats(&share, &lo, &hi, &sum, 1) == NST_OK, "%s", nst_fail_message());
    CHECK(s == NST_EINPUT, "rank %d: the late rank's status reached it (%d)", r, (int)s);
    CHECK(hi < 0.25, "the waiting ranks took up to %.0f %% of a core while they waited 0.6 s (a spinning wait: about 100 %%)", 100 * hi);
}

int main(int argc, char **argv)
{
    if (nst_comm_init(&argc, &argv) != NST_OK) return printf("MPI: %s\n", nst_fail_message()), 1;
    int root = nst_comm_world_rank() == 0;
    if (!root) { /* only rank 0 reports; the others take part in the collective test */
        FILE *devnull = freopen("/dev/null", "w", stdout);
        (void)devnull;
    }
    RUN(t_arena_first_fit_alignment_and_coalescing);
    RUN(t_arena_random_workload);
    RUN(t_binding_policy);
    RUN(t_binding_all_ranks_see_all_gpus);
    RUN(t_binding_one_gpu_per_task);
    RUN(t_binding_closest_two_numa_halves);
    RUN(t_binding_more_ranks_than_gpus);
    RUN(t_shared_gpus_found_by_uuid);
    RUN(t_sharers_agree_on_free_memory);
    RUN(t_watchdog_limit);
    RUN(t_watchdog_phase_limit);
    RUN(t_watchdog_moving);
    RUN(t_first_contact_peers);
    RUN(t_first_contact_limit);
    RUN(t_launch_fence);
    RUN(t_patience_schedule);
    RUN(t_patience_spin_follows_the_machine);
    RUN(t_waits_nap);
    nst_comm_finalize();
    return test_report("test_device");
}

/* tests/test_device.c: the device-independent parts of the GPU path, which CI checks without a
 * GPU: the arena sub-allocator (kernels/arena.c), the binding policy and shared-GPU detection
 * (mpi/gpu_bind.c, run under mpirun with 3 ranks and made-up bus ids) and the precision names. */
#include "../kernels/arena.h"
#include "../kernels/backend.h"
#include "../mpi/comm.h"
#include "../util/mem.h"
#include "test.h"

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

static void t_binding_policy(void)
{
    CHECK(nst_gpu_choose("auto", 5, 4) == 1, "auto: local rank modulo GPUs");
    CHECK(nst_gpu_choose("local_rank", 3, 8) == 3, "local_rank");
    CHECK(nst_gpu_choose("visible0", 3, 8) == 0, "visible0");
    CHECK(nst_gpu_choose("auto", 0, 0) == -1, "no GPU: -1");
    CHECK(nst_precision_parse("bf16") == NST_PREC_BF16 && nst_precision_parse("fp16") == NST_PREC_FP16 &&
              nst_precision_parse("tf32") == NST_PREC_TF32 && nst_precision_parse("auto") == NST_PREC_AUTO && nst_precision_parse("fp8") < 0,
          "precision names");
    CHECK(strcmp(nst_precision_name(NST_PREC_FP32), "fp32") == 0, "name of fp32");
}

/* ranks 0 and 1 claim one bus id, rank 2 another (3 ranks on one node) */
static void t_shared_gpus_found_by_bus_id(void)
{
    if (nst_comm_world_size() != 3 || nst_comm_local_size() != 3) SKIP("needs 3 ranks on one node (mpirun -np 3)");
    int r = nst_comm_world_rank(), sharers = 0, most = 0;
    const char *bus = r < 2 ? "0000:1B:00.0" : "0000:3D:00.0";
    CHECK(nst_comm_gpu_sharers(bus, &sharers, &most) == NST_OK, "%s", nst_fail_message());
    CHECK(sharers == (r < 2 ? 2 : 1), "rank %d: %d sharers", r, sharers);
    CHECK(most == 2, "rank %d: most %d", r, most);
    CHECK(nst_comm_gpu_sharers(r == 0 ? "" : bus, &sharers, &most) == NST_OK, "%s", nst_fail_message());
    CHECK(sharers == 1 && most == 1, "a CPU rank (empty id) and distinct GPUs: rank %d sharers %d most %d", r, sharers, most);
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
    RUN(t_shared_gpus_found_by_bus_id);
    nst_comm_finalize();
    return test_report("test_device");
}

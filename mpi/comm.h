/* mpi/comm.h: the process group. The ONLY module that includes mpi.h (and, with the CUDA issue,
 * nccl.h). Everything else sees ranks, sizes, broadcasts and sums through these functions.
 *
 * Every MPI call is checked (MPI_ERRORS_RETURN on the world communicator): a failure records
 * "MPI_<call> failed on rank R (host): <MPI error string>". Collective failures that leave ranks
 * out of step end in nst_comm_abort, which brings the whole job down with one message. */
#ifndef NST_COMM_H
#define NST_COMM_H

#include <stddef.h>
#include <stdint.h>

#include "../util/status.h"

nst_status nst_comm_init(int *argc, char ***argv);
void nst_comm_finalize(void);
/* Rank and size in the current group (the world unless a group is pushed): every call below
 * acts on the current group. */
int nst_comm_rank(void);
int nst_comm_size(void);
int nst_comm_world_rank(void);
int nst_comm_world_size(void);

/* Rank groups: a batch's groups render different jobs at once, a coarse pyramid level runs on the
 * ranks that have tiles. Split the current group by color (ranks with the same color form a
 * group, ordered by key; color < 0: in none, *out = NULL). Collective on the current group. */
typedef struct nst_group nst_group;
nst_status nst_comm_split(int color, int key, nst_group **out);
/* Make g the current group until the matching pop. */
void nst_comm_push(nst_group *g);
void nst_comm_pop(void);
void nst_comm_group_free(nst_group *g);
/* A barrier on the current group that sleeps between tests instead of spinning: ranks with
 * nothing to do wait without taking cores from the ranks at work. */
nst_status nst_comm_idle_barrier(void);
/* Rank and rank count among the processes on this node (MPI_Comm_split_type, shared memory). */
int nst_comm_local_rank(void);
int nst_comm_local_size(void);
const char *nst_comm_host(void);
/* The world's ranks by host, "nsth-a (ranks 0-1), nsth-b (ranks 2-3)" (cut short to fit cap), and
 * the number of hosts. */
int nst_comm_hosts(char *out, size_t cap);

/* Broadcast bytes from root. */
nst_status nst_comm_bcast(void *buf, size_t bytes, int root);
/* Broadcast a buffer whose size only root knows: root passes *buf and *len; others receive a new
 * allocation (freed with nst_free). */
nst_status nst_comm_bcast_alloc(unsigned char **buf, size_t *len, int root);
/* Every rank's buffer OR-ed together, in place: rows that one rank filled and the others left
 * zero reach every rank (a batch's summary). */
nst_status nst_comm_merge_bytes(void *buf, size_t bytes);
/* Blocking point-to-point of bytes (chunked above 1 GiB). */
nst_status nst_comm_send(const void *buf, size_t bytes, int dest);
nst_status nst_comm_recv(void *buf, size_t bytes, int src);

/* A sparse neighbour exchange: one message to and from each peer, all non-blocking, then wait.
 * Peers must agree on sizes; a message of 0 bytes is skipped on both sides. */
typedef struct {
    int peer;
    void *buf;
    size_t bytes;
} nst_comm_msg;
nst_status nst_comm_exchange(const nst_comm_msg *sends, int nsend, const nst_comm_msg *recvs, int nrecv);

/* The worst status over all ranks, without messages: the cheap check before a collective, so a
 * rank that failed never leaves the others waiting in it. Follow a failure with nst_comm_agree
 * to move the message to rank 0. */
nst_status nst_comm_check(nst_status mine);

/* Every rank learns the worst status of all ranks, and the message of the lowest rank that
 * failed is copied into every rank's error channel, so rank 0 can print it and all stop together. */
nst_status nst_comm_agree(nst_status mine);
/* In-place sums over all ranks (host memory), in a fixed order: bit-identical for a given rank count. */
nst_status nst_comm_sum_doubles(double *buf, size_t n);
/* In-place integer sums and maxima over all ranks (host memory): exact in any order. */
nst_status nst_comm_sum_int64(int64_t *buf, size_t n);
nst_status nst_comm_max_ints(int *buf, size_t n);
/* Per-element minimum, maximum and sum over ranks of n doubles (for the phase timers). */
nst_status nst_comm_stats(const double *in, double *min, double *max, double *sum, size_t n);
/* GPU binding (gpu.binding). A rank's view of its node's GPUs: the identities (UUIDs; a MIG slice
 * has its own) of the devices it sees, in CUDA's order. Launchers give ranks different views:
 * all of the node's GPUs, one each (srun --gpus-per-task=1), those of its socket (--gpu-bind=closest). */
#define NST_GPU_UUID_BYTES 16
#define NST_GPU_ID_CHARS 48 /* a GPU's identity as text (a UUID is 36 characters), with its terminator */
#define NST_GPU_VIEW_MAX 64
typedef struct {
    int n; /* devices seen (at most NST_GPU_VIEW_MAX are compared) */
    unsigned char uuid[NST_GPU_VIEW_MAX][NST_GPU_UUID_BYTES];
} nst_gpu_view;
/* The device index local rank me drives among those it sees (-1: none), from every local rank's
 * view (views[0..nlocal-1]). auto: its position among the node's ranks with the same view, modulo
 * the view's size (ranks that see the same GPUs spread over them; ranks that see different ones do
 * not collide); local_rank: the node-local rank modulo the GPUs it sees; visible0: 0. Pure. */
int nst_gpu_choose(const char *policy, int me, const nst_gpu_view *views, int nlocal);
/* The binding, collective over the node: every local rank's view gathered, then nst_gpu_choose. */
nst_status nst_comm_gpu_bind(const char *policy, const nst_gpu_view *mine, int *gpu);
/* How many ranks of this node drive the GPU with this identity (*sharers; gpu_id: its UUID as
 * text, never the PCI bus id, which MIG slices share), and the largest such count over all ranks
 * (*max_sharers: 1 = every rank has its own GPU). World-collective; an empty gpu_id (a CPU rank)
 * counts 1. */
nst_status nst_comm_gpu_sharers(const char *gpu_id, int *sharers, int *max_sharers);
/* A barrier over this node's ranks. */
nst_status nst_comm_node_barrier(void);
/* The smallest of the free-memory figures (mine) of the node's ranks with this gpu_id, in *agreed
 * (0 for an empty gpu_id). Collective over the node. */
nst_status nst_comm_gpu_min_free(const char *gpu_id, size_t mine, size_t *agreed);

/* NCCL. nst_comm_nccl_open makes the world's communicator (world-collective, with the rank's CUDA
 * device current); from then on every group nst_comm_split makes gets its own, split from its
 * parent's (ncclCommSplit) as the group is made, and nst_comm_group_free releases it; a group of
 * one rank gets none. nst_comm_nccl_close releases the world's: before the CUDA backend closes.
 * nst_comm_nccl_sum_doubles: in-place sum of n doubles in device memory over the current group,
 * queued on the CUDA stream and waited for. Failures and a stall of timeout seconds abort every
 * rank with one message (ncclCommAbort, then MPI_Abort): a rank cannot recover from a broken
 * communicator. nst_comm_nccl_exchange: the halo exchange's messages between buffers in device
 * memory (peers: ranks of the current group, whose NCCL ranks are the same: both splits take one
 * color and key), as one NCCL group of sends and receives on the stream, waited for the same way. */
int nst_comm_nccl_built(void);
void nst_comm_nccl_version(char *out, size_t cap);
nst_status nst_comm_nccl_open(double timeout);
void nst_comm_nccl_close(void);
nst_status nst_comm_nccl_sum_doubles(double *dev, size_t n, void *stream, double timeout);
nst_status nst_comm_nccl_exchange(const nst_comm_msg *sends, int nsend, const nst_comm_msg *recvs, int nrecv, void *stream, double timeout);

/* "Open MPI v4.1.4, ..." (callable before nst_comm_init). */
void nst_comm_library_version(char *out, size_t cap);
/* Abort every rank: prints "nstbatch: error: <msg>" (from this rank) and calls MPI_Abort. */
void nst_comm_abort(int exit_code, const char *msg) __attribute__((noreturn));

#endif

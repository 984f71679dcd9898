/* kernels/arena.h: a first-fit sub-allocator over one reserved block of memory [0, capacity).
 * The CUDA backend reserves each rank's device memory once at start (one cudaMalloc) and hands
 * out offsets from it, so nothing calls cudaMalloc while the render runs and a tile that does
 * not fit fails at set-up, not halfway through an iteration. Pure bookkeeping on offsets (no
 * device calls), so it is tested on the CPU. Free blocks are coalesced with their neighbours. */
#ifndef NST_ARENA_H
#define NST_ARENA_H

#include <stddef.h>

typedef struct {
    size_t off, size;
} nst_arena_block;

typedef struct {
    size_t capacity, align;
    size_t used, peak;         /* bytes handed out (rounded to align), and their maximum */
    nst_arena_block *free_;    /* free blocks, sorted by offset, never adjacent */
    nst_arena_block *live;     /* handed-out blocks, sorted by offset */
    int nfree, nlive, cap_free, cap_live;
} nst_arena;

/* align: a power of two (256 suits every CUDA type and cuBLAS/cuDNN). Returns 0, -1 on no memory. */
int nst_arena_init(nst_arena *a, size_t capacity, size_t align);
void nst_arena_destroy(nst_arena *a);
/* Offset of a new block of at least bytes (0 bytes: one alignment unit). 0, or -1 when no free
 * block is large enough (or the bookkeeping itself cannot grow). */
int nst_arena_alloc(nst_arena *a, size_t bytes, size_t *off);
/* Return the block at off; its size, or 0 when off is not a live block (a double free). */
size_t nst_arena_release(nst_arena *a, size_t off);
/* The largest free block (what one more allocation can get). */
size_t nst_arena_largest_free(const nst_arena *a);

#endif

/* kernels/arena.c: the first-fit sub-allocator of arena.h. Two sorted arrays (free and live
 * blocks): a render holds a few hundred buffers, so linear scans and memmove are cheap. */
#include "arena.h"

#include <stdlib.h>
#include <string.h>

int nst_arena_init(nst_arena *a, size_t capacity, size_t align)
{
    memset(a, 0, sizeof *a);
    if (align == 0 || (align & (align - 1))) return -1;
    a->align = align;
    a->capacity = capacity / align * align;
    a->cap_free = a->cap_live = 64;
    a->free_ = malloc(sizeof *a->free_ * (size_t)a->cap_free);
    a->live = malloc(sizeof *a->live * (size_t)a->cap_live);
    if (!a->free_ || !a->live) {
        nst_arena_destroy(a);
        return -1;
    }
    if (a->capacity) a->free_[a->nfree++] = (nst_arena_block){0, a->capacity};
    return 0;
}

void nst_arena_destroy(nst_arena *a)
{
    free(a->free_);
    free(a->live);
    memset(a, 0, sizeof *a);
}

static int grow(nst_arena_block **v, int *cap, int need)
{
    if (need <= *cap) return 0;
    int n = *cap * 2 > need ? *cap * 2 : need;
    nst_arena_block *p = realloc(*v, sizeof *p * (size_t)n);
    if (!p) return -1;
    *v = p;
    *cap = n;
    return 0;
}

/* index of the first block with off >= key */
static int lower_bound(const nst_arena_block *v, int n, size_t key)
{
    int lo = 0, hi = n;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (v[mid].off < key) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

static void insert_at(nst_arena_block *v, int *n, int i, nst_arena_block b)
{
    memmove(v + i + 1, v + i, sizeof *v * (size_t)(*n - i));
    v[i] = b;
    (*n)++;
}

static void remove_at(nst_arena_block *v, int *n, int i)
{
    memmove(v + i, v + i + 1, sizeof *v * (size_t)(*n - i - 1));
    (*n)--;
}

int nst_arena_alloc(nst_arena *a, size_t bytes, size_t *off)
{
    size_t need = bytes ? (bytes + a->align - 1) / a->align * a->align : a->align;
    if (need < bytes) return -1; /* overflow */
    if (grow(&a->live, &a->cap_live, a->nlive + 1)) return -1;
    for (int i = 0; i < a->nfree; i++) {
        if (a->free_[i].size < need) continue;
        size_t o = a->free_[i].off;
        a->free_[i].off += need;
        a->free_[i].size -= need;
        if (a->free_[i].size == 0) remove_at(a->free_, &a->nfree, i);
        insert_at(a->live, &a->nlive, lower_bound(a->live, a->nlive, o), (nst_arena_block){o, need});
        a->used += need;
        if (a->used > a->peak) a->peak = a->used;
        *off = o;
        return 0;
    }
    return -1;
}

size_t nst_arena_release(nst_arena *a, size_t off)
{
    int i = lower_bound(a->live, a->nlive, off);
    if (i >= a->nlive || a->live[i].off != off) return 0;
    nst_arena_block b = a->live[i];
    remove_at(a->live, &a->nlive, i);
    a->used -= b.size;
    /* put it back, merged with a free neighbour on either side */
    int j = lower_bound(a->free_, a->nfree, b.off);
    int left = j > 0 && a->free_[j - 1].off + a->free_[j - 1].size == b.off;
    int right = j < a->nfree && b.off + b.size == a->free_[j].off;
    if (left && right) {
        a->free_[j - 1].size += b.size + a->free_[j].size;
        remove_at(a->free_, &a->nfree, j);
    } else if (left) {
        a->free_[j - 1].size += b.size;
    } else if (right) {
        a->free_[j].off = b.off;
        a->free_[j].size += b.size;
    } else {
        if (grow(&a->free_, &a->cap_free, a->nfree + 1)) { /* cannot record it: the block is lost, not corrupt */
            return b.size;
        }
        insert_at(a->free_, &a->nfree, j, b);
    }
    return b.size;
}

size_t nst_arena_largest_free(const nst_arena *a)
{
    size_t m = 0;
    for (int i = 0; i < a->nfree; i++)
        if (a->free_[i].size > m) m = a->free_[i].size;
    return m;
}

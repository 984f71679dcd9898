/* video/plan.c: shots, chunks and their groups (see plan.h). */
#include "plan.h"

#include <stdlib.h>
#include <string.h>

#include "../util/mem.h"

static int cmp_ll(const void *a, const void *b)
{
    long long x = *(const long long *)a, y = *(const long long *)b;
    return (x > y) - (x < y);
}

/* Append [start, start + count) of shot `shot`, cut into chunks of at most `chunk`. */
static nst_status add_shot(nst_clip_plan *p, int *cap, long long start, long long count, long long chunk, int shot)
{
    long long step = chunk > 0 ? chunk : count;
    for (long long s = start; s < start + count; s += step) {
        if (p->nunits == *cap) {
            int ncap = *cap ? 2 * *cap : 16;
            nst_clip_unit *u = realloc(p->unit, sizeof *u * (size_t)ncap);
            if (!u) return nst_fail(NST_ENOMEM, "out of memory planning the clip's shots");
            p->unit = u, *cap = ncap;
        }
        nst_clip_unit *u = &p->unit[p->nunits++];
        u->start = s;
        u->count = s + step <= start + count ? step : start + count - s;
        u->shot = shot;
    }
    return NST_OK;
}

nst_status nst_clip_plan_make(long long n, const long long *cuts, int ncuts, long long chunk, nst_clip_plan *p)
{
    memset(p, 0, sizeof *p);
    p->n = n;
    long long *c = nst_alloc_array((size_t)ncuts + 2, sizeof *c, "the clip's cuts");
    if (!c) return NST_ENOMEM;
    int m = 0;
    c[m++] = 0;
    for (int i = 0; i < ncuts; i++)
        if (cuts[i] > 0 && cuts[i] < n) c[m++] = cuts[i];
    qsort(c, (size_t)m, sizeof *c, cmp_ll);
    int cap = 0;
    nst_status s = NST_OK;
    for (int i = 0; s == NST_OK && i < m; i++) {
        if (i > 0 && c[i] == c[i - 1]) continue;
        long long end = n;
        for (int j = i + 1; j < m; j++)
            if (c[j] != c[i]) { end = c[j]; break; }
        s = add_shot(p, &cap, c[i], end - c[i], chunk, p->nshots++);
    }
    nst_free(c);
    if (s != NST_OK) nst_clip_plan_free(p);
    return s;
}

void nst_clip_plan_free(nst_clip_plan *p)
{
    free(p->unit);
    memset(p, 0, sizeof *p);
}

void nst_clip_plan_assign(const nst_clip_plan *p, int ngroups, int *group)
{
    long long load[4096] = {0};
    if (ngroups > 4096) ngroups = 4096;
    if (ngroups < 1) ngroups = 1;
    for (int u = 0; u < p->nunits; u++) group[u] = -1;
    for (int k = 0; k < p->nunits; k++) {
        int best = -1; /* the longest unit not yet placed (the earlier on ties) */
        for (int u = 0; u < p->nunits; u++)
            if (group[u] < 0 && (best < 0 || p->unit[u].count > p->unit[best].count)) best = u;
        int g = 0;
        for (int i = 1; i < ngroups; i++)
            if (load[i] < load[g]) g = i;
        group[best] = g;
        load[g] += p->unit[best].count;
    }
}

long long nst_clip_range_index(long long f, long long first, long long step)
{
    if (f <= first) return 0;
    return (f - first + step - 1) / step;
}

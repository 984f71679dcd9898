/* video/plan.h: how a clip's frames are split into shots and chunks, and which rank group renders
 * which: pure arithmetic, the same on every rank.
 *
 * The frames rendered are a range of the clip (video.first, video.frames, video.step), indexed
 * 0 .. n - 1 here. A shot starts at 0 and at every cut (given or detected). Every shot starts
 * cold: its first frame has no earlier result to hold to. With video.chunk_frames a long shot is
 * cut further into chunks that start cold too, so they can render at once on different groups;
 * each chunk boundary is then a seam in time. Units (shots or chunks) go to groups longest first,
 * each to the group with the fewest frames so far (LPT).
 */
#ifndef NST_VIDEO_PLAN_H
#define NST_VIDEO_PLAN_H

#include "../util/status.h"

typedef struct {
    long long start, count; /* range indices [start, start + count) */
    int shot;               /* the shot it belongs to */
} nst_clip_unit;

typedef struct {
    long long n;            /* frames in the range */
    int nshots, nunits;
    nst_clip_unit *unit;    /* in range order */
} nst_clip_plan;

/* Shots from cuts (range indices; unsorted, repeats and 0 allowed, each < n), then chunks of at
 * most chunk frames (0: none). */
nst_status nst_clip_plan_make(long long n, const long long *cuts, int ncuts, long long chunk, nst_clip_plan *p);
void nst_clip_plan_free(nst_clip_plan *p);
/* group[u] for every unit, over ngroups groups (LPT: longest first, to the least loaded; ties to
 * the lower group, so every rank computes the same). */
void nst_clip_plan_assign(const nst_clip_plan *p, int ngroups, int *group);
/* The range index of the first rendered frame at or after clip frame f (range: first, step). */
long long nst_clip_range_index(long long f, long long first, long long step);

#endif

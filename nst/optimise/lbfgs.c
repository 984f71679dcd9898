/* nst/optimise/lbfgs.c: L-BFGS sharded by tile with tile-ordered dot products (see lbfgs.h). */
#include "lbfgs.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../../util/mem.h"
#include "../state/checkpoint.h"

nst_status nst_lbfgs_init(nst_lbfgs *L, nst_backend *be, nst_collectives coll, int m, double step, int box, int nlocal,
                          const int *tile_index, int ntiles, const size_t *n, const int *w, int seg)
{
    memset(L, 0, sizeof *L);
    L->be = be;
    L->box = box;
    L->coll = coll;
    L->m = m;
    L->step = step;
    L->nlocal = nlocal;
    L->ntiles = ntiles;
    L->tile = nst_alloc_array((size_t)nlocal + 1, sizeof(int), "L-BFGS tiles");
    L->n = nst_alloc_array((size_t)nlocal + 1, sizeof(size_t), "L-BFGS sizes");
    L->s = nst_calloc(sizeof(float *) * ((size_t)m * nlocal + 1), "L-BFGS history");
    L->y = nst_calloc(sizeof(float *) * ((size_t)m * nlocal + 1), "L-BFGS history");
    L->d = nst_calloc(sizeof(float *) * ((size_t)nlocal + 1), "L-BFGS directions");
    L->gprev = nst_calloc(sizeof(float *) * ((size_t)nlocal + 1), "L-BFGS gradients");
    L->rho = nst_calloc(sizeof(double) * (size_t)m, "L-BFGS scalars");
    L->alpha = nst_calloc(sizeof(double) * (size_t)m, "L-BFGS scalars");
    L->part = nst_calloc(sizeof(double) * 2 * ((size_t)ntiles + 1), "L-BFGS partial sums");
    L->w = nst_alloc_array((size_t)nlocal + 1, sizeof(int), "L-BFGS widths");
    L->xs = nst_calloc(sizeof *L->xs, "L-BFGS exact sums");
    L->xp = nst_calloc(sizeof(float *) * 2 * ((size_t)nlocal + 1), "L-BFGS vectors");
    if (L->xp) L->gp = L->xp + nlocal + 1;
    L->seg = seg;
    if (!L->tile || !L->n || !L->s || !L->y || !L->d || !L->gprev || !L->rho || !L->alpha || !L->part || !L->w || !L->xs || !L->xp) return NST_ENOMEM;
    for (int i = 0; i < nlocal; i++) {
        L->tile[i] = tile_index[i];
        L->n[i] = n[i];
        L->w[i] = w[i];
        if (w[i] < 1 || n[i] % (3 * (size_t)w[i])) return nst_fail(NST_ERUNTIME, "L-BFGS: tile %d holds %zu values, not rows of %d pixels", i, n[i], w[i]);
        size_t bytes = n[i] * sizeof(float);
        NST_TRY(be->ops->alloc(be, bytes, (void **)&L->d[i]));
        NST_TRY(be->ops->alloc(be, bytes, (void **)&L->gprev[i]));
        for (int j = 0; j < m; j++) {
            NST_TRY(be->ops->alloc(be, bytes, (void **)&L->s[j * nlocal + i]));
            NST_TRY(be->ops->alloc(be, bytes, (void **)&L->y[j * nlocal + i]));
        }
    }
    return NST_OK;
}

void nst_lbfgs_free(nst_lbfgs *L)
{
    nst_backend *be = L->be;
    for (int i = 0; be && i < L->nlocal; i++) {
        if (L->d && L->d[i]) be->ops->free(be, L->d[i]);
        if (L->gprev && L->gprev[i]) be->ops->free(be, L->gprev[i]);
        for (int j = 0; j < L->m; j++) {
            if (L->s && L->s[j * L->nlocal + i]) be->ops->free(be, L->s[j * L->nlocal + i]);
            if (L->y && L->y[j * L->nlocal + i]) be->ops->free(be, L->y[j * L->nlocal + i]);
        }
    }
    nst_free(L->tile), nst_free(L->n), nst_free(L->s), nst_free(L->y), nst_free(L->d), nst_free(L->gprev);
    nst_free(L->rho), nst_free(L->alpha), nst_free(L->part), nst_free(L->w), nst_free(L->xs), nst_free(L->xp);
    memset(L, 0, sizeof *L);
}

/* A local op under the step's deferred status: once one fails on this rank the rest of its local
 * work is skipped, but every collective still runs, carrying the failure (global_dots), so that no
 * rank waits in a sum another has left; the caller's agreement names the rank that failed. */
#define LOCAL(st, call)                                                                           \
    do {                                                                                          \
        if (*(st) == NST_OK) *(st) = (call);                                                      \
    } while (0)

/* After a sum over ranks that carried `failed` ranks: this rank's status (a rank that heard of
 * another's failure fails too, without a message of its own). */
static void heard(nst_status *st, double failed)
{
    if (*st == NST_OK && failed > 0) *st = NST_ERUNTIME;
}

/* out[j] = sum over all tiles of a_j . b_j for j < nd (nd <= 2), added exactly over runs, threads,
 * tiles and ranks: the same on every tiling (see lbfgs.h). */
static void exact_dots(nst_lbfgs *L, float *const *a0, float *const *b0, float *const *a1, float *const *b1, int nd, double *out,
                       nst_status *st)
{
    nst_backend *be = L->be;
    float *const *a[2] = {a0, a1}, *const *b[2] = {b0, b1};
    for (int j = 0; j < 2; j++) nst_xsum_zero(&L->xs->acc[j]);
    for (int j = 0; j < nd; j++) {
        for (int i = 0; i < L->nlocal; i++)
            LOCAL(st, be->ops->dot_exact(be, a[j][i], b[j][i], L->w[i], (int)(L->n[i] / 3 / (size_t)L->w[i]), L->seg, &L->xs->acc[j]));
        nst_xsum_normalize(&L->xs->acc[j]);
    }
    L->xs->failed = *st != NST_OK;
    if (L->coll.sum_int64) { /* both accumulators and the failure word: one message */
        nst_status m = L->coll.sum_int64(L->coll.ctx, (int64_t *)L->xs, sizeof *L->xs / sizeof(int64_t));
        if (*st == NST_OK) *st = m;
    }
    heard(st, (double)L->xs->failed);
    for (int j = 0; j < nd; j++) out[j] = nst_xsum_value(&L->xs->acc[j]);
}

/* out[j] = sum over all tiles of a_j . b_j for j < nd (nd <= 2): exactly where the backend can;
 * else the same whichever rank holds which tile: per-tile partials, added over ranks by tile, then
 * in tile order. Collective whatever *st says (see LOCAL). */
static void global_dots(nst_lbfgs *L, float *const *a0, float *const *b0, float *const *a1, float *const *b1, int nd, double *out,
                        nst_status *st)
{
    nst_backend *be = L->be;
    if (be->ops->dot_exact && (L->coll.sum_int64 || !L->coll.sum_doubles)) {
        exact_dots(L, a0, b0, a1, b1, nd, out, st);
        return;
    }
    const size_t nt = (size_t)L->ntiles;
    memset(L->part, 0, sizeof(double) * (2 * nt + 1));
    for (int i = 0; i < L->nlocal; i++) {
        LOCAL(st, be->ops->dot(be, a0[i], b0[i], L->n[i], &L->part[L->tile[i]]));
        if (nd > 1) LOCAL(st, be->ops->dot(be, a1[i], b1[i], L->n[i], &L->part[nt + (size_t)L->tile[i]]));
    }
    L->part[(size_t)nd * nt] = *st != NST_OK; /* the failure word, after the partials */
    if (L->coll.sum_doubles) {
        nst_status m = L->coll.sum_doubles(L->coll.ctx, L->part, (size_t)nd * nt + 1);
        if (*st == NST_OK) *st = m;
    }
    heard(st, L->part[(size_t)nd * nt]);
    for (int j = 0; j < nd; j++) {
        double sum = 0;
        for (size_t t = 0; t < nt; t++) sum += L->part[(size_t)j * nt + t];
        out[j] = sum;
    }
}

/* The local tiles' slices of history slot j. */
static float *const *S(const nst_lbfgs *L, int j) { return L->s + (size_t)j * L->nlocal; }
static float *const *Y(const nst_lbfgs *L, int j) { return L->y + (size_t)j * L->nlocal; }

/* The curvature pair of the last step: s = the step taken (in d), y = g - g_prev. */
static void keep_pair(nst_lbfgs *L, float *const *g, nst_status *st)
{
    nst_backend *be = L->be;
    const int nl = L->nlocal;
    double r[2];
    int slot = (L->newest + 1) % L->m;
    for (int i = 0; i < nl; i++) {
        float *t = L->s[slot * nl + i]; /* the step is already in d: swap buffers instead of copying */
        L->s[slot * nl + i] = L->d[i];
        L->d[i] = t;
        LOCAL(st, be->ops->axpby(be, L->y[slot * nl + i], g[i], L->n[i], 1.f, 0.f));
        LOCAL(st, be->ops->axpby(be, L->y[slot * nl + i], L->gprev[i], L->n[i], -1.f, 1.f));
    }
    global_dots(L, Y(L, slot), S(L, slot), Y(L, slot), Y(L, slot), 2, r, st);
    if (r[0] > 1e-10 && r[1] > 0) { /* curvature: keep the pair */
        L->newest = slot;
        L->rho[slot] = 1.0 / r[0];
        L->gamma = r[0] / r[1];
        if (L->k < L->m) L->k++;
    } else if (L->k == L->m) { /* the slot held the oldest pair, now overwritten */
        L->k = L->m - 1;
    }
}

/* The two-loop recursion: d = -H g. */
static void two_loop(nst_lbfgs *L, float *const *g, nst_status *st)
{
    nst_backend *be = L->be;
    const int nl = L->nlocal;
    double r[1];
    for (int i = 0; i < nl; i++) LOCAL(st, be->ops->axpby(be, L->d[i], g[i], L->n[i], -1.f, 0.f));
    for (int c = 0; c < L->k; c++) { /* newest to oldest */
        int j = (L->newest - c + L->m) % L->m;
        global_dots(L, S(L, j), L->d, NULL, NULL, 1, r, st);
        L->alpha[j] = L->rho[j] * r[0];
        for (int i = 0; i < nl; i++) LOCAL(st, be->ops->axpby(be, L->d[i], L->y[j * nl + i], L->n[i], (float)-L->alpha[j], 1.f));
    }
    if (L->k > 0)
        for (int i = 0; i < nl; i++) LOCAL(st, be->ops->axpby(be, L->d[i], L->d[i], L->n[i], 0.f, (float)L->gamma));
    for (int c = L->k - 1; c >= 0; c--) { /* oldest to newest */
        int j = (L->newest - c + L->m) % L->m;
        global_dots(L, Y(L, j), L->d, NULL, NULL, 1, r, st);
        double beta = L->rho[j] * r[0];
        for (int i = 0; i < nl; i++) LOCAL(st, be->ops->axpby(be, L->d[i], L->s[j * nl + i], L->n[i], (float)(L->alpha[j] - beta), 1.f));
    }
}

/* Take the step t d (projected into the box); d keeps the step taken for the next pair. */
static void take_step(nst_lbfgs *L, float *const *x, double t, nst_status *st)
{
    nst_backend *be = L->be;
    for (int i = 0; i < L->nlocal; i++) {
        if (L->box) {
            LOCAL(st, be->ops->box_step(be, x[i], L->d[i], L->n[i], (float)t));
        } else {
            LOCAL(st, be->ops->axpby(be, L->d[i], L->d[i], L->n[i], 0.f, (float)t));
            LOCAL(st, be->ops->axpby(be, x[i], L->d[i], L->n[i], 1.f, 1.f));
        }
    }
}

nst_status nst_lbfgs_step(nst_lbfgs *L, float *const *x, float *const *g, nst_status pending)
{
    nst_backend *be = L->be;
    const int nl = L->nlocal;
    nst_status st = pending;
    double r[2];
    if (L->iter > 0) keep_pair(L, g, &st);
    for (int i = 0; i < nl; i++) LOCAL(&st, be->ops->axpby(be, L->gprev[i], g[i], L->n[i], 1.f, 0.f));
    /* the held pixels (on a bound their gradient pushes against) leave the gradient, and the
     * direction (gprev keeps the whole gradient, which tells them) */
    if (L->box)
        for (int i = 0; i < nl; i++) LOCAL(&st, be->ops->box_hold(be, g[i], x[i], g[i], L->n[i]));
    two_loop(L, g, &st);
    if (L->box)
        for (int i = 0; i < nl; i++) LOCAL(&st, be->ops->box_hold(be, L->d[i], x[i], L->gprev[i], L->n[i]));

    /* a descent direction, or start over from the gradient */
    global_dots(L, g, L->d, g, g, 2, r, &st);
    double t = L->step;
    if (L->k == 0 || r[0] >= 0) {
        if (L->k > 0) {
            L->resets++;
            L->k = 0;
            for (int i = 0; i < nl; i++) LOCAL(&st, be->ops->axpby(be, L->d[i], g[i], L->n[i], -1.f, 0.f));
        }
        double gn = sqrt(r[1]);
        t = L->step * (gn > 1.0 ? 1.0 / gn : 1.0);
    }
    take_step(L, x, t, &st);
    L->iter++;
    return st;
}

/* ---- checkpoint --------------------------------------------------------------------------------- */

typedef struct {
    int32_t m, k, newest, nlocal, resets, pad;
    int64_t iter;
    double gamma;
} lbfgs_header;

nst_status nst_lbfgs_state(nst_lbfgs *L, const nst_ckpt_io *io)
{
    lbfgs_header h = {L->m, L->k, L->newest, L->nlocal, L->resets, 0, L->iter, L->gamma};
    char name[64];
    NST_TRY(nst_ckpt_io_host(io, "lbfgs", &h, sizeof h));
    if (io->r) {
        if (h.m != L->m || h.nlocal != L->nlocal || h.k < 0 || h.k > L->m || h.newest < 0 || h.newest >= (L->m > 0 ? L->m : 1))
            return nst_fail(NST_EINPUT, "checkpoint: L-BFGS history of %d pairs over %d tiles; this run keeps %d over %d (optim.lbfgs_history changed?)",
                            h.m, h.nlocal, L->m, L->nlocal);
        L->k = h.k, L->newest = h.newest, L->resets = h.resets, L->iter = h.iter, L->gamma = h.gamma;
    }
    NST_TRY(nst_ckpt_io_host(io, "lbfgs.rho", L->rho, sizeof(double) * (size_t)L->m));
    for (int i = 0; i < L->nlocal; i++) {
        size_t bytes = L->n[i] * sizeof(float);
        snprintf(name, sizeof name, "lbfgs.d/%d", i);
        NST_TRY(nst_ckpt_io_buffer(io, name, L->d[i], bytes));
        snprintf(name, sizeof name, "lbfgs.gprev/%d", i);
        NST_TRY(nst_ckpt_io_buffer(io, name, L->gprev[i], bytes));
        for (int j = 0; j < L->m; j++) { /* every slot: the ring's pairs sit around `newest` */
            snprintf(name, sizeof name, "lbfgs.s/%d/%d", j, i);
            NST_TRY(nst_ckpt_io_buffer(io, name, L->s[j * L->nlocal + i], bytes));
            snprintf(name, sizeof name, "lbfgs.y/%d/%d", j, i);
            NST_TRY(nst_ckpt_io_buffer(io, name, L->y[j * L->nlocal + i], bytes));
        }
    }
    return NST_OK;
}

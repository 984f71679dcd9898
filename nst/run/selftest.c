/* nst/run/selftest.c: nstbatch --self-test (see selftest.h): runs the checks on every rank, merges
 * the ranks' tables on rank 0, prints the table and the closing line, writes --report FILE. */
#define _POSIX_C_SOURCE 200809L
#include "selftest.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../io/atomic_file.h"
#include "../../mpi/comm.h"
#include "../../util/mem.h"
#include "../../util/timer.h"
#include "selftest_impl.h"

/* Each backend the self-test opens takes this much of a GPU (run.memory_gb when the config sets
 * none), not all its free memory: the harness opens one backend per precision after the render's
 * has closed, and ranks sharing a GPU each take this. The largest check (a Gram summed in several
 * chunks, with cuDNN's workspace) needs well under it. */
#define SELFTEST_MEMORY_GB 4.0

/* The self-test's time budget: the checks a user must see (the device, the first objective, the
 * allreduce) always run; the op harness's passes and groups start only within it, and the table
 * names what was left out. A GPU's harness in four precisions with cuDNN's per-shape set-up was
 * estimated at 45-120 s; the budget keeps the self-test a first step that ends within a minute.
 * NSTBATCH_SELFTEST_SECONDS changes it (the tests make it tiny to see the rows it leaves). */
#define SELFTEST_BUDGET_S 60.0

static double ratio(const st_row *r) { return nst_check_ratio(r->err, r->tol); }

/* Add a rank's row into the merged table: counts add up, the worst case (by err / tol) stays. */
static void merge_row(st_table *m, const st_row *r)
{
    for (int i = 0; i < m->n; i++) {
        st_row *q = &m->row[i];
        if (strcmp(q->op, r->op) != 0 || strcmp(q->prec, r->prec) != 0) continue;
        int late = q->late | r->late; /* any rank's parts left out by the budget */
        if (r->cases && (!q->cases || !(ratio(r) <= ratio(q)))) {
            int cases = q->cases, failed = q->failed;
            *q = *r;
            q->cases += cases, q->failed += failed;
        } else {
            q->cases += r->cases, q->failed += r->failed;
        }
        q->late = late;
        return;
    }
    if (m->n < st_room()) m->row[m->n++] = *r;
    else st_lost(m, strcmp(r->op, ST_LOST_OP) == 0 ? r->failed : 1); /* (a rank's own lost rows, all of them) */
}

/* Rank 0 receives every rank's table into devices[] (one line each) and the merged table. */
static nst_status gather(const st_table *mine, st_table *merged, char (*devices)[256], char **diags)
{
    const int R = nst_comm_size();
    if (nst_comm_rank() != 0) return nst_comm_send(mine, sizeof *mine, 0);
    st_table *t = nst_alloc_array(1, sizeof *t, "a rank's self-test table");
    if (!t) return NST_ENOMEM;
    memset(merged, 0, sizeof *merged);
    nst_status s = NST_OK;
    for (int r = 0; s == NST_OK && r < R; r++) {
        if (r == 0) memcpy(t, mine, sizeof *t);
        else s = nst_comm_recv(t, sizeof *t, r);
        if (s != NST_OK) break;
        snprintf(devices[r], 256, "%s", t->device);
        diags[r] = nst_alloc_array(sizeof t->diag, 1, "a rank's diagnostics");
        if (diags[r]) memcpy(diags[r], t->diag, sizeof t->diag);
        for (int i = 0; i < t->n; i++) merge_row(merged, &t->row[i]);
    }
    nst_free(t);
    return s;
}

static const char *verdict(const st_row *r) { return r->failed ? "FAIL" : r->cases ? "ok" : r->late ? "late" : "n/a"; }

static void print_table(FILE *f, const st_table *m, int ranks)
{
    fprintf(f, "  %-30s %-12s %6s %10s %10s %7s  %-7s %s\n", "op", "precision", "cases", "max error", "tolerance", "err/tol", "verdict",
            "worst case");
    for (int i = 0; i < m->n; i++) {
        const st_row *r = &m->row[i];
        char where[16] = "";
        if (ranks > 1 && r->cases) snprintf(where, sizeof where, " (rank %d)", r->rank);
        if (!r->cases)
            fprintf(f, "  %-30s %-12s %6s %10s %10s %7s  %-7s %s\n", r->op, r->prec, "-", "-", "-", "-", verdict(r), r->worst);
        else
            fprintf(f, "  %-30s %-12s %6d %10.3g %10.3g %7.3f  %-7s %s%s\n", r->op, r->prec, r->cases, r->err, r->tol, ratio(r), verdict(r),
                    r->worst, where);
    }
}

/* "self-test passed: ..." or "self-test FAILED: ..." */
static void closing(char *out, size_t cap, const st_table *m, int ranks, const char *report)
{
    int rows = 0, bad_rows = 0, cases = 0, failed = 0, late = 0;
    for (int i = 0; i < m->n; i++) {
        rows += m->row[i].cases > 0, bad_rows += m->row[i].failed > 0, late += m->row[i].late;
        cases += m->row[i].cases, failed += m->row[i].failed;
    }
    char tail[128] = "";
    if (late) snprintf(tail, sizeof tail, "; %d check%s left out by the time budget (rows marked late)", late, late == 1 ? "" : "s");
    if (!failed)
        snprintf(out, cap, "self-test passed: %d checks (%d comparisons) on %d rank%s, none failed%s", rows, cases, ranks, ranks == 1 ? "" : "s",
                 tail);
    else
        snprintf(out, cap, "self-test FAILED: %d of %d comparisons in %d of %d checks on %d rank%s; %s", failed, cases, bad_rows, rows,
                 ranks, ranks == 1 ? "" : "s",
                 report ? "send the report to the developers" : "run again with --report FILE and send the file to the developers");
}

static void print_devices(FILE *f, char (*devices)[256], int ranks, int all)
{
    int shown = all || ranks <= 8 ? ranks : 4;
    for (int r = 0; r < shown; r++) fprintf(f, "  rank %d on %s\n", r, devices[r]);
    if (shown < ranks) fprintf(f, "  ... and %d more ranks (--report FILE lists every one)\n", ranks - shown);
}

/* The report: when and how it ran, the versions, every rank's device, the table, the failing rows. */
static nst_status write_report(const nst_selftest_opts *o, const st_table *m, char (*devices)[256], char **diags, int ranks, const char *close)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) return nst_fail(NST_ERUNTIME, "--report %s: cannot build the report in memory", o->report);
    time_t now = time(NULL);
    char when[64];
    strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S %Z", localtime(&now));
    fprintf(f, "nstbatch self-test report, %s\ncommand: %s\n\n%s\ndevices (%d rank%s):\n", when, o->command, o->versions, ranks,
            ranks == 1 ? "" : "s");
    print_devices(f, devices, ranks, 1);
    fprintf(f, "\nresults:\n");
    print_table(f, m, ranks);
    fprintf(f, "\nfailing rows:\n");
    int any = 0;
    for (int i = 0; i < m->n; i++)
        if (m->row[i].failed) {
            const st_row *r = &m->row[i];
            fprintf(f, "  %s, %s: %d of %d failed; worst on rank %d (%s): error %.6g, tolerance %.6g, %s\n", r->op, r->prec, r->failed,
                    r->cases, r->rank, devices[r->rank], r->err, r->tol, r->worst);
            any = 1;
        }
    if (!any) fprintf(f, "  none\n");
    fprintf(f, "\ndevice diagnostics (memory after each phase; on a GPU the libraries as loaded and the algorithms chosen):\n");
    for (int r = 0; r < ranks; r++) fprintf(f, "  rank %d:\n%s", r, diags[r] ? diags[r] : "    (not received)\n");
    fprintf(f, "\n%s\n", close);
    fclose(f);
    nst_status s = nst_atomic_write_text(o->report, text);
    free(text); /* open_memstream's buffer comes from malloc */
    return s;
}

/* The checks on this rank: the render and the allreduce on the rank's device as a render opens
 * it, then the harness on the same device once that backend has closed. */
static nst_status run_checks(const nst_config *cfg, const nst_selftest_opts *o, st_table *t)
{
    nst_device d;
    NST_TRY(nst_device_open(cfg, o->threads, &d));
    snprintf(t->device, sizeof t->device, "%s: %s", nst_comm_host(), d.be->description);
    st_device sd = {d.be->gpu_stream ? d.gpu : -1, d.sharers};
    st_gpu(t, d.be, cfg->run_device);
    nst_status s = nst_comm_agree(st_render(t, d.be, o->threads));
    if (s == NST_OK) s = nst_comm_agree(st_graphs(t, d.be, o->threads));
    nst_backend_set_fatal_handler(o->fault);
    if (s == NST_OK) s = nst_comm_agree(st_allreduce(t, &d));
    if (s == NST_OK) s = nst_comm_agree(st_halo(t, &d));
    nst_backend_set_fatal_handler(NULL);
    nst_backend_mark(d.be, "the render and allreduce checks");
    nst_backend_diagnostics(d.be, t->diag, sizeof t->diag, "    ");
    nst_device_close(&d);
    if (s == NST_OK) s = nst_comm_agree(st_harness(t, &sd, cfg, o->threads));
    return s;
}

nst_status nst_selftest_run(const nst_config *cfg_in, const nst_selftest_opts *o, int *failed)
{
    nst_config cfg = *cfg_in;
    if (cfg.run_memory_gb <= 0) cfg.run_memory_gb = SELFTEST_MEMORY_GB;
    const int R = nst_comm_size(), root = nst_comm_rank() == 0;
    st_table *t = nst_calloc(sizeof *t, "the self-test table"), *m = root ? nst_calloc(sizeof *m, "the self-test table") : NULL;
    if (t) {
        const char *env = getenv("NSTBATCH_SELFTEST_SECONDS");
        t->start = nst_now();
        t->deadline = t->start + (env && atof(env) > 0 ? atof(env) : SELFTEST_BUDGET_S);
    }
    char(*devices)[256] = root ? nst_alloc_array((size_t)R, 256, "the ranks' devices") : NULL;
    char **diags = root ? nst_calloc(sizeof(char *) * (size_t)R, "the ranks' diagnostics") : NULL;
    nst_status s = nst_comm_agree(t && (!root || (m && devices && diags)) ? NST_OK : NST_ENOMEM);
    if (s == NST_OK) s = run_checks(&cfg, o, t);
    if (s == NST_OK) s = nst_comm_agree(gather(t, m, devices, diags));
    *failed = 0;
    if (s == NST_OK && root) {
        char close[256];
        closing(close, sizeof close, m, R, o->report);
        printf("nstbatch self-test on %d rank%s:\n", R, R == 1 ? "" : "s");
        print_devices(stdout, devices, R, 0);
        print_table(stdout, m, R);
        printf("%s\n", close);
        for (int i = 0; i < m->n; i++) *failed += m->row[i].failed;
        if (o->report) {
            s = write_report(o, m, devices, diags, R, close);
            if (s == NST_OK) printf("report written to %s\n", o->report);
        }
    }
    s = nst_comm_agree(s);
    if (s == NST_OK) s = nst_comm_bcast(failed, sizeof *failed, 0);
    for (int r = 0; diags && r < R; r++) nst_free(diags[r]);
    nst_free(t), nst_free(m), nst_free(devices), nst_free(diags);
    return s;
}

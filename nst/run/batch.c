/* nst/run/batch.c: many jobs in one run: probe, pack into rank groups, render, summarise (see batch.h). */
#include "batch.h"

#include "../state/checkpoint.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../io/atomic_file.h"
#include "../../mpi/comm.h"
#include "../../mpi/notice.h"
#include "../../util/log.h"
#include "../../util/mem.h"
#include "../../util/text.h"
#include "../../util/timer.h"
#include "../../util/version.h"
#include "../inputs/inputs.h"
#include "../render/levels.h"

enum { ROW_NONE, ROW_DONE, ROW_FAILED, ROW_NOT_RUN, ROW_STOPPED, ROW_EARLIER, ROW_NSTATES };
static const char *const state_names[] = {"not run", "done", "failed", "not run", "stopped", "earlier"};

/* One job's line of the summary: filled on one rank (world rank 0 when probing, the group's rank 0
 * when rendering) and zero elsewhere, so rows merge over ranks by OR-ing bytes. */
typedef struct {
    int state, code;
    int w, h, ranks, group, large;
    double cost, seconds, loss;
    char output[1024];  /* the files written (or, when probing, output.path) */
    char message[1024]; /* why it failed */
} row;

/* The job's config: the base, its overrides, then the command line's --set. */
static nst_status job_config(const nst_batch *b, int j, nst_config *cfg)
{
    *cfg = *b->base;
    NST_TRY(nst_jobset_apply(b->jobs, j, cfg));
    for (int i = 0; i < b->nsets; i++) NST_TRY(nst_config_set(cfg, b->sets[i]));
    return NST_OK;
}

/* A job's checkpoints: checkpoint.path/NAME (every job its own manifest). */
static void job_checkpoint_dir(const nst_batch *b, int j, char *out, size_t cap)
{
    if (b->base->checkpoint_path[0])
        snprintf(out, cap, "%s/%s", b->base->checkpoint_path, nst_job_name(b->jobs, j));
    else
        out[0] = 0;
}

static void fail_row(row *r, nst_status s)
{
    r->state = s == NST_EINTERRUPTED ? ROW_STOPPED : ROW_FAILED;
    r->code = nst_exit_code(s);
    snprintf(r->message, sizeof r->message, "%s", nst_fail_message());
    nst_fail_clear();
}

nst_status nst_batch_check_restart(const nst_jobset *jobs, const char *list)
{
    if (!list) return NST_OK;
    if (jobs->njobs == 0) return nst_fail(NST_EINPUT, "--restart=%s: this config has no [job.NAME] sections or manifest; use --restart", list);
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, ",");
        int found = 0;
        for (int j = 0; j < jobs->njobs && !found; j++)
            found = strlen(nst_job_name(jobs, j)) == len && strncmp(nst_job_name(jobs, j), p, len) == 0;
        if (!found) {
            char names[512] = "";
            size_t n = 0;
            for (int j = 0; j < jobs->njobs && n < sizeof names; j++)
                n += (size_t)snprintf(names + n, sizeof names - n, "%s%s", j ? ", " : "", nst_job_name(jobs, j));
            return nst_fail(NST_EINPUT, "--restart=%s: no job '%.*s' in this batch; its jobs: %s", list, (int)len, p, names);
        }
        p += len + (p[len] == ',');
    }
    return NST_OK;
}

/* --restart for every job, or --restart=JOB,... for these */
static int restarts(const nst_batch *b, int j)
{
    if (b->restart) return 1;
    if (!b->restart_jobs) return 0;
    const char *name = nst_job_name(b->jobs, j), *p = b->restart_jobs;
    size_t n = strlen(name);
    while (*p) {
        size_t len = strcspn(p, ",");
        if (len == n && strncmp(p, name, n) == 0) return 1;
        p += len + (p[len] == ',');
    }
    return 0;
}

/* ---- 1. probe ------------------------------------------------------------------------------- */

/* World rank 0: each job's config, checks, output size and cost (no pixels read beyond what a
 * header needs for TIFF; PNG and JPEG are decoded). */
static nst_status probe_one(const nst_batch *b, int j, nst_config *cfg, row *r)
{
    nst_loss_spec spec;
    nst_output_spec out;
    nst_level_plan plan;
    nst_source *src = NULL;
    char dir[4200];
    NST_TRY(job_config(b, j, cfg));
    snprintf(r->output, sizeof r->output, "%.*s", (int)sizeof r->output - 1, cfg->output_path);
    job_checkpoint_dir(b, j, dir, sizeof dir);
    if (!restarts(b, j) && nst_ckpt_is_done(cfg, dir, r->output, sizeof r->output))
        return NST_OK; /* finished by an earlier run: its outputs exist, nothing to check; the job says so when it runs */
    NST_TRY(nst_job_check(cfg, &spec, &out));
    NST_TRY(nst_open_input(cfg, NST_K_content_path, cfg->content_path, &src));
    int aw, ah;
    nst_output_size(cfg, src->w, src->h, &r->w, &r->h);
    nst_output_aspect(cfg, src->w, src->h, &aw, &ah);
    nst_source_close(src);
    NST_TRY(nst_output_spec_check_size(cfg, &out, r->w, r->h));
    NST_TRY(nst_levels_plan(cfg, &spec, r->w, r->h, aw, ah, &plan));
    for (int k = 0; k < plan.n; k++) r->cost += (double)plan.w[k] * plan.h[k] * (double)(plan.iterations[k] > 0 ? plan.iterations[k] : 1);
    return NST_OK;
}

/* Jobs that would write the same file are a config error of the batch: nothing runs. */
static nst_status check_distinct(const nst_batch *b, const row *rows, char (*records)[NST_CFG_STR_MAX])
{
    for (int j = 0; j < b->jobs->njobs; j++)
        for (int i = 0; i < j; i++) {
            if (rows[i].output[0] && strcmp(rows[i].output, rows[j].output) == 0)
                return nst_fail(NST_EINPUT, "%s: jobs '%s' and '%s' (%s) both write output.path = %s: give each job its own", nst_job_where(b->jobs, j),
                                nst_job_name(b->jobs, i), nst_job_name(b->jobs, j), nst_job_where(b->jobs, i), rows[j].output);
            if (records[i][0] && strcmp(records[i], records[j]) == 0)
                return nst_fail(NST_EINPUT, "%s: jobs '%s' and '%s' both write run.record = %s: set it per job, or not at all in the base config",
                                nst_job_where(b->jobs, j), nst_job_name(b->jobs, i), nst_job_name(b->jobs, j), records[j]);
        }
    return NST_OK;
}

static nst_status probe(const nst_batch *b, row *rows)
{
    const int n = b->jobs->njobs;
    nst_status s = NST_OK;
    if (nst_comm_rank() == 0) {
        nst_config *cfg = nst_alloc(sizeof *cfg, "a job's config");
        char (*records)[NST_CFG_STR_MAX] = nst_calloc(sizeof *records * (size_t)n, "run records");
        if (!cfg || !records) s = NST_ENOMEM;
        for (int j = 0; s == NST_OK && j < n; j++) {
            nst_status sj = probe_one(b, j, cfg, &rows[j]);
            snprintf(records[j], sizeof records[j], "%s", cfg->run_record);
            if (sj == NST_ENOMEM)
                s = sj;
            else if (sj != NST_OK)
                fail_row(&rows[j], sj);
        }
        if (s == NST_OK) s = check_distinct(b, rows, records);
        nst_free(records);
        nst_free(cfg);
    }
    s = nst_comm_agree(s);
    if (s == NST_OK) s = nst_comm_bcast(rows, sizeof *rows * (size_t)n, 0);
    return s;
}

/* ---- 2, 3. schedule and render ------------------------------------------------------------------ */

typedef struct {
    int G, ngroups;     /* ranks per group, groups */
    int *group_of;      /* small jobs: their group; large jobs: -1 */
    int *order;         /* small jobs, longest first */
    int nsmall;
} schedule;

static const row *sort_rows; /* qsort's comparison has no context argument */

static int by_cost_desc(const void *a, const void *b)
{
    const row *rows = sort_rows;
    int i = *(const int *)a, j = *(const int *)b;
    if (rows[i].cost != rows[j].cost) return rows[i].cost > rows[j].cost ? -1 : 1;
    return i - j;
}

static nst_status plan_schedule(const nst_config *base, row *rows, int n, schedule *sc)
{
    const int size = nst_comm_world_size();
    int G = base->batch_group_ranks == NST_WORD(0) ? 1 : (int)base->batch_group_ranks;
    if (G > size) G = size;
    sc->G = G;
    sc->ngroups = size / G;
    sc->group_of = nst_alloc_array((size_t)n + 1, sizeof(int), "the batch schedule");
    sc->order = nst_alloc_array((size_t)n + 1, sizeof(int), "the batch schedule");
    double *load = nst_calloc(sizeof(double) * (size_t)sc->ngroups, "group loads");
    if (!sc->group_of || !sc->order || !load) {
        nst_free(load);
        return NST_ENOMEM;
    }
    const double pack = base->batch_pack_megapixels * 1e6;
    sc->nsmall = 0;
    for (int j = 0; j < n; j++) {
        sc->group_of[j] = -1;
        rows[j].large = rows[j].state == ROW_NONE && (sc->ngroups == 1 || (double)rows[j].w * rows[j].h > pack);
        if (rows[j].state == ROW_NONE && !rows[j].large) sc->order[sc->nsmall++] = j;
    }
    sort_rows = rows;
    qsort(sc->order, (size_t)sc->nsmall, sizeof(int), by_cost_desc);
    for (int i = 0; i < sc->nsmall; i++) { /* LPT: the longest job left to the least loaded group */
        int best = 0;
        for (int g = 1; g < sc->ngroups; g++)
            if (load[g] < load[best]) best = g;
        sc->group_of[sc->order[i]] = best;
        load[best] += rows[sc->order[i]].cost;
    }
    nst_free(load);
    return NST_OK;
}

/* Job j on the current group; its row filled on the group's rank 0. */
static nst_status render_one(const nst_batch *b, int j, int group, nst_backend *be, nst_collectives coll, const nst_job_env *env, row *r)
{
    char prefix[NST_JOB_NAME_MAX + 4];
    nst_config *cfg = nst_alloc(sizeof *cfg, "a job's config");
    nst_status s = nst_comm_agree(cfg ? NST_OK : NST_ENOMEM);
    if (s != NST_OK) {
        nst_free(cfg);
        return s;
    }
    snprintf(prefix, sizeof prefix, "[%s] ", nst_job_name(b->jobs, j));
    nst_log_set_prefix(prefix);
    nst_info("job %d of %d on %d rank%s%s\n", j + 1, b->jobs->njobs, nst_comm_size(), nst_comm_size() == 1 ? "" : "s",
             group >= 0 ? "" : " (all of them: a large job)");
    double t0 = nst_now();
    nst_job_result res;
    memset(&res, 0, sizeof res);
    char dir[4200];
    job_checkpoint_dir(b, j, dir, sizeof dir);
    nst_job_env jenv = *env;
    jenv.checkpoint_dir = dir;
    jenv.name = nst_job_name(b->jobs, j);
    jenv.restart = restarts(b, j);
    s = nst_comm_agree(job_config(b, j, cfg));
    if (s == NST_OK) s = nst_job_run(cfg, be, coll, &jenv, &res);
    if (nst_comm_rank() == 0) {
        memset(r, 0, sizeof *r);
        r->seconds = nst_now() - t0;
        r->ranks = nst_comm_size();
        r->group = group;
        r->w = res.width, r->h = res.height;
        if (s == NST_OK) {
            r->state = res.skipped ? ROW_EARLIER : ROW_DONE;
            r->loss = res.stats.last.total;
            snprintf(r->output, sizeof r->output, "%s", res.outputs);
        } else {
            fail_row(r, s);
            nst_log_set_prefix(""); /* the line names the job itself: no "[job]" before it */
            if (s != NST_EINTERRUPTED) nst_warn("job '%s' failed: %s\n", nst_job_name(b->jobs, j), r->message);
        }
    }
    nst_fail_clear();
    nst_log_set_prefix("");
    nst_free(cfg);
    return s;
}

/* The small jobs of this rank's group, side by side with the other groups. */
static nst_status render_groups(const nst_batch *b, const schedule *sc, nst_backend *be,
                                nst_collectives coll, const nst_job_env *env, row *out)
{
    const int me = nst_comm_world_rank();
    const int mine = me / sc->G < sc->ngroups ? me / sc->G : sc->ngroups - 1;
    const int stop_on_error = strcmp(b->base->batch_on_error, "stop") == 0;
    nst_group *grp = NULL;
    NST_TRY(nst_comm_split(mine, me, &grp));
    nst_comm_push(grp);
    nst_log_set_rank(nst_comm_rank());
    nst_status fatal = NST_OK;
    int stop = 0;
    for (int i = 0; i < sc->nsmall && fatal == NST_OK; i++) {
        int j = sc->order[i];
        if (sc->group_of[j] != mine) continue;
        { /* a failure elsewhere (batch.on_error = stop) or a signal stops this group before its next job */
            int st = nst_comm_rank() == 0 && nst_notice_received();
            fatal = nst_comm_bcast(&st, sizeof st, 0);
            stop |= st;
        }
        if (stop || fatal != NST_OK) break;
        nst_status s = render_one(b, j, mine, be, coll, env, &out[j]); /* a failed job is in its row */
        if (s == NST_EINTERRUPTED || (s != NST_OK && stop_on_error)) { /* a signal stops every group */
            stop = 1;
            for (int g = 0; nst_comm_rank() == 0 && g < sc->ngroups; g++)
                if (g != mine && fatal == NST_OK) fatal = nst_notice_post(g * sc->G);
        }
    }
    nst_comm_pop();
    nst_log_set_rank(me);
    nst_comm_group_free(grp);
    /* groups finish at different times: the early ones wait here without spinning */
    nst_status w = nst_comm_idle_barrier();
    if (fatal == NST_OK) fatal = w;
    fatal = nst_comm_agree(fatal);
    if (fatal == NST_OK) fatal = nst_notice_finish();
    return fatal;
}

/* ---- 6. the summary --------------------------------------------------------------------------- */

/* the table of jobs: printed with --quiet too, it is the batch's result */
static void print_summary(const nst_batch *b, const row *rows, const schedule *sc, double seconds)
{
    const int n = b->jobs->njobs;
    int count[ROW_NSTATES] = {0}, wname = 4;
    for (int j = 0; j < n; j++) {
        count[rows[j].state]++;
        int l = (int)strlen(nst_job_name(b->jobs, j));
        if (l > wname) wname = l;
    }
    char more[96] = "";
    if (count[ROW_EARLIER] || count[ROW_STOPPED])
        snprintf(more, sizeof more, " (%d done by an earlier run, %d stopped by a signal and checkpointed)", count[ROW_EARLIER], count[ROW_STOPPED]);
    nst_result("\nbatch:   %d job%s: %d done, %d failed, %d not run%s; %.2f s on %d rank%s", n, n == 1 ? "" : "s", count[ROW_DONE] + count[ROW_EARLIER],
             count[ROW_FAILED], count[ROW_NONE] + count[ROW_NOT_RUN] + count[ROW_STOPPED], more, seconds, nst_comm_world_size(), nst_comm_world_size() == 1 ? "" : "s");
    if (sc->ngroups > 1) nst_result(" (small jobs in %d groups of %d)", sc->ngroups, sc->G);
    nst_result("\n  %-*s  %-7s  %5s  %11s  %9s  %11s  %s\n", wname, "job", "status", "ranks", "size", "seconds", "loss", "output / reason");
    for (int j = 0; j < n; j++) {
        const row *r = &rows[j];
        char size[32] = "-", secs[32] = "-", loss[32] = "-", ranks[16] = "-";
        if (r->w) snprintf(size, sizeof size, "%dx%d", r->w, r->h);
        if (r->ranks) snprintf(ranks, sizeof ranks, "%d", r->ranks), snprintf(secs, sizeof secs, "%.2f", r->seconds);
        if (r->state == ROW_DONE) snprintf(loss, sizeof loss, "%.4e", r->loss);
        int shows_output = r->state == ROW_DONE || r->state == ROW_EARLIER;
        nst_result("  %-*s  %-7s  %5s  %11s  %9s  %11s  %s\n", wname, nst_job_name(b->jobs, j), state_names[r->state], ranks, size, secs, loss,
                 shows_output ? r->output : r->message);
    }
}

static nst_status write_summary(const nst_batch *b, const row *rows, const schedule *sc, double seconds, const char *path)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) return nst_fail(NST_ENOMEM, "out of memory writing the batch summary");
    fprintf(f, "{\n  \"nstbatch\": \"%s\",\n  \"ranks\": %d,\n  \"groups\": %d,\n  \"group_ranks\": %d,\n  \"seconds\": %.6f,\n  \"jobs\": [",
            NST_VERSION, nst_comm_world_size(), sc->ngroups, sc->G, seconds);
    for (int j = 0; j < b->jobs->njobs; j++) {
        const row *r = &rows[j];
        char n[NST_JSON_NUM];
        fprintf(f, "%s\n    {\"name\": ", j ? "," : "");
        nst_json_string(f, nst_job_name(b->jobs, j));
        fprintf(f, ", \"where\": ");
        nst_json_string(f, nst_job_where(b->jobs, j));
        fprintf(f, ", \"status\": \"%s\", \"exit_code\": %d, \"ranks\": %d, \"group\": %d, \"large\": %s, \"width\": %d, \"height\": %d, "
                   "\"seconds\": %.6f, \"loss\": %s, \"output\": ",
                state_names[r->state], r->code, r->ranks, r->group, r->large ? "true" : "false", r->w, r->h, r->seconds, nst_json_num(n, "%.9g", r->loss));
        nst_json_string(f, r->state == ROW_DONE || r->state == ROW_EARLIER ? r->output : "");
        fprintf(f, ", \"message\": ");
        nst_json_string(f, r->message);
        fputc('}', f);
    }
    fprintf(f, "\n  ]\n}\n");
    fclose(f);
    nst_status s = nst_atomic_write_text(path, text);
    free(text);
    return s;
}

/* ---- the batch ---------------------------------------------------------------------------------- */

nst_status nst_batch_run(const nst_batch *b, nst_backend *be, nst_collectives coll, const nst_job_env *env)
{
    const int n = b->jobs->njobs;
    const int stop_on_error = strcmp(b->base->batch_on_error, "stop") == 0;
    double t0 = nst_now();
    row *rows = nst_calloc(sizeof(row) * (size_t)n, "the batch summary");
    row *done = nst_calloc(sizeof(row) * (size_t)n, "the batch summary");
    schedule sc;
    memset(&sc, 0, sizeof sc);
    nst_status s = nst_comm_agree(rows && done ? NST_OK : NST_ENOMEM);
    if (s == NST_OK) s = probe(b, rows);
    int nfailed = 0;
    for (int j = 0; s == NST_OK && j < n; j++) nfailed += rows[j].state == ROW_FAILED;
    if (s == NST_OK) s = nst_comm_agree(plan_schedule(b->base, rows, n, &sc));
    if (s == NST_OK) {
        int nlarge = 0;
        for (int j = 0; j < n; j++) nlarge += rows[j].large;
        nst_info("batch:   %d job%s (%s%s); %d large on all %d ranks, %d packed into %d group%s of %d rank%s%s\n", n, n == 1 ? "" : "s",
                 b->base->batch_manifest[0] ? "manifest " : "[job.*] sections", b->base->batch_manifest, nlarge, nst_comm_world_size(), sc.nsmall,
                 sc.ngroups, sc.ngroups == 1 ? "" : "s", sc.G, sc.G == 1 ? "" : "s",
                 nfailed ? "; some failed their checks (below)" : "");
        for (int j = 0; j < n; j++)
            if (rows[j].state == ROW_FAILED) nst_warn("job '%s' (%s): %s\n", nst_job_name(b->jobs, j), nst_job_where(b->jobs, j), rows[j].message);
    }
    int stop = stop_on_error && nfailed > 0;
    /* 2. large jobs, every rank */
    for (int j = 0; s == NST_OK && !stop && j < n; j++) {
        if (!rows[j].large) continue;
        nst_status sj = render_one(b, j, -1, be, coll, env, &done[j]); /* a failed job is in its row */
        if (sj == NST_EINTERRUPTED || (sj != NST_OK && stop_on_error)) stop = 1;
    }
    /* 3. small jobs, packed */
    if (s == NST_OK && !stop && sc.nsmall > 0) s = render_groups(b, &sc, be, coll, env, done);
    if (s == NST_OK) s = nst_comm_merge_bytes(done, sizeof(row) * (size_t)n);
    if (s == NST_OK) {
        nst_status first = NST_OK;
        int nstopped = 0;
        char why[1200] = ""; /* a job name and its message (up to 1 KiB) */
        for (int j = 0; j < n; j++) { /* probe failures stay; rendered rows replace the rest */
            if (rows[j].state == ROW_NONE) {
                int large = rows[j].large;
                rows[j] = done[j];
                rows[j].large = large;
                if (rows[j].state == ROW_NONE) rows[j].state = ROW_NOT_RUN;
            }
            if (rows[j].state == ROW_FAILED && first == NST_OK) {
                first = rows[j].code == 2 ? NST_EINPUT : NST_ERUNTIME;
                snprintf(why, sizeof why, "job '%s': %s", nst_job_name(b->jobs, j), rows[j].message);
            }
            nstopped += rows[j].state == ROW_STOPPED;
        }
        double seconds = nst_now() - t0;
        print_summary(b, rows, &sc, seconds);
        if (b->base->batch_summary[0] && nst_comm_rank() == 0) s = write_summary(b, rows, &sc, seconds, b->base->batch_summary);
        s = nst_comm_agree(s);
        if (s == NST_OK && first != NST_OK) {
            int nf = 0;
            for (int j = 0; j < n; j++) nf += rows[j].state == ROW_FAILED;
            s = nst_fail(first, "%d of %d job%s failed (the first, %s)", nf, n, n == 1 ? "" : "s", why);
        } else if (s == NST_OK && nstopped > 0) { /* a signal: the stopped jobs checkpointed; the next run goes on */
            s = nst_fail(NST_EINTERRUPTED, "batch stopped by a signal: %d job%s checkpointed%s; run it again (or requeue: exit status 75) to "
                         "go on: finished jobs are not rendered again", nstopped, nstopped == 1 ? "" : "s",
                         b->base->checkpoint_path[0] ? "" : " (no: checkpoint.path is not set)");
        }
    }
    nst_free(sc.group_of);
    nst_free(sc.order);
    nst_free(rows);
    nst_free(done);
    return s;
}

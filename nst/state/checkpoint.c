/* nst/state/checkpoint.c: checkpoint generations, the manifest, resume decisions (see checkpoint.h). */
#define _GNU_SOURCE
#include "checkpoint.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../../io/atomic_file.h"
#include "../../mpi/comm.h"
#include "../../util/log.h"
#include "../../util/mem.h"
#include "../../util/signals.h"
#include "../../util/sysmem.h"
#include "../../util/timer.h"

#define MANIFEST_FORMAT 2 /* 2: levels counted from 1, as every message counts them; 1 (read too): from 0 */
#define HASH_SEED 0x6e7374636b7074ull /* "nstckpt" */

/* Keys that cannot change the pixels of a render: a resume may change them. */
static int unhashed(const nst_key_info *k)
{
    static const char *sections[] = {"output", "checkpoint", "metrics", "batch", "gpu"};
    static const char *run_keys[] = {"threads", "device", "print_every", "memory_gb", "record", "progress", "first_gradient", "stall_timeout"};
    for (size_t i = 0; i < sizeof sections / sizeof *sections; i++)
        if (strcmp(k->section, sections[i]) == 0) return 1;
    if (strcmp(k->section, "run") == 0)
        for (size_t i = 0; i < sizeof run_keys / sizeof *run_keys; i++)
            if (strcmp(k->name, run_keys[i]) == 0) return 1;
    return 0;
}

static void file_identity(FILE *f, const char *key, const char *path)
{
    struct stat st;
    if (!*path) return;
    if (stat(path, &st) == 0)
        fprintf(f, "file %s %s: size %lld, mtime %lld\n", key, path, (long long)st.st_size, (long long)st.st_mtime);
    else
        fprintf(f, "file %s %s: missing\n", key, path);
}

static char arithmetic[64]; /* the run's backend and resolved precision: run.precision = auto differs by machine */

void nst_ckpt_arithmetic(const char *backend, const char *precision)
{
    snprintf(arithmetic, sizeof arithmetic, "%s %s", backend, precision);
}

/* file_identity of every file of a comma-separated list */
static void file_list_identity(FILE *f, const char *key, const char *value)
{
    char list[NST_CFG_STR_MAX];
    snprintf(list, sizeof list, "%s", value);
    for (char *save = NULL, *p = strtok_r(list, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
        while (*p == ' ' || *p == '\t') p++;
        file_identity(f, key, p);
    }
}

/* The text the config hash covers: every key that shapes the pixels, the arithmetic, and the
 * input files. */
static char *hashed_text(const nst_config *cfg)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) return NULL;
    int n;
    const nst_key_info *keys = nst_config_keys(&n);
    for (int i = 0; i < n; i++) {
        if (unhashed(&keys[i])) continue;
        char v[NST_CFG_STR_MAX];
        nst_config_value_text(cfg, i, v, sizeof v);
        fprintf(f, "%s = %s\n", keys[i].full, v);
    }
    if (arithmetic[0]) fprintf(f, "arithmetic = %s\n", arithmetic);
    file_identity(f, "content.path", cfg->content_path);
    file_identity(f, "content.mask", cfg->content_mask);
    file_list_identity(f, "style.path", cfg->style_path);
    file_list_identity(f, "style.masks", cfg->style_masks);
    file_identity(f, "optim.init_path", cfg->optim_init_path);
    file_identity(f, "model.weights", cfg->model_weights);
    fclose(f);
    return text;
}

/* ---- the manifest ------------------------------------------------------------------------------- */

static void manifest_path(const nst_ckpt *c, char *out, size_t cap) { snprintf(out, cap, "%s/manifest", c->dir); }

static void rank_path(const nst_ckpt *c, long long gen, int rank, char *out, size_t cap)
{
    snprintf(out, cap, "%s/g%08lld-r%05d.nstc", c->dir, gen, rank);
}

static nst_status write_manifest(const nst_ckpt *c, const char *state, const char *why)
{
    char *text = NULL, path[4200], when[64];
    size_t len = 0;
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
    FILE *f = open_memstream(&text, &len);
    if (!f) return nst_fail(NST_ENOMEM, "out of memory writing the checkpoint manifest");
    fprintf(f, "# nstbatch checkpoint manifest (written by rank 0 after every rank's file was synced); do not edit\n");
    fprintf(f, "format = %d\nstate = %s\nwritten = %s\n", MANIFEST_FORMAT, state, when);
    if (why && *why) fprintf(f, "reason = %s\n", why);
    fprintf(f, "generation = %lld\nlevel = %d\niteration = %lld\njob_ranks = %d\nfile_ranks = %d\ntile_w = %d\ntile_h = %d\n", c->gen,
            c->level + 1, c->iteration, c->job_ranks, c->file_ranks, c->tile_w, c->tile_h);
    for (int k = 0; k < c->nlevels; k++) {
        const nst_ckpt_level *lv = &c->levels[k];
        fprintf(f, "level_done = %d %d %d %d %lld %.17g %.17g %.17g\n", lv->w, lv->h, lv->tiles, lv->ranks, lv->iterations, lv->first, lv->last,
                lv->seconds);
    }
    if (c->outputs[0]) fprintf(f, "outputs = %s\n", c->outputs);
    fprintf(f, "config_hash = %016llx\n", (unsigned long long)c->hash);
    for (const char *p = c->text; p && *p;) { /* what the hash covers, to name a difference */
        const char *e = strchr(p, '\n');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        fprintf(f, "| %.*s\n", (int)n, p);
        p += n + (e ? 1 : 0);
    }
    fclose(f);
    manifest_path(c, path, sizeof path);
    nst_status s = nst_atomic_write_text(path, text);
    free(text);
    return s;
}

typedef struct {
    int format;
    char state[32];
    long long gen, iteration;
    int level, job_ranks, file_ranks, tile_w, tile_h;
    unsigned long long hash;
    int nlevels;
    nst_ckpt_level levels[NST_CKPT_MAX_LEVELS];
    char outputs[1024];
    char *text; /* the "| " lines */
    size_t tlen;
} manifest;

/* 0: no manifest; 1: read; an error for one that cannot be read. */
static nst_status read_manifest(const char *path, manifest *m, int *found)
{
    memset(m, 0, sizeof *m);
    *found = 0;
    FILE *f = fopen(path, "re");
    if (!f) {
        if (errno == ENOENT) return NST_OK;
        return nst_fail(NST_EINPUT, "%s: cannot read the checkpoint manifest: %s", path, strerror(errno));
    }
    *found = 1;
    FILE *t = open_memstream(&m->text, &m->tlen);
    char *line = NULL;
    size_t cap = 0;
    int lineno = 0;
    nst_status s = t ? NST_OK : nst_fail(NST_ENOMEM, "out of memory reading the checkpoint manifest");
    while (s == NST_OK && getline(&line, &cap, f) > 0) {
        lineno++;
        line[strcspn(line, "\n")] = 0;
        if (line[0] == '#' || !line[0]) continue;
        if (line[0] == '|') {
            fprintf(t, "%s\n", line + (line[1] == ' ' ? 2 : 1));
            continue;
        }
        char *eq = strstr(line, " = ");
        if (!eq) {
            s = nst_fail(NST_EINPUT, "%s:%d: not a checkpoint manifest line; remove the checkpoint or use --restart", path, lineno);
            break;
        }
        *eq = 0;
        const char *k = line, *v = eq + 3;
        if (strcmp(k, "format") == 0) m->format = atoi(v);
        else if (strcmp(k, "state") == 0) snprintf(m->state, sizeof m->state, "%s", v);
        else if (strcmp(k, "generation") == 0) m->gen = atoll(v);
        else if (strcmp(k, "level") == 0) m->level = atoi(v);
        else if (strcmp(k, "iteration") == 0) m->iteration = atoll(v);
        else if (strcmp(k, "job_ranks") == 0) m->job_ranks = atoi(v);
        else if (strcmp(k, "file_ranks") == 0) m->file_ranks = atoi(v);
        else if (strcmp(k, "tile_w") == 0) m->tile_w = atoi(v);
        else if (strcmp(k, "tile_h") == 0) m->tile_h = atoi(v);
        else if (strcmp(k, "config_hash") == 0) m->hash = strtoull(v, NULL, 16);
        else if (strcmp(k, "outputs") == 0) snprintf(m->outputs, sizeof m->outputs, "%s", v);
        else if (strcmp(k, "level_done") == 0 && m->nlevels < NST_CKPT_MAX_LEVELS) {
            nst_ckpt_level *lv = &m->levels[m->nlevels];
            if (sscanf(v, "%d %d %d %d %lld %lg %lg %lg", &lv->w, &lv->h, &lv->tiles, &lv->ranks, &lv->iterations, &lv->first, &lv->last,
                       &lv->seconds) == 8)
                m->nlevels++;
        }
    }
    free(line);
    fclose(f);
    if (t) fclose(t);
    if (s == NST_OK && m->format != MANIFEST_FORMAT && m->format != 1)
        s = nst_fail(NST_EINPUT, "%s: checkpoint manifest format %d; this nstbatch reads 1 and %d: start over with --restart", path, m->format,
                     MANIFEST_FORMAT);
    if (s == NST_OK && m->format >= 2) m->level--; /* counted from 1 in the file, from 0 here */
    if (s == NST_OK && strcmp(m->state, "running") != 0 && strcmp(m->state, "done") != 0)
        s = nst_fail(NST_EINPUT, "%s: checkpoint manifest state '%s' (running or done expected)", path, m->state);
    return s;
}

/* The first line of `now` that the manifest's text does not have, with the manifest's line for
 * the same key when it has one. */
static void first_difference(const char *old, const char *now, char *out, size_t cap)
{
    snprintf(out, cap, "the config differs");
    for (const char *p = now; p && *p;) {
        const char *e = strchr(p, '\n');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        int same = 0;
        const char *match = NULL;
        size_t klen = n;
        const char *sep = memmem(p, n, " = ", 3);
        if (!sep) sep = memmem(p, n, ": ", 2);
        if (sep) klen = (size_t)(sep - p);
        for (const char *q = old; q && *q;) {
            const char *qe = strchr(q, '\n');
            size_t qn = qe ? (size_t)(qe - q) : strlen(q);
            if (qn == n && memcmp(p, q, n) == 0) same = 1;
            if (qn > klen && memcmp(p, q, klen) == 0 && (q[klen] == ' ' || q[klen] == ':')) match = q;
            q += qn + (qe ? 1 : 0);
        }
        if (!same) {
            if (match) {
                const char *me = strchr(match, '\n');
                snprintf(out, cap, "it has '%.*s' where this run has '%.*s'", (int)(me ? me - match : (long)strlen(match)), match, (int)n, p);
            } else {
                snprintf(out, cap, "this run has '%.*s', which it does not", (int)n, p);
            }
            return;
        }
        p += n + (e ? 1 : 0);
    }
}

static nst_status make_dir(const char *dir)
{
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", dir);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(buf, 0755) != 0 && errno != EEXIST)
            return nst_fail(NST_EINPUT, "checkpoint.path %s: cannot create %s: %s", dir, buf, strerror(errno));
        *p = '/';
    }
    if (mkdir(buf, 0755) != 0 && errno != EEXIST) return nst_fail(NST_EINPUT, "checkpoint.path %s: cannot create it: %s", dir, strerror(errno));
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) return nst_fail(NST_EINPUT, "checkpoint.path %s: not a directory", dir);
    if (access(dir, W_OK) != 0) return nst_fail(NST_EINPUT, "checkpoint.path %s: not writable", dir);
    return NST_OK;
}

/* Temporary files of a run that was killed while writing a checkpoint (one run uses a checkpoint
 * directory at a time): they never became part of a generation. */
static void remove_stale(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return;
    char path[4400];
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == 'g' && strstr(e->d_name, ".nstc.tmp-")) {
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            unlink(path);
        }
    }
    closedir(d);
}

/* Rank 0: the decision. */
static nst_status decide(nst_ckpt *c, int restart)
{
    char path[4200];
    manifest m;
    int found;
    NST_TRY(make_dir(c->dir));
    remove_stale(c->dir);
    manifest_path(c, path, sizeof path);
    nst_status s = read_manifest(path, &m, &found);
    if (s != NST_OK && restart) { /* an unreadable manifest is replaced by the first new checkpoint */
        nst_notice("checkpoint: %s: %s; starting over (--restart)\n", path, nst_fail_message());
        nst_fail_clear();
        free(m.text);
        return NST_OK;
    }
    if (s != NST_OK || !found) {
        free(m.text);
        return s;
    }
    c->gen = m.gen;
    c->file_ranks = m.file_ranks;
    if (restart) {
        nst_notice("checkpoint: %s: starting over (--restart); the checkpoint there (level %d, iteration %lld) is replaced by the first new one\n",
                   c->dir, m.level + 1, m.iteration);
        free(m.text);
        return NST_OK;
    }
    if (m.hash != c->hash && strcmp(m.state, "done") == 0) {
        /* a finished render with another config: the artist's loop (tweak a key, render again);
         * its record holds no data, and is replaced when this render checkpoints or finishes */
        char diff[1024];
        first_difference(m.text ? m.text : "", c->text, diff, sizeof diff);
        nst_notice("checkpoint: %s: the finished render there had another config (%s): rendering this one\n", c->dir, diff);
    } else if (m.hash != c->hash) {
        char diff[1024];
        first_difference(m.text ? m.text : "", c->text, diff, sizeof diff);
        s = nst_fail(NST_EINPUT, "checkpoint.path %s holds an unfinished checkpoint of a different render (%s, at level %d, iteration %lld): "
                     "put the key back to resume it, or start over with --restart%s%s (or another checkpoint.path)",
                     c->dir, diff, m.level + 1, m.iteration, c->job[0] ? "=" : "", c->job);
    } else if (m.job_ranks != c->job_ranks) {
        s = nst_fail(NST_EINPUT, "checkpoint.path %s was written by %d rank%s and this run has %d: launch with %d ranks to resume it, or use "
                     "--restart to start over", c->dir, m.job_ranks, m.job_ranks == 1 ? "" : "s", c->job_ranks, m.job_ranks);
    } else {
        c->level = m.level, c->iteration = m.iteration, c->tile_w = m.tile_w, c->tile_h = m.tile_h;
        c->nlevels = m.nlevels;
        memcpy(c->levels, m.levels, sizeof m.levels);
        snprintf(c->outputs, sizeof c->outputs, "%s", m.outputs);
        if (strcmp(m.state, "done") == 0)
            c->done = 1;
        else
            c->resume = 1;
    }
    free(m.text);
    return s;
}

nst_status nst_ckpt_open(nst_ckpt *c, const nst_config *cfg, const char *dir, int restart, const char *job)
{
    memset(c, 0, sizeof *c);
    c->enabled = dir && *dir;
    c->every = cfg->checkpoint_every;
    c->minutes = cfg->checkpoint_minutes;
    c->job_ranks = nst_comm_size();
    c->last = nst_now();
    snprintf(c->job, sizeof c->job, "%s", job ? job : "");
    if (!c->enabled) return NST_OK;
    if (strlen(dir) >= sizeof c->dir) return nst_fail(NST_EINPUT, "checkpoint.path %s: too long", dir);
    snprintf(c->dir, sizeof c->dir, "%s", dir);
    nst_status s = NST_OK;
    char *text = NULL;
    if (nst_comm_rank() == 0) {
        text = hashed_text(cfg);
        if (!text) s = nst_fail(NST_ENOMEM, "out of memory hashing the config");
        if (s == NST_OK) {
            c->text = text;
            c->hash = nst_hash64(text, strlen(text), HASH_SEED);
            s = decide(c, restart);
        }
    }
    s = nst_comm_agree(s);
    if (s == NST_OK) s = nst_comm_bcast(c, sizeof *c, 0);
    if (nst_comm_rank() == 0)
        c->text = text;
    else
        c->text = NULL;
    if (s != NST_OK) nst_ckpt_free(c);
    return s;
}

void nst_ckpt_free(nst_ckpt *c)
{
    free(c->text);
    c->text = NULL;
}

/* Whether this rank's node or memory control group is about to run out: less than 1/32 of its
 * limit left (at least 32 MiB, at most 1 GiB). The test hook NSTBATCH_LOW_MEMORY=RANK:ITERATION
 * says so at that point. */
static int memory_low(long long done, size_t *left)
{
    const char *hook = getenv("NSTBATCH_LOW_MEMORY");
    int r;
    long long it;
    if (hook && sscanf(hook, "%d:%lld", &r, &it) == 2 && r == nst_comm_rank() && it == done) return *left = 0, 1;
    nst_sysmem m;
    nst_sysmem_read(&m);
    size_t limit = m.group_limit ? m.group_limit : m.total, margin = limit / 32;
    margin = margin < (32u << 20) ? (size_t)32 << 20 : margin > (1u << 30) ? (size_t)1 << 30 : margin;
    *left = m.headroom;
    return (m.total || m.group_limit) && m.headroom < margin;
}

int nst_ckpt_poll(nst_ckpt *c, long long done, nst_status (*sum_doubles)(void *, double *, size_t), void *ctx)
{
    size_t left;
    int low = memory_low(done, &left);
    double v[5] = {nst_signal_pending() ? 1.0 : 0.0, 0.0, low, low ? nst_comm_rank() : 0, low ? (double)left : 0};
    if (c->enabled) {
        if (c->every > 0 && done % c->every == 0) v[1] = 1;
        if (c->minutes > 0 && nst_comm_rank() == 0 && nst_now() - c->last >= c->minutes * 60.0) v[1] = 1;
    }
    if (sum_doubles && sum_doubles(ctx, v, 5) != NST_OK) return NST_CKPT_NONE; /* the next agree reports it */
    c->low_ranks = (int)v[2], c->low_rank = (int)v[3], c->low_left = (size_t)v[4];
    return v[2] > 0 ? NST_CKPT_MEMORY : v[0] > 0 ? NST_CKPT_SIGNAL : v[1] > 0 ? NST_CKPT_DUE : NST_CKPT_NONE;
}

typedef struct {
    int32_t format, level, rank, nranks;
    int64_t iteration, gen;
} rank_header;

/* NSTBATCH_CKPT_PAUSE=SECONDS: the test hook that holds a rank between writing its file's
 * records and committing it, so that the tests can kill a run in the middle of a checkpoint. */
static void test_pause(void)
{
    const char *p = getenv("NSTBATCH_CKPT_PAUSE");
    if (p && *p) {
        double sec = atof(p);
        if (sec > 0) usleep((useconds_t)(sec * 1e6));
    }
}

nst_status nst_ckpt_write(nst_ckpt *c, int level, long long iteration, int tile_w, int tile_h, nst_ckpt_save_fn save, void *ctx)
{
    const int rank = nst_comm_rank(), size = nst_comm_size();
    const long long gen = c->gen + 1;
    char path[4200];
    double t0 = nst_now();
    rank_path(c, gen, rank, path, sizeof path);
    nst_ckpt_writer *w = NULL;
    rank_header hd = {MANIFEST_FORMAT, level, rank, size, iteration, gen};
    nst_status s = nst_ckpt_writer_open(path, &w);
    if (s == NST_OK) s = nst_ckpt_put(w, "header", &hd, sizeof hd);
    if (s == NST_OK) s = save(ctx, w);
    if (s == NST_OK) test_pause();
    if (s == NST_OK) {
        s = nst_ckpt_writer_commit(w);
    } else {
        nst_ckpt_writer_abort(w);
    }
    s = nst_comm_agree(s);
    nst_ckpt *next = rank == 0 ? nst_alloc(sizeof *next, "the checkpoint manifest") : NULL;
    if (s == NST_OK && rank == 0) s = next ? nst_sync_dir(c->dir) : NST_ENOMEM;
    if (s == NST_OK && rank == 0) { /* the new generation's manifest; the old one stays in force until it is in place */
        *next = *c;
        next->gen = gen, next->file_ranks = size, next->level = level, next->iteration = iteration, next->tile_w = tile_w, next->tile_h = tile_h;
        next->outputs[0] = 0;
        s = write_manifest(next, "running", NULL);
        for (int r = 0; s == NST_OK && c->gen > 0 && r < c->file_ranks; r++) {
            rank_path(c, c->gen, r, path, sizeof path);
            unlink(path);
        }
    }
    nst_free(next);
    s = nst_comm_agree(s);
    if (s != NST_OK) { /* this generation never became the manifest's */
        rank_path(c, gen, rank, path, sizeof path);
        unlink(path);
        return nst_fail_context(s, "checkpoint to %s", c->dir);
    }
    c->gen = gen, c->file_ranks = size, c->level = level, c->iteration = iteration, c->tile_w = tile_w, c->tile_h = tile_h;
    c->outputs[0] = 0;
    c->last = nst_now();
    c->written++;
    nst_info("checkpoint: level %d, iteration %lld -> %s (generation %lld, %d file%s, %.2f s)\n", level + 1, iteration, c->dir, gen, size,
             size == 1 ? "" : "s", c->last - t0);
    return NST_OK;
}

nst_status nst_ckpt_open_rank(const nst_ckpt *c, nst_ckpt_reader **r)
{
    char path[4200];
    rank_header hd;
    rank_path(c, c->gen, nst_comm_rank(), path, sizeof path);
    NST_TRY(nst_ckpt_reader_open(path, r));
    nst_status s = nst_ckpt_get(*r, "header", &hd, sizeof hd);
    if (s == NST_OK && (hd.gen != c->gen || hd.level != c->level || hd.iteration != c->iteration || hd.rank != nst_comm_rank() ||
                        hd.nranks != nst_comm_size()))
        s = nst_fail(NST_EINPUT, "%s: holds generation %lld, level %d, iteration %lld of rank %d/%d; the manifest says generation %lld, level %d, "
                     "iteration %lld for rank %d/%d: remove the checkpoint or use --restart",
                     path, (long long)hd.gen, hd.level + 1, (long long)hd.iteration, hd.rank, hd.nranks, c->gen, c->level + 1, c->iteration,
                     nst_comm_rank(), nst_comm_size());
    if (s != NST_OK) {
        nst_ckpt_reader_close(*r);
        *r = NULL;
    }
    return s;
}

nst_status nst_ckpt_sync(nst_ckpt *c)
{
    if (!c->enabled) return NST_OK;
    long long v[4] = {c->gen, c->file_ranks, c->level, c->iteration};
    NST_TRY(nst_comm_bcast(v, sizeof v, 0));
    c->gen = v[0], c->file_ranks = (int)v[1], c->level = (int)v[2], c->iteration = v[3];
    return NST_OK;
}

void nst_ckpt_level_done(nst_ckpt *c, int k, const nst_ckpt_level *lv)
{
    if (k < 0 || k >= NST_CKPT_MAX_LEVELS) return;
    c->levels[k] = *lv;
    if (c->nlevels < k + 1) c->nlevels = k + 1;
}

nst_status nst_ckpt_finish(nst_ckpt *c, const char *outputs)
{
    if (!c->enabled || nst_comm_rank() != 0) return NST_OK;
    long long gen = c->gen;
    int ranks = c->file_ranks;
    snprintf(c->outputs, sizeof c->outputs, "%s", outputs);
    c->file_ranks = 0;
    NST_TRY(write_manifest(c, "done", NULL));
    char path[4200];
    for (int r = 0; gen > 0 && r < ranks; r++) {
        rank_path(c, gen, r, path, sizeof path);
        unlink(path);
    }
    return NST_OK;
}

/* ---- state records, both directions ---------------------------------------------------------------- */

nst_status nst_ckpt_io_host(const nst_ckpt_io *io, const char *name, void *data, size_t bytes)
{
    return io->w ? nst_ckpt_put(io->w, name, data, bytes) : nst_ckpt_get(io->r, name, data, bytes);
}

nst_status nst_ckpt_io_buffer(const nst_ckpt_io *io, const char *name, void *buf, size_t bytes)
{
    nst_backend *be = io->be;
    if (io->r) {
        size_t n;
        const void *p = nst_ckpt_find(io->r, name, &n);
        if (!p) return NST_EINPUT;
        if (n != bytes) return nst_ckpt_get(io->r, name, NULL, bytes); /* its size error */
        return be->ops->upload(be, buf, (const float *)p, bytes / sizeof(float), NST_F32);
    }
    float *host = nst_alloc_array(bytes / sizeof(float) + 1, sizeof(float), "checkpoint staging");
    if (!host) return NST_ENOMEM;
    nst_status s = be->ops->download(be, host, buf, bytes / sizeof(float), NST_F32);
    if (s == NST_OK) s = nst_ckpt_put(io->w, name, host, bytes);
    nst_free(host);
    return s;
}

/* ---- done records ---------------------------------------------------------------------------------- */

int nst_ckpt_is_done(const nst_config *cfg, const char *dir, char *outputs, size_t cap)
{
    char path[4200];
    manifest m;
    int found = 0, done = 0;
    if (!dir || !*dir) return 0;
    snprintf(path, sizeof path, "%s/manifest", dir);
    nst_status s = read_manifest(path, &m, &found);
    nst_fail_clear(); /* an unreadable manifest is nst_ckpt_open's to report */
    char *text = s == NST_OK && found && strcmp(m.state, "done") == 0 ? hashed_text(cfg) : NULL;
    if (text && m.hash == nst_hash64(text, strlen(text), HASH_SEED) && m.outputs[0]) {
        done = 1;
        char list[1024];
        snprintf(list, sizeof list, "%s", m.outputs);
        for (char *save = NULL, *p = strtok_r(list, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
            while (*p == ' ') p++;
            if (access(p, R_OK) != 0) done = 0; /* an output gone: render it again */
        }
        if (done) snprintf(outputs, cap, "%s", m.outputs);
    }
    free(text);
    free(m.text);
    return done;
}

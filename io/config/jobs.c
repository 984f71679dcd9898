/* io/config/jobs.c: the jobs of a batch, from [job.NAME] sections and a manifest file (see jobs.h). */
#include "jobs.h"

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../util/text.h"

#define MANIFEST_MAX ((size_t)64 << 20) /* a manifest above 64 MiB is refused */

void nst_jobset_init(nst_jobset *js) { memset(js, 0, sizeof *js); }

void nst_jobset_free(nst_jobset *js)
{
    free(js->jobs);
    free(js->ov);
    free(js->text);
    memset(js, 0, sizeof *js);
}

const char *nst_job_name(const nst_jobset *js, int j) { return js->text + js->jobs[j].name; }
const char *nst_job_where(const nst_jobset *js, int j) { return js->text + js->jobs[j].where; }

static nst_status grow(void **p, int *cap, int need, size_t elem)
{
    if (need <= *cap) return NST_OK;
    int n = *cap ? *cap * 2 : 16;
    while (n < need) n *= 2;
    void *q = realloc(*p, (size_t)n * elem);
    if (!q) return nst_fail(NST_ENOMEM, "out of memory reading the batch's jobs");
    *p = q;
    *cap = n;
    return NST_OK;
}

/* Append a string to the text buffer; its offset in *off. */
static nst_status put_text(nst_jobset *js, const char *s, size_t *off)
{
    size_t n = strlen(s) + 1;
    if (js->len + n > js->cap_text) {
        size_t cap = js->cap_text ? js->cap_text * 2 : 4096;
        while (cap < js->len + n) cap *= 2;
        char *t = realloc(js->text, cap);
        if (!t) return nst_fail(NST_ENOMEM, "out of memory reading the batch's jobs");
        js->text = t;
        js->cap_text = cap;
    }
    memcpy(js->text + js->len, s, n);
    *off = js->len;
    js->len += n;
    return NST_OK;
}

static int valid_job_name(const char *s)
{
    if (!*s || strlen(s) >= NST_JOB_NAME_MAX) return 0;
    for (; *s; s++)
        if (!(isalnum((unsigned char)*s) || *s == '_' || *s == '-' || *s == '.')) return 0;
    return 1;
}

static int find_job(const nst_jobset *js, const char *name)
{
    for (int j = 0; j < js->njobs; j++)
        if (strcmp(nst_job_name(js, j), name) == 0) return j;
    return -1;
}

nst_status nst_jobset_begin(nst_jobset *js, const char *name, const char *where)
{
    if (!valid_job_name(name))
        return nst_fail(NST_EINPUT, "%s: job name '%.80s': use up to %d letters, digits, '_', '-' and '.'", where, name, NST_JOB_NAME_MAX - 1);
    int prev = find_job(js, name);
    if (prev >= 0) return nst_fail(NST_EINPUT, "%s: job '%s' declared twice (first at %s)", where, name, nst_job_where(js, prev));
    NST_TRY(grow((void **)&js->jobs, &js->cap_jobs, js->njobs + 1, sizeof *js->jobs));
    nst_job_def *d = &js->jobs[js->njobs];
    memset(d, 0, sizeof *d);
    NST_TRY(put_text(js, name, &d->name));
    NST_TRY(put_text(js, where, &d->where));
    d->first = js->nov;
    js->njobs++;
    return NST_OK;
}

/* The key table's shared keys: one network, one backend, one batch, its checkpoints and metrics. */
static int shared_key(const char *section, const char *name)
{
    return strcmp(section, "model") == 0 || strcmp(section, "batch") == 0 || strcmp(section, "checkpoint") == 0 ||
           strcmp(section, "metrics") == 0 || strcmp(section, "gpu") == 0 ||
           (strcmp(section, "run") == 0 && (strcmp(name, "device") == 0 || strcmp(name, "threads") == 0 || strcmp(name, "precision") == 0));
}

nst_status nst_jobset_add(nst_jobset *js, const char *full_key, const char *value, const char *where, const char *dir)
{
    static nst_config scratch; /* validates a value (and resolves its paths) without touching a real config */
    char section[64], name[64];
    const char *dot = strchr(full_key, '.');
    if (js->njobs == 0) return nst_fail(NST_EINPUT, "%s: an override outside any job", where);
    const char *job = nst_job_name(js, js->njobs - 1);
    if (!dot || (size_t)(dot - full_key) >= sizeof section || strlen(dot + 1) >= sizeof name)
        return nst_fail(NST_EINPUT, "%s: job '%s': '%.60s': write overrides as section.key = value (e.g. output.path = a.tif)", where, job,
                        full_key);
    memcpy(section, full_key, (size_t)(dot - full_key));
    section[dot - full_key] = 0;
    snprintf(name, sizeof name, "%s", dot + 1);
    if (shared_key(section, name))
        return nst_fail(NST_EINPUT, "%s: job '%s': %s is shared by every job of a batch (one network, one backend); set it in [%s]", where, job,
                        full_key, section);
    nst_config_defaults(&scratch);
    NST_TRY(nst_config_set_key(&scratch, section, name, value, where, dir));
    int id = nst_config_find(section, name);
    const nst_job_def *d = &js->jobs[js->njobs - 1];
    for (int i = d->first; i < js->nov; i++)
        if (js->ov[i].key == id)
            return nst_fail(NST_EINPUT, "%s: job '%s': %s set twice (first at %s)", where, job, full_key, js->text + js->ov[i].where);
    char resolved[NST_CFG_STR_MAX];
    nst_config_value_text(&scratch, id, resolved, sizeof resolved);
    NST_TRY(grow((void **)&js->ov, &js->cap_ov, js->nov + 1, sizeof *js->ov));
    nst_job_override *o = &js->ov[js->nov];
    o->key = id;
    NST_TRY(put_text(js, where, &o->where));
    NST_TRY(put_text(js, resolved, &o->value));
    js->nov++;
    js->jobs[js->njobs - 1].count++;
    return NST_OK;
}

/* ---- the manifest -------------------------------------------------------------------------- */

/* The next whitespace-separated token of *p ("quoted" allowed), NUL-terminated in place; NULL at
 * the end of the line or a comment; *bad set on an unclosed quote. */
static char *token(char **p, int *bad)
{
    char *s = *p;
    while (*s == ' ' || *s == '\t') s++;
    if (!*s || *s == '#') return NULL;
    char *t = s;
    if (*s == '"') {
        char *q = strchr(s + 1, '"');
        if (!q) {
            *bad = 1;
            return NULL;
        }
        *q = 0;
        t = s + 1;
        s = q + 1;
        if (*s && *s != ' ' && *s != '\t') {
            *bad = 1;
            return NULL;
        }
    } else {
        while (*s && *s != ' ' && *s != '\t') s++;
    }
    if (*s) *s++ = 0;
    *p = s;
    return t;
}

/* The job name for an output path: its file name without extension, unique. */
static void name_for(const nst_jobset *js, const char *out, int line, char *name, size_t cap)
{
    const char *base = strrchr(out, '/');
    base = base ? base + 1 : out;
    size_t n = strcspn(base, ".");
    char stem[NST_JOB_NAME_MAX];
    size_t k = 0;
    for (size_t i = 0; i < n && k + 1 < sizeof stem - 12; i++)
        stem[k++] = isalnum((unsigned char)base[i]) || base[i] == '_' || base[i] == '-' ? base[i] : '_';
    stem[k] = 0;
    if (!k) snprintf(stem, sizeof stem, "line");
    snprintf(name, cap, "%s", stem);
    if (find_job(js, name) >= 0 || strcmp(stem, "line") == 0) snprintf(name, cap, "%s-%d", stem, line);
}

static nst_status manifest_line(nst_jobset *js, char *s, const char *where, int line, const char *dir)
{
    static const char *const cols[3] = {"content.path", "style.path", "output.path"};
    char *tok[3];
    int bad = 0;
    for (int i = 0; i < 3; i++) {
        tok[i] = token(&s, &bad);
        if (bad) return nst_fail(NST_EINPUT, "%s: unclosed or misplaced quote", where);
        if (!tok[i])
            return nst_fail(NST_EINPUT, "%s: expected CONTENT STYLE OUTPUT [section.key=value ...]; %s is missing", where, cols[i]);
    }
    char name[NST_JOB_NAME_MAX];
    name_for(js, tok[2], line, name, sizeof name);
    NST_TRY(nst_jobset_begin(js, name, where));
    for (int i = 0; i < 3; i++) NST_TRY(nst_jobset_add(js, cols[i], tok[i], where, dir));
    for (char *t; (t = token(&s, &bad));) {
        char *eq = strchr(t, '=');
        if (!eq) return nst_fail(NST_EINPUT, "%s: '%.60s': extra columns are section.key=value", where, t);
        *eq = 0;
        NST_TRY(nst_jobset_add(js, t, eq + 1, where, dir));
    }
    if (bad) return nst_fail(NST_EINPUT, "%s: unclosed or misplaced quote", where);
    return NST_OK;
}

nst_status nst_jobset_read_manifest(nst_jobset *js, const char *path, const char *origin)
{
    FILE *f = fopen(path, "rb");
    if (!f) return nst_fail(NST_EINPUT, "%s: batch.manifest: cannot open %s: %s", origin, path, strerror(errno));
    char *buf = malloc(MANIFEST_MAX + 1);
    size_t len = buf ? fread(buf, 1, MANIFEST_MAX + 1, f) : 0;
    int err = ferror(f);
    fclose(f);
    if (!buf) return nst_fail(NST_ENOMEM, "out of memory reading %s", path);
    nst_status s = NST_OK;
    if (err) s = nst_fail(NST_EINPUT, "%s: batch.manifest: cannot read %s (is it a directory?)", origin, path);
    if (s == NST_OK && len > MANIFEST_MAX) s = nst_fail(NST_EINPUT, "%s: manifest larger than %zu bytes", path, MANIFEST_MAX);
    char dir[NST_CFG_STR_MAX];
    nst_config_dir_of(path, dir, sizeof dir);
    char line[NST_CFG_STR_MAX], where[NST_CFG_ORIGIN_MAX];
    size_t pos = 0, n;
    int lineno = 0, njobs0 = js->njobs;
    for (const char *start; s == NST_OK && (start = nst_text_line(buf, len, &pos, &n));) {
        lineno++;
        snprintf(where, sizeof where, "%s:%d", path, lineno);
        if (n >= sizeof line) {
            s = nst_fail(NST_EINPUT, "%s: line longer than %zu bytes", where, sizeof line - 1);
        } else if (memchr(start, 0, n)) {
            s = nst_fail(NST_EINPUT, "%s: line contains a NUL byte (is this a text file?)", where);
        } else {
            memcpy(line, start, n);
            line[n] = 0;
            char *p = line;
            while (*p == ' ' || *p == '\t') p++;
            if (*p && *p != '#') s = manifest_line(js, p, where, lineno, dir);
        }
    }
    free(buf);
    if (s == NST_OK && js->njobs == njobs0) s = nst_fail(NST_EINPUT, "%s: batch.manifest %s lists no jobs", origin, path);
    return s;
}

/* ---- use ------------------------------------------------------------------------------------ */

nst_status nst_jobset_apply(const nst_jobset *js, int j, nst_config *cfg)
{
    int n;
    const nst_key_info *keys = nst_config_keys(&n);
    const nst_job_def *d = &js->jobs[j];
    for (int i = d->first; i < d->first + d->count; i++) {
        const nst_job_override *o = &js->ov[i];
        NST_TRY(nst_config_set_key(cfg, keys[o->key].section, keys[o->key].name, js->text + o->value, js->text + o->where, ""));
    }
    return NST_OK;
}

void nst_jobset_write(const nst_jobset *js, FILE *f, const char *cwd)
{
    int n;
    const nst_key_info *keys = nst_config_keys(&n);
    for (int j = 0; j < js->njobs; j++) {
        const nst_job_def *d = &js->jobs[j];
        fprintf(f, "\n[job.%s]   # %s\n", nst_job_name(js, j), nst_job_where(js, j));
        for (int i = d->first; i < d->first + d->count; i++) nst_config_write_key(f, js->ov[i].key, keys[js->ov[i].key].full, js->text + js->ov[i].value, cwd);
    }
}

typedef struct {
    uint64_t njobs, nov, len;
} pack_header;

nst_status nst_jobset_pack(const nst_jobset *js, unsigned char **buf, size_t *len)
{
    pack_header h = {(uint64_t)js->njobs, (uint64_t)js->nov, (uint64_t)js->len};
    size_t a = sizeof h, b = sizeof *js->jobs * (size_t)js->njobs, c = sizeof *js->ov * (size_t)js->nov;
    *len = a + b + c + js->len;
    *buf = malloc(*len ? *len : 1);
    if (!*buf) return nst_fail(NST_ENOMEM, "out of memory packing the batch's jobs");
    memcpy(*buf, &h, a);
    if (b) memcpy(*buf + a, js->jobs, b);
    if (c) memcpy(*buf + a + b, js->ov, c);
    if (js->len) memcpy(*buf + a + b + c, js->text, js->len);
    return NST_OK;
}

nst_status nst_jobset_unpack(nst_jobset *js, const unsigned char *buf, size_t len)
{
    pack_header h;
    nst_jobset_init(js);
    if (len < sizeof h) return nst_fail(NST_ERUNTIME, "batch job list: %zu bytes, too short", len);
    memcpy(&h, buf, sizeof h);
    size_t b = sizeof *js->jobs * (size_t)h.njobs, c = sizeof *js->ov * (size_t)h.nov;
    if (h.njobs > INT32_MAX || h.nov > INT32_MAX || sizeof h + b + c + h.len != len)
        return nst_fail(NST_ERUNTIME, "batch job list: inconsistent sizes");
    js->jobs = malloc(b ? b : 1);
    js->ov = malloc(c ? c : 1);
    js->text = malloc(h.len ? h.len : 1);
    if (!js->jobs || !js->ov || !js->text) {
        nst_jobset_free(js);
        return nst_fail(NST_ENOMEM, "out of memory receiving the batch's jobs");
    }
    memcpy(js->jobs, buf + sizeof h, b);
    memcpy(js->ov, buf + sizeof h + b, c);
    memcpy(js->text, buf + sizeof h + b + c, h.len);
    js->njobs = js->cap_jobs = (int)h.njobs;
    js->nov = js->cap_ov = (int)h.nov;
    js->len = js->cap_text = h.len;
    return NST_OK;
}

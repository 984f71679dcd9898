/* io/config/config.c: INI parsing, validation against the schema (config_keys.h), --set overrides,
 * the resolved-config writer and the generated key reference.
 *
 * The grammar, strictly: blank lines; comments starting with '#' or ';'; "[section]";
 * "key = value". A value may be "quoted" (taken literally up to the next quote); otherwise an
 * inline comment starts at whitespace followed by '#' or ';'. Lines are at most 4095 bytes.
 * Every violation is one message naming file:line, the key and what is valid.
 */
#include "config.h"

#include "../../util/text.h"
#include "job_lines.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <strings.h>
#include <sys/stat.h>

static nst_key_info keys[] = {
#define NST_KEY(sec, name, type, def, lo, hi, allowed, help)                                      \
    {#sec, #name, #sec "." #name, NST_CT_##type, def, lo, hi, allowed, help,                      \
     offsetof(nst_config, sec##_##name), sizeof(((nst_config *)0)->sec##_##name)},
#include "config_keys.h"
#undef NST_KEY
};

const nst_key_info *nst_config_keys(int *count)
{
    if (count) *count = NST_NKEYS;
    return keys;
}

int nst_config_find(const char *section, const char *name)
{
    for (int i = 0; i < NST_NKEYS; i++)
        if (strcmp(keys[i].section, section) == 0 && strcmp(keys[i].name, name) == 0) return i;
    return -1;
}

static int section_known(const char *section)
{
    for (int i = 0; i < NST_NKEYS; i++)
        if (strcmp(keys[i].section, section) == 0) return 1;
    return 0;
}

/* ---- small text helpers ------------------------------------------------------------------ */

/* A value quoted for a one-line message: printable, at most ~60 characters. */
static const char *shown(const char *v, char *buf, size_t cap)
{
    size_t n = 0, i = 0;
    for (; v[i] && n + 4 < cap && i < 60; i++)
        buf[n++] = (v[i] >= 0x20 && v[i] < 0x7f) ? v[i] : '?';
    if (v[i] && n + 4 < cap) {
        memcpy(buf + n, "...", 3);
        n += 3;
    }
    buf[n] = 0;
    return buf;
}

/* " (did you mean 'x'?)" for the nearest key name in `section`; else every key of another section
 * whose name is as near as the nearest one ("'optim.iterations' or 'pyramid.iterations'"), with the
 * section it belongs in. */
static void suggest_key(const char *section, const char *name, char *out, size_t cap)
{
    const char *cand[NST_NKEYS];
    const char *best = NULL;
    size_t n = 0;
    for (int i = 0; i < NST_NKEYS; i++)
        if (strcmp(keys[i].section, section) == 0) cand[n++] = keys[i].name;
    best = nst_nearest(name, cand, n);
    if (best) {
        snprintf(out, cap, " (did you mean '%s.%s'?)", section, best);
        return;
    }
    for (int i = 0; i < NST_NKEYS; i++) cand[i] = keys[i].name;
    best = nst_nearest(name, cand, NST_NKEYS);
    out[0] = 0;
    if (!best) return;
    size_t d = nst_edit_distance(name, best), len = 0;
    int found = 0;
    for (int i = 0; i < NST_NKEYS && found < 3; i++) {
        if (strcmp(keys[i].section, section) == 0 || nst_edit_distance(name, keys[i].name) != d) continue;
        len += (size_t)snprintf(out + len, len < cap ? cap - len : 0, "%s'%s' under [%s]", found ? ", or " : " (did you mean ",
                                keys[i].name, keys[i].section);
        found++;
    }
    if (found && len < cap) snprintf(out + len, cap - len, "?)");
}

static void section_list(char *out, size_t cap)
{
    size_t n = 0;
    out[0] = 0;
    for (int i = 0; i < NST_NKEYS; i++) {
        if (i > 0 && strcmp(keys[i].section, keys[i - 1].section) == 0) continue;
        n += (size_t)snprintf(out + n, n < cap ? cap - n : 0, "%s%s", n ? ", " : "", keys[i].section);
        if (n >= cap) break;
    }
}

static void suggest_section(const char *section, char *out, size_t cap)
{
    const char *cand[NST_NKEYS];
    size_t n = 0;
    for (int i = 0; i < NST_NKEYS; i++)
        if (i == 0 || strcmp(keys[i].section, keys[i - 1].section) != 0) cand[n++] = keys[i].section;
    const char *best = nst_nearest(section, cand, n);
    char all[512];
    section_list(all, sizeof all);
    if (best)
        snprintf(out, cap, " (did you mean [%s]?); sections: %s", best, all);
    else
        snprintf(out, cap, "; sections: %s", all);
}

/* "a|b|c" written as "a, b, c" at out; returns the length written. */
static size_t list_words(const char *allowed, char *out, size_t cap)
{
    size_t n = 0;
    out[0] = 0;
    for (const char *p = allowed; *p && n + 3 < cap; p++) {
        if (*p == '|') {
            n += (size_t)snprintf(out + n, cap - n, ", ");
        } else {
            out[n++] = *p;
            out[n] = 0;
        }
    }
    return n;
}

/* What a key accepts, for messages and --help. */
static void describe_valid(const nst_key_info *k, char *out, size_t cap)
{
    switch (k->type) {
    case NST_CT_INT: snprintf(out, cap, "an integer in %.0f..%.0f", k->lo, k->hi); break;
    case NST_CT_FLOAT: snprintf(out, cap, "a number in [%g, %g]", k->lo, k->hi); break;
    case NST_CT_BOOL: snprintf(out, cap, "true or false (also yes/no, on/off, 1/0)"); break;
    case NST_CT_ENUM: {
        size_t n = (size_t)snprintf(out, cap, "one of ");
        list_words(k->allowed, out + n, cap - n);
        break;
    }
    case NST_CT_INTWORD: {
        size_t n = list_words(k->allowed, out, cap);
        snprintf(out + n, cap - n, " or an integer in %.0f..%.0f", k->lo, k->hi);
        break;
    }
    case NST_CT_PATH: snprintf(out, cap, "a file path"); break;
    case NST_CT_PATHLIST: snprintf(out, cap, "file paths, comma-separated"); break;
    case NST_CT_LIST: snprintf(out, cap, "a comma-separated list"); break;
    default: snprintf(out, cap, "text"); break;
    }
}

/* Position of v in "a|b|c", or -1. */
static int enum_index(const char *allowed, const char *v)
{
    size_t lv = strlen(v);
    const char *p = allowed;
    for (int i = 0; *p; i++) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == lv && strncmp(p, v, len) == 0) return i;
        if (!bar) break;
        p = bar + 1;
    }
    return -1;
}

static int enum_has(const char *allowed, const char *v) { return enum_index(allowed, v) >= 0; }

/* The i-th word of "a|b|c" into out. */
static void enum_word(const char *allowed, int i, char *out, size_t cap)
{
    const char *p = allowed;
    for (; i > 0 && p; i--) {
        p = strchr(p, '|');
        if (p) p++;
    }
    size_t len = p ? strcspn(p, "|") : 0;
    snprintf(out, cap, "%.*s", (int)len, p ? p : "");
}

static int parse_bool(const char *v, int *out)
{
    static const char *t[] = {"true", "yes", "on", "1"}, *f[] = {"false", "no", "off", "0"};
    for (int i = 0; i < 4; i++) {
        if (strcasecmp(v, t[i]) == 0) return *out = 1, 1; /* True, YES, Off: any case */
        if (strcasecmp(v, f[i]) == 0) return *out = 0, 1;
    }
    return 0;
}

/* ---- setting one key --------------------------------------------------------------------- */

/* An INT key's value, or an INTWORD key's: one of its words, or an integer in [lo, hi]. */
static nst_status set_int(const nst_key_info *k, char *field, const char *value, const char *where, const char *valid)
{
    char vb[96];
    if (k->type == NST_CT_INTWORD) {
        int word = enum_index(k->allowed, value);
        if (word >= 0) {
            *(long long *)field = NST_WORD(word);
            return NST_OK;
        }
    }
    char *end;
    errno = 0;
    long long v = strtoll(value, &end, 10);
    if (!*value || *end || errno == ERANGE || (double)v < k->lo || (double)v > k->hi)
        return nst_fail(NST_EINPUT, "%s: %s = '%s': expected %s", where, k->full, shown(value, vb, sizeof vb), valid);
    *(long long *)field = v;
    return NST_OK;
}

/* A FLOAT, BOOL or ENUM key's value. */
static nst_status set_scalar(const nst_key_info *k, char *field, const char *value, const char *where, const char *valid)
{
    char vb[96];
    if (k->type == NST_CT_FLOAT) {
        char *end;
        errno = 0;
        double v = strtod(value, &end);
        if (!*value || *end || isspace((unsigned char)*value) || !isfinite(v) || v < k->lo || v > k->hi)
            return nst_fail(NST_EINPUT, "%s: %s = '%s': expected %s", where, k->full,
                            shown(value, vb, sizeof vb), valid);
        *(double *)field = v;
    } else if (k->type == NST_CT_BOOL) {
        int v;
        if (!parse_bool(value, &v))
            return nst_fail(NST_EINPUT, "%s: %s = '%s': expected %s", where, k->full,
                            shown(value, vb, sizeof vb), valid);
        *(int *)field = v;
    } else {
        if (!enum_has(k->allowed, value) || strlen(value) >= k->size)
            return nst_fail(NST_EINPUT, "%s: %s = '%s': expected %s", where, k->full,
                            shown(value, vb, sizeof vb), valid);
        strcpy(field, value);
    }
    return NST_OK;
}

/* path (len bytes) as a list item resolves: relative to base_dir unless absolute; 0 where it does
 * not fit in cap. */
static int listed_path(char *out, size_t cap, const char *path, size_t len, const char *base_dir)
{
    int w = path[0] != '/' && base_dir && *base_dir ? snprintf(out, cap, "%s/%.*s", base_dir, (int)len, path)
                                                    : snprintf(out, cap, "%.*s", (int)len, path);
    return w > 0 && (size_t)w < cap;
}

/* Whether path (relative to base_dir unless absolute) is a file there. */
static int is_file(const char *path, size_t len, const char *base_dir)
{
    char full[NST_CFG_STR_MAX * 2];
    struct stat st;
    return listed_path(full, sizeof full, path, len, base_dir) && stat(full, &st) == 0 && S_ISREG(st.st_mode);
}

/* A list splits at every comma, so a file named "Monet, Water Lilies.jpg" reads as two that do not
 * exist. Where the item at p is no file but it and the items after it, commas and all, name one,
 * that is said (rather than "Monet: cannot open"), with what to do. The joins are bounded (a name
 * of up to COMMA_JOINS commas; COMMA_BUDGET stats a list), so a long list of missing files costs a
 * stat an item and a few more, not one for every pair. */
enum { COMMA_JOINS = 8, COMMA_BUDGET = 64 };

/* s as one shell word: between single quotes, each ' written as '\'' */
static void shell_word(const char *s, char *out, size_t cap)
{
    size_t n = 0;
    out[n++] = '\'';
    for (; *s && n + 6 < cap; s++)
        if (*s == '\'') memcpy(out + n, "'\\''", 4), n += 4;
        else out[n++] = *s;
    out[n++] = '\'';
    out[n] = 0;
}

/* The absolute path of the file listed as p (m bytes), for the advice's ln -s: its folder resolved,
 * its own name as listed (realpath of the file would follow its link). 0 where that cannot be made
 * or holds a control byte (the error is one line). */
static int absolute_listed(const char *p, size_t m, const char *base_dir, char *out, size_t cap)
{
    char rel[NST_CFG_STR_MAX * 2], dir[PATH_MAX];
    if (!listed_path(rel, sizeof rel, p, m, base_dir)) return 0;
    char *slash = strrchr(rel, '/');
    const char *name = slash ? slash + 1 : rel;
    if (slash) *slash = 0;
    if (!realpath(slash ? (rel[0] ? rel : "/") : ".", dir)) return 0;
    int w = snprintf(out, cap, "%s/%s", strcmp(dir, "/") ? dir : "", name);
    if (w <= 0 || (size_t)w >= cap) return 0;
    for (const char *c = out; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f) return 0;
    return 1;
}

static nst_status comma_named(const nst_key_info *k, const char *p, size_t m, const char *where, const char *base_dir)
{
    char abs[PATH_MAX], word[PATH_MAX * 4 + 8], advice[sizeof word + 32] = "";
    if (absolute_listed(p, m, base_dir, abs, sizeof abs)) {
        shell_word(abs, word, sizeof word);
        snprintf(advice, sizeof advice, " (ln -s %s NEWNAME)", word);
    }
    /* the advice whole or not at all: a message cut inside its quotes would be a broken command
     * (room kept for a context prefixed later) */
    if (strlen(where) + 2 * m + strlen(k->full) + strlen(advice) + 128 > NST_MSG_MAX - 256) advice[0] = 0;
    return nst_fail(NST_EINPUT, "%s: '%.*s' is one file whose name has a comma, but %s splits at commas: give it a name without "
                    "one%s and list that", where, (int)m, p, k->full, advice);
}

static nst_status comma_in_name(const nst_key_info *k, const char *p, size_t len, const char *where, const char *base_dir, int *budget)
{
    if (!len || is_file(p, len, base_dir)) return NST_OK;
    int joins = 0;
    for (const char *c = strchr(p, ','); c && joins < COMMA_JOINS && *budget > 0; c = strchr(c + 1, ',')) { /* the item, then it with the next, ... */
        const char *end = strchr(c + 1, ',');
        size_t m = end ? (size_t)(end - p) : strlen(p);
        while (m && (p[m - 1] == ' ' || p[m - 1] == '\t')) m--;
        joins++, (*budget)--;
        if (is_file(p, m, base_dir)) return comma_named(k, p, m, where, base_dir);
    }
    return NST_OK;
}

/* A PATHLIST key's value: each item resolved like a PATH; items joined with ", ". */
static nst_status set_pathlist(const nst_key_info *k, char *field, const char *value, const char *where, const char *base_dir)
{
    char joined[NST_CFG_STR_MAX], item[NST_CFG_STR_MAX];
    size_t n = 0;
    int budget = COMMA_BUDGET;
    joined[0] = 0;
    for (const char *p = value; *p;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        while (len && (*p == ' ' || *p == '\t')) p++, len--;
        while (len && (p[len - 1] == ' ' || p[len - 1] == '\t')) len--;
        if (len >= sizeof item) return nst_fail(NST_EINPUT, "%s: %s: path longer than %zu bytes", where, k->full, sizeof item - 1);
        memcpy(item, p, len);
        item[len] = 0;
        if (comma) NST_TRY(comma_in_name(k, p, len, where, base_dir, &budget));
        if (len) {
            int w = item[0] != '/' && base_dir && *base_dir
                        ? snprintf(joined + n, sizeof joined - n, "%s%s/%s", n ? ", " : "", base_dir, item)
                        : snprintf(joined + n, sizeof joined - n, "%s%s", n ? ", " : "", item);
            if (w < 0 || (size_t)w >= sizeof joined - n || n + (size_t)w >= k->size)
                return nst_fail(NST_EINPUT, "%s: %s: value longer than %zu bytes", where, k->full, k->size - 1);
            n += (size_t)w;
        }
        if (!comma) break;
        p = comma + 1;
    }
    strcpy(field, joined);
    return NST_OK;
}

/* A PATH key's value (relative to base_dir unless absolute), or any other key's as text. */
static nst_status set_text(const nst_key_info *k, char *field, const char *value, const char *where, const char *base_dir)
{
    if (k->type == NST_CT_PATH && *value && value[0] != '/' && base_dir && *base_dir) {
        int n = snprintf(field, k->size, "%s/%s", base_dir, value);
        if (n < 0 || (size_t)n >= k->size)
            return nst_fail(NST_EINPUT, "%s: %s: path longer than %zu bytes", where, k->full,
                            k->size - 1);
        return NST_OK;
    }
    if (strlen(value) >= k->size)
        return nst_fail(NST_EINPUT, "%s: %s: value longer than %zu bytes", where, k->full, k->size - 1);
    strcpy(field, value);
    return NST_OK;
}

nst_status nst_config_set_key(nst_config *c, const char *section, const char *name, const char *value,
                              const char *where, const char *base_dir)
{
    char valid[256], sugg[160];
    int id = nst_config_find(section, name);
    if (id < 0) {
        if (!section_known(section)) {
            suggest_section(section, sugg, sizeof sugg);
            return nst_fail(NST_EINPUT, "%s: unknown section [%s]%s", where, section, sugg);
        }
        suggest_key(section, name, sugg, sizeof sugg);
        return nst_fail(NST_EINPUT, "%s: unknown key '%s' in [%s]%s", where, name, section, sugg);
    }
    const nst_key_info *k = &keys[id];
    char *field = (char *)c + k->offset;
    describe_valid(k, valid, sizeof valid);
    for (const char *p = value; *p; p++)
        if ((unsigned char)*p < 0x20 && *p != '\t')
            return nst_fail(NST_EINPUT, "%s: %s: value contains a control character", where, k->full);

    switch (k->type) {
    case NST_CT_INT:
    case NST_CT_INTWORD: NST_TRY(set_int(k, field, value, where, valid)); break;
    case NST_CT_FLOAT:
    case NST_CT_BOOL:
    case NST_CT_ENUM: NST_TRY(set_scalar(k, field, value, where, valid)); break;
    case NST_CT_PATHLIST: NST_TRY(set_pathlist(k, field, value, where, base_dir)); break;
    default: NST_TRY(set_text(k, field, value, where, base_dir)); break;
    }
    snprintf(c->origin[id], NST_CFG_ORIGIN_MAX, "%s", where);
    return NST_OK;
}

void nst_config_defaults(nst_config *c)
{
    memset(c, 0, sizeof *c);
    for (int i = 0; i < NST_NKEYS; i++) {
        /* Defaults are valid by construction (checked by tests/test_config.c). */
        nst_config_set_key(c, keys[i].section, keys[i].name, keys[i].def, "default", "");
    }
}

const char *nst_config_origin(const nst_config *c, int key)
{
    return (key >= 0 && key < NST_NKEYS && c->origin[key][0]) ? c->origin[key] : "default";
}

void nst_config_where(const nst_config *c, int key, char *out, size_t cap)
{
    const char *o = nst_config_origin(c, key), *full = key >= 0 && key < NST_NKEYS ? keys[key].full : "?";
    if (strcmp(o, "default") == 0)
        snprintf(out, cap, "%s", full);
    else if (strncmp(o, "--set ", 6) == 0)
        snprintf(out, cap, "%s", o);
    else
        snprintf(out, cap, "%s: %s", o, full);
}

/* ---- the INI parser ---------------------------------------------------------------------- */

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t') s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t')) s[--n] = 0;
    return s;
}

static int valid_name(const char *s, int allow_dot)
{
    if (!*s) return 0;
    for (; *s; s++)
        if (!(islower((unsigned char)*s) || isdigit((unsigned char)*s) || *s == '_' ||
              (allow_dot && (*s == '.' || *s == '-'))))
            return 0;
    return 1;
}

/* A value: "quoted" as it is, or bare with a trailing comment removed; NULL when quoting is
 * broken (*why says how). */
static char *unquote(char *val, const char **why)
{
    if (*val == '"') {
        char *q = strchr(val + 1, '"');
        *why = "missing closing quote";
        if (!q) return NULL;
        char *rest = trim(q + 1);
        *why = "text after the closing quote";
        if (*rest && *rest != '#' && *rest != ';') return NULL;
        *q = 0;
        return val + 1;
    }
    for (char *p = val; *p; p++)
        if ((*p == '#' || *p == ';') && p > val && (p[-1] == ' ' || p[-1] == '\t')) {
            *p = 0;
            break;
        }
    return trim(val);
}

/* The parser between lines. */
typedef struct {
    nst_config *c;
    struct nst_jobset *jobs;
    const char *base_dir;
    char section[64];
    int in_job;                  /* inside a [job.NAME] section: its lines go to `jobs` */
    int first_line[NST_NKEYS];   /* where each key was set, to refuse a second time */
} ini_parse;

/* A "[section]" line (s trimmed, starting with '['). */
static nst_status section_line(ini_parse *ps, char *s, const char *where)
{
    char *close = strchr(s, ']');
    if (!close)
        return nst_fail(NST_EINPUT, "%s: malformed section header: missing ']'", where);
    char *rest = trim(close + 1);
    if (*rest && *rest != '#' && *rest != ';')
        return nst_fail(NST_EINPUT, "%s: malformed section header: text after ']'", where);
    *close = 0;
    char *sec = trim(s + 1);
    ps->in_job = 0;
    if (strncmp(sec, "job.", 4) == 0) {
        if (!ps->jobs) return nst_fail(NST_EINPUT, "%s: [%s]: job sections belong in the config file", where, sec);
        NST_TRY(nst_jobset_begin(ps->jobs, sec + 4, where));
        ps->in_job = 1;
        snprintf(ps->section, sizeof ps->section, "%s", "job");
        return NST_OK;
    }
    if (!valid_name(sec, 1) || strlen(sec) >= sizeof ps->section)
        return nst_fail(NST_EINPUT,
                        "%s: malformed section name '[%s]': use lower-case letters, digits and '_'",
                        where, sec);
    if (!section_known(sec)) {
        char sugg[512];
        suggest_section(sec, sugg, sizeof sugg);
        return nst_fail(NST_EINPUT, "%s: unknown section [%s]%s", where, sec, sugg);
    }
    strcpy(ps->section, sec);
    return NST_OK;
}

/* A "key = value" line (s trimmed), line number lineno: set in the config, or kept for a job. */
static nst_status key_line(ini_parse *ps, char *s, const char *where, int lineno)
{
    char *eq = strchr(s, '=');
    if (!eq)
        return nst_fail(NST_EINPUT,
                        "%s: malformed line: expected 'key = value', '[section]' or a comment", where);
    *eq = 0;
    char *key = trim(s);
    char *val = eq + 1;
    while (*val == ' ' || *val == '\t') val++;
    const char *why = "";
    if (ps->in_job) { /* section.key = value, checked now against the keys, applied per job */
        char *v = unquote(val, &why);
        if (!v) return nst_fail(NST_EINPUT, "%s: %s: %s", where, key, why);
        return nst_jobset_add(ps->jobs, key, v, where, ps->base_dir);
    }
    if (!valid_name(key, 0) && valid_name(key, 1) && strchr(key, '.')) /* --set's form, used in a file */
        return nst_fail(NST_EINPUT,
                        "%s: '%.60s' is the form of --set and of job sections; in a config file write "
                        "'%s = ...' on a line under [%.*s]",
                        where, key, strrchr(key, '.') + 1, (int)(strrchr(key, '.') - key), key);
    if (!valid_name(key, 0))
        return nst_fail(NST_EINPUT,
                        "%s: malformed key '%.60s': use lower-case letters, digits and '_'", where, key);
    if (!ps->section[0])
        return nst_fail(NST_EINPUT, "%s: key '%s' before any [section]", where, key);

    val = unquote(val, &why);
    if (!val) return nst_fail(NST_EINPUT, "%s: %s.%s: %s", where, ps->section, key, why);

    int id = nst_config_find(ps->section, key);
    if (id >= 0 && ps->first_line[id])
        return nst_fail(NST_EINPUT, "%s: %s set twice (first at line %d)", where, keys[id].full,
                        ps->first_line[id]);
    NST_TRY(nst_config_set_key(ps->c, ps->section, key, val, where, ps->base_dir));
    ps->first_line[id] = lineno;
    return NST_OK;
}

nst_status nst_config_parse(nst_config *c, struct nst_jobset *jobs, const char *name, const char *base_dir, const char *text, size_t len)
{
    ini_parse ps = {c, jobs, base_dir, "", 0, {0}};
    char line[NST_CFG_STR_MAX + 1];
    char where[NST_CFG_ORIGIN_MAX];
    size_t pos = 0, n;
    int lineno = 0;
    for (const char *start; (start = nst_text_line(text, len, &pos, &n));) {
        lineno++;
        snprintf(where, sizeof where, "%s:%d", name, lineno);
        if (n > NST_CFG_STR_MAX - 1)
            return nst_fail(NST_EINPUT, "%s: line longer than %d bytes", where, NST_CFG_STR_MAX - 1);
        if (memchr(start, 0, n))
            return nst_fail(NST_EINPUT, "%s: line contains a NUL byte (is this a text file?)", where);
        memcpy(line, start, n);
        line[n] = 0;
        char *s = trim(line);
        if (!*s || *s == '#' || *s == ';') continue;
        NST_TRY(*s == '[' ? section_line(&ps, s, where) : key_line(&ps, s, where, lineno));
    }
    return NST_OK;
}

void nst_config_dir_of(const char *path, char *dir, size_t cap)
{
    snprintf(dir, cap, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *(slash == dir ? slash + 1 : slash) = 0;
    else
        dir[0] = 0;
}

nst_status nst_config_load_file(nst_config *c, struct nst_jobset *jobs, const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return nst_fail(NST_EINPUT, "%s: cannot open config file: %s", path, strerror(errno));
    char *buf = malloc(NST_CFG_FILE_MAX + 1);
    if (!buf) {
        fclose(f);
        return nst_fail(NST_ENOMEM, "out of memory reading %s", path);
    }
    size_t n = fread(buf, 1, NST_CFG_FILE_MAX + 1, f);
    int err = ferror(f);
    fclose(f);
    nst_status s;
    if (err)
        s = nst_fail(NST_EINPUT, "%s: cannot read config file (is it a directory?)", path);
    else if (n > NST_CFG_FILE_MAX)
        s = nst_fail(NST_EINPUT, "%s: config file larger than %d bytes", path, NST_CFG_FILE_MAX);
    else {
        char dir[NST_CFG_STR_MAX];
        nst_config_dir_of(path, dir, sizeof dir);
        snprintf(c->file, sizeof c->file, "%s", path);
        s = nst_config_parse(c, jobs, path, dir, buf, n);
    }
    free(buf);
    return s;
}

nst_status nst_config_set(nst_config *c, const char *assignment)
{
    char buf[NST_CFG_STR_MAX + 128], where[NST_CFG_ORIGIN_MAX], vb[96];
    if (strlen(assignment) >= sizeof buf)
        return nst_fail(NST_EINPUT, "--set: assignment longer than %zu bytes", sizeof buf - 1);
    strcpy(buf, assignment);
    char *eq = strchr(buf, '=');
    char *dot = strchr(buf, '.');
    if (!eq || !dot || dot > eq)
        return nst_fail(NST_EINPUT, "--set '%s': expected SECTION.KEY=VALUE, e.g. --set optim.iterations=200",
                        shown(assignment, vb, sizeof vb));
    *eq = 0;
    *dot = 0;
    char *section = trim(buf), *key = trim(dot + 1), *val = trim(eq + 1);
    snprintf(where, sizeof where, "--set %s.%s", section, key);
    if (!valid_name(section, 0) || !valid_name(key, 0))
        return nst_fail(NST_EINPUT, "--set '%s': expected SECTION.KEY=VALUE with lower-case names",
                        shown(assignment, vb, sizeof vb));
    return nst_config_set_key(c, section, key, val, where, "");
}

/* ---- writing ----------------------------------------------------------------------------- */

static void write_text_value(FILE *f, const char *v)
{
    int needs_quotes = 0;
    size_t n = strlen(v);
    if (n && (v[0] == ' ' || v[0] == '\t' || v[0] == '"' || v[n - 1] == ' ' || v[n - 1] == '\t'))
        needs_quotes = 1;
    for (size_t i = 1; i < n; i++)
        if ((v[i] == '#' || v[i] == ';') && (v[i - 1] == ' ' || v[i - 1] == '\t')) needs_quotes = 1;
    if (needs_quotes && !strchr(v, '"'))
        fprintf(f, "\"%s\"", v);
    else
        fputs(v, f);
}

void nst_config_value_text(const nst_config *c, int key, char *out, size_t cap)
{
    const nst_key_info *k = &keys[key];
    const char *field = (const char *)c + k->offset;
    switch (k->type) {
    case NST_CT_INT: snprintf(out, cap, "%lld", *(const long long *)field); break;
    case NST_CT_INTWORD: {
        long long v = *(const long long *)field;
        if (v < 0)
            enum_word(k->allowed, (int)(-1 - v), out, cap);
        else
            snprintf(out, cap, "%lld", v);
        break;
    }
    case NST_CT_FLOAT: snprintf(out, cap, "%.17g", *(const double *)field); break;
    case NST_CT_BOOL: snprintf(out, cap, "%s", *(const int *)field ? "true" : "false"); break;
    default: snprintf(out, cap, "%s", field); break;
    }
}

void nst_config_write_assignment(FILE *f, const char *lhs, const char *value)
{
    fprintf(f, "%s = ", lhs);
    write_text_value(f, value);
    fputc('\n', f);
}

/* One path made absolute against cwd at out (NULL cwd, an absolute or empty path: as it is); its
 * directory resolved where it exists ("run/../in/a.png" -> "/home/u/in/a.png"). */
static int absolute(const char *path, size_t len, const char *cwd, char *out, size_t cap)
{
    int n = cwd && len && path[0] != '/' ? snprintf(out, cap, "%s/%.*s", cwd, (int)len, path) : snprintf(out, cap, "%.*s", (int)len, path);
    if (n < 0 || (size_t)n >= cap) return -1;
    char *slash = strrchr(out, '/'), dir[PATH_MAX];
    if (!cwd || !slash || slash == out) return n;
    *slash = 0;
    int resolved = realpath(out, dir) != NULL;
    *slash = '/';
    if (!resolved) return n;
    char joined[2 * PATH_MAX];
    int m = snprintf(joined, sizeof joined, "%s%s", strcmp(dir, "/") ? dir : "", slash);
    if (m < 0 || (size_t)m >= cap) return n;
    memcpy(out, joined, (size_t)m + 1);
    return m;
}

/* A key's value as text that reads back the same from any directory: relative paths made
 * absolute against cwd, numbers in the shortest form that parses back to the same double
 * (0.9, not 0.90000000000000002). */
static void portable_value(const nst_key_info *k, const char *value, const char *cwd, char *out, size_t cap)
{
    snprintf(out, cap, "%s", value);
    if (k->type == NST_CT_FLOAT) {
        double v = strtod(value, NULL);
        for (int digits = 1; digits <= 17; digits++) {
            snprintf(out, cap, "%.*g", digits, v);
            if (strtod(out, NULL) == v) return;
        }
    } else if (k->type == NST_CT_PATH || k->type == NST_CT_PATHLIST) {
        size_t n = 0;
        for (const char *p = value; *p;) { /* PATHLIST items are stored joined by ", " */
            const char *comma = k->type == NST_CT_PATHLIST ? strstr(p, ", ") : NULL;
            size_t len = comma ? (size_t)(comma - p) : strlen(p);
            int w = absolute(p, len, cwd, out + n, cap - n);
            if (w < 0 || n + (size_t)w + 2 >= cap) { /* too long to spell out: as it was */
                snprintf(out, cap, "%s", value);
                return;
            }
            n += (size_t)w;
            if (!comma) break;
            n += (size_t)snprintf(out + n, cap - n, ", ");
            p = comma + 2;
        }
    }
}

void nst_config_write_key(FILE *f, int key, const char *lhs, const char *value, const char *cwd)
{
    char v[2 * NST_CFG_STR_MAX];
    portable_value(&keys[key], value, cwd, v, sizeof v);
    nst_config_write_assignment(f, lhs, v);
}

void nst_config_write(const nst_config *c, FILE *f, const char *cwd)
{
    char v[NST_CFG_STR_MAX];
    fprintf(f, "# nstbatch resolved configuration%s%s\n", c->file[0] ? " of " : "", c->file);
    for (int i = 0; i < NST_NKEYS; i++) {
        const nst_key_info *k = &keys[i];
        if (i == 0 || strcmp(k->section, keys[i - 1].section) != 0)
            fprintf(f, "%s[%s]\n", i ? "\n" : "", k->section);
        nst_config_value_text(c, i, v, sizeof v);
        nst_config_write_key(f, i, k->name, v, cwd);
    }
}

void nst_config_help(FILE *f)
{
    char valid[256];
    for (int i = 0; i < NST_NKEYS; i++) {
        const nst_key_info *k = &keys[i];
        if (i == 0 || strcmp(k->section, keys[i - 1].section) != 0) fprintf(f, "\n  [%s]\n", k->section);
        describe_valid(k, valid, sizeof valid);
        fprintf(f, "    %-22s %s; default: %s\n", k->full, valid, *k->def ? k->def : "(empty)");
        fprintf(f, "    %-22s %s\n", "", k->help);
    }
}

char *nst_config_text(const nst_config *c)
{
    char *desc = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&desc, &len);
    if (!f) return NULL;
    char cwd[4096];
    nst_config_write(c, f, getcwd(cwd, sizeof cwd)); /* absolute paths: the file says what was read */
    fclose(f);
    return desc;
}

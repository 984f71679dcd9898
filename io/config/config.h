/* io/config/config.h: the resolved configuration (INI file, then --set overrides, over the defaults).
 *
 * The struct's fields are generated from config_keys.h: key "optim.iterations" is the field
 * cfg->optim_iterations. The struct holds no pointers, so it can be broadcast as bytes.
 * Every field remembers where its value came from ("file.ini:12", "--set", "default") so that a
 * later semantic check can name the line.
 */
#ifndef NST_CONFIG_H
#define NST_CONFIG_H

#include <stddef.h>
#include <stdio.h>

#include "../../util/status.h"

#define NST_CFG_STR_MAX 4096  /* longest value, and longest line of a config file */
#define NST_CFG_ENUM_MAX 32
#define NST_CFG_ORIGIN_MAX 320
#define NST_CFG_FILE_MAX (1 << 20) /* a config file above 1 MiB is refused */

typedef enum { NST_CT_INT, NST_CT_FLOAT, NST_CT_BOOL, NST_CT_ENUM, NST_CT_STR, NST_CT_PATH, NST_CT_LIST, NST_CT_INTWORD, NST_CT_PATHLIST } nst_ctype;

/* An INTWORD key holds an integer in [lo, hi] or one of the words of its "allowed" list, stored
 * as NST_WORD(0), NST_WORD(1), ... in the order listed: tiling.tile_size = auto is NST_WORD(0). */
#define NST_WORD(i) (-1 - (i))

#define NST_CFIELD_INT(f) long long f;
#define NST_CFIELD_FLOAT(f) double f;
#define NST_CFIELD_BOOL(f) int f;
#define NST_CFIELD_ENUM(f) char f[NST_CFG_ENUM_MAX];
#define NST_CFIELD_STR(f) char f[NST_CFG_STR_MAX];
#define NST_CFIELD_PATH(f) char f[NST_CFG_STR_MAX];
#define NST_CFIELD_LIST(f) char f[NST_CFG_STR_MAX];
#define NST_CFIELD_INTWORD(f) long long f;
#define NST_CFIELD_PATHLIST(f) char f[NST_CFG_STR_MAX];

enum {
#define NST_KEY(sec, name, type, def, lo, hi, allowed, help) NST_K_##sec##_##name,
#include "config_keys.h"
#undef NST_KEY
    NST_NKEYS
};

typedef struct {
#define NST_KEY(sec, name, type, def, lo, hi, allowed, help) NST_CFIELD_##type(sec##_##name)
#include "config_keys.h"
#undef NST_KEY
    char origin[NST_NKEYS][NST_CFG_ORIGIN_MAX];
    char file[NST_CFG_STR_MAX]; /* the config file read, or "" */
} nst_config;

typedef struct {
    const char *section, *name, *full; /* "optim", "iterations", "optim.iterations" */
    nst_ctype type;
    const char *def;
    double lo, hi;
    const char *allowed;
    const char *help;
    size_t offset, size;
} nst_key_info;

const nst_key_info *nst_config_keys(int *count);
/* Index of "section.name", or -1. */
int nst_config_find(const char *section, const char *name);

void nst_config_defaults(nst_config *c);
struct nst_jobset;
/* Read an INI file (at most NST_CFG_FILE_MAX bytes) into c; its [job.NAME] sections go to jobs
 * (jobs.h, through job_lines.h; NULL: refused). */
nst_status nst_config_load_file(nst_config *c, struct nst_jobset *jobs, const char *path);
/* The directory part of path ("" for none, "/" at the root): what relative paths in it resolve against. */
void nst_config_dir_of(const char *path, char *dir, size_t cap);
/* Parse INI text; `name` names it in messages, `base_dir` resolves relative paths ("" = none). */
nst_status nst_config_parse(nst_config *c, struct nst_jobset *jobs, const char *name, const char *base_dir, const char *text,
                            size_t len);
/* Apply "section.key=value" from --set. */
nst_status nst_config_set(nst_config *c, const char *assignment);
/* Set one key from text, validated; `where` is recorded as its origin and used in messages. */
nst_status nst_config_set_key(nst_config *c, const char *section, const char *name, const char *value,
                              const char *where, const char *base_dir);

const char *nst_config_origin(const nst_config *c, int key);
/* Where a key was set, for messages: "demo.ini:12: model.weights", "--set model.weights", or
 * "model.weights" for a default. */
void nst_config_where(const nst_config *c, int key, char *out, size_t cap);
/* The value of a key as config text (resolved paths; INTWORD words by name). */
void nst_config_value_text(const nst_config *c, int key, char *out, size_t cap);
/* "lhs = value\n", the value quoted where it must be to read back the same. */
void nst_config_write_assignment(FILE *f, const char *lhs, const char *value);
/* "lhs = value\n" for key number `key`, as a file read from anywhere needs it: relative paths made
 * absolute against cwd (NULL: kept), numbers in their shortest exact form. */
void nst_config_write_key(FILE *f, int key, const char *lhs, const char *value, const char *cwd);
/* The resolved configuration as an INI file that parses back to the same values; with cwd (the
 * directory relative paths are relative to), it reads back the same from any directory. */
void nst_config_write(const nst_config *c, FILE *f, const char *cwd);
/* nst_config_write into a string (malloc'ed; NULL when out of memory), with absolute paths: what
 * an output file stores to say how it was made. */
char *nst_config_text(const nst_config *c);
/* Generated reference of every key: type, range or values, default, help. */
void nst_config_help(FILE *f);

#endif

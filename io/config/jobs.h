/* io/config/jobs.h: the jobs of a batch, as written: [job.NAME] sections of the config file and
 * the lines of a manifest file (batch.manifest).
 *
 * A job is a list of overrides, `section.key = value`, applied over the base config (the file's
 * other sections) and under the command line's --set. Every override is checked against the key
 * table when it is read, so a bad value names its file and line before anything runs. The set is
 * stored flat (offsets into one text buffer) so that rank 0 can broadcast it as bytes.
 *
 * Manifest lines: CONTENT STYLE OUTPUT [section.key=value ...], whitespace-separated, "quoted"
 * where a path has spaces, '#' starts a comment; relative paths are relative to the manifest.
 * STYLE may be a comma-separated list (style.path). A manifest job is named after its output's
 * file name without extension (with "-LINE" added where two would share a name).
 */
#ifndef NST_JOBS_H
#define NST_JOBS_H

#include <stddef.h>
#include <stdio.h>

#include "config.h"
#include "job_lines.h"

#define NST_JOB_NAME_MAX 64

typedef struct {
    int key;                 /* index into the key table */
    size_t where, value;     /* offsets into text: "file:line", the resolved value */
} nst_job_override;

typedef struct {
    size_t name, where;      /* offsets into text */
    int first, count;        /* its overrides: ov[first .. first+count) */
} nst_job_def;

typedef struct nst_jobset {
    nst_job_def *jobs;
    nst_job_override *ov;
    char *text;
    int njobs, nov;
    size_t len;
    int cap_jobs, cap_ov;
    size_t cap_text;
} nst_jobset;

void nst_jobset_init(nst_jobset *js);
void nst_jobset_free(nst_jobset *js);

const char *nst_job_name(const nst_jobset *js, int j);
const char *nst_job_where(const nst_jobset *js, int j);

/* nst_jobset_begin and nst_jobset_add, which the parser calls for a [job.NAME] section, are
 * declared in job_lines.h. */
/* The jobs of a manifest file; `origin` names the config line that named it. */
nst_status nst_jobset_read_manifest(nst_jobset *js, const char *path, const char *origin);

/* cfg (a copy of the base config) with job j's overrides. */
nst_status nst_jobset_apply(const nst_jobset *js, int j, nst_config *cfg);
/* The jobs as [job.NAME] sections, for --print-config (cwd: as nst_config_write). */
void nst_jobset_write(const nst_jobset *js, FILE *f, const char *cwd);

/* Flat bytes (allocated) and back, for a broadcast. */
nst_status nst_jobset_pack(const nst_jobset *js, unsigned char **buf, size_t *len);
nst_status nst_jobset_unpack(nst_jobset *js, const unsigned char *buf, size_t len);

#endif

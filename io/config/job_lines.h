/* io/config/job_lines.h: where the config parser (config.c) hands the lines of a [job.NAME]
 * section: a job begun, then its overrides one by one. jobs.c keeps them (jobs.h); this header
 * is the one both include, so that the parser does not include jobs.h, which is built on
 * config.h. */
#ifndef NST_JOB_LINES_H
#define NST_JOB_LINES_H

#include "../../util/status.h"

struct nst_jobset;

/* A new job `name` (letters, digits, '_', '-', '.'; unique), declared at `where`. */
nst_status nst_jobset_begin(struct nst_jobset *js, const char *name, const char *where);
/* One override "section.key" = value for the job begun last; relative paths resolve against dir.
 * Keys the batch shares (model.*, batch.*, run.device, run.threads) are refused. */
nst_status nst_jobset_add(struct nst_jobset *js, const char *full_key, const char *value, const char *where, const char *dir);

#endif

/* nst/run/cli.h: the command line.
 *
 *   nstbatch [options] CONFIG.ini
 *   nstbatch --self-test [--report FILE] [CONFIG.ini] [--set ...]
 *   nstbatch --make-weights random OUT.h5 [--seed N] [--width-divisor N] [--force]
 */
#ifndef NST_CLI_H
#define NST_CLI_H

#include <stdio.h>

#include "../../util/status.h"

#define NST_CLI_MAX_SETS 256

typedef struct {
    int help, version, print_config, quiet, dry_run;
    int self_test;        /* --self-test: check this machine's backends and collectives, render nothing */
    const char *report;   /* --report FILE: the self-test's report for a bug report */
    int restart;          /* --restart: ignore a matching checkpoint, start over */
    const char *restart_jobs; /* --restart=JOB[,JOB...]: only these jobs of a batch */
    int expect_ranks;     /* --expect-ranks N: the MPI world must have N ranks (0: not checked) */
    const char *config_path;
    const char *sets[NST_CLI_MAX_SETS];
    int nsets;
    /* --make-weights */
    int make_weights, force;
    const char *mw_kind, *mw_out;
    long long mw_seed;
    int mw_divisor;
} nst_cli;

nst_status nst_cli_parse(int argc, char **argv, nst_cli *cli);
/* Usage, options, and the generated reference of every config key. */
void nst_cli_help(FILE *f);

#endif

/* util/log.c: rank-aware console output (see log.h). */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>

static int log_rank;
static int log_quiet;

void nst_log_set_rank(int rank) { log_rank = rank; }
void nst_log_set_quiet(int quiet) { log_quiet = quiet; }
int nst_log_is_root(void) { return log_rank == 0; }

void nst_info(const char *fmt, ...)
{
    if (log_rank != 0 || log_quiet) return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stdout, fmt, ap);
    va_end(ap);
    fflush(stdout);
}

void nst_notice(const char *fmt, ...)
{
    if (log_rank != 0) return;
    va_list ap;
    va_start(ap, fmt);
    fputs("nstbatch: ", stderr);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fflush(stderr);
}

void nst_warn(const char *fmt, ...)
{
    if (log_rank != 0) return;
    va_list ap;
    va_start(ap, fmt);
    fputs("nstbatch: warning: ", stderr);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fflush(stderr);
}

void nst_print_error(const char *msg)
{
    fprintf(stderr, "nstbatch: error: %s\n", msg);
    fflush(stderr);
}

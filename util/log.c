/* util/log.c: rank-aware console output (see log.h). */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int log_rank;
static int log_quiet;
static char log_prefix[96];

void nst_log_set_rank(int rank) { log_rank = rank; }
void nst_log_set_quiet(int quiet) { log_quiet = quiet; }
int nst_log_is_root(void) { return log_rank == 0; }

void nst_log_set_prefix(const char *prefix) { snprintf(log_prefix, sizeof log_prefix, "%s", prefix ? prefix : ""); }

/* Text to f, the prefix at the start of every line (so that concurrent jobs' lines stay apart). */
static void emit(FILE *f, const char *lead, const char *fmt, va_list ap)
{
    static int mid_line[2]; /* per stream: the last text did not end a line */
    int *mid = &mid_line[f == stderr];
    if (!log_prefix[0]) {
        fputs(lead, f);
        vfprintf(f, fmt, ap);
        fflush(f);
        return;
    }
    char buf[8192];
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    if (n < 0) return;
    const char *p = buf;
    int first = 1;
    while (*p) {
        if (!*mid) fputs(log_prefix, f);
        if (first) fputs(lead, f), first = 0;
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) + 1 : strlen(p);
        fwrite(p, 1, len, f);
        *mid = !nl;
        p += len;
    }
    fflush(f);
}

void nst_info(const char *fmt, ...)
{
    if (log_rank != 0 || log_quiet) return;
    va_list ap;
    va_start(ap, fmt);
    emit(stdout, "", fmt, ap);
    va_end(ap);
}

void nst_result(const char *fmt, ...)
{
    if (log_rank != 0) return;
    va_list ap;
    va_start(ap, fmt);
    emit(stdout, "", fmt, ap);
    va_end(ap);
}

void nst_notice(const char *fmt, ...)
{
    if (log_rank != 0) return;
    va_list ap;
    va_start(ap, fmt);
    emit(stderr, "nstbatch: ", fmt, ap);
    va_end(ap);
}

void nst_warn(const char *fmt, ...)
{
    if (log_rank != 0) return;
    va_list ap;
    va_start(ap, fmt);
    emit(stderr, "nstbatch: warning: ", fmt, ap);
    va_end(ap);
}

void nst_print_error(const char *msg)
{
    fprintf(stderr, "nstbatch: error: %s\n", msg);
    fflush(stderr);
}

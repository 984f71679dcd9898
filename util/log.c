/* util/log.c: rank-aware console output (see log.h). */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int log_rank;
static int log_quiet;
static char log_prefix[96];

void nst_log_set_rank(int rank) { log_rank = rank; }
void nst_log_set_quiet(int quiet) { log_quiet = quiet; }
int nst_log_is_root(void) { return log_rank == 0; }

void nst_log_set_prefix(const char *prefix) { snprintf(log_prefix, sizeof log_prefix, "%s", prefix ? prefix : ""); }

/* Text to f, the prefix at the start of every line (so that concurrent jobs' lines stay apart),
 * in ONE write: stderr is unbuffered, and under mpirun a message written in pieces (the lead, then
 * the text) can have another stream's output forwarded between them, breaking the line. */
static void emit(FILE *f, const char *lead, const char *fmt, va_list ap)
{
    static int mid_line[2]; /* per stream: the last text did not end a line */
    int *mid = &mid_line[f == stderr];
    char *msg = NULL, *out = NULL;
    size_t mlen = 0, olen = 0;
    FILE *m = open_memstream(&msg, &mlen), *o = m ? open_memstream(&out, &olen) : NULL;
    if (!o) { /* (out of memory: in pieces after all) */
        if (m) fclose(m), free(msg);
        fputs(lead, f);
        vfprintf(f, fmt, ap);
        fflush(f);
        return;
    }
    vfprintf(m, fmt, ap);
    fclose(m);
    if (!log_prefix[0]) {
        fputs(lead, o);
        fputs(msg, o);
    }
    for (const char *p = msg, *nl; log_prefix[0] && *p; p = nl ? nl + 1 : p + strlen(p)) {
        if (!*mid) fputs(log_prefix, o);
        if (p == msg) fputs(lead, o);
        nl = strchr(p, '\n');
        fwrite(p, 1, nl ? (size_t)(nl - p) + 1 : strlen(p), o);
        *mid = !nl;
    }
    fclose(o);
    fwrite(out, 1, olen, f);
    fflush(f);
    free(msg);
    free(out);
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

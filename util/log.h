/* util/log.h: rank-aware console output. Progress and notices come from rank 0 only; the error
 * line of a failed run is printed by main, also on rank 0 only. */
#ifndef NST_LOG_H
#define NST_LOG_H

void nst_log_set_rank(int rank);
void nst_log_set_quiet(int quiet);
int nst_log_is_root(void);
/* Text put before every line printed (a batch's "[job] " while a group renders it); "" for none. */
void nst_log_set_prefix(const char *prefix);

/* Progress and results: stdout, rank 0, silent with --quiet. */
void nst_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A result --quiet keeps (a batch's table of jobs): stdout, rank 0. */
void nst_result(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Notices the user should read even with --quiet ("using the random network..."): stderr, rank 0. */
void nst_notice(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Warnings: stderr, rank 0, prefixed "nstbatch: warning: ". */
void nst_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The one error line of a failed run: stderr, prefixed "nstbatch: error: ". Caller decides rank. */
void nst_print_error(const char *msg);

#endif

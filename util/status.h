/* util/status.h: the status every library-like module returns, and the one error channel.
 *
 * A module that detects a failure records ONE line of text with nst_fail() (naming the file,
 * key or line and what is valid) and returns the status; callers may prefix context with
 * nst_fail_context() and relay the status unchanged. Only main turns a status into an exit
 * code, and only rank 0 prints the message. Nothing here calls exit().
 */
#ifndef NST_STATUS_H
#define NST_STATUS_H

/* The exit status of a run that checkpointed on SIGUSR1/SIGTERM and wants to be requeued. */
#define NST_EXIT_REQUEUE 75

typedef enum {
    NST_OK = 0,
    NST_EINTERRUPTED, /* stopped on a signal after a checkpoint: requeue to resume. Exit status 75
                       * (EX_TEMPFAIL). Below the errors: a real failure elsewhere wins. */
    NST_EINPUT,   /* bad input: config, flags, images, weights. Exit status 2. */
    NST_ERUNTIME, /* runtime failure: I/O, library, device. Exit status 1. */
    NST_ENOMEM    /* an allocation failed. Exit status 1. */
} nst_status;

/* Record the failure message (printf format) and return kind. The first failure wins until
 * nst_fail_clear(): later nst_fail() calls made while unwinding do not overwrite it. */
/* A message's room, its NUL included: a longer one is cut there. */
#define NST_MSG_MAX 2048

nst_status nst_fail(nst_status kind, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prefix the recorded message with "context: " (e.g. the file being read). Returns kind. */
nst_status nst_fail_context(nst_status kind, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

const char *nst_fail_message(void);
/* The message is kept per thread: a worker thread (OpenMP) that failed hands its message to the
 * thread that reports with this (copies it into buf, cap bytes, and clears the worker's). */
void nst_fail_take(char *buf, unsigned cap);
/* 1 when a failure message is recorded (a rank that only heard of another rank's failure has none). */
int nst_fail_pending(void);
void nst_fail_clear(void);

/* Exit status for a status: 0, 2 for bad input, 75 when checkpointed on a signal, 1 otherwise. */
int nst_exit_code(nst_status s);

/* Relay a failing status to the caller. */
#define NST_TRY(expr)                                                                             \
    do {                                                                                          \
        nst_status nst_try_s_ = (expr);                                                           \
        if (nst_try_s_ != NST_OK) return nst_try_s_;                                              \
    } while (0)

#endif

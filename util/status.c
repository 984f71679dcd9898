/* util/status.c: the recorded failure message (see status.h). */
#include "status.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char msg[NST_MSG_MAX];
static _Thread_local int have_msg;

nst_status nst_fail(nst_status kind, const char *fmt, ...)
{
    if (have_msg) return kind;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    have_msg = 1;
    return kind;
}

nst_status nst_fail_context(nst_status kind, const char *fmt, ...)
{
    char prefix[NST_MSG_MAX], joined[NST_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    if (snprintf(joined, sizeof joined, "%s: %s", prefix, have_msg ? msg : "failed") >= (int)sizeof joined)
        joined[sizeof joined - 1] = 0; /* a truncated message is still one useful line */
    memcpy(msg, joined, sizeof msg);
    have_msg = 1;
    return kind;
}

const char *nst_fail_message(void) { return have_msg ? msg : "unknown error"; }

int nst_fail_pending(void) { return have_msg; }

void nst_fail_take(char *buf, unsigned cap)
{
    if (cap) snprintf(buf, cap, "%s", have_msg ? msg : "failed");
    have_msg = 0;
    msg[0] = 0;
}

void nst_fail_clear(void)
{
    have_msg = 0;
    msg[0] = 0;
}

int nst_exit_code(nst_status s)
{
    switch (s) {
    case NST_OK: return 0;
    case NST_EINPUT: return 2;
    case NST_EINTERRUPTED: return NST_EXIT_REQUEUE;
    default: return 1;
    }
}

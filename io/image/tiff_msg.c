/* io/image/tiff_msg.c: libtiff messages into our error channel (see tiff_msg.h). */
#include "tiff_msg.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int on_error(TIFF *tif, void *user, const char *module, const char *fmt, va_list ap)
{
    (void)module;
    char *msg = user;
    if (msg[0]) return 1;
    vsnprintf(msg, NST_TIFF_MSG_MAX, fmt, ap);
    const char *name = tif ? TIFFFileName(tif) : NULL;
    size_t n = name ? strlen(name) : 0;
    if (n && strncmp(msg, name, n) == 0 && msg[n] == ':') memmove(msg, msg + n + 2, strlen(msg + n + 2) + 1);
    return 1;
}

static int on_warning(TIFF *tif, void *user, const char *module, const char *fmt, va_list ap)
{
    (void)tif;
    (void)user;
    (void)module;
    (void)fmt;
    (void)ap;
    return 1;
}

TIFFOpenOptions *nst_tiff_options(char *msg, tmsize_t max_alloc)
{
    TIFFOpenOptions *o = TIFFOpenOptionsAlloc();
    if (!o) return NULL;
    msg[0] = 0;
    if (max_alloc > 0) TIFFOpenOptionsSetMaxSingleMemAlloc(o, max_alloc);
    TIFFOpenOptionsSetErrorHandlerExtR(o, on_error, msg);
    TIFFOpenOptionsSetWarningHandlerExtR(o, on_warning, msg);
    return o;
}

/* viewer/http.h: the HTTP/1.1 of nstbatch-view's file server, without the sockets: reading a
 * request head, mapping its target to a file inside the served folder, the answer's words. */
#ifndef NST_VIEWER_HTTP_H
#define NST_VIEWER_HTTP_H

#include <stddef.h>

typedef struct {
    char method[16];
    char target[2048]; /* as sent (for the log and the file) */
    int keep_alive;    /* the client keeps the connection for another request */
    int has_body;      /* it announced a body (Content-Length, Transfer-Encoding): close after answering */
} nst_http_request;

/* The end of the request head in buf[0..len) (just past its blank line), or 0 while incomplete. */
size_t nst_http_head_end(const char *buf, size_t len);
/* Parse a complete request head. 0, or the status to answer and close with (400, 414, 505). */
int nst_http_parse(const char *head, size_t len, nst_http_request *r);

/* The file that target names under root (an absolute path without links, from realpath): 200 and
 * the file's path in out; or 400 for a malformed target or one with a ".." segment (after
 * decoding %XX), 404 when there is no such regular file inside root (a link out of it, a folder,
 * a name starting with '.', such as a temporary file being written). Query and fragment ignored. */
int nst_http_resolve(const char *root, const char *target, char *out, size_t cap);

/* s percent-encoded as one URL path segment: every byte but A-Z a-z 0-9 - . _ ~ as %XX (which
 * also makes it safe inside an HTML attribute). Truncated to fit cap. */
void nst_http_url_encode(const char *s, char *out, size_t cap);

/* Content-Type for a file name, by its extension. */
const char *nst_http_mime(const char *path);
/* "Not Found" for 404, ... */
const char *nst_http_reason(int status);

#endif

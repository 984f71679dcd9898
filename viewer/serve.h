/* viewer/serve.h: nstbatch-view's static file server: one folder, on 127.0.0.1, GET and HEAD,
 * many connections at once from one poll() loop (a slow client holds up no other). */
#ifndef NST_VIEWER_SERVE_H
#define NST_VIEWER_SERVE_H

#include "../util/status.h"

/* Listen on 127.0.0.1:port (0: a free port the kernel picks). The socket in *fd and the port in
 * *bound; a failure names the port ("port N is in use: ..."), NST_EINPUT when the port is taken
 * or not allowed. */
nst_status nst_serve_listen(int port, int *fd, int *bound);

/* Serve the files inside root (a realpath) on the listening socket until SIGINT or SIGTERM, then
 * close it and return NST_OK. "/" redirects to /index_name. With log, one line per answer on
 * stderr: "METHOD /target STATUS BYTES". Blocks SIGINT and SIGTERM outside its wait for events. */
nst_status nst_serve_run(int fd, const char *root, const char *index_name, int log);

#endif

/* viewer/serve.c: nstbatch-view's file server (see serve.h): non-blocking sockets in one ppoll()
 * loop, each connection a small state machine: read a request head, answer it (head from a
 * buffer, body with sendfile), then the next request on the same connection or close. */
#define _GNU_SOURCE /* accept4, ppoll */
#include "serve.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "http.h"

#define MAX_CONN 256     /* browsers open about 6 per host; room for several tabs */
#define IN_MAX 16384     /* a request head larger than this is refused (431) */
#define IDLE_MS 20000    /* a connection silent (or not reading) this long is closed */
#define SEND_CHUNK (1 << 20)

typedef struct {
    int fd;                      /* -1: a free slot */
    char in[IN_MAX];
    size_t in_len;
    int writing;                 /* answering (else reading a request) */
    char head[2048];             /* the answer's head, and an error answer's small body */
    size_t head_len, head_sent;
    int file;                    /* the body's file, -1 for none */
    off_t off, end;
    int keep_alive;
    int status;                  /* for the log */
    long long body;              /* the body's length (0 for HEAD) */
    char method[16], target[2048];
    long long deadline;
} conn;

typedef enum { BLOCKED, NEXT, CLOSED } step;

static volatile sig_atomic_t stop_signal;
static void on_signal(int sig) { stop_signal = sig; }
static int closed_some; /* a connection closed since the listener was paused (EMFILE) */

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

nst_status nst_serve_listen(int port, int *fd, int *bound)
{
    int s = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (s < 0) return nst_fail(NST_ERUNTIME, "cannot create a socket: %s", strerror(errno));
    int one = 1;
    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one); /* restart at once on the same port */
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((unsigned short)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(s, (struct sockaddr *)&a, sizeof a) != 0) {
        int e = errno;
        close(s);
        if (e == EADDRINUSE) return nst_fail(NST_EINPUT, "port %d is in use: choose another or leave --port out", port);
        if (e == EACCES)
            return nst_fail(NST_EINPUT, "port %d needs privileges (below 1024): choose a higher one or leave --port out", port);
        return nst_fail(NST_ERUNTIME, "cannot listen on 127.0.0.1:%d: %s", port, strerror(e));
    }
    socklen_t len = sizeof a;
    if (listen(s, 128) != 0 || getsockname(s, (struct sockaddr *)&a, &len) != 0) {
        int e = errno;
        close(s);
        return nst_fail(NST_ERUNTIME, "cannot listen on 127.0.0.1:%d: %s", port, strerror(e));
    }
    *fd = s;
    *bound = ntohs(a.sin_port);
    return NST_OK;
}

static void log_answer(const conn *c, long long bytes)
{
    fprintf(stderr, "%s %s %d %lld\n", c->method[0] ? c->method : "-", c->target[0] ? c->target : "-", c->status, bytes);
}

static void close_conn(conn *c)
{
    if (c->file >= 0) close(c->file);
    close(c->fd);
    c->fd = c->file = -1;
    closed_some = 1;
}

/* Prepare the answer's head (and, for an error, its small body: head_len covers both). */
static void answer(conn *c, int status, const char *type, long long length, const char *extra, const char *body, int head_only)
{
    c->status = status;
    c->body = head_only || !body ? 0 : (long long)strlen(body);
    c->head_len = (size_t)snprintf(c->head, sizeof c->head,
                                   "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %lld\r\n"
                                   "Cache-Control: no-cache\r\nX-Content-Type-Options: nosniff\r\n%sConnection: %s\r\n\r\n%s",
                                   status, nst_http_reason(status), type, length, extra ? extra : "",
                                   c->keep_alive ? "keep-alive" : "close", head_only || !body ? "" : body);
    if (c->head_len >= sizeof c->head) c->head_len = sizeof c->head - 1;
    c->head_sent = 0;
    c->writing = 1;
}

static void answer_error(conn *c, int status, int head_only)
{
    char body[128], extra[64] = "";
    snprintf(body, sizeof body, "%d %s\n", status, nst_http_reason(status));
    if (status == 405) snprintf(extra, sizeof extra, "Allow: GET, HEAD\r\n");
    if (status >= 400 && status != 404) c->keep_alive = 0; /* after a malformed request, start afresh */
    answer(c, status, "text/plain; charset=utf-8", (long long)strlen(body), extra, body, head_only);
}

/* The request head in c->in is complete (head bytes long): decide the answer. */
static void handle_request(conn *c, size_t head, const char *root, const char *index_name)
{
    nst_http_request r;
    int status = nst_http_parse(c->in, head, &r);
    snprintf(c->method, sizeof c->method, "%s", r.method);
    snprintf(c->target, sizeof c->target, "%s", r.target);
    c->keep_alive = status == 0 && r.keep_alive;
    int head_only = strcmp(r.method, "HEAD") == 0;
    memmove(c->in, c->in + head, c->in_len - head);
    c->in_len -= head;
    if (status != 0) {
        answer_error(c, status, 0);
        return;
    }
    if (!head_only && strcmp(r.method, "GET") != 0) {
        answer_error(c, 405, 0);
        return;
    }
    if (r.target[0] == '/' && strcspn(r.target, "?#") == 1) { /* "/" and "/?..." */
        char loc[2200];
        snprintf(loc, sizeof loc, "Location: /%s\r\n", index_name);
        answer(c, 302, "text/plain; charset=utf-8", 0, loc, "", head_only);
        return;
    }
    char path[4096];
    status = nst_http_resolve(root, r.target, path, sizeof path);
    if (status != 200) {
        answer_error(c, status, head_only);
        return;
    }
    int f = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (f < 0 || fstat(f, &st) != 0) {
        int e = errno;
        if (f >= 0) close(f);
        answer_error(c, e == ENOENT ? 404 : 500, head_only);
        return;
    }
    answer(c, 200, nst_http_mime(path), (long long)st.st_size, NULL, NULL, head_only);
    if (head_only) {
        close(f);
        return;
    }
    c->file = f;
    c->off = 0;
    c->end = c->body = st.st_size;
}

/* Read what the client sent, and start an answer once a request head is complete. */
static step read_more(conn *c, const char *root, const char *index_name)
{
    size_t head = c->in_len ? nst_http_head_end(c->in, c->in_len) : 0;
    while (!head) {
        if (c->in_len == IN_MAX) {
            c->keep_alive = 0;
            answer_error(c, 431, 0);
            return NEXT;
        }
        ssize_t n = recv(c->fd, c->in + c->in_len, IN_MAX - c->in_len, 0);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return BLOCKED;
        if (n <= 0) return CLOSED; /* the client went away */
        c->in_len += (size_t)n;
        c->deadline = now_ms() + IDLE_MS;
        head = nst_http_head_end(c->in, c->in_len);
    }
    c->method[0] = c->target[0] = '\0';
    handle_request(c, head, root, index_name);
    return NEXT;
}

/* Send the answer's head, then its body; at the end log it and read the next request or close. */
static step write_more(conn *c, int log)
{
    while (c->head_sent < c->head_len) {
        ssize_t n = send(c->fd, c->head + c->head_sent, c->head_len - c->head_sent, MSG_NOSIGNAL);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return BLOCKED;
        if (n <= 0) goto gone;
        c->head_sent += (size_t)n;
        c->deadline = now_ms() + IDLE_MS;
    }
    while (c->file >= 0 && c->off < c->end) {
        off_t left = c->end - c->off;
        ssize_t n = sendfile(c->fd, c->file, &c->off, (size_t)(left < SEND_CHUNK ? left : SEND_CHUNK));
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return BLOCKED;
        if (n <= 0) goto gone; /* the client went away, or the file shrank */
        c->deadline = now_ms() + IDLE_MS;
    }
    if (log) log_answer(c, c->body);
    if (c->file >= 0) close(c->file);
    c->file = -1;
    c->writing = 0;
    if (!c->keep_alive) return CLOSED;
    return NEXT;
gone:
    if (log) log_answer(c, c->file >= 0 ? (long long)c->off : 0); /* what got through */
    return CLOSED;
}

static void progress(conn *c, const char *root, const char *index_name, int log)
{
    for (;;) {
        step s = c->writing ? write_more(c, log) : read_more(c, root, index_name);
        if (s == CLOSED) close_conn(c);
        if (s != NEXT) return;
    }
}

static void accept_all(int lfd, conn *conns, int *paused)
{
    for (;;) {
        int i = 0;
        while (i < MAX_CONN && conns[i].fd >= 0) i++;
        if (i == MAX_CONN) return;
        int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            /* out of descriptors: wait for a connection to close rather than spin on the listener */
            if (errno == EMFILE || errno == ENFILE) *paused = 1;
            return;
        }
        conn *c = &conns[i];
        c->fd = fd;
        c->file = -1;
        c->in_len = 0;
        c->writing = 0;
        c->deadline = now_ms() + IDLE_MS;
    }
}

nst_status nst_serve_run(int lfd, const char *root, const char *index_name, int log)
{
    sigset_t block, orig, during_wait;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    sigprocmask(SIG_BLOCK, &block, &orig); /* delivered only inside ppoll: no stop is missed */
    during_wait = orig;
    sigdelset(&during_wait, SIGINT);
    sigdelset(&during_wait, SIGTERM);
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    conn *conns = calloc(MAX_CONN, sizeof *conns);
    struct pollfd *pfd = calloc(MAX_CONN + 1, sizeof *pfd);
    int *who = calloc(MAX_CONN + 1, sizeof *who);
    if (!conns || !pfd || !who) {
        free(conns), free(pfd), free(who);
        return nst_fail(NST_ENOMEM, "out of memory for the server's connections");
    }
    for (int i = 0; i < MAX_CONN; i++) conns[i].fd = conns[i].file = -1;
    int paused = 0;
    nst_status st = NST_OK;
    while (!stop_signal) {
        nfds_t n = 0;
        if (!paused) pfd[n] = (struct pollfd){.fd = lfd, .events = POLLIN}, who[n++] = -1;
        for (int i = 0; i < MAX_CONN; i++)
            if (conns[i].fd >= 0)
                pfd[n] = (struct pollfd){.fd = conns[i].fd, .events = conns[i].writing ? POLLOUT : POLLIN}, who[n++] = i;
        struct timespec tick = {1, 0}; /* to close idle connections */
        int r = ppoll(pfd, n, &tick, &during_wait);
        if (r < 0 && errno != EINTR) {
            st = nst_fail(NST_ERUNTIME, "the server's poll failed: %s", strerror(errno));
            break;
        }
        for (nfds_t k = 0; r > 0 && k < n; k++) {
            if (!pfd[k].revents) continue;
            if (who[k] < 0) accept_all(lfd, conns, &paused);
            else if (conns[who[k]].fd >= 0) progress(&conns[who[k]], root, index_name, log);
        }
        long long now = now_ms();
        for (int i = 0; i < MAX_CONN; i++)
            if (conns[i].fd >= 0 && now > conns[i].deadline) close_conn(&conns[i]);
        if (paused && closed_some) paused = 0;
        closed_some = 0;
    }
    for (int i = 0; i < MAX_CONN; i++)
        if (conns[i].fd >= 0) close_conn(&conns[i]);
    close(lfd);
    free(conns), free(pfd), free(who);
    sigprocmask(SIG_SETMASK, &orig, NULL);
    return st;
}

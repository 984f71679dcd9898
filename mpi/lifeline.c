/* mpi/lifeline.c: TCP links from every rank to world rank 0, beside MPI (see lifeline.h). */
#define _GNU_SOURCE /* accept4 */
#include "lifeline.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../util/timer.h"
#include "comm.h"
#include "comm_mpi.h"

#define HOST_CHARS 64
#define MAX_ADDRS 16
#define GREET_SECONDS 10.0 /* connecting and greeting: generous, once per run */

/* What rank 0 broadcasts: where it listens, and the run's cookie that a greeting must carry
 * (a stray process listening on the same port of another host's address is not rank 0). */
typedef struct {
    uint64_t cookie;
    uint32_t addr[MAX_ADDRS]; /* IPv4, network order; this host's interfaces, loopback last */
    uint16_t port;            /* network order */
    uint8_t n;
} hub_info;

typedef struct {
    uint64_t cookie;
    int32_t rank;
} greeting;

typedef struct {
    int fd, peer;
    unsigned char buf[8]; /* a message read in part */
    int have;
} link_t;

static link_t *links;
static int nlinks;
static char (*hosts)[HOST_CHARS];

/* Every rank's host name, on every rank. */
static nst_status gather_hosts(void)
{
    int size = nst_comm_world_size();
    hosts = calloc((size_t)size, HOST_CHARS);
    char mine[HOST_CHARS] = "";
    if (!hosts) return nst_fail(NST_ENOMEM, "out of memory for the ranks' host names");
    strncpy(mine, nst_comm_host(), HOST_CHARS - 1);
    NST_MPI_TRY(MPI_Allgather(mine, HOST_CHARS, MPI_CHAR, hosts, HOST_CHARS, MPI_CHAR, MPI_COMM_WORLD));
    return NST_OK;
}

/* Rank 0: a listening socket on every interface and the addresses a peer may try. -1 when none. */
static int hub_listen(hub_info *h)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY), .sin_port = 0};
    socklen_t len = sizeof a;
    if (fd < 0) return -1;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, nst_comm_world_size()) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
        close(fd);
        return -1;
    }
    h->port = a.sin_port;
    struct ifaddrs *ifs = NULL, *i;
    if (getifaddrs(&ifs) == 0)
        for (i = ifs; i && h->n < MAX_ADDRS - 1; i = i->ifa_next)
            if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET && (i->ifa_flags & IFF_UP) && !(i->ifa_flags & IFF_LOOPBACK))
                h->addr[h->n++] = ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr;
    if (ifs) freeifaddrs(ifs);
    h->addr[h->n++] = htonl(INADDR_LOOPBACK); /* a rank on rank 0's own host, when nothing else answers */
    if (getrandom(&h->cookie, sizeof h->cookie, 0) != sizeof h->cookie) h->cookie = (uint64_t)nst_now() * 2654435761u ^ (uint64_t)getpid();
    return fd;
}

/* Wait until fd is ready for `events`, at most `seconds`: 1 ready, 0 not. */
static int ready(int fd, short events, double seconds)
{
    struct pollfd p = {fd, events, 0};
    return poll(&p, 1, (int)(seconds * 1000)) == 1 && !(p.revents & (POLLERR | POLLNVAL));
}

/* A connection to addr:port within the time left, or -1. */
static int connect_to(uint32_t addr, uint16_t port, double seconds)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = addr, .sin_port = port};
    int err = 0;
    socklen_t len = sizeof err;
    if (fd < 0) return -1;
    if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0) return fd;
    if (errno == EINPROGRESS && ready(fd, POLLOUT, seconds) && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0) return fd;
    close(fd);
    return -1;
}

static int read_all(int fd, void *buf, size_t n, double deadline)
{
    unsigned char *p = buf;
    while (n > 0) {
        if (!ready(fd, POLLIN, deadline - nst_now())) return -1;
        ssize_t got = recv(fd, p, n, 0);
        if (got <= 0) return -1;
        p += got;
        n -= (size_t)got;
    }
    return 0;
}

/* A rank other than 0: connect to one of rank 0's addresses and greet it. -1 when none answers. */
static int peer_connect(const hub_info *h)
{
    greeting g = {h->cookie, nst_comm_world_rank()};
    for (int i = 0; i < h->n; i++) {
        int fd = connect_to(h->addr[i], h->port, 2.0);
        if (fd < 0) continue;
        if (send(fd, &g, sizeof g, MSG_NOSIGNAL) == (ssize_t)sizeof g) return fd;
        close(fd);
    }
    return -1;
}

static void add_link(int fd, int peer)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    links[nlinks++] = (link_t){fd, peer, {0}, 0};
}

/* Rank 0: accept the `expected` greetings, each answered with the cookie. */
static void hub_accept(int lfd, const hub_info *h, int expected)
{
    double deadline = nst_now() + GREET_SECONDS;
    for (int k = 0; k < expected && ready(lfd, POLLIN, deadline - nst_now()); k++) {
        int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        greeting g;
        if (fd < 0) continue;
        if (read_all(fd, &g, sizeof g, deadline) == 0 && g.cookie == h->cookie && g.rank > 0 && g.rank < nst_comm_world_size() &&
            send(fd, &h->cookie, sizeof h->cookie, MSG_NOSIGNAL) == (ssize_t)sizeof h->cookie)
            add_link(fd, g.rank);
        else
            close(fd);
    }
}

/* A rank other than 0: rank 0's answer to the greeting, or the link is dropped. */
static void peer_greeted(int fd, const hub_info *h)
{
    uint64_t c = 0;
    if (read_all(fd, &c, sizeof c, nst_now() + GREET_SECONDS) == 0 && c == h->cookie)
        add_link(fd, 0);
    else
        close(fd);
}

static int by_peer(const void *a, const void *b) { return ((const link_t *)a)->peer - ((const link_t *)b)->peer; }

nst_status nst_lifeline_open(void)
{
    const int me = nst_comm_world_rank(), size = nst_comm_world_size();
    NST_TRY(gather_hosts());
    links = calloc((size_t)size, sizeof *links);
    if (!links) return nst_fail(NST_ENOMEM, "out of memory for the lifeline");
    hub_info h;
    memset(&h, 0, sizeof h);
    int lfd = me == 0 ? hub_listen(&h) : -1;
    NST_MPI_TRY(MPI_Bcast(&h, sizeof h, MPI_BYTE, 0, MPI_COMM_WORLD));
    int fd = me != 0 && h.n > 0 ? peer_connect(&h) : -1;
    int connected = fd >= 0, count = 0;
    NST_MPI_TRY(MPI_Reduce(&connected, &count, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD));
    if (me == 0 && lfd >= 0) hub_accept(lfd, &h, count);
    if (me == 0) qsort(links, (size_t)nlinks, sizeof *links, by_peer); /* the messages list ranks in order */
    if (lfd >= 0) close(lfd);
    if (fd >= 0) peer_greeted(fd, &h);
    return NST_OK;
}

void nst_lifeline_close(void)
{
    for (int i = 0; i < nlinks; i++) close(links[i].fd);
    free(links);
    free(hosts);
    links = NULL, hosts = NULL;
    nlinks = 0;
}

int nst_lifeline_count(void) { return nlinks; }
int nst_lifeline_fd(int i) { return links[i].fd; }
int nst_lifeline_peer(int i) { return links[i].peer; }
const char *nst_lifeline_host(int r) { return hosts && r >= 0 && r < nst_comm_world_size() ? hosts[r] : "?"; }

void nst_lifeline_ranks_by_host(const int *rank, int n, char *out, size_t cap)
{
    size_t len = 0;
    char *done = calloc((size_t)n + 1, 1);
    out[0] = 0;
    for (int i = 0; done && i < n && len + 40 < cap; i++) {
        if (done[i]) continue;
        const char *h = nst_lifeline_host(rank[i]);
        int count = 0;
        for (int j = i; j < n; j++) count += !done[j] && !strcmp(nst_lifeline_host(rank[j]), h);
        len += (size_t)snprintf(out + len, cap - len, "%s%s", len ? "; " : "", count > 1 ? "ranks " : "rank ");
        for (int j = i, k = 0; j < n && len + 40 < cap; j++)
            if (!done[j] && !strcmp(nst_lifeline_host(rank[j]), h)) {
                len += (size_t)snprintf(out + len, cap - len, "%s%d", k++ ? ", " : "", rank[j]);
                done[j] = 1;
            }
        len += (size_t)snprintf(out + len, cap - len, " on %s", h);
    }
    free(done);
}

void nst_lifeline_send(int i, char type, uint32_t value)
{
    unsigned char m[8] = {(unsigned char)type};
    memcpy(m + 4, &value, 4);
    if (links[i].fd >= 0) (void)send(links[i].fd, m, sizeof m, MSG_NOSIGNAL | MSG_DONTWAIT);
}

int nst_lifeline_read(int i, nst_lifeline_msg *m)
{
    link_t *l = &links[i];
    if (l->fd < 0) return -1;
    ssize_t got = recv(l->fd, l->buf + l->have, sizeof l->buf - (size_t)l->have, MSG_DONTWAIT);
    if (got == 0 || (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
        close(l->fd);
        l->fd = -1;
        return -1;
    }
    if (got > 0) l->have += (int)got;
    if (l->have < (int)sizeof l->buf) return 0;
    m->type = (char)l->buf[0];
    memcpy(&m->value, l->buf + 4, 4);
    l->have = 0;
    return 1;
}

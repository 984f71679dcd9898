/* tests/idle_timeout.c: the bound the test suites put on a command, set on its progress rather
 * than on its wall time, so that a slow or loaded machine lengthens a run without failing it:
 *
 *   idle_timeout SECONDS COMMAND [ARGS...]
 *
 * runs COMMAND in a process group of its own, its stdout and stderr through pipes, and copies each
 * to this program's own as it comes. Only when neither has carried a byte for SECONDS does it end
 * the group: SIGTERM, then SIGKILL 10 s later. A render prints a row every run.print_every
 * iterations and a suite a line per check, so their silence, not their length, tells a hang.
 * SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 sent to this program go to COMMAND alone
 * (as `timeout --foreground` does: mpirun then handles them as from a terminal).
 * Exit: COMMAND's status (128 + N when signal N ended it), 124 when its silence ended it (with one
 * line on stderr saying so), 125 for a usage or system error, 127 when COMMAND cannot be run. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define KILL_AFTER 10.0 /* seconds between SIGTERM and SIGKILL */

static volatile sig_atomic_t child = 0;

static void forward(int sig)
{
    if (child > 0) kill(child, sig);
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

/* Copies what fd has to out: 1 when it carried bytes, 0 at its end (or a read error), -1 when a
 * signal interrupted the read (no bytes: not progress). */
static int pass(int fd, int out)
{
    char buf[65536];
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0) return errno == EINTR || errno == EAGAIN ? -1 : 0;
    for (ssize_t done = 0; done < n;) {
        ssize_t w = write(out, buf + done, (size_t)(n - done));
        if (w < 0 && errno != EINTR) break; /* our reader has gone: keep draining the child */
        if (w > 0) done += w;
    }
    return n > 0;
}

static pid_t start(char **argv, int out[2], int err[2])
{
    if (pipe(out) || pipe(err)) return -1;
    pid_t pid = fork();
    if (pid == 0) {
        setpgid(0, 0);
        dup2(out[1], 1), dup2(err[1], 2);
        close(out[0]), close(out[1]), close(err[0]), close(err[1]);
        execvp(argv[0], argv);
        fprintf(stderr, "idle_timeout: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    if (pid > 0) setpgid(pid, pid); /* (both sides set it: no race with the exec) */
    close(out[1]), close(err[1]);
    return pid;
}

static int status_of(int st) { return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st); }

int main(int argc, char **argv)
{
    char *end = NULL;
    const double limit = argc >= 3 ? strtod(argv[1], &end) : 0;
    if (argc < 3 || !end || *end || limit <= 0) {
        fprintf(stderr, "usage: idle_timeout SECONDS COMMAND [ARGS...] (SECONDS > 0: the longest silence allowed)\n");
        return 125;
    }
    int out[2], err[2];
    const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
    struct sigaction sa = {.sa_handler = forward};
    for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++) sigaction(sigs[i], &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    const pid_t pid = start(argv + 2, out, err);
    if (pid < 0) {
        perror("idle_timeout: pipe or fork");
        return 125;
    }
    child = pid;
    struct pollfd p[2] = {{.fd = out[0], .events = POLLIN}, {.fd = err[0], .events = POLLIN}};
    double last = now(), termed = 0, ended = 0;
    int st = 0, exited = 0;
    for (;;) {
        /* the command has ended: what it wrote is drained, and its status is ours (a background
         * process it left holding the pipes does not keep us) */
        if (!exited && waitpid(pid, &st, WNOHANG) == pid) exited = 1;
        const int n = poll(p, 2, exited ? 0 : 200);
        for (int i = 0; i < 2; i++)
            if (n > 0 && p[i].fd >= 0 && (p[i].revents & (POLLIN | POLLHUP | POLLERR))) {
                const int r = pass(p[i].fd, i + 1);
                if (r > 0) last = now();
                else if (r == 0) close(p[i].fd), p[i].fd = -1;
            }
        const double t = now();
        if (exited && !ended) ended = t;
        /* (a process left behind that keeps writing is not waited for past a second) */
        if (exited && (n <= 0 || (p[0].fd < 0 && p[1].fd < 0) || t - ended > 1)) break;
        /* both pipes closed with the command still running: it is silent, and the bound applies */
        if (!termed && t - last > limit) {
            fprintf(stderr, "idle_timeout: no output for %g s from %s: ending it (exit 124)\n", limit, argv[2]);
            kill(-pid, SIGTERM);
            termed = t;
        } else if (termed && t - termed > KILL_AFTER) {
            kill(-pid, SIGKILL);
            termed = t + 1e9; /* once */
        }
    }
    if (termed) {
        kill(-pid, SIGKILL); /* whatever of the group is left */
        return 124;
    }
    return status_of(st);
}

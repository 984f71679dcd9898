/* tests/rss_run.c: run a command and report its peak resident set, measured by the kernel
 * (wait4's ru_maxrss), not by the program itself. Under mpirun every rank is wrapped:
 *
 *   mpirun -np 2 build/tests/rss_run DIR nstbatch config.ini
 *
 * writes DIR/rss.<rank> (OMPI_COMM_WORLD_RANK, or 0) holding the peak in KiB, and exits with the
 * command's status. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: rss_run DIR COMMAND [ARGS...]\n");
        return 2;
    }
    pid_t pid = fork();
    if (pid < 0) return 1;
    if (pid == 0) {
        execvp(argv[2], argv + 2);
        perror(argv[2]);
        _exit(127);
    }
    int status = 0;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) < 0) return 1;
    const char *rank = getenv("OMPI_COMM_WORLD_RANK");
    char path[4096];
    snprintf(path, sizeof path, "%s/rss.%s", argv[1], rank ? rank : "0");
    FILE *f = fopen(path, "w");
    if (f) {
        fprintf(f, "%ld\n", ru.ru_maxrss);
        fclose(f);
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

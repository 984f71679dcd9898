/* mpi/singleton.c: a singleton's MPI session under a base of its own (see singleton.h).
 *
 * Started without a launcher (no mpirun, srun or PMIx in the environment), Open MPI 4 forks its
 * runtime daemon, about 3 s of waiting for nothing we use (spawn, connect); isolated, it starts in
 * a tenth of that. But isolated singletons all take job family 0, so their session directories
 * share one path (TMPDIR/ompi.HOST.UID/jf.0), and one that ends removes it under another that
 * starts: "A call to mkdir was unable to create the desired directory: .../jf.0/1", then MPI_Init
 * fails (once in 450 starts, 3 at a time, here). So each gets a base of its own,
 * nstbatch-mpi.HOST.XXXXXX under the base the user set (OMPI_MCA_orte_tmpdir_base: the folder
 * kept, the session still private) or under TMPDIR, removed after MPI_Finalize.
 *
 * A singleton killed (SIGKILL, the OOM killer, a timeout) cannot remove its base, and each run has
 * a new one, so they would pile up. Each base therefore holds a lock file, `.owner`, locked by its
 * run for as long as it lives: the kernel drops the lock when the process ends, however it ends.
 * A starting singleton removes each base of this host's in the same folder whose `.owner` it can
 * lock. By construction it never removes a living run's base:
 *  - `.owner` is made under another name, locked, then renamed, so whoever finds `.owner` finds it
 *    locked while its run lives;
 *  - a base without `.owner` (one being made, one whose run died before locking, one of another
 *    program) is left alone;
 *  - only bases named after this host are looked at, so a folder shared between hosts whose locks
 *    are not shared (NFS mounted with local_lock) cannot mislead it;
 *  - where the filesystem cannot lock, no `.owner` is made, and nothing is ever removed there;
 *  - the tree is removed without following links or leaving the filesystem. */
#define _GNU_SOURCE /* nftw */
#include "singleton.h"

#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define OWNER ".owner"

static char own[512];   /* this run's base, "" when it has none */
static int own_lock = -1; /* its locked .owner */

/* "nstbatch-mpi.HOST." for this host, with any character outside [A-Za-z0-9._-] made '_' */
static void prefix_of_host(char *p, size_t cap)
{
    char h[65] = "";
    if (gethostname(h, sizeof h - 1) != 0 || !h[0]) strcpy(h, "host");
    for (char *c = h; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '.' || *c == '-'))
            *c = '_';
    snprintf(p, cap, "nstbatch-mpi.%s.", h);
}

/* own/.owner, locked before it takes its name; on any failure the base simply has none */
static void owner_take(void)
{
    char tmp[600], fin[600];
    snprintf(tmp, sizeof tmp, "%s/.owner.new", own);
    snprintf(fin, sizeof fin, "%s/" OWNER, own);
    int fd = open(tmp, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
    if (fd < 0) return;
    if (flock(fd, LOCK_EX | LOCK_NB) != 0 || rename(tmp, fin) != 0) {
        close(fd);
        unlink(tmp);
        return;
    }
    own_lock = fd;
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    remove(path); /* (one that cannot go leaves its folder, which then stays too: no harm) */
    return 0;
}

/* base/name, when it is a folder of this user's whose .owner nobody holds */
static void sweep_one(const char *base, const char *name)
{
    char path[512], lock[520];
    struct stat st;
    if (snprintf(path, sizeof path, "%s/%s", base, name) >= (int)sizeof path) return; /* (too long to be one we made) */
    if (strcmp(path, own) == 0 || lstat(path, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid()) return;
    snprintf(lock, sizeof lock, "%s/" OWNER, path);
    int fd = open(lock, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) return;
    if (flock(fd, LOCK_EX | LOCK_NB) == 0) nftw(path, remove_one, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
    close(fd);
}

static void sweep(const char *base, const char *prefix)
{
    DIR *d = opendir(base);
    if (!d) return;
    for (struct dirent *e; (e = readdir(d));)
        if (strncmp(e->d_name, prefix, strlen(prefix)) == 0) sweep_one(base, e->d_name);
    closedir(d);
}

void nst_singleton_begin(void)
{
    static const char *const launched[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE", "SLURM_STEP_ID"};
    for (size_t i = 0; i < sizeof launched / sizeof *launched; i++)
        if (getenv(launched[i])) return;
    setenv("OMPI_MCA_ess_singleton_isolated", "1", 0);
    const char *user = getenv("OMPI_MCA_orte_tmpdir_base"), *tmp = getenv("TMPDIR");
    const char *base = user && *user ? user : tmp && *tmp ? tmp : "/tmp";
    char prefix[96];
    prefix_of_host(prefix, sizeof prefix);
    snprintf(own, sizeof own, "%s/%sXXXXXX", base, prefix);
    if (!mkdtemp(own)) {
        own[0] = 0; /* the user's base, or Open MPI's default: shared as before */
        return;
    }
    owner_take();
    sweep(base, prefix);
    setenv("OMPI_MCA_orte_tmpdir_base", own, 1);
}

void nst_singleton_end(void)
{
    if (!own[0]) return;
    char lock[600];
    snprintf(lock, sizeof lock, "%s/" OWNER, own);
    if (own_lock >= 0) {
        unlink(lock);
        close(own_lock);
        own_lock = -1;
    }
    rmdir(own); /* MPI_Finalize removed the session tree inside */
    own[0] = 0;
}

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
 *    locked while its run lives; its descriptor is kept above 2, out of reach of anything that
 *    closes or replaces the standard streams;
 *  - the lock taken must be on the file the name still holds (same device and inode): one taken
 *    on a `.owner` that a second sweeper removed meanwhile, its folder's name since given to a new
 *    run, proves nothing;
 *  - a base without `.owner` (one being made, one whose run died before locking, one of another
 *    program) is left alone;
 *  - only bases of this host's exact name are looked at (nstbatch-mpi.HOST. and mkdtemp's six
 *    letters and digits, nothing more: not HOST.ib's), so a folder shared between hosts whose locks
 *    are not shared (NFS mounted with local_lock) cannot mislead it;
 *  - where the filesystem cannot lock, no `.owner` is made, and nothing is ever removed there (NFS
 *    can: it takes flock as a lock on the whole file, which needs the file open for writing, as
 *    both sides open it);
 *  - the tree is removed without following links or leaving the filesystem, `.owner` last, so an
 *    interrupted removal leaves a base that the next sweep still finds. */
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

static int alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); } /* (whatever the locale) */

/* "nstbatch-mpi.HOST." for this host, with any character outside [A-Za-z0-9._-] made '_' */
static void prefix_of_host(char *p, size_t cap)
{
    char h[256] = "";
    if (gethostname(h, sizeof h - 1) != 0 || !h[0]) strcpy(h, "host");
    for (char *c = h; *c; c++)
        if (!alnum(*c) && *c != '.' && *c != '-') *c = '_';
    snprintf(p, cap, "nstbatch-mpi.%.64s.", h);
}

/* own/.owner, locked before it takes its name; on any failure the base simply has none */
static void owner_take(void)
{
    char tmp[600], fin[600];
    snprintf(tmp, sizeof tmp, "%s/.owner.new", own);
    snprintf(fin, sizeof fin, "%s/" OWNER, own);
    int fd0 = open(tmp, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
    if (fd0 < 0) return;
    int fd = fd0 > 2 ? fd0 : fcntl(fd0, F_DUPFD_CLOEXEC, 3);
    if (fd != fd0) close(fd0);
    if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) != 0 || rename(tmp, fin) != 0) {
        if (fd >= 0) close(fd);
        unlink(tmp);
        return;
    }
    own_lock = fd;
}

static const char *keep; /* the .owner that remove_tree leaves, its folder's removal after it */

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag;
    if (ftw->level > 0 && strcmp(path, keep) != 0) remove(path); /* (one that cannot go leaves its folder: no harm) */
    return 0;
}

/* Everything inside `dir` but its .owner, `lock` (an open descriptor keeps NFS from deleting it),
 * then, the descriptor `fd` closed, .owner and the folder. */
static void remove_tree(const char *dir, const char *lock, int fd)
{
    keep = lock;
    nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
    close(fd);
    unlink(lock);
    rmdir(dir);
}

/* name: nstbatch-mpi.HOST. (prefix) and mkdtemp's six letters and digits */
static int ours(const char *name, const char *prefix)
{
    const size_t n = strlen(prefix);
    if (strncmp(name, prefix, n) != 0 || strlen(name + n) != 6) return 0;
    for (const char *c = name + n; *c; c++)
        if (!alnum(*c)) return 0;
    return 1;
}

/* base/name, when it is a folder of this user's whose .owner nobody holds */
static void sweep_one(const char *base, const char *name)
{
    char path[512], lock[520];
    struct stat st, held;
    if (snprintf(path, sizeof path, "%s/%s", base, name) >= (int)sizeof path) return; /* (too long to be one we made) */
    if (strcmp(path, own) == 0 || lstat(path, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid()) return;
    snprintf(lock, sizeof lock, "%s/" OWNER, path);
    int fd = open(lock, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) return;
    if (flock(fd, LOCK_EX | LOCK_NB) == 0 && fstat(fd, &held) == 0 && lstat(lock, &st) == 0 && st.st_dev == held.st_dev &&
        st.st_ino == held.st_ino) {
        remove_tree(path, lock, fd);
        return;
    }
    close(fd);
}

static void sweep(const char *base, const char *prefix)
{
    DIR *d = opendir(base);
    if (!d) return;
    for (struct dirent *e; (e = readdir(d));)
        if (ours(e->d_name, prefix)) sweep_one(base, e->d_name);
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
    if (own_lock >= 0) remove_tree(own, lock, own_lock); /* (MPI_Finalize removed the session tree inside) */
    else rmdir(own);
    own_lock = -1;
    own[0] = 0;
}

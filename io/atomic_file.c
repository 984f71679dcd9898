/* io/atomic_file.c: write-to-temporary, sync, rename, sync directory (see atomic_file.h). */
#define _GNU_SOURCE /* syncfs, nftw, renameat2 */
#include "atomic_file.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void split_dir(const char *path, char *dir, size_t cap, const char **base)
{
    const char *slash = strrchr(path, '/');
    if (!slash) {
        snprintf(dir, cap, ".");
        *base = path;
    } else if (slash == path) {
        snprintf(dir, cap, "/");
        *base = slash + 1;
    } else {
        snprintf(dir, cap, "%.*s", (int)(slash - path), path);
        *base = slash + 1;
    }
}

/* The directory path goes into exists and may be written. */
static nst_status check_parent(const char *path)
{
    char dir[4096];
    const char *base;
    struct stat st;
    split_dir(path, dir, sizeof dir, &base);
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return nst_fail(NST_EINPUT, "%s: output directory %s does not exist", path, dir);
    if (access(dir, W_OK) != 0)
        return nst_fail(NST_EINPUT, "%s: output directory %s is not writable", path, dir);
    return NST_OK;
}

/* af's final name and its temporary ".NAME.nstbatch-PID.tmp" beside it. */
static nst_status name_temporary(nst_atomic_file *af, const char *path)
{
    char dir[4096];
    const char *base;
    if (strlen(path) >= sizeof af->final_path) return nst_fail(NST_EINPUT, "%s: path too long", path);
    strcpy(af->final_path, path);
    split_dir(path, dir, sizeof dir, &base);
    snprintf(af->tmp, sizeof af->tmp, "%s/.%s.nstbatch-%ld.tmp", dir, base, (long)getpid());
    return NST_OK;
}

/* fsync the directory holding path: the durability of a rename into it (some file systems refuse
 * fsync on directories; then the rename stands without it). */
static void sync_parent(const char *path)
{
    char dir[4096];
    const char *base;
    split_dir(path, dir, sizeof dir, &base);
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
}

nst_status nst_atomic_check_target(const char *path, int overwrite)
{
    char dir[4096];
    const char *base;
    struct stat st;
    if (!*path) return nst_fail(NST_EINPUT, "output path is empty");
    split_dir(path, dir, sizeof dir, &base);
    if (!*base) return nst_fail(NST_EINPUT, "%s: output path names a directory, not a file", path);
    NST_TRY(check_parent(path));
    if (stat(path, &st) == 0) {
        if (S_ISDIR(st.st_mode)) return nst_fail(NST_EINPUT, "%s: output path is a directory", path);
        if (!overwrite)
            return nst_fail(NST_EINPUT, "%s: output exists; set output.overwrite = true to replace it", path);
    }
    return NST_OK;
}

nst_status nst_atomic_begin(nst_atomic_file *af, const char *path, int overwrite)
{
    NST_TRY(nst_atomic_check_target(path, overwrite));
    NST_TRY(name_temporary(af, path));
    int fd = open(af->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return nst_fail(NST_ERUNTIME, "%s: cannot create %s: %s", path, af->tmp, strerror(errno));
    close(fd);
    return NST_OK;
}

nst_status nst_atomic_commit(nst_atomic_file *af)
{
    int fd = open(af->tmp, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || fsync(fd) != 0) {
        int e = errno;
        if (fd >= 0) close(fd);
        nst_atomic_abort(af);
        return nst_fail(NST_ERUNTIME, "%s: cannot sync %s: %s", af->final_path, af->tmp, strerror(e));
    }
    close(fd);
    if (rename(af->tmp, af->final_path) != 0) {
        int e = errno;
        nst_atomic_abort(af);
        return nst_fail(NST_ERUNTIME, "%s: cannot rename %s into place: %s", af->final_path, af->tmp,
                        strerror(e));
    }
    sync_parent(af->final_path);
    return NST_OK;
}

void nst_atomic_abort(nst_atomic_file *af) { unlink(af->tmp); }

nst_status nst_atomic_write_text(const char *path, const char *text)
{
    nst_atomic_file af;
    NST_TRY(nst_atomic_begin(&af, path, 1));
    FILE *f = fopen(af.tmp, "w");
    int ok = f && fputs(text, f) >= 0;
    if (f && fclose(f) != 0) ok = 0;
    if (!ok) {
        int e = errno;
        nst_atomic_abort(&af);
        return nst_fail(NST_ERUNTIME, "%s: write error: %s", path, strerror(e));
    }
    return nst_atomic_commit(&af);
}

/* ---- directories ----------------------------------------------------------------------------- */

nst_status nst_atomic_dir_check_target(const char *path, int overwrite)
{
    struct stat st;
    NST_TRY(check_parent(path));
    if (lstat(path, &st) == 0) {
        if (!S_ISDIR(st.st_mode)) return nst_fail(NST_EINPUT, "%s: a file is in the way of the folder: move it away", path);
        if (!overwrite) return nst_fail(NST_EINPUT, "%s: output exists; set output.overwrite = true to replace it", path);
    }
    return NST_OK;
}

nst_status nst_atomic_dir_begin(nst_atomic_file *af, const char *path, int overwrite)
{
    NST_TRY(nst_atomic_dir_check_target(path, overwrite));
    NST_TRY(name_temporary(af, path));
    if (nst_remove_tree(af->tmp) != 0 && errno != ENOENT) /* a stale one of a run that had this pid */
        return nst_fail(NST_ERUNTIME, "%s: cannot remove the stale %s: %s", path, af->tmp, strerror(errno));
    if (mkdir(af->tmp, 0755) != 0) return nst_fail(NST_ERUNTIME, "%s: cannot create %s: %s", path, af->tmp, strerror(errno));
    return NST_OK;
}

nst_status nst_atomic_dir_commit(nst_atomic_file *af)
{
    char dir[4096], old[8400];
    const char *base;
    split_dir(af->final_path, dir, sizeof dir, &base);
    int fd = open(af->tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 || syncfs(fd) != 0) { /* every tile file on the disk before the name says complete */
        int e = errno;
        if (fd >= 0) close(fd);
        nst_atomic_dir_abort(af);
        return nst_fail(NST_ERUNTIME, "%s: cannot sync %s: %s", af->final_path, af->tmp, strerror(e));
    }
    close(fd);
    struct stat st;
    int had = lstat(af->final_path, &st) == 0;
    if (had && renameat2(AT_FDCWD, af->tmp, AT_FDCWD, af->final_path, RENAME_EXCHANGE) == 0) {
        sync_parent(af->final_path); /* one step: a reader sees the old folder or the new one, never none */
        if (nst_remove_tree(af->tmp) != 0) /* (now the old one) */
            return nst_fail(NST_ERUNTIME, "%s: in place, but the old folder %s could not be removed: %s", af->final_path, af->tmp,
                            strerror(errno));
        return NST_OK;
    }
    if (had && errno != EINVAL && errno != ENOSYS) { /* (file systems without the exchange: aside, then in) */
        int e = errno;
        nst_atomic_dir_abort(af);
        return nst_fail(NST_ERUNTIME, "%s: cannot replace it with %s: %s", af->final_path, af->tmp, strerror(e));
    }
    snprintf(old, sizeof old, "%s/.%s.nstbatch-%ld.old", dir, base, (long)getpid());
    if (had && rename(af->final_path, old) != 0) {
        int e = errno;
        nst_atomic_dir_abort(af);
        return nst_fail(NST_ERUNTIME, "%s: cannot move the old folder aside to %s: %s", af->final_path, old, strerror(e));
    }
    if (rename(af->tmp, af->final_path) != 0) {
        int e = errno;
        if (had) rename(old, af->final_path); /* put the old one back */
        nst_atomic_dir_abort(af);
        return nst_fail(NST_ERUNTIME, "%s: cannot rename %s into place: %s", af->final_path, af->tmp, strerror(e));
    }
    sync_parent(af->final_path);
    if (had && nst_remove_tree(old) != 0)
        return nst_fail(NST_ERUNTIME, "%s: in place, but the old folder %s could not be removed: %s", af->final_path, old, strerror(errno));
    return NST_OK;
}

void nst_atomic_dir_abort(nst_atomic_file *af) { nst_remove_tree(af->tmp); }

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

int nst_remove_tree(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0) return -1;
    return nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

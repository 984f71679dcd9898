/* viewer/asset_copy.c: OUT_viewer/, each output's own copy of the page's assets (see assets.h),
 * made in a temporary folder and swapped into place so that a browser never sees half of it. */
#define _GNU_SOURCE /* renameat2, RENAME_EXCHANGE */
#include "assets.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static nst_status copy_file(const char *src, const char *dst)
{
    char buf[65536];
    int in = open(src, O_RDONLY | O_CLOEXEC);
    if (in < 0) return nst_fail(NST_ERUNTIME, "%s: cannot read the viewer asset: %s", src, strerror(errno));
    int out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (out < 0) {
        int e = errno;
        close(in);
        return nst_fail(NST_ERUNTIME, "%s: cannot create: %s", dst, strerror(e));
    }
    ssize_t n;
    while ((n = read(in, buf, sizeof buf)) > 0) {
        for (ssize_t done = 0; done < n;) {
            ssize_t w = write(out, buf + done, (size_t)(n - done));
            if (w < 0 && errno == EINTR) continue;
            if (w < 0) {
                int e = errno;
                close(in), close(out);
                return nst_fail(NST_ERUNTIME, "%s: write error: %s (is the disk full?)", dst, strerror(e));
            }
            done += w;
        }
    }
    int e = errno;
    close(in);
    if (n < 0) {
        close(out);
        return nst_fail(NST_ERUNTIME, "%s: read error: %s", src, strerror(e));
    }
    int bad = fsync(out) != 0 ? errno : 0;
    if (close(out) != 0 && !bad) bad = errno;
    if (bad) return nst_fail(NST_ERUNTIME, "%s: cannot sync: %s", dst, strerror(bad));
    return NST_OK;
}

/* Copy the regular files of src whose names end in `suffix` ("" for any), except `skip`, into dst. */
static nst_status copy_files(const char *src, const char *dst, const char *suffix, const char *skip)
{
    DIR *d = opendir(src);
    if (!d) return nst_fail(NST_ERUNTIME, "%s: cannot list the viewer assets: %s", src, strerror(errno));
    nst_status s = NST_OK;
    struct dirent *e;
    while (s == NST_OK && (e = readdir(d))) {
        size_t n = strlen(e->d_name), k = strlen(suffix);
        if (e->d_name[0] == '.' || n < k || strcmp(e->d_name + n - k, suffix) != 0) continue;
        if (skip && strcmp(e->d_name, skip) == 0) continue;
        char from[4400], to[4400];
        struct stat st;
        snprintf(from, sizeof from, "%s/%s", src, e->d_name);
        snprintf(to, sizeof to, "%s/%s", dst, e->d_name);
        if (stat(from, &st) == 0 && S_ISREG(st.st_mode)) s = copy_file(from, to);
    }
    closedir(d);
    return s;
}

/* Remove a folder this code made (two levels deep at most: OUT_viewer/openseadragon/images/),
 * never following a link. Best effort: used to clean up. */
static void remove_tree(const char *path, int depth)
{
    struct stat st;
    if (lstat(path, &st) != 0) return;
    if (!S_ISDIR(st.st_mode) || depth > 3) {
        unlink(path);
        return;
    }
    DIR *d = opendir(path);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
            char child[4400];
            snprintf(child, sizeof child, "%s/%s", path, e->d_name);
            remove_tree(child, depth + 1);
        }
        closedir(d);
    }
    rmdir(path);
}

/* Fill `tmp` (a new empty folder) with the assets. */
static nst_status fill(const char *assets, const char *tmp)
{
    char src[4400], dst[4400], osd[4200];
    snprintf(src, sizeof src, "%s/web", assets);
    NST_TRY(copy_files(src, tmp, "", "viewer.html"));
    if (nst_viewer_osd_dir(assets, osd, sizeof osd) != 0)
        return nst_fail(NST_ERUNTIME, "%s: OpenSeadragon is missing: run `make viewer`", assets);
    snprintf(dst, sizeof dst, "%s/openseadragon", tmp);
    if (mkdir(dst, 0755) != 0) return nst_fail(NST_ERUNTIME, "%s: cannot create: %s", dst, strerror(errno));
    snprintf(src, sizeof src, "%s/openseadragon.min.js", osd);
    snprintf(dst, sizeof dst, "%s/openseadragon/openseadragon.min.js", tmp);
    NST_TRY(copy_file(src, dst));
    /* its licence (BSD) goes with it: beside the build when installed, two folders up in npm's */
    snprintf(src, sizeof src, "%s/LICENSE.txt", osd);
    if (access(src, R_OK) != 0) snprintf(src, sizeof src, "%s/../../LICENSE.txt", osd);
    snprintf(dst, sizeof dst, "%s/openseadragon/LICENSE.txt", tmp);
    if (access(src, R_OK) == 0) NST_TRY(copy_file(src, dst));
    snprintf(dst, sizeof dst, "%s/openseadragon/images", tmp);
    if (mkdir(dst, 0755) != 0) return nst_fail(NST_ERUNTIME, "%s: cannot create: %s", dst, strerror(errno));
    snprintf(src, sizeof src, "%s/images", osd);
    return copy_files(src, dst, ".png", NULL);
}

static void sync_dir_of(const char *path)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = '\0'; else snprintf(dir, sizeof dir, ".");
    int fd = open(*dir ? dir : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd); /* durability of the renames; some file systems refuse it on folders */
        close(fd);
    }
}

/* Put the filled tmp in dest's place. An older dest is exchanged with it in one step where the
 * file system can (the page keeps working throughout), else moved aside first. */
static nst_status swap_in(const char *tmp, const char *dest)
{
    struct stat st;
    if (lstat(dest, &st) != 0) {
        if (rename(tmp, dest) != 0)
            return nst_fail(NST_ERUNTIME, "%s: cannot rename %s into place: %s", dest, tmp, strerror(errno));
        return NST_OK;
    }
    if (!S_ISDIR(st.st_mode))
        return nst_fail(NST_ERUNTIME, "%s: exists and is not a folder: remove it to write the viewer page", dest);
    if (renameat2(AT_FDCWD, tmp, AT_FDCWD, dest, RENAME_EXCHANGE) == 0) {
        remove_tree(tmp, 0); /* now the older folder */
        return NST_OK;
    }
    if (errno != EINVAL && errno != ENOSYS)
        return nst_fail(NST_ERUNTIME, "%s: cannot replace it with %s: %s", dest, tmp, strerror(errno));
    char old[4216];
    snprintf(old, sizeof old, "%s.old", tmp);
    if (rename(dest, old) != 0)
        return nst_fail(NST_ERUNTIME, "%s: cannot move the older folder aside: %s", dest, strerror(errno));
    if (rename(tmp, dest) != 0) {
        int e = errno;
        rename(old, dest); /* put the older one back */
        return nst_fail(NST_ERUNTIME, "%s: cannot rename %s into place: %s", dest, tmp, strerror(e));
    }
    remove_tree(old, 0);
    return NST_OK;
}

nst_status nst_viewer_copy_assets(const char *assets, const char *dest)
{
    char tmp[4200];
    const char *slash = strrchr(dest, '/');
    int dir_len = slash ? (int)(slash - dest + 1) : 0;
    snprintf(tmp, sizeof tmp, "%.*s.%s.nstbatch-%ld.tmp", dir_len, dest, dest + dir_len, (long)getpid());
    remove_tree(tmp, 0); /* left by a killed run with this pid */
    if (mkdir(tmp, 0755) != 0)
        return nst_fail(NST_ERUNTIME, "%s: cannot create the folder %s: %s", dest, tmp, strerror(errno));
    nst_status s = fill(assets, tmp);
    if (s == NST_OK) s = swap_in(tmp, dest);
    if (s != NST_OK) {
        remove_tree(tmp, 0);
        return s;
    }
    sync_dir_of(dest);
    return NST_OK;
}

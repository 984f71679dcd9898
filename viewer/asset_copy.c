/* viewer/asset_copy.c: OUT_viewer/, each output's own copy of the page's assets (see assets.h),
 * made in a temporary folder and swapped into place (io/atomic_file.h) so that a browser never
 * sees half of it. */
#include "assets.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../io/atomic_file.h"

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

nst_status nst_viewer_copy_assets(const char *assets, const char *dest)
{
    nst_atomic_file af;
    NST_TRY(nst_atomic_dir_begin(&af, dest, 1));
    nst_status s = fill(assets, af.tmp);
    if (s == NST_OK) return nst_atomic_dir_commit(&af); /* an older folder exchanged in one step */
    nst_atomic_dir_abort(&af);
    return s;
}

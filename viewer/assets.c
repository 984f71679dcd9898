/* viewer/assets.c: finds the page's assets (nst_viewer_assets, declared in page.h): the folder
 * holding web/ and OpenSeadragon's build, in the source tree or installed. */
#include "assets.h"
#include "page.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../util/exe.h"

#ifndef NST_VIEWER_DIR
#define NST_VIEWER_DIR "" /* the Makefile passes the source tree's viewer/ */
#endif

static int is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

int nst_viewer_osd_dir(const char *dir, char *out, size_t cap)
{
    static const char *const layouts[] = {"openseadragon", "node_modules/openseadragon/build/openseadragon"};
    char js[4200];
    for (size_t i = 0; i < sizeof layouts / sizeof *layouts; i++) {
        snprintf(js, sizeof js, "%s/%s/openseadragon.min.js", dir, layouts[i]);
        if (is_file(js) && (size_t)snprintf(out, cap, "%s/%s", dir, layouts[i]) < cap) return 0;
    }
    return -1;
}

/* What a folder lacks to be the assets folder: NULL when nothing, "web" (not a viewer folder at
 * all) or "osd" (the page is there, OpenSeadragon is not: `make viewer` was not run). */
static const char *lacks(const char *dir)
{
    char path[4200], osd[4200];
    snprintf(path, sizeof path, "%s/web/viewer.html", dir);
    if (!is_file(path)) return "web";
    snprintf(path, sizeof path, "%s/web/viewer.js", dir);
    if (!is_file(path)) return "web";
    return nst_viewer_osd_dir(dir, osd, sizeof osd) == 0 ? NULL : "osd";
}

static nst_status found(const char *dir, char *out, size_t cap)
{
    if (strlen(dir) >= cap) return nst_fail(NST_EINPUT, "viewer assets: path too long: %s", dir);
    strcpy(out, dir);
    return NST_OK;
}

/* ../share/nstbatch/viewer beside the running program (bin/): an installed nstbatch finds its own
 * assets wherever the prefix was moved to. "" when /proc/self/exe cannot be read. */
static void installed_dir(char *out, size_t cap)
{
    char exe[4096];
    out[0] = '\0';
    if (nst_exe_dir(exe, sizeof exe) == 0) snprintf(out, cap, "%s/../share/nstbatch/viewer", exe);
}

nst_status nst_viewer_assets(char *dir, size_t cap)
{
    const char *env = getenv("NSTBATCH_VIEWER_DIR");
    if (env && *env) {
        const char *miss = lacks(env);
        if (!miss) return found(env, dir, cap);
        return nst_fail(NST_ERUNTIME,
                        "NSTBATCH_VIEWER_DIR=%s holds no viewer assets (%s): point it at a folder with web/viewer.html "
                        "and openseadragon/openseadragon.min.js (PREFIX/share/nstbatch/viewer after make install, "
                        "or the source tree's viewer/ after make viewer), or unset it",
                        env, strcmp(miss, "web") == 0 ? "no web/viewer.html and web/viewer.js" : "no OpenSeadragon");
    }
    char installed[4200];
    installed_dir(installed, sizeof installed);
    if (*installed && !lacks(installed)) return found(installed, dir, cap);
    const char *tree = NST_VIEWER_DIR;
    if (*tree) {
        const char *miss = lacks(tree);
        if (!miss) return found(tree, dir, cap);
        if (strcmp(miss, "osd") == 0)
            return nst_fail(NST_ERUNTIME,
                            "the viewer page needs OpenSeadragon, which is not installed in %s: run `make viewer` "
                            "(npm ci in viewer/) or set NSTBATCH_VIEWER_DIR",
                            tree);
    }
    return nst_fail(NST_ERUNTIME,
                    "the viewer page's assets are not found (looked in %s%s%s): run `make viewer` in the source tree "
                    "or `make install`, or set NSTBATCH_VIEWER_DIR",
                    *installed ? installed : "", *installed && *tree ? " and " : "", tree);
}

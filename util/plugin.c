/* util/plugin.c: finding and loading nstbatch-video.so once (plugin.h). */
#include "plugin.h"

#include "exe.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef NST_PLUGIN_TREE
#define NST_PLUGIN_TREE "" /* the Makefile passes the build tree's lib/nstbatch-video.so */
#endif

static pthread_once_t once = PTHREAD_ONCE_INIT;
static void *handle;
static char why[2 * PATH_MAX + 512]; /* the load's failure, "" when it loaded */
static char loaded[PATH_MAX + 64]; /* the path loaded */

/* ../lib/nstbatch/NAME beside the running program when it is in a bin/ folder; "" otherwise */
static void installed_path(char *out, size_t cap)
{
    char dir[PATH_MAX];
    out[0] = '\0';
    if (nst_exe_dir(dir, sizeof dir) != 0) return;
    const char *base = strrchr(dir, '/');
    if (base && !strcmp(base, "/bin")) snprintf(out, cap, "%s/../lib/nstbatch/%s", dir, NST_PLUGIN_NAME);
}

static void load(void)
{
    char inst[PATH_MAX + 64], given[PATH_MAX + 3];
    const char *env = getenv(NST_PLUGIN_ENV), *path = NULL;
    installed_path(inst, sizeof inst);
    if (env && *env) { /* (a bare name is a file here, not one for dlopen's library path) */
        snprintf(given, sizeof given, "%s%s", strchr(env, '/') ? "" : "./", env);
        path = given;
    }
    else if (inst[0] && access(inst, F_OK) == 0) path = inst;
    else if (NST_PLUGIN_TREE[0] && access(NST_PLUGIN_TREE, F_OK) == 0) path = NST_PLUGIN_TREE;
    if (!path) {
        snprintf(why, sizeof why, "nstbatch's video plugin %s not found (looked for %s%s%s): run make again in the source tree, or make install, or set %s to its path",
                 NST_PLUGIN_NAME, inst[0] ? inst : "", inst[0] && NST_PLUGIN_TREE[0] ? " and " : "", NST_PLUGIN_TREE, NST_PLUGIN_ENV);
        return;
    }
    /* RTLD_NOW: a missing symbol is this line now, not a crash in the middle of a render */
    handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        const char *e = dlerror();
        if (e && strncmp(e, path, strlen(path)) != 0) /* a library the plugin needs, not the plugin itself */
            snprintf(why, sizeof why, "nstbatch's video plugin %s needs a library this machine lacks (%s): install FFmpeg's and OpenCV's "
                     "runtime libraries here (scripts/install-deps.sh)", path, e);
        else
            snprintf(why, sizeof why, "nstbatch's video plugin %s cannot be loaded (%s): rebuild it with this nstbatch (make)%s", path,
                     e ? e : "no reason given", env && *env ? "" : ", or set " NST_PLUGIN_ENV " to the one built with it");
        return;
    }
    snprintf(loaded, sizeof loaded, "%s", path);
}

/* The table under symbol, checked; NULL with the reason in buf */
static const void *find(const char *symbol, size_t size, char *buf, size_t cap)
{
    pthread_once(&once, load);
    if (!handle) {
        snprintf(buf, cap, "%s", why);
        return NULL;
    }
    const void *(*get)(void) = NULL;
    *(void **)&get = dlsym(handle, symbol); /* (POSIX's way from an object pointer to a function pointer) */
    if (!get) {
        snprintf(buf, cap, "%s was built without this part (no %s): install what make lists as missing (scripts/install-deps.sh) and rebuild", loaded, symbol);
        return NULL;
    }
    const nst_plugin_head *h = get();
    if (!h || h->abi != NST_PLUGIN_ABI || h->id != NST_PLUGIN_ID || h->size != size) {
        snprintf(buf, cap, "%s comes from another build of nstbatch (ABI %u, headers %u, %zu bytes; this one %u, %u, %zu): rebuild both (make)",
                 loaded, h ? h->abi : 0u, h ? h->id : 0u, h ? h->size : (size_t)0, NST_PLUGIN_ABI, NST_PLUGIN_ID, size);
        return NULL;
    }
    return h;
}

nst_status nst_plugin_table(const char *symbol, const char *what, size_t size, const void **out)
{
    char buf[sizeof why + PATH_MAX];
    *out = find(symbol, size, buf, sizeof buf);
    return *out ? NST_OK : nst_fail(NST_ERUNTIME, "%s: %s", what, buf);
}

int nst_plugin_has(const char *symbol, size_t size)
{
    char buf[sizeof why + PATH_MAX];
    return find(symbol, size, buf, sizeof buf) != NULL;
}

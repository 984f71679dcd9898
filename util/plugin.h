/* util/plugin.h: nstbatch's video plugin, nstbatch-video.so, loaded on first use (plugin.c).
 *
 * FFmpeg's and OpenCV's libraries bring about 120 shared libraries with them; linked into
 * nstbatch, every process (each rank, each refused config, each --help) loaded and relocated
 * them all at its start: 60 ms of CPU where 15 ms do without them, for a video mode that few runs
 * use. So the code that calls them (io/video's file reader and writer, flow's DIS) is built into
 * a plugin of its own, loaded by the first call that needs it. Each part publishes one table of
 * its functions (NST_PLUGIN_EXPORT, the plugin's only visible symbols); the plugin calls back
 * into the program for the few functions util/plugin.syms lists (memory, status, images), which
 * every program that can load it exports.
 *
 * Where it is looked for, first found: $NSTBATCH_VIDEO_PLUGIN (a path); ../lib/nstbatch/ beside
 * a program in a bin/ folder (make install's layout, wherever the prefix was moved to); the build
 * tree that made the program. A table from another build (its ABI, its headers' checksum or its
 * size) is refused. */
#ifndef NST_PLUGIN_H
#define NST_PLUGIN_H

#include <stddef.h>

#include "status.h"

#define NST_PLUGIN_NAME "nstbatch-video.so"
#define NST_PLUGIN_ENV "NSTBATCH_VIDEO_PLUGIN"
/* bumped with any change to a table's layout or to what its functions expect */
#define NST_PLUGIN_ABI 2u
/* and, checked beside it, a checksum of the seam's headers (the tables' types, the structures they
 * pass, the functions called back): the Makefile passes it to the three files that use it, so a
 * plugin built from other headers is refused even where nobody bumped the number */
#ifndef NST_PLUGIN_ID
#define NST_PLUGIN_ID 0u
#endif
#define NST_PLUGIN_EXPORT __attribute__((visibility("default")))

/* What the plugin calls back in the program, as a list that each loader references so that the
 * program links them all (io/video/plugin_calls.c; util/plugin.syms exports them). */
extern void *const nst_plugin_calls[];

/* What every table starts with. */
typedef struct {
    unsigned abi;  /* NST_PLUGIN_ABI */
    unsigned id;   /* NST_PLUGIN_ID */
    size_t size;   /* sizeof the whole table */
} nst_plugin_head;

/* The table published under `symbol` (a function returning a pointer to it), checked against
 * abi and size, in *out. On failure one line through nst_fail (NST_ERUNTIME): "WHAT: " (the file
 * or the feature that needed it), then where the plugin was looked for or why it did not load,
 * and what to do; the same on every later call. Thread-safe; the plugin stays loaded. */
nst_status nst_plugin_table(const char *symbol, const char *what, size_t size, const void **out);
/* 1 where that table loads and checks out; records no failure. */
int nst_plugin_has(const char *symbol, size_t size);

#endif

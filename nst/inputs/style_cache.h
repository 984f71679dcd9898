/* nst/inputs/style_cache.h: style targets kept for reuse, keyed by everything they depend on (the style
 * images with their sizes and modification times, blend weights, working size, layers, network,
 * colour transform). In memory for the life of a run (a batch computes each set once), and, with
 * batch.style_cache = DIR, as HDF5 files DIR/style-HASH.h5 that later runs load: written under a
 * temporary name and renamed, holding the full key, which must match on load (a hash collision or
 * a stale file is recomputed, never used). Only the group's rank 0 touches the cache; the targets
 * reach the others by broadcast. */
#ifndef NST_STYLE_CACHE_H
#define NST_STYLE_CACHE_H

#include "style.h"

typedef struct nst_style_cache nst_style_cache;

/* dir: "" for memory only; it must exist (checked with the config). */
nst_status nst_style_cache_open(const char *dir, nst_style_cache **out);
void nst_style_cache_free(nst_style_cache *c);
/* 1 and out filled (allocated) when the key is held, in memory or in the directory; 0 otherwise. */
int nst_style_cache_get(nst_style_cache *c, const char *key, const int *C, int n, nst_style_targets *out);
/* Keep t under key (memory, and a file when there is a directory). A file that cannot be written
 * is a warning, not a failure: the run goes on without it. */
void nst_style_cache_put(nst_style_cache *c, const char *key, const nst_style_targets *t);
/* Loads from files and entries written in this run, for the report. */
void nst_style_cache_counts(const nst_style_cache *c, int *hits, int *files_read, int *files_written);

#endif

/* util/mem.h: allocation that records a clear failure (what and how much) instead of crashing. */
#ifndef NST_MEM_H
#define NST_MEM_H

#include <stddef.h>

#include "status.h"

/* 64-byte aligned, uninitialised. On failure records NST_ENOMEM naming `what`, returns NULL. */
void *nst_alloc(size_t bytes, const char *what);
/* As nst_alloc, zero-filled. */
void *nst_calloc(size_t bytes, const char *what);
/* count * size with overflow check. */
void *nst_alloc_array(size_t count, size_t size, const char *what);
void nst_free(void *p);
/* This process's peak resident set so far, in bytes (getrusage). */
size_t nst_peak_rss(void);

#endif

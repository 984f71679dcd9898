/* util/text.h: small text helpers shared by the config parser and the command line. */
#ifndef NST_TEXT_H
#define NST_TEXT_H

#include <stddef.h>

/* Levenshtein distance (99 for strings over 64 bytes). */
size_t nst_edit_distance(const char *a, const char *b);
/* The candidate nearest to `typed` that is plausibly what was meant, or NULL. */
const char *nst_nearest(const char *typed, const char *const *candidates, size_t n);

#endif

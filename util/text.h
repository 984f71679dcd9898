/* util/text.h: small text helpers shared by the config parser, the command line and the reports. */
#ifndef NST_TEXT_H
#define NST_TEXT_H

#include <stddef.h>
#include <stdio.h>

/* Levenshtein distance (99 for strings over 64 bytes). */
size_t nst_edit_distance(const char *a, const char *b);
/* The candidate nearest to `typed` that is plausibly what was meant, or NULL. */
const char *nst_nearest(const char *typed, const char *const *candidates, size_t n);

/* The next line of text[0..len) at *pos: its start, with its length less "\n" or "\r\n" in *n;
 * *pos moves past it. NULL at the end. A UTF-8 byte-order mark at offset 0 is skipped. */
const char *nst_text_line(const char *text, size_t len, size_t *pos, size_t *n);

/* s as a JSON string literal, quoted and escaped. */
void nst_json_string(FILE *f, const char *s);

#endif

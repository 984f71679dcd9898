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

/* Length of the well-formed UTF-8 sequence starting at p (RFC 3629: no overlong forms, no
 * surrogates, nothing above U+10FFFF), or 0 if it is not one (a NUL ends any sequence). */
size_t nst_utf8_length(const unsigned char *p);

/* s as a JSON string literal: quoted; '"', '\\' and control characters escaped; valid UTF-8
 * passed through, each byte of an invalid sequence written as U+FFFD, so that a run record or a
 * view.json is valid JSON whatever bytes a path or a configuration holds (a Latin-1 file name). */
void nst_json_string(FILE *f, const char *s);

/* JSON's text for the number v: printf's fmt (one conversion of a double) where v is finite, null
 * where it is NaN or infinite (JSON has neither: a diverged loss stays readable); written in b, of
 * NST_JSON_NUM bytes, which it returns. */
#define NST_JSON_NUM 40
const char *nst_json_num(char *b, const char *fmt, double v);

#endif

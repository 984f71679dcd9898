/* util/text.c: edit distance, "did you mean", lines, UTF-8 and JSON strings (see text.h). */
#include "text.h"

#include <math.h>
#include <string.h>

size_t nst_edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 64 || lb > 64) return 99;
    size_t row[65];
    for (size_t j = 0; j <= lb; j++) row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t best = diag + (a[i - 1] != b[j - 1]);
            if (row[j] + 1 < best) best = row[j] + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

const char *nst_nearest(const char *typed, const char *const *cand, size_t n)
{
    const char *best = NULL;
    size_t bestd = 99;
    for (size_t i = 0; i < n; i++) {
        size_t d = nst_edit_distance(typed, cand[i]);
        size_t len = strlen(cand[i]), limit = len / 3 > 2 ? len / 3 : 2;
        int plausible = d <= limit || strstr(cand[i], typed) || strstr(typed, cand[i]);
        if (plausible && d < bestd) {
            bestd = d;
            best = cand[i];
        }
    }
    return best;
}

size_t nst_utf8_length(const unsigned char *p)
{
    unsigned char c = p[0];
    if (c < 0x80) return 1;
    if (c >= 0xc2 && c <= 0xdf) return (p[1] & 0xc0) == 0x80 ? 2 : 0;
    unsigned char lo = 0x80, hi = 0xbf;
    size_t n;
    if (c >= 0xe0 && c <= 0xef) {
        n = 3;
        if (c == 0xe0) lo = 0xa0;
        if (c == 0xed) hi = 0x9f; /* U+D800..U+DFFF are surrogates */
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        if (c == 0xf0) lo = 0x90;
        if (c == 0xf4) hi = 0x8f;
    } else {
        return 0;
    }
    if (p[1] < lo || p[1] > hi) return 0;
    for (size_t i = 2; i < n; i++)
        if ((p[i] & 0xc0) != 0x80) return 0; /* also stops at the terminating NUL */
    return n;
}

void nst_json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        size_t n = nst_utf8_length(p);
        if (n == 0) {
            fputs("\\ufffd", f);
            p++;
            continue;
        }
        if (n > 1) {
            fwrite(p, 1, n, f);
            p += n;
            continue;
        }
        unsigned char c = *p++;
        switch (c) {
        case '"': fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        case '\t': fputs("\\t", f); break;
        default:
            if (c < 0x20 || c == 0x7f)
                fprintf(f, "\\u%04x", c);
            else
                fputc(c, f);
        }
    }
    fputc('"', f);
}

const char *nst_json_num(char *b, const char *fmt, double v)
{
    if (isfinite(v))
        snprintf(b, NST_JSON_NUM, fmt, v);
    else
        snprintf(b, NST_JSON_NUM, "null");
    return b;
}

const char *nst_text_line(const char *text, size_t len, size_t *pos, size_t *n)
{
    if (*pos == 0 && len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) *pos = 3; /* UTF-8 byte-order mark */
    if (*pos >= len) return NULL;
    const char *start = text + *pos;
    const char *nl = memchr(start, '\n', len - *pos);
    *n = nl ? (size_t)(nl - start) : len - *pos;
    *pos += *n + (nl ? 1 : 0);
    if (*n && start[*n - 1] == '\r') (*n)--;
    return start;
}

/* util/text.c: edit distance, "did you mean", JSON strings (see text.h). */
#include "text.h"

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

void nst_json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
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

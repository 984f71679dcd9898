/* viewer/view_json.c: writes OUT.view.json (see view_json.h and docs/VIEWER.md for the schema). */
#include "view_json.h"

#include <math.h>
#include <stddef.h>

/* Length of the well-formed UTF-8 sequence starting at p (RFC 3629: no overlong forms, no
 * surrogates, nothing above U+10FFFF), or 0 if it is not one. */
static size_t utf8_length(const unsigned char *p)
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

void nst_viewer_json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        size_t n = utf8_length(p);
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

/* A loss term: JSON has no NaN or infinity, so those are null. */
static void number(FILE *f, const char *name, double v, const char *sep)
{
    if (isfinite(v))
        fprintf(f, "\"%s\": %.9g%s", name, v, sep);
    else
        fprintf(f, "\"%s\": null%s", name, sep);
}

static void loss(FILE *f, const nst_viewer_loss *l)
{
    fputc('{', f);
    number(f, "total", l->total, ", ");
    number(f, "content", l->content, ", ");
    number(f, "style", l->style, ", ");
    number(f, "tv", l->tv, "");
    fputc('}', f);
}

int nst_viewer_json_write(FILE *f, const nst_viewer_page *p, const char *image, const char *content)
{
    fputs("{\n  \"nstbatch\": ", f);
    nst_viewer_json_string(f, p->version ? p->version : "unknown");
    fputs(",\n  \"image\": ", f);
    nst_viewer_json_string(f, image);
    fputs(",\n  \"content\": ", f);
    if (content)
        nst_viewer_json_string(f, content);
    else
        fputs("null", f);
    fprintf(f, ",\n  \"width\": %d,\n  \"height\": %d,\n  \"config\": ", p->width, p->height);
    if (p->config_text)
        nst_viewer_json_string(f, p->config_text);
    else
        fputs("null", f);
    fputs(",\n  \"loss\": ", f);
    if (p->have_loss) {
        fputs("{\"first\": ", f);
        loss(f, &p->first);
        fputs(", \"last\": ", f);
        loss(f, &p->last);
        fputc('}', f);
    } else {
        fputs("null", f);
    }
    fputs("\n}\n", f);
    return ferror(f) ? -1 : 0;
}

/* viewer/view_json.c: writes OUT.view.json (see view_json.h and docs/VIEWER.md for the schema). */
#include "view_json.h"

#include "../util/text.h"

#include <stddef.h>

/* A loss term (null where NaN or infinite). */
static void number(FILE *f, const char *name, double v, const char *sep)
{
    char n[NST_JSON_NUM];
    fprintf(f, "\"%s\": %s%s", name, nst_json_num(n, "%.9g", v), sep);
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
    nst_json_string(f, p->version ? p->version : "unknown");
    fputs(",\n  \"image\": ", f);
    nst_json_string(f, image);
    fputs(",\n  \"content\": ", f);
    if (content)
        nst_json_string(f, content);
    else
        fputs("null", f);
    fprintf(f, ",\n  \"width\": %d,\n  \"height\": %d,\n  \"config\": ", p->width, p->height);
    if (p->config_text)
        nst_json_string(f, p->config_text);
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

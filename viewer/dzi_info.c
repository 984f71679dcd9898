/* viewer/dzi_info.c: reads the image size out of a .dzi (see dzi_info.h). The descriptor is a
 * few hundred bytes of XML written by nstbatch or libvips; this finds the attributes it needs
 * rather than parsing XML in general. */
#include "dzi_info.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DZI_MAX 65536

/* The integer value of attribute `name` inside the tag text [tag, end): 0 and *v, or -1. */
static int attribute(const char *tag, const char *end, const char *name, int *v)
{
    size_t n = strlen(name);
    for (const char *p = tag + 1; p + n + 2 < end; p++) {
        /* the name must stand alone: " Width=" and not " TileWidth=" */
        if ((p[-1] == ' ' || p[-1] == '\t' || p[-1] == '\n' || p[-1] == '\r') && strncmp(p, name, n) == 0) {
            const char *q = p + n;
            while (q < end && (*q == ' ' || *q == '\t')) q++;
            if (q >= end || *q++ != '=') continue;
            while (q < end && (*q == ' ' || *q == '\t')) q++;
            if (q >= end || (*q != '"' && *q != '\'')) continue;
            char *stop;
            long x = strtol(q + 1, &stop, 10);
            if (stop == q + 1 || *stop != *q || x <= 0 || x > 1L << 30) return -1;
            *v = (int)x;
            return 0;
        }
    }
    return -1;
}

nst_status nst_dzi_size(const char *path, int *width, int *height)
{
    FILE *f = fopen(path, "rb");
    if (!f) return nst_fail(NST_EINPUT, "%s: cannot read: %s", path, strerror(errno));
    char *text = malloc(DZI_MAX + 1);
    if (!text) {
        fclose(f);
        return nst_fail(NST_ENOMEM, "%s: out of memory", path);
    }
    size_t n = fread(text, 1, DZI_MAX, f);
    fclose(f);
    text[n] = '\0';
    nst_status s = NST_OK;
    const char *size = strstr(text, "<Size");
    const char *end = size ? strchr(size, '>') : NULL;
    if (!strstr(text, "schemas.microsoft.com/deepzoom/2008") || !size || !end)
        s = nst_fail(NST_EINPUT, "%s: not a Deep Zoom descriptor (no <Image xmlns=\"http://schemas.microsoft.com/"
                                 "deepzoom/2008\"> with a <Size>)", path);
    else if (attribute(size, end, "Width", width) != 0 || attribute(size, end, "Height", height) != 0)
        s = nst_fail(NST_EINPUT, "%s: its <Size> has no valid Width and Height", path);
    free(text);
    return s;
}

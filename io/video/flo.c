/* io/video/flo.c: Middlebury .flo read and written (see flo.h). */
#include "flo.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "../../util/mem.h"
#include "../atomic_file.h"

#define FLO_HEADER 12
#define FLO_UNKNOWN 1e9f  /* |u| or |v| above it: unknown (Middlebury) */

static uint32_t le32(const unsigned char *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }

static void put32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)v, p[1] = (unsigned char)(v >> 8), p[2] = (unsigned char)(v >> 16), p[3] = (unsigned char)(v >> 24);
}

static float lef(const unsigned char *p)
{
    uint32_t u = le32(p);
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* The header: the tag and a size within the limits and the caller's wish. */
static nst_status check_header(const char *name, const unsigned char *buf, size_t len, int want_w, int want_h, double max_pixels, int *w,
                               int *h)
{
    if (len < FLO_HEADER || memcmp(buf, "PIEH", 4) != 0)
        return nst_fail(NST_EINPUT, "%s: not a Middlebury .flo file (it does not start with PIEH): give flow as .flo (u, v float32 per pixel)", name);
    int32_t sw = (int32_t)le32(buf + 4), sh = (int32_t)le32(buf + 8);
    if (sw < 1 || sh < 1 || sw > 1000000 || sh > 1000000)
        return nst_fail(NST_EINPUT, "%s: corrupt .flo header: %dx%d", name, (int)sw, (int)sh);
    if (want_w > 0 && (sw != want_w || sh != want_h))
        return nst_fail(NST_EINPUT, "%s: %dx%d flow for %dx%d frames: give flow of the frames' size", name, (int)sw, (int)sh, want_w, want_h);
    if (want_w <= 0 && (double)sw * sh > max_pixels)
        return nst_fail(NST_EINPUT, "%s: %dx%d flow is above the limit of %.0f pixels", name, (int)sw, (int)sh, max_pixels);
    uint64_t need = FLO_HEADER + (uint64_t)sw * (uint64_t)sh * 8;
    if ((uint64_t)len != need)
        return nst_fail(NST_EINPUT, "%s: %s: %zu bytes for a %dx%d flow, which takes %llu", name, (uint64_t)len < need ? "truncated" : "trailing bytes",
                        len, (int)sw, (int)sh, (unsigned long long)need);
    *w = sw, *h = sh;
    return NST_OK;
}

nst_status nst_flo_parse(const char *name, const unsigned char *buf, size_t len, int want_w, int want_h, double max_pixels, nst_flow *out)
{
    memset(out, 0, sizeof *out);
    int w = 0, h = 0;
    NST_TRY(check_header(name, buf, len, want_w, want_h, max_pixels, &w, &h));
    size_t n = (size_t)w * (size_t)h * 2;
    float *uv = nst_alloc_array(n, sizeof(float), "a flow field");
    if (!uv) return NST_ENOMEM;
    for (size_t i = 0; i < n; i += 2) {
        float u = lef(buf + FLO_HEADER + 4 * i), v = lef(buf + FLO_HEADER + 4 * i + 4);
        int unknown = !isfinite(u) || !isfinite(v) || fabsf(u) > FLO_UNKNOWN || fabsf(v) > FLO_UNKNOWN;
        uv[i] = unknown ? NAN : u;
        uv[i + 1] = unknown ? NAN : v;
    }
    *out = (nst_flow){w, h, uv};
    return NST_OK;
}

nst_status nst_flo_read(const char *path, int want_w, int want_h, double max_pixels, nst_flow *out)
{
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "rb");
    if (!f) return nst_fail(NST_EINPUT, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    unsigned char head[FLO_HEADER];
    nst_status s = NST_OK;
    int w = 0, h = 0;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) s = nst_fail(NST_EINPUT, "%s: not a regular file", path);
    /* the header first, against the file's length: nothing is allocated for a lying header */
    size_t got = s == NST_OK ? fread(head, 1, sizeof head, f) : 0;
    if (s == NST_OK) s = check_header(path, head, got < sizeof head ? got : (size_t)st.st_size, want_w, want_h, max_pixels, &w, &h);
    unsigned char *buf = s == NST_OK ? nst_alloc((size_t)st.st_size, "a .flo file") : NULL;
    if (s == NST_OK && !buf) s = NST_ENOMEM;
    if (s == NST_OK) {
        memcpy(buf, head, sizeof head);
        size_t rest = (size_t)st.st_size - sizeof head;
        if (fread(buf + sizeof head, 1, rest, f) != rest) s = nst_fail(NST_EINPUT, "%s: read error (changed while reading?)", path);
    }
    fclose(f);
    if (s == NST_OK) s = nst_flo_parse(path, buf, (size_t)st.st_size, want_w, want_h, max_pixels, out);
    nst_free(buf);
    return s;
}

nst_status nst_flo_write(const char *path, const nst_flow *fl)
{
    nst_atomic_file af;
    NST_TRY(nst_atomic_begin(&af, path, 1));
    FILE *f = fopen(af.tmp, "wb");
    int ok = f != NULL;
    unsigned char head[FLO_HEADER], px[8];
    memcpy(head, "PIEH", 4);
    put32(head + 4, (uint32_t)fl->w), put32(head + 8, (uint32_t)fl->h);
    ok = ok && fwrite(head, 1, sizeof head, f) == sizeof head;
    for (size_t i = 0; ok && i < (size_t)fl->w * fl->h * 2; i += 2) {
        for (int c = 0; c < 2; c++) {
            float x = isnan(fl->uv[i + c]) ? 1e10f : fl->uv[i + c];
            uint32_t u;
            memcpy(&u, &x, sizeof u);
            put32(px + 4 * c, u);
        }
        ok = fwrite(px, 1, sizeof px, f) == sizeof px;
    }
    int e = errno;
    if (f && fclose(f) != 0 && ok) ok = 0, e = errno;
    if (!ok) {
        nst_atomic_abort(&af);
        return nst_fail(NST_ERUNTIME, "%s: write error: %s", path, strerror(e));
    }
    return nst_atomic_commit(&af);
}

void nst_flow_free(nst_flow *f)
{
    nst_free(f->uv);
    memset(f, 0, sizeof *f);
}

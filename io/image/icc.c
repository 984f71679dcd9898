/* io/image/icc.c: the sRGB ICC profile embedded in TIFF outputs (see icc.h).
 *
 * An ICC v2.1 display profile ("mntr", RGB to the XYZ connection space), built here rather than
 * shipped as an opaque blob, so that every number in it can be read: the sRGB primaries adapted to
 * the D50 connection space (Bradford), D50 as the white point, and each channel's transfer curve
 * as a 1024-entry table of the sRGB curve (linear below 0.04045, a 2.4 power above). All fields
 * are big-endian, tags 4-byte aligned; the three TRC tags share one curve. */
#include "icc.h"

#include <math.h>
#include <string.h>

#define CURVE_N 1024

static void put32(unsigned char *p, uint32_t v) { p[0] = v >> 24, p[1] = v >> 16, p[2] = v >> 8, p[3] = (unsigned char)v; }
static void put16(unsigned char *p, uint16_t v) { p[0] = v >> 8, p[1] = (unsigned char)v; }
static void put_sig(unsigned char *p, const char *s) { memcpy(p, s, 4); }
/* s15Fixed16Number, the encoding of XYZ values */
static void put_s15(unsigned char *p, double v) { put32(p, (uint32_t)(int32_t)lround(v * 65536.0)); }

static size_t xyz_tag(unsigned char *p, double x, double y, double z)
{
    put_sig(p, "XYZ ");
    memset(p + 4, 0, 4);
    put_s15(p + 8, x), put_s15(p + 12, y), put_s15(p + 16, z);
    return 20;
}

/* textDescriptionType: the ASCII name, empty Unicode and ScriptCode parts. */
static size_t desc_tag(unsigned char *p, const char *text)
{
    size_t n = strlen(text) + 1;
    put_sig(p, "desc");
    memset(p + 4, 0, 4);
    put32(p + 8, (uint32_t)n);
    memcpy(p + 12, text, n);
    memset(p + 12 + n, 0, 4 + 4 + 2 + 1 + 67); /* Unicode language, count; ScriptCode code, count, 67 bytes */
    return 12 + n + 78;
}

static size_t text_tag(unsigned char *p, const char *text)
{
    size_t n = strlen(text) + 1;
    put_sig(p, "text");
    memset(p + 4, 0, 4);
    memcpy(p + 8, text, n);
    return 8 + n;
}

/* curveType: the sRGB transfer function sampled at CURVE_N points in [0, 1]. */
static size_t curve_tag(unsigned char *p)
{
    put_sig(p, "curv");
    memset(p + 4, 0, 4);
    put32(p + 8, CURVE_N);
    for (int i = 0; i < CURVE_N; i++) {
        double v = (double)i / (CURVE_N - 1);
        double lin = v <= 0.04045 ? v / 12.92 : pow((v + 0.055) / 1.055, 2.4);
        put16(p + 12 + 2 * i, (uint16_t)lround(lin * 65535.0));
    }
    return 12 + 2 * CURVE_N;
}

size_t nst_icc_srgb(unsigned char *out, size_t cap)
{
    enum { NTAGS = 9 };
    static const char *const sig[NTAGS] = {"desc", "cprt", "wtpt", "rXYZ", "gXYZ", "bXYZ", "rTRC", "gTRC", "bTRC"};
    unsigned char buf[NST_ICC_SRGB_MAX];
    memset(buf, 0, sizeof buf);
    size_t off[NTAGS], len[NTAGS], at = 128 + 4 + 12 * NTAGS;
    for (int t = 0; t < NTAGS; t++) {
        at = (at + 3) & ~(size_t)3;
        off[t] = at;
        unsigned char *p = buf + at;
        switch (t) {
        case 0: len[t] = desc_tag(p, "sRGB IEC61966-2.1 (nstbatch)"); break;
        case 1: len[t] = text_tag(p, "No copyright: public domain"); break;
        case 2: len[t] = xyz_tag(p, 0.9642, 1.0, 0.8249); break; /* D50 */
        case 3: len[t] = xyz_tag(p, 0.4360747, 0.2225045, 0.0139322); break;
        case 4: len[t] = xyz_tag(p, 0.3850649, 0.7168786, 0.0971045); break;
        case 5: len[t] = xyz_tag(p, 0.1430804, 0.0606169, 0.7141733); break;
        case 6: len[t] = curve_tag(p); break;
        default: off[t] = off[6], len[t] = len[6]; continue; /* gTRC, bTRC: the same curve */
        }
        at += len[t];
    }
    size_t size = at;
    if (size > cap) return 0;
    unsigned char *h = buf;
    put32(h, (uint32_t)size);
    put32(h + 8, 0x02100000);   /* version 2.1 */
    put_sig(h + 12, "mntr");     /* a display profile */
    put_sig(h + 16, "RGB ");
    put_sig(h + 20, "XYZ ");
    put16(h + 24, 2000), put16(h + 26, 1), put16(h + 28, 1); /* a fixed date: the same bytes every run */
    put_sig(h + 36, "acsp");
    put_s15(h + 68, 0.9642), put_s15(h + 72, 1.0), put_s15(h + 76, 0.8249); /* the connection space's illuminant */
    put32(h + 128, NTAGS);
    for (int t = 0; t < NTAGS; t++) {
        put_sig(h + 132 + 12 * t, sig[t]);
        put32(h + 136 + 12 * t, (uint32_t)off[t]);
        put32(h + 140 + 12 * t, (uint32_t)len[t]);
    }
    memcpy(out, buf, size);
    return size;
}

/* io/weights/weights.c: in-memory VGG-19 weights: allocation, validation, hash, pack/unpack.
 * The HDF5 reading and writing is in weights_h5.c. */
#include "weights.h"

#include <math.h>
#include <string.h>

#include "../../util/checked.h"
#include "../../util/mem.h"

nst_status nst_weights_alloc_layer(nst_weights *w, int k, int cin, int cout)
{
    nst_conv_weights *c = &w->conv[k];
    c->cin = cin;
    c->cout = cout;
    c->w = nst_alloc_array((size_t)cout * (size_t)cin, 9 * sizeof(float), "conv weights");
    c->b = nst_alloc_array((size_t)cout, sizeof(float), "conv biases");
    return (c->w && c->b) ? NST_OK : NST_ENOMEM;
}

void nst_weights_free(nst_weights *w)
{
    for (int k = 0; k < NST_VGG_NCONV; k++) {
        nst_free(w->conv[k].w);
        nst_free(w->conv[k].b);
    }
    memset(w, 0, sizeof *w);
}

nst_status nst_weights_validate(const nst_weights *w, const char *name)
{
    if (w->nconv < 1) return nst_fail(NST_EINPUT, "%s: no convolution layers", name);
    for (int k = 0; k < w->nconv; k++) {
        const nst_conv_weights *c = &w->conv[k];
        const char *lname = nst_vgg_layer_at(nst_vgg_conv_layer(k))->name;
        int want_cin = k == 0 ? 3 : w->conv[k - 1].cout;
        if (c->cin != want_cin)
            return nst_fail(NST_EINPUT, "%s: %s has %d input channels; expected %d (the previous layer's outputs)",
                            name, lname, c->cin, want_cin);
        if (c->cout < 1 || c->cout > NST_MAX_CHANNELS)
            return nst_fail(NST_EINPUT, "%s: %s has %d output channels; expected 1..%d", name, lname, c->cout,
                            NST_MAX_CHANNELS);
        size_t n = (size_t)c->cout * c->cin * 9;
        for (size_t i = 0; i < n; i++)
            if (!isfinite(c->w[i]))
                return nst_fail(NST_EINPUT, "%s: %s kernel value %zu is not finite (%g)", name, lname, i, c->w[i]);
        for (int i = 0; i < c->cout; i++)
            if (!isfinite(c->b[i]))
                return nst_fail(NST_EINPUT, "%s: %s bias value %d is not finite (%g)", name, lname, i, c->b[i]);
    }
    for (int c = 0; c < 3; c++)
        if (!isfinite(w->mean[c]) || !isfinite(w->std[c]) || w->std[c] <= 0 || !isfinite(w->scale) || w->scale <= 0)
            return nst_fail(NST_EINPUT, "%s: invalid preprocessing (scale %g, mean %g, std %g)", name, w->scale,
                            w->mean[c], w->std[c]);
    return NST_OK;
}

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

uint64_t nst_weights_hash(const nst_weights *w)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (int k = 0; k < w->nconv; k++) {
        const nst_conv_weights *c = &w->conv[k];
        h = fnv(h, &c->cin, sizeof c->cin);
        h = fnv(h, &c->cout, sizeof c->cout);
        h = fnv(h, c->w, (size_t)c->cout * c->cin * 9 * sizeof(float));
        h = fnv(h, c->b, (size_t)c->cout * sizeof(float));
    }
    return h;
}

/* Pack layout: the nst_weights struct (pointers meaningless), then each layer's w and b. */
nst_status nst_weights_pack(const nst_weights *w, unsigned char **buf, size_t *len)
{
    size_t total = sizeof *w;
    for (int k = 0; k < w->nconv; k++)
        total += ((size_t)w->conv[k].cout * w->conv[k].cin * 9 + (size_t)w->conv[k].cout) * sizeof(float);
    unsigned char *p = nst_alloc(total, "packed weights");
    if (!p) return NST_ENOMEM;
    memcpy(p, w, sizeof *w);
    size_t off = sizeof *w;
    for (int k = 0; k < w->nconv; k++) {
        size_t nw = (size_t)w->conv[k].cout * w->conv[k].cin * 9 * sizeof(float), nb = (size_t)w->conv[k].cout * sizeof(float);
        memcpy(p + off, w->conv[k].w, nw);
        off += nw;
        memcpy(p + off, w->conv[k].b, nb);
        off += nb;
    }
    *buf = p;
    *len = total;
    return NST_OK;
}

nst_status nst_weights_unpack(const unsigned char *buf, size_t len, nst_weights *w)
{
    nst_weights hdr;
    if (len < sizeof hdr) return nst_fail(NST_ERUNTIME, "packed weights: short buffer");
    memcpy(&hdr, buf, sizeof hdr);
    memset(w, 0, sizeof *w);
    w->nconv = hdr.nconv;
    w->bgr = hdr.bgr;
    w->scale = hdr.scale;
    memcpy(w->mean, hdr.mean, sizeof w->mean);
    memcpy(w->std, hdr.std, sizeof w->std);
    memcpy(w->description, hdr.description, sizeof w->description);
    size_t off = sizeof hdr;
    for (int k = 0; k < hdr.nconv && k < NST_VGG_NCONV; k++) {
        NST_TRY(nst_weights_alloc_layer(w, k, hdr.conv[k].cin, hdr.conv[k].cout));
        size_t nw = (size_t)hdr.conv[k].cout * hdr.conv[k].cin * 9 * sizeof(float), nb = (size_t)hdr.conv[k].cout * sizeof(float);
        if (off + nw + nb > len) return nst_fail(NST_ERUNTIME, "packed weights: short buffer");
        memcpy(w->conv[k].w, buf + off, nw);
        off += nw;
        memcpy(w->conv[k].b, buf + off, nb);
        off += nb;
    }
    return NST_OK;
}

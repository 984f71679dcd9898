/* nst/model/vgg.c: the geometry derived from the VGG-19 layer table (see vgg.h). */
#include "vgg.h"

/* Backwards interval propagation: a feature at output index j of layer i depends on the
 * interval [a, b] of that layer's input; compose down to the image. Conv 3x3 pad 1:
 * [a - 1, b + 1] at the same resolution. Pool 2x2 stride 2: [2a, 2b + 1]. */
nst_footprint nst_vgg_footprint(int i)
{
    long a = 0, b = 0; /* interval for j = 0 */
    int stride = 1;
    for (int l = i; l >= 0; l--) {
        if (nst_vgg_layer_at(l)->op == NST_OP_CONV) {
            a -= 1;
            b += 1;
        } else {
            a *= 2;
            b = 2 * b + 1;
        }
    }
    for (int l = 0; l <= i; l++)
        if (nst_vgg_layer_at(l)->op == NST_OP_POOL) stride *= 2;
    nst_footprint f = {stride, (int)-a, (int)b};
    return f;
}

int nst_vgg_receptive_field(int i)
{
    nst_footprint f = nst_vgg_footprint(i);
    return f.lo + f.hi + 1;
}

int nst_vgg_gradient_halo(int i)
{
    /* With the core starting at a multiple of the stride (c0 = s*m), the features whose
     * footprint touches the core start at j = m - floor(hi/s), and their footprints reach
     * s*floor(hi/s) + lo below c0. Symmetrically above the core's last pixel. */
    nst_footprint f = nst_vgg_footprint(i);
    int below = f.stride * (f.hi / f.stride) + f.lo;
    int above = f.stride * ((f.lo - 1) / f.stride) + f.hi + 1;
    return below > above ? below : above;
}

/* nst/model/random_vgg.c: the seeded random VGG-19 (see random_vgg.h). */
#include "random_vgg.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../../util/rng.h"
#include "vgg.h"

nst_status nst_weights_random(nst_weights *w, uint64_t seed, int divisor)
{
    memset(w, 0, sizeof *w);
    if (divisor < 1 || divisor > 64 || (divisor & (divisor - 1)))
        return nst_fail(NST_EINPUT, "width divisor %d: expected 1, 2, 4, 8, 16, 32 or 64", divisor);
    int cin = 3;
    for (int k = 0; k < NST_VGG_NCONV; k++) {
        int cout = nst_vgg_layer_at(nst_vgg_conv_layer(k))->std_cout / divisor;
        NST_TRY(nst_weights_alloc_layer(w, k, cin, cout));
        w->nconv = k + 1;
        float bound = sqrtf(6.0f / (float)(cin * 9)), bbound = 1.0f / sqrtf((float)(cin * 9));
        size_t n = (size_t)cout * cin * 9;
        for (size_t i = 0; i < n; i++)
            w->conv[k].w[i] = (2.0f * nst_rng_uniform(seed, 2 * (uint64_t)k, i) - 1.0f) * bound;
        for (int i = 0; i < cout; i++)
            w->conv[k].b[i] = (2.0f * nst_rng_uniform(seed, 2 * (uint64_t)k + 1, (uint64_t)i) - 1.0f) * bbound;
        cin = cout;
    }
    w->bgr = 0;
    w->scale = 1.0f;
    const float mean[3] = {0.485f, 0.456f, 0.406f}, sd[3] = {0.229f, 0.224f, 0.225f};
    memcpy(w->mean, mean, sizeof mean);
    memcpy(w->std, sd, sizeof sd);
    snprintf(w->description, sizeof w->description, "random VGG-19 (seed %llu, width 1/%d)", (unsigned long long)seed,
             divisor);
    return NST_OK;
}

/* video/temporal.c: the temporal term's target, weights and initial image (see temporal.h). */
#include "temporal.h"

#include <string.h>

#include "../flow/warp.h"
#include "../util/mem.h"

/* One earlier frame's share: its warped result into target (weighted) and its weights into c,
 * where no nearer frame already holds the pixel (cover: the nearer frames' weights, updated). */
static void add_prev(size_t np, const float *warped, const float *cj, float *cover, float *target, float *c)
{
    for (size_t p = 0; p < np; p++) {
        float share = cj[p] - cover[p];
        cover[p] += cj[p];
        if (!(share > 0)) continue;
        for (int k = 0; k < 3; k++) target[3 * p + k] += share * warped[3 * p + k];
        c[p] += share;
    }
}

nst_status nst_temporal_build(int w, int h, const nst_temporal_prev *prev, int n, const float *content, float *target, float *c,
                              float *init, double *kept)
{
    const size_t np = (size_t)w * h;
    float *warped = nst_alloc_array(np * 3, sizeof(float), "a warped frame");
    float *cj = nst_alloc_array(np, sizeof(float), "consistency weights");
    float *cover = nst_calloc(np * sizeof(float), "consistency weights");
    unsigned char *valid = nst_alloc_array(np, 1, "a warp's validity");
    if (!warped || !cj || !cover || !valid) {
        nst_free(warped), nst_free(cj), nst_free(cover), nst_free(valid);
        return NST_ENOMEM;
    }
    memset(target, 0, np * 3 * sizeof(float));
    memset(c, 0, np * sizeof(float));
    memcpy(init, content, np * 3 * sizeof(float));
    for (int i = 0; i < n; i++) {
        nst_warp_backward(prev[i].result, prev[i].bwd, warped, valid);
        nst_flow_consistency(prev[i].fwd, prev[i].bwd, cj);
        if (i == 0) /* the initial image: the previous result carried along the flow, the content where it cannot be */
            for (size_t p = 0; p < np; p++)
                if (valid[p]) memcpy(init + 3 * p, warped + 3 * p, 3 * sizeof(float));
        add_prev(np, warped, cj, cover, target, c);
    }
    size_t held = 0;
    for (size_t p = 0; p < np; p++) {
        if (c[p] > 0) {
            for (int k = 0; k < 3; k++) target[3 * p + k] /= c[p];
            held++;
        } else {
            memcpy(target + 3 * p, init + 3 * p, 3 * sizeof(float)); /* unused (weight 0); a finite value */
        }
    }
    if (kept) *kept = np ? (double)held / (double)np : 0;
    nst_free(warped), nst_free(cj), nst_free(cover), nst_free(valid);
    return NST_OK;
}

void nst_temporal_weights_rgb(float *rgb, size_t np)
{
    const float *c = rgb + 2 * np;
    for (size_t p = 0; p < np; p++) {
        float v = c[p];
        rgb[3 * p] = rgb[3 * p + 1] = rgb[3 * p + 2] = v;
    }
}

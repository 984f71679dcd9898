/* nst/model/spec.h: the loss, as the config describes it: which VGG-19 layers carry the content and
 * style terms, their weights, the TV weight and the pooling. Parsing checks the names against
 * the layer table; an error names the config line the value came from. */
#ifndef NST_SPEC_H
#define NST_SPEC_H

#include "../../io/config/config.h"
#include "../../kernels/backend.h"
#include "vgg.h"

typedef struct {
    int ncontent, content[NST_VGG_NLAYERS];   /* layer indices (relu outputs) */
    int nstyle, style[NST_VGG_NLAYERS];
    float style_layer_weight[NST_VGG_NLAYERS];
    double content_weight, style_weight, tv_weight;
    double temporal_weight;                   /* the video mode's temporal term on pixels (0: none; set per frame, not parsed) */
    int deepest;                              /* deepest layer index in use, -1 if none */
    int nmask;                                /* style.masks: one per style image (0: none) */
    int content_mask;                         /* content.mask is set */
    nst_pool_kind pool;
} nst_loss_spec;

nst_status nst_loss_spec_parse(const nst_config *cfg, nst_loss_spec *spec);
/* "relu1_1,relu2_1 (weights 1, 1)" style summary for the log */
void nst_loss_spec_describe(const nst_loss_spec *spec, char *out, size_t cap);
/* Smallest image side for which the deepest layer still has one position. */
int nst_loss_spec_min_side(const nst_loss_spec *spec);

#endif

/* io/weights/vgg_layers.h: the VGG-19 layer table: names, kinds and published widths of its 20 layers.
 *
 * Layers, in order: conv1_1 conv1_2 pool1 conv2_1 conv2_2 pool2 conv3_1..conv3_4 pool3
 * conv4_1..conv4_4 pool4 conv5_1..conv5_4. Every conv is 3x3, stride 1, zero 'same' padding,
 * followed by ReLU (stored fused: the output of layer "conv3_1" is relu3_1); every pool is 2x2,
 * stride 2 (floor).
 *
 * It lives in io/ because the weight files (weights.h) are named and checked by it, and io/ may
 * not include nst/; the geometry derived from it (footprints, halos) is the network's and
 * stays in nst/model/vgg.h.
 */
#ifndef NST_VGG_LAYERS_H
#define NST_VGG_LAYERS_H

#define NST_VGG_NCONV 16
#define NST_VGG_NLAYERS 20

typedef enum { NST_OP_CONV, NST_OP_POOL } nst_op;

typedef struct {
    const char *name; /* "conv3_1", "pool3" */
    const char *relu; /* "relu3_1" for convs, NULL for pools */
    nst_op op;
    int conv;         /* index among the 16 convs, or -1 */
    int std_cout;     /* channel width of the published network */
} nst_vgg_layer;

const nst_vgg_layer *nst_vgg_layer_at(int i);
/* Index of a layer by conv name ("conv3_1"), relu name ("relu3_1") or pool name; -1 if none. */
int nst_vgg_find(const char *name);
/* Index of the layer holding the k-th conv. */
int nst_vgg_conv_layer(int k);

#endif

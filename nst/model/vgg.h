/* nst/vgg.h: the VGG-19 feature stack as a table, and the geometry derived from it.
 *
 * Layers, in order: conv1_1 conv1_2 pool1 conv2_1 conv2_2 pool2 conv3_1..conv3_4 pool3
 * conv4_1..conv4_4 pool4 conv5_1..conv5_4. Every conv is 3x3, stride 1, zero 'same' padding,
 * followed by ReLU (stored fused: the output of layer "conv3_1" is relu3_1); every pool is 2x2,
 * stride 2 (floor). Receptive field, total stride and the input footprint of a feature are
 * derived from this table by interval propagation, never written down: they size the halos of
 * the tiled renderer.
 */
#ifndef NST_VGG_H
#define NST_VGG_H

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

/* Where a feature of layer i (output after its ReLU or pool) looks in the input image:
 * feature at position j covers input pixels [stride*j - lo, stride*j + hi]. */
typedef struct {
    int stride;
    int lo, hi;
} nst_footprint;

nst_footprint nst_vgg_footprint(int i);
/* Receptive field of layer i in input pixels: the width of one feature's footprint. */
int nst_vgg_receptive_field(int i);
/* Input halo at which the gradient of a loss on features up to layer i is exact on a tile's
 * core (core aligned to the layer's stride): every feature whose footprint touches the core
 * must itself be exact, so the window reaches that feature's footprint. */
int nst_vgg_gradient_halo(int i);

#endif

/* nst/model/vgg.h: the geometry of the VGG-19 feature stack, derived from its layer table.
 *
 * The table itself (names, kinds, widths) is io/weights/vgg_layers.h, where the weight readers can reach
 * it. Receptive field, total stride and the input footprint of a feature are derived from the
 * table by interval propagation, never written down: they size the halos of the tiled renderer.
 */
#ifndef NST_VGG_H
#define NST_VGG_H

#include "../../io/weights/vgg_layers.h"

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

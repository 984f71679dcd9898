/* io/weights/weights.h: VGG-19 convolution weights in memory, and the HDF5 files they come from.
 *
 * Two file layouts are read, recognised by content:
 *  - Keras: the published vgg19_weights_tf_dim_ordering_tf_kernels_notop.h5, as it is. Groups
 *    blockB_convI (at the root or under model_weights/) holding the kernel (HWIO) and bias, named
 *    either blockB_convI_W_1:0 / blockB_convI_b_1:0 (the original release) or
 *    blockB_convI/kernel:0 / blockB_convI/bias:0 (later re-saves); the two are told apart by
 *    rank, not by name. Caffe preprocessing: BGR, 0..255, mean (103.939, 116.779, 123.68).
 *  - nstbatch (attribute format = "nstbatch-vgg19"): groups convB_I with datasets weight (OIHW)
 *    and bias; the preprocessing recorded as attributes input_order, input_scale, input_mean,
 *    input_std. tools/convert_torchvision_vgg19.py writes it from torchvision's .pth, and
 *    `nstbatch --make-weights random` writes seeded random networks in it.
 * Channel widths come from the file. Layers must form a prefix conv1_1, conv1_2, ... of VGG-19
 * with matching widths; every value must be finite. Weight files are trusted input (HDF5 is not
 * hardened against hostile files), but a truncated or wrong file still gets a clear error.
 */
#ifndef NST_WEIGHTS_H
#define NST_WEIGHTS_H

#include <stddef.h>
#include <stdint.h>

#include "../../util/status.h"
#include "vgg_layers.h"

#define NST_MAX_CHANNELS 4096

typedef struct {
    int cin, cout;
    float *w; /* OIHW: [cout][cin][3][3] */
    float *b; /* [cout] */
} nst_conv_weights;

typedef struct {
    int nconv; /* convs present: conv[0..nconv) are conv1_1 ... in VGG-19 order */
    nst_conv_weights conv[NST_VGG_NCONV];
    /* Preprocessing of an RGB image in [0,1] into the network input, per input channel c:
     * in[c] = (img[bgr ? 2 - c : c] * scale - mean[c]) / std[c]. */
    int bgr;
    float scale, mean[3], std[3];
    char description[256];
} nst_weights;

nst_status nst_weights_read(const char *path, nst_weights *w);
/* Write the nstbatch layout (atomically; refuses to replace a file unless overwrite). */
nst_status nst_weights_write(const char *path, const nst_weights *w, int overwrite);
/* Allocate layer k with the given widths (values uninitialised). */
nst_status nst_weights_alloc_layer(nst_weights *w, int k, int cin, int cout);
void nst_weights_free(nst_weights *w);
/* Check widths chain from 3 input channels, and every value is finite. `name` for messages. */
nst_status nst_weights_validate(const nst_weights *w, const char *name);
/* FNV-1a hash over the widths and raw values: identifies a network in fixtures and logs. */
uint64_t nst_weights_hash(const nst_weights *w);

/* Flat byte image of the weights, for broadcasting from the rank that read them. */
nst_status nst_weights_pack(const nst_weights *w, unsigned char **buf, size_t *len);
nst_status nst_weights_unpack(const unsigned char *buf, size_t len, nst_weights *w);

#endif

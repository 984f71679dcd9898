/* nst/model/net.h: the VGG-19 feature stack bound to a backend, and its walk over one tile.
 *
 * Forward runs the layers up to the deepest one in use and keeps every layer's output (the ReLU
 * outputs serve as ReLU masks and as features, the pool outputs as max-pool arguments).
 * Backward walks from the deepest layer to the image; at each layer a callback adds the loss
 * gradients seeded there before the gradient goes through that layer. Only the input gradient
 * is computed: the weights are fixed. */
#ifndef NST_NET_H
#define NST_NET_H

#include "../../io/weights/weights.h"
#include "../../kernels/backend.h"
#include "vgg.h"

typedef struct {
    nst_backend *be;
    int nlayers;             /* layers 0..nlayers-1 are run */
    nst_conv *conv[NST_VGG_NCONV];
    int width[NST_VGG_NLAYERS]; /* output channels of each layer */
    nst_pool_kind pool;
    nst_preproc pre;
    /* The layers whose output the loss seeds gradients at (every layer until nst_net_set_seeded).
     * The ReLU of a layer it does not seed, below a pooling, is folded into the pooling's backward
     * (one pass over the largest activations instead of two); a seeded one keeps its own pass,
     * since its seeds add after the pooling's gradient. */
    unsigned char seeded[NST_VGG_NLAYERS];
} nst_net;

/* Activations of one window. The buffers are allocated for a largest shape (cap_h x cap_w) and
 * viewed at the current shape (h x w), so tiles of different shapes can share one set. */
typedef struct {
    int h, w, cap_h, cap_w;
    nst_tensor in;                    /* preprocessed network input (unused where conv1_1 reads the image: net.c) */
    nst_tensor out[NST_VGG_NLAYERS];  /* each layer's output */
    nst_tensor g[2];                  /* gradient ping-pong, sized for the largest activation */
    size_t g_cap;                     /* elements of each g buffer */
} nst_acts;

/* Adds loss gradients at `layer`'s output into grad (same shape as that output). */
typedef nst_status (*nst_seed_fn)(void *user, int layer, nst_tensor *grad);

nst_status nst_net_create(nst_backend *be, const nst_weights *w, int deepest_layer, nst_pool_kind pool, nst_net *net);
/* The same without creating the convolutions: shapes and widths only (for planning). */
nst_status nst_net_shapes(nst_backend *be, const nst_weights *w, int deepest_layer, nst_pool_kind pool, nst_net *net);
void nst_net_destroy(nst_net *net);

/* Output shape of layer i for an h x w input. */
void nst_net_shape(const nst_net *net, int i, int h, int w, int *oh, int *ow, int *oc);

nst_status nst_acts_alloc(nst_net *net, int h, int w, nst_acts *a);
/* View the buffers at h x w (at most the allocated shape). */
nst_status nst_acts_reshape(nst_net *net, nst_acts *a, int h, int w);
void nst_acts_free(nst_net *net, nst_acts *a);
/* Bytes the activations of an h x w window take (the memory model of the planner). */
size_t nst_acts_bytes(const nst_net *net, int h, int w);

/* img: fp32 h x w x 3 in [0,1], in the backend's memory. */
nst_status nst_net_forward(nst_net *net, const nst_tensor *img, nst_acts *a);
/* The same, with after(user, i) called once layer i's output is queued (NULL: none): the Gram sums
 * of a style layer start there, beside the layers above it (kernels/backend.h: side). */
typedef nst_status (*nst_layer_fn)(void *user, int layer);
nst_status nst_net_forward_each(nst_net *net, const nst_tensor *img, nst_acts *a, nst_layer_fn after, void *user);
/* Only `layers` (n of them) are seeded from now on. */
void nst_net_set_seeded(nst_net *net, const int *layers, int n);
/* dimg (fp32 h x w x 3) is overwritten with the gradient of the seeded losses. */
nst_status nst_net_backward(nst_net *net, nst_acts *a, nst_seed_fn seed, void *user, nst_tensor *dimg);

#endif

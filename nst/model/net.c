/* nst/model/net.c: forward and input-gradient backward of the VGG-19 stack (see net.h). */
#include "net.h"

#include <string.h>

static nst_status net_build(nst_backend *be, const nst_weights *w, int deepest, nst_pool_kind pool, nst_net *net, int convs)
{
    memset(net, 0, sizeof *net);
    net->be = be;
    net->pool = pool;
    net->nlayers = deepest + 1;
    net->pre.bgr = w->bgr;
    net->pre.scale = w->scale;
    memcpy(net->pre.mean, w->mean, sizeof w->mean);
    memcpy(net->pre.std, w->std, sizeof w->std);
    int width = 3;
    memset(net->seeded, 1, sizeof net->seeded); /* until told otherwise, every layer may be seeded */
    for (int i = 0; i < net->nlayers; i++) {
        const nst_vgg_layer *L = nst_vgg_layer_at(i);
        if (L->op == NST_OP_CONV) {
            if (L->conv >= w->nconv) {
                nst_net_destroy(net);
                return nst_fail(NST_EINPUT, "the loss uses %s (it needs %s), but the weights (%s) end at %s",
                                nst_vgg_layer_at(deepest)->relu ? nst_vgg_layer_at(deepest)->relu : nst_vgg_layer_at(deepest)->name,
                                L->name, w->description, nst_vgg_layer_at(nst_vgg_conv_layer(w->nconv - 1))->name);
            }
            const nst_conv_weights *cw = &w->conv[L->conv];
            if (convs) {
                nst_status s = be->ops->conv_create(be, cw->cin, cw->cout, cw->w, cw->b, &net->conv[L->conv]);
                if (s != NST_OK) {
                    nst_net_destroy(net);
                    return s;
                }
            }
            width = cw->cout;
        }
        net->width[i] = width;
    }
    return NST_OK;
}

nst_status nst_net_create(nst_backend *be, const nst_weights *w, int deepest, nst_pool_kind pool, nst_net *net)
{
    return net_build(be, w, deepest, pool, net, 1);
}

nst_status nst_net_shapes(nst_backend *be, const nst_weights *w, int deepest, nst_pool_kind pool, nst_net *net)
{
    return net_build(be, w, deepest, pool, net, 0);
}

void nst_net_destroy(nst_net *net)
{
    for (int k = 0; k < NST_VGG_NCONV; k++)
        if (net->conv[k] && net->be) net->be->ops->conv_destroy(net->be, net->conv[k]);
    memset(net, 0, sizeof *net);
}

void nst_net_shape(const nst_net *net, int i, int h, int w, int *oh, int *ow, int *oc)
{
    for (int l = 0; l <= i; l++)
        if (nst_vgg_layer_at(l)->op == NST_OP_POOL) {
            h /= 2;
            w /= 2;
        }
    *oh = h;
    *ow = w;
    *oc = net->width[i];
}

/* Elements of each gradient buffer for a window of h x w: the largest activation, or the network
 * input's gradient when it is stored wider than the activations (an fp32 input of a bf16
 * network), counted in activation elements. */
static size_t grad_elems(const nst_net *net, size_t amax, int h, int w)
{
    size_t act = nst_dtype_size(net->be->act_dtype), in = (size_t)h * w * 3 * nst_dtype_size(net->be->in_dtype);
    size_t need = (in + act - 1) / act;
    return amax > need ? amax : need;
}

size_t nst_acts_bytes(const nst_net *net, int h, int w)
{
    /* nst_net_shape's sizes in one pass (the planner calls this for every window of every tiling
     * it weighs: layer by layer from the input, it took most of a 40000 px dry run's minute) */
    size_t el = 0, amax = 0;
    int oh = h, ow = w;
    for (int i = 0; i < net->nlayers; i++) {
        if (nst_vgg_layer_at(i)->op == NST_OP_POOL) oh /= 2, ow /= 2;
        const size_t n = (size_t)oh * ow * net->width[i];
        el += n;
        if (n > amax) amax = n;
    }
    return (size_t)h * w * 3 * nst_dtype_size(net->be->in_dtype) + (el + 2 * grad_elems(net, amax, h, w)) * nst_dtype_size(net->be->act_dtype);
}

nst_status nst_acts_alloc(nst_net *net, int h, int w, nst_acts *a)
{
    memset(a, 0, sizeof *a);
    a->h = a->cap_h = h;
    a->w = a->cap_w = w;
    nst_backend *be = net->be;
    nst_dtype dt = be->act_dtype;
    size_t amax = 0;
    nst_status s = nst_tensor_alloc(be, h, w, 3, be->in_dtype, &a->in);
    for (int i = 0; s == NST_OK && i < net->nlayers; i++) {
        int oh, ow, oc;
        nst_net_shape(net, i, h, w, &oh, &ow, &oc);
        s = nst_tensor_alloc(be, oh, ow, oc, dt, &a->out[i]);
        if ((size_t)oh * ow * oc > amax) amax = (size_t)oh * ow * oc;
    }
    size_t gmax = grad_elems(net, amax, h, w);
    for (int k = 0; s == NST_OK && k < 2; k++) s = nst_tensor_alloc(be, 1, (int)gmax, 1, dt, &a->g[k]);
    a->g_cap = gmax;
    if (s != NST_OK) nst_acts_free(net, a);
    return s;
}

nst_status nst_acts_reshape(nst_net *net, nst_acts *a, int h, int w)
{
    if (h > a->cap_h || w > a->cap_w)
        return nst_fail(NST_ERUNTIME, "activations for %dx%d viewed at %dx%d", a->cap_w, a->cap_h, w, h);
    a->h = h;
    a->w = w;
    a->in.h = h;
    a->in.w = w;
    for (int i = 0; i < net->nlayers; i++) nst_net_shape(net, i, h, w, &a->out[i].h, &a->out[i].w, &a->out[i].c);
    return NST_OK;
}

void nst_acts_free(nst_net *net, nst_acts *a)
{
    nst_tensor_free(net->be, &a->in);
    for (int i = 0; i < NST_VGG_NLAYERS; i++) nst_tensor_free(net->be, &a->out[i]);
    for (int k = 0; k < 2; k++) nst_tensor_free(net->be, &a->g[k]);
    memset(a, 0, sizeof *a);
}

/* Whether the first layer reads the image itself (kernels/backend.h: conv_forward_image): the
 * preprocessing's passes then go into its kernels, the same bits */
static int reads_image(const nst_net *net)
{
    nst_backend *be = net->be;
    return net->nlayers > 0 && nst_vgg_layer_at(0)->op == NST_OP_CONV && be->ops->conv_reads_image &&
           be->ops->conv_reads_image(be, net->conv[nst_vgg_layer_at(0)->conv]);
}

nst_status nst_net_forward(nst_net *net, const nst_tensor *img, nst_acts *a) { return nst_net_forward_each(net, img, a, NULL, NULL); }

nst_status nst_net_forward_each(nst_net *net, const nst_tensor *img, nst_acts *a, nst_layer_fn after, void *user)
{
    nst_backend *be = net->be;
    const int from_image = reads_image(net); /* conv1_1 preprocesses the image itself: no input pass */
    if (!from_image) NST_TRY(be->ops->preprocess(be, &net->pre, img, &a->in));
    const nst_tensor *x = &a->in;
    for (int i = 0; i < net->nlayers; i++) {
        const nst_vgg_layer *L = nst_vgg_layer_at(i);
        if (i == 0 && from_image)
            NST_TRY(be->ops->conv_forward_image(be, net->conv[L->conv], &net->pre, img, &a->out[i], 1));
        else if (L->op == NST_OP_CONV)
            NST_TRY(be->ops->conv_forward(be, net->conv[L->conv], x, &a->out[i], 1));
        else
            NST_TRY(be->ops->pool_forward(be, net->pool, x, &a->out[i]));
        if (after) NST_TRY(after(user, i));
        x = &a->out[i];
    }
    return NST_OK;
}

/* A gradient view of buffer k with the shape and dtype of t. */
static nst_tensor grad_view(const nst_acts *a, int k, const nst_tensor *t)
{
    nst_tensor g = {t->h, t->w, t->c, t->dt, a->g[k].data};
    return g;
}

void nst_net_set_seeded(nst_net *net, const int *layers, int n)
{
    memset(net->seeded, 0, sizeof net->seeded);
    for (int i = 0; i < n; i++)
        if (layers[i] >= 0 && layers[i] < NST_VGG_NLAYERS) net->seeded[layers[i]] = 1;
}

nst_status nst_net_backward(nst_net *net, nst_acts *a, nst_seed_fn seed, void *user, nst_tensor *dimg)
{
    nst_backend *be = net->be;
    int top = net->nlayers - 1;
    int k = 0, folded = 0; /* folded: the pooling above applied this layer's ReLU backward */
    nst_tensor g = grad_view(a, k, &a->out[top]);
    NST_TRY(be->ops->zero(be, g.data, nst_tensor_elems(&g) * nst_dtype_size(g.dt)));
    for (int i = top; i >= 0; i--) {
        NST_TRY(seed(user, i, &g));
        const nst_vgg_layer *L = nst_vgg_layer_at(i);
        const nst_tensor *below = i > 0 ? &a->out[i - 1] : &a->in;
        nst_tensor gb = grad_view(a, 1 - k, below);
        if (L->op == NST_OP_CONV) {
            if (!folded) NST_TRY(be->ops->relu_backward(be, &a->out[i], &g));
            if (i == 0 && reads_image(net)) return be->ops->conv_backward_image(be, net->conv[L->conv], &net->pre, &g, dimg);
            NST_TRY(be->ops->conv_backward_data(be, net->conv[L->conv], &g, &gb));
            folded = 0;
        } else { /* every conv's output is its ReLU's: fold it in where no seed adds at it */
            folded = i > 0 && nst_vgg_layer_at(i - 1)->op == NST_OP_CONV && !net->seeded[i - 1];
            NST_TRY(be->ops->pool_backward(be, net->pool, below, &a->out[i], &g, &gb, folded));
        }
        k = 1 - k;
        g = gb;
    }
    return be->ops->preprocess_backward(be, &net->pre, &g, dimg);
}

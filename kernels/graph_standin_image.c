/* kernels/graph_standin_image.c: conv1_1 from the image on the CPU (NSTBATCH_CUDA_CONV1=own;
 * kernels/backend.h: conv_forward_image), for the graph stand-in (see graph_standin.h). */
#include "graph_standin_impl.h"

/* As the CUDA backend has it with NSTBATCH_CUDA_CONV1=own (kernels/backend.h: conv_forward_image):
 * here the CPU's two ops in turn, through a network input of the stand-in's own, so that the
 * render's path without an input pass (net.c) runs on the CPU, recorded and replayed too. Its
 * buffer grows as a GPU's scratch does: never while recording, and the segments held are dropped. */
static int s_conv_reads_image(nst_backend *be, const nst_conv *c)
{
    for (int i = 0; c && i < 8; i++)
        if (G(be)->reads_image[i] == c) return 1;
    return 0;
}

/* the layers conv1_1's own kernels take (kernels/cuda/conv_first_cuda.cu: cuda_conv_first_fits) */
static nst_status s_conv_create(nst_backend *be, int cin, int cout, const float *w, const float *b, nst_conv **out)
{
    NST_TRY(REAL(be)->conv_create(be, cin, cout, w, b, out));
    for (int i = 0; cin == 3 && cout % 8 == 0 && cout > 0 && cout <= 256 && i < 8; i++)
        if (!G(be)->reads_image[i]) {
            G(be)->reads_image[i] = *out;
            break;
        }
    return NST_OK;
}

static void s_conv_destroy(nst_backend *be, nst_conv *c)
{
    for (int i = 0; i < 8; i++)
        if (G(be)->reads_image[i] == c) G(be)->reads_image[i] = NULL;
    REAL(be)->conv_destroy(be, c);
}

static nst_status image_input(nst_backend *be, const nst_tensor *img, nst_tensor *x, const char *op)
{
    struct nst_graph_standin *g = G(be);
    const size_t bytes = (size_t)img->h * img->w * 3 * nst_dtype_size(be->in_dtype);
    if (bytes > g->image_cap) {
        if (g->recording) return gs_refuse(be, op, "grows a scratch buffer");
        g->nseg = 0; /* the segments held address the old buffer */
        NST_TRY(gs_side_join(be));
        REAL(be)->free(be, g->image_in);
        g->image_in = NULL, g->image_cap = 0;
        NST_TRY(REAL(be)->alloc(be, bytes, &g->image_in));
        g->image_cap = bytes;
    }
    *x = (nst_tensor){img->h, img->w, 3, be->in_dtype, g->image_in};
    return NST_OK;
}

static nst_status s_conv_forward_image(nst_backend *be, nst_conv *c, const nst_preproc *p, const nst_tensor *img, nst_tensor *y, int relu)
{
    nst_tensor x;
    if (!s_conv_reads_image(be, c)) return nst_fail(NST_ERUNTIME, "conv_forward_image: the layer does not read the image");
    NST_TRY(image_input(be, img, &x, "conv_forward_image"));
    NST_TRY(be->ops->preprocess(be, p, img, &x)); /* the stand-in's ops: recorded too */
    return be->ops->conv_forward(be, c, &x, y, relu);
}

static nst_status s_conv_backward_image(nst_backend *be, nst_conv *c, const nst_preproc *p, const nst_tensor *dy, nst_tensor *dimg)
{
    nst_tensor dx;
    if (!s_conv_reads_image(be, c)) return nst_fail(NST_ERUNTIME, "conv_backward_image: the layer does not read the image");
    NST_TRY(image_input(be, dimg, &dx, "conv_backward_image"));
    NST_TRY(be->ops->conv_backward_data(be, c, dy, &dx));
    return be->ops->preprocess_backward(be, p, &dx, dimg);
}

void gs_image_install(nst_backend_ops *o)
{
    o->conv_reads_image = s_conv_reads_image, o->conv_forward_image = s_conv_forward_image, o->conv_backward_image = s_conv_backward_image;
    o->conv_create = s_conv_create, o->conv_destroy = s_conv_destroy;
}

void gs_image_release(nst_backend *be)
{
    REAL(be)->free(be, G(be)->image_in);
    G(be)->image_in = NULL, G(be)->image_cap = 0;
}

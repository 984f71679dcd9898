/* kernels/cpu/conv_cpu.h: the CPU convolution's layer object and its cache of oneDNN primitives,
 * shared by conv_cpu.c (the ops), conv_prims_cpu.c (building primitives) and conv_pick_cpu.c
 * (choosing oneDNN's implementation by name). */
#ifndef NST_CONV_CPU_H
#define NST_CONV_CPU_H

#include "cpu.h"

#define CONV_SHAPES 32
#define CONV_WLAYOUTS 12
#define CONV_PIN_CHARS 48

/* What a set of primitives is for: the spatial size of the input, the dtypes of the image-side
 * tensor (src, or diff_src) and of the feature-side one (dst, or diff_dst), and whether the top
 * and bottom edges are zero-padded (a band of rows inside an image has real rows there). */
typedef struct {
    int h, w;
    dnnl_data_type_t sdt, ddt;
    int pad_top, pad_bottom;
} conv_key;

typedef struct {
    dnnl_memory_desc_t md;
    int transposed; /* the backward's weights (conv_prims_cpu.c) */
    dnnl_memory_t mem;
} wlayout;

typedef struct {
    conv_key key;
    int used;
    dnnl_primitive_t fwd[2];            /* [relu]; where src and dst share a dtype */
    dnnl_primitive_t bwd;               /* where both edges are padded: backward-data as a forward
                                         * convolution of dy with the transposed weights */
    dnnl_memory_t src, dst, dsrc, ddst; /* user NHWC memories, data handles set per call */
    dnnl_memory_t wf[2], wb;            /* borrowed from the layouts */
} conv_shape;

struct nst_conv {
    int cin, cout;
    dnnl_data_type_t dt; /* the backend's activations (and these weights) */
    dnnl_memory_desc_t user_w_md, user_wt_md, b_md;
    dnnl_memory_t user_w, user_wt, b; /* OIHW fp32: the weights, their transpose (cin x cout, flipped) */
    /* the oneDNN implementation each kind of primitive is pinned to: [backward][image side bf16][feature side bf16] */
    char pin[2][2][2][CONV_PIN_CHARS];
    wlayout layouts[CONV_WLAYOUTS];
    int nlayouts;
    conv_shape shapes[CONV_SHAPES];
    int next_evict;
};

/* The primitives for key, built on first use (kept for the CONV_SHAPES most recent keys). */
nst_status cpu_conv_shape(cpu_impl *impl, nst_conv *c, conv_key key, conv_shape **out);
void cpu_conv_shape_release(conv_shape *s);

/* The primitive descriptor of a convolution: the implementation named in *pin, or (pin empty) the
 * first allowed one oneDNN offers, which is then written to pin; the reference where none is.
 * Fails where the pinned one is not offered. what names the op. */
nst_status cpu_conv_pick(cpu_impl *impl, const dnnl_convolution_desc_t *cd, const_dnnl_primitive_attr_t attr, char *pin, size_t pin_cap,
                         const char *what, dnnl_primitive_desc_t *out);
/* whether name is one of the shape-invariant implementations */
int cpu_conv_impl_allowed(const char *name);

#endif

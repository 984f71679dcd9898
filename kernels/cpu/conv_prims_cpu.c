/* kernels/cpu/conv_prims_cpu.c: oneDNN primitives of a 3x3 conv layer, built per key (spatial
 * size, dtypes, padded edges: conv_cpu.h) and cached, each from the implementation
 * conv_pick_cpu.c allows.
 *
 * The backward-data is a forward convolution too: dx = conv(dy, W'), W'[i][o][kh][kw] =
 * W[o][i][2-kh][2-kw] (the transpose, flipped), with the same zero padding. oneDNN's
 * backward-data kernels group their sums by a blocking chosen from the output's width (jit:avx2:
 * one value at 40 px and wider, another at 15 to 39, a third below), so a window and the whole
 * image would round differently; the forward kernels' order does not depend on it.
 *
 * Each implementation picks its preferred weights layout per primitive; the OIHW fp32 weights (or
 * their transpose) are reordered, and converted, once per distinct layout and shared between keys. */
#include <string.h>

#include "conv_cpu.h"

void cpu_conv_shape_release(conv_shape *s)
{
    for (int r = 0; r < 2; r++)
        if (s->fwd[r]) dnnl_primitive_destroy(s->fwd[r]);
    if (s->bwd) dnnl_primitive_destroy(s->bwd);
    dnnl_memory_t m[4] = {s->src, s->dst, s->dsrc, s->ddst};
    for (int i = 0; i < 4; i++)
        if (m[i]) dnnl_memory_destroy(m[i]);
    memset(s, 0, sizeof *s);
}

/* The weights (or their transpose) in the layout `md` wants, reordered from OIHW on first use. */
static nst_status weights_for(cpu_impl *impl, nst_conv *c, const dnnl_memory_desc_t *md, int transposed, dnnl_memory_t *out)
{
    for (int i = 0; i < c->nlayouts; i++)
        if (c->layouts[i].transposed == transposed && dnnl_memory_desc_equal(&c->layouts[i].md, md)) {
            *out = c->layouts[i].mem;
            return NST_OK;
        }
    if (c->nlayouts == CONV_WLAYOUTS) return nst_fail(NST_ERUNTIME, "conv: too many weight layouts");
    dnnl_memory_t mem;
    dnnl_primitive_desc_t rpd;
    dnnl_primitive_t r;
    DNNL_TRY(dnnl_memory_create(&mem, md, impl->eng, DNNL_MEMORY_ALLOCATE));
    dnnl_status_t st = dnnl_reorder_primitive_desc_create(&rpd, transposed ? &c->user_wt_md : &c->user_w_md, impl->eng, md, impl->eng, NULL);
    if (st == dnnl_success) {
        st = dnnl_primitive_create(&r, rpd);
        dnnl_primitive_desc_destroy(rpd);
    }
    if (st != dnnl_success) {
        dnnl_memory_destroy(mem);
        return cpu_dnnl_fail(st, "weights reorder primitive", __FILE__, __LINE__);
    }
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, transposed ? c->user_wt : c->user_w}, {DNNL_ARG_TO, mem}};
    st = dnnl_primitive_execute(r, impl->stream, 2, args);
    if (st == dnnl_success) st = dnnl_stream_wait(impl->stream);
    dnnl_primitive_destroy(r);
    if (st != dnnl_success) {
        dnnl_memory_destroy(mem);
        return cpu_dnnl_fail(st, "dnnl_primitive_execute(reorder)", __FILE__, __LINE__);
    }
    c->layouts[c->nlayouts].md = *md;
    c->layouts[c->nlayouts].transposed = transposed;
    c->layouts[c->nlayouts].mem = mem;
    c->nlayouts++;
    *out = mem;
    return NST_OK;
}

/* A forward convolution's primitive descriptor from the pinned (or an allowed) implementation:
 * src -> dst with weights w (any layout), the bias where b_md is given, ReLU as a post-op. */
static nst_status conv_pd(cpu_impl *impl, nst_conv *c, const dnnl_memory_desc_t *src, const dnnl_memory_desc_t *w,
                          const dnnl_memory_desc_t *b_md, const dnnl_memory_desc_t *dst, const dnnl_dims_t pl, const dnnl_dims_t pr, int relu,
                          int bwd, const char *what, dnnl_primitive_desc_t *pd)
{
    dnnl_dims_t strides = {1, 1};
    dnnl_convolution_desc_t cd;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t po = NULL;
    dnnl_status_t e = dnnl_convolution_forward_desc_init(&cd, dnnl_forward_training, dnnl_convolution_direct, src, w, b_md, dst, strides,
                                                         pl, pr);
    if (e == dnnl_success) e = dnnl_primitive_attr_create(&attr);
    if (e == dnnl_success && relu) {
        e = dnnl_post_ops_create(&po);
        if (e == dnnl_success) e = dnnl_post_ops_append_eltwise(po, 1.f, dnnl_eltwise_relu, 0.f, 0.f);
        if (e == dnnl_success) e = dnnl_primitive_attr_set_post_ops(attr, po);
    }
    nst_status st = e == dnnl_success ? NST_OK : cpu_dnnl_fail(e, what, __FILE__, __LINE__);
    char *pin = c->pin[bwd][src->data_type == dnnl_bf16][dst->data_type == dnnl_bf16];
    if (st == NST_OK) st = cpu_conv_pick(impl, &cd, attr, pin, CONV_PIN_CHARS, what, pd);
    if (po) dnnl_post_ops_destroy(po);
    if (attr) dnnl_primitive_attr_destroy(attr);
    return st;
}

/* A primitive from pd and the weights in its layout. */
static nst_status make_prim(cpu_impl *impl, nst_conv *c, const_dnnl_primitive_desc_t pd, int transposed, const char *what,
                            dnnl_primitive_t *prim, dnnl_memory_t *w)
{
    dnnl_status_t e = dnnl_primitive_create(prim, pd);
    if (e != dnnl_success) return cpu_dnnl_fail(e, what, __FILE__, __LINE__);
    return weights_for(impl, c, dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0), transposed, w);
}

/* The forward (where both sides share a dtype; with and without ReLU) and, where both edges are
 * padded, the backward: dy (feature side) -> dx (image side). A key whose image side is fp32 and
 * feature side bf16 has only a backward: bf16 dy and weights into an fp32 dx. Weights are fp32
 * where both sides are fp32, else bf16. */
static nst_status shape_build(cpu_impl *impl, nst_conv *c, conv_shape *s, conv_key k)
{
    const int mixed = k.sdt != k.ddt, oh = k.h + k.pad_top + k.pad_bottom - 2;
    dnnl_data_type_t wdt = k.sdt == dnnl_f32 && k.ddt == dnnl_f32 ? dnnl_f32 : dnnl_bf16;
    dnnl_dims_t sd = {1, c->cin, k.h, k.w}, dd = {1, c->cout, oh, k.w}, wd = {c->cout, c->cin, 3, 3}, wtd = {c->cin, c->cout, 3, 3};
    dnnl_dims_t pl = {k.pad_top, 1}, pr = {k.pad_bottom, 1};
    dnnl_memory_desc_t src_md, dst_md, w_any, wt_any;
    DNNL_TRY(dnnl_memory_desc_init_by_tag(&src_md, 4, sd, k.sdt, dnnl_nhwc));
    DNNL_TRY(dnnl_memory_desc_init_by_tag(&dst_md, 4, dd, k.ddt, dnnl_nhwc));
    DNNL_TRY(dnnl_memory_desc_init_by_tag(&w_any, 4, wd, wdt, dnnl_format_tag_any));
    DNNL_TRY(dnnl_memory_desc_init_by_tag(&wt_any, 4, wtd, wdt, dnnl_format_tag_any));
    s->key = k;
    nst_status st = NST_OK;
    for (int relu = 0; relu < 2 && !mixed && st == NST_OK; relu++) {
        dnnl_primitive_desc_t pd = NULL;
        st = conv_pd(impl, c, &src_md, &w_any, &c->b_md, &dst_md, pl, pr, relu, 0, "conv forward primitive", &pd);
        if (st == NST_OK) st = make_prim(impl, c, pd, 0, "conv forward primitive", &s->fwd[relu], &s->wf[relu]);
        if (pd) dnnl_primitive_desc_destroy(pd);
    }
    if (st == NST_OK && k.pad_top && k.pad_bottom) {
        dnnl_primitive_desc_t pd = NULL;
        st = conv_pd(impl, c, &dst_md, &wt_any, NULL, &src_md, pl, pr, 0, 1, "conv backward-data primitive", &pd);
        if (st == NST_OK) st = make_prim(impl, c, pd, 1, "conv backward-data primitive", &s->bwd, &s->wb);
        if (pd) dnnl_primitive_desc_destroy(pd);
    }
    if (st == NST_OK) {
        dnnl_status_t e = dnnl_memory_create(&s->src, &src_md, impl->eng, DNNL_MEMORY_NONE);
        if (e == dnnl_success) e = dnnl_memory_create(&s->dst, &dst_md, impl->eng, DNNL_MEMORY_NONE);
        if (e == dnnl_success) e = dnnl_memory_create(&s->dsrc, &src_md, impl->eng, DNNL_MEMORY_NONE);
        if (e == dnnl_success) e = dnnl_memory_create(&s->ddst, &dst_md, impl->eng, DNNL_MEMORY_NONE);
        if (e != dnnl_success) st = cpu_dnnl_fail(e, "conv memories", __FILE__, __LINE__);
    }
    if (st != NST_OK)
        cpu_conv_shape_release(s);
    else
        s->used = 1;
    return st;
}

static int same_key(conv_key a, conv_key b)
{
    return a.h == b.h && a.w == b.w && a.sdt == b.sdt && a.ddt == b.ddt && a.pad_top == b.pad_top && a.pad_bottom == b.pad_bottom;
}

nst_status cpu_conv_shape(cpu_impl *impl, nst_conv *c, conv_key key, conv_shape **out)
{
    for (int i = 0; i < CONV_SHAPES; i++)
        if (c->shapes[i].used && same_key(c->shapes[i].key, key)) {
            *out = &c->shapes[i];
            return NST_OK;
        }
    conv_shape *s = NULL;
    for (int i = 0; i < CONV_SHAPES && !s; i++)
        if (!c->shapes[i].used) s = &c->shapes[i];
    if (!s) {
        s = &c->shapes[c->next_evict];
        c->next_evict = (c->next_evict + 1) % CONV_SHAPES;
        cpu_conv_shape_release(s);
    }
    NST_TRY(shape_build(impl, c, s, key));
    *out = s;
    return NST_OK;
}

/* kernels/cpu/conv_cpu.c: 3x3 convolution forward (bias and ReLU fused) and backward-data with
 * oneDNN on NHWC fp32 tensors.
 *
 * Primitives depend on the spatial shape, so each conv keeps a small cache of per-shape
 * primitives (a tiled render has a handful of tile shapes). oneDNN picks its preferred weights
 * layout per primitive; the OIHW weights are reordered once per distinct layout and shared. */
#include <string.h>

#include "../../util/mem.h"
#include "cpu.h"

#define CONV_SHAPES 16
#define CONV_WLAYOUTS 8

typedef struct {
    dnnl_memory_desc_t md;
    dnnl_memory_t mem;
} wlayout;

typedef struct {
    int h, w, used;
    dnnl_primitive_t fwd[2]; /* [relu] */
    dnnl_primitive_t bwd;
    dnnl_memory_t src, dst, dsrc, ddst; /* user NHWC memories, data handles set per call */
    dnnl_memory_t wf[2], wb;            /* borrowed from the layouts */
} conv_shape;

struct nst_conv {
    int cin, cout;
    dnnl_memory_desc_t user_w_md, b_md;
    dnnl_memory_t user_w, b;
    wlayout layouts[CONV_WLAYOUTS];
    int nlayouts;
    conv_shape shapes[CONV_SHAPES];
    int next_evict;
};

nst_status cpu_dnnl_fail(dnnl_status_t st, const char *call, const char *file, int line)
{
    static const char *names[] = {"success", "out of memory", "invalid arguments", "unimplemented",
                                  "iterator ends", "runtime error", "not required"};
    const char *n = (unsigned)st < sizeof names / sizeof *names ? names[st] : "error";
    return nst_fail(st == dnnl_out_of_memory ? NST_ENOMEM : NST_ERUNTIME, "oneDNN %s: %s (%s:%d)", call, n, file, line);
}

static void shape_release(conv_shape *s)
{
    for (int r = 0; r < 2; r++)
        if (s->fwd[r]) dnnl_primitive_destroy(s->fwd[r]);
    if (s->bwd) dnnl_primitive_destroy(s->bwd);
    dnnl_memory_t m[4] = {s->src, s->dst, s->dsrc, s->ddst};
    for (int i = 0; i < 4; i++)
        if (m[i]) dnnl_memory_destroy(m[i]);
    memset(s, 0, sizeof *s);
}

nst_status cpu_conv_create(nst_backend *be, int cin, int cout, const float *w, const float *b, nst_conv **out)
{
    cpu_impl *impl = cpu_of(be);
    nst_conv *c = nst_calloc(sizeof *c, "a conv layer");
    if (!c) return NST_ENOMEM;
    c->cin = cin;
    c->cout = cout;
    dnnl_dims_t wd = {cout, cin, 3, 3}, bd = {cout};
    nst_status s = NST_OK;
#define TRY_(call)                                                                                \
    do {                                                                                          \
        dnnl_status_t st_ = (call);                                                               \
        if (st_ != dnnl_success) {                                                                \
            s = cpu_dnnl_fail(st_, #call, __FILE__, __LINE__);                                    \
            goto fail;                                                                            \
        }                                                                                         \
    } while (0)
    TRY_(dnnl_memory_desc_init_by_tag(&c->user_w_md, 4, wd, dnnl_f32, dnnl_oihw));
    TRY_(dnnl_memory_desc_init_by_tag(&c->b_md, 1, bd, dnnl_f32, dnnl_x));
    TRY_(dnnl_memory_create(&c->user_w, &c->user_w_md, impl->eng, DNNL_MEMORY_ALLOCATE));
    TRY_(dnnl_memory_create(&c->b, &c->b_md, impl->eng, DNNL_MEMORY_ALLOCATE));
    void *p;
    TRY_(dnnl_memory_get_data_handle(c->user_w, &p));
    memcpy(p, w, (size_t)cout * cin * 9 * sizeof(float));
    TRY_(dnnl_memory_get_data_handle(c->b, &p));
    memcpy(p, b, (size_t)cout * sizeof(float));
    *out = c;
    return NST_OK;
fail:
    cpu_conv_destroy(be, c);
    return s;
#undef TRY_
}

void cpu_conv_destroy(nst_backend *be, nst_conv *c)
{
    (void)be;
    if (!c) return;
    for (int i = 0; i < CONV_SHAPES; i++) shape_release(&c->shapes[i]);
    for (int i = 0; i < c->nlayouts; i++) dnnl_memory_destroy(c->layouts[i].mem);
    if (c->user_w) dnnl_memory_destroy(c->user_w);
    if (c->b) dnnl_memory_destroy(c->b);
    nst_free(c);
}

/* The weights in the layout `md` wants, reordered from OIHW on first use. */
static nst_status weights_for(cpu_impl *impl, nst_conv *c, const dnnl_memory_desc_t *md, dnnl_memory_t *out)
{
    for (int i = 0; i < c->nlayouts; i++)
        if (dnnl_memory_desc_equal(&c->layouts[i].md, md)) {
            *out = c->layouts[i].mem;
            return NST_OK;
        }
    if (c->nlayouts == CONV_WLAYOUTS) return nst_fail(NST_ERUNTIME, "conv: too many weight layouts");
    dnnl_memory_t mem;
    dnnl_primitive_desc_t rpd;
    dnnl_primitive_t r;
    DNNL_TRY(dnnl_memory_create(&mem, md, impl->eng, DNNL_MEMORY_ALLOCATE));
    DNNL_TRY(dnnl_reorder_primitive_desc_create(&rpd, &c->user_w_md, impl->eng, md, impl->eng, NULL));
    dnnl_status_t st = dnnl_primitive_create(&r, rpd);
    dnnl_primitive_desc_destroy(rpd);
    if (st != dnnl_success) return cpu_dnnl_fail(st, "dnnl_primitive_create(reorder)", __FILE__, __LINE__);
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, c->user_w}, {DNNL_ARG_TO, mem}};
    st = dnnl_primitive_execute(r, impl->stream, 2, args);
    if (st == dnnl_success) st = dnnl_stream_wait(impl->stream);
    dnnl_primitive_destroy(r);
    if (st != dnnl_success) return cpu_dnnl_fail(st, "dnnl_primitive_execute(reorder)", __FILE__, __LINE__);
    c->layouts[c->nlayouts].md = *md;
    c->layouts[c->nlayouts].mem = mem;
    c->nlayouts++;
    *out = mem;
    return NST_OK;
}

static nst_status shape_build(cpu_impl *impl, nst_conv *c, conv_shape *s, int h, int w)
{
    dnnl_dims_t sd = {1, c->cin, h, w}, dd = {1, c->cout, h, w}, wd = {c->cout, c->cin, 3, 3};
    dnnl_dims_t strides = {1, 1}, pad = {1, 1};
    dnnl_memory_desc_t src_md, dst_md, w_any;
    DNNL_TRY(dnnl_memory_desc_init_by_tag(&src_md, 4, sd, dnnl_f32, dnnl_nhwc));
    DNNL_TRY(dnnl_memory_desc_init_by_tag(&dst_md, 4, dd, dnnl_f32, dnnl_nhwc));
    DNNL_TRY(dnnl_memory_desc_init_by_tag(&w_any, 4, wd, dnnl_f32, dnnl_format_tag_any));
    s->h = h;
    s->w = w;
    dnnl_primitive_desc_t fpd[2] = {NULL, NULL}, bpd = NULL;
    nst_status st = NST_OK;
    for (int relu = 0; relu < 2 && st == NST_OK; relu++) {
        dnnl_convolution_desc_t cd;
        dnnl_primitive_attr_t attr = NULL;
        dnnl_post_ops_t po = NULL;
        dnnl_status_t e = dnnl_convolution_forward_desc_init(&cd, dnnl_forward_training, dnnl_convolution_direct, &src_md,
                                                             &w_any, &c->b_md, &dst_md, strides, pad, pad);
        if (e == dnnl_success) e = dnnl_primitive_attr_create(&attr);
        if (e == dnnl_success && relu) {
            e = dnnl_post_ops_create(&po);
            if (e == dnnl_success) e = dnnl_post_ops_append_eltwise(po, 1.f, dnnl_eltwise_relu, 0.f, 0.f);
            if (e == dnnl_success) e = dnnl_primitive_attr_set_post_ops(attr, po);
        }
        if (e == dnnl_success) e = dnnl_primitive_desc_create(&fpd[relu], &cd, attr, impl->eng, NULL);
        if (e == dnnl_success) e = dnnl_primitive_create(&s->fwd[relu], fpd[relu]);
        if (e == dnnl_success)
            st = weights_for(impl, c, dnnl_primitive_desc_query_md(fpd[relu], dnnl_query_weights_md, 0), &s->wf[relu]);
        else
            st = cpu_dnnl_fail(e, "conv forward primitive", __FILE__, __LINE__);
        if (po) dnnl_post_ops_destroy(po);
        if (attr) dnnl_primitive_attr_destroy(attr);
    }
    if (st == NST_OK) {
        dnnl_convolution_desc_t bd;
        dnnl_status_t e = dnnl_convolution_backward_data_desc_init(&bd, dnnl_convolution_direct, &src_md, &w_any, &dst_md,
                                                                   strides, pad, pad);
        if (e == dnnl_success) e = dnnl_primitive_desc_create(&bpd, &bd, NULL, impl->eng, fpd[0]);
        if (e == dnnl_success) e = dnnl_primitive_create(&s->bwd, bpd);
        if (e == dnnl_success)
            st = weights_for(impl, c, dnnl_primitive_desc_query_md(bpd, dnnl_query_weights_md, 0), &s->wb);
        else
            st = cpu_dnnl_fail(e, "conv backward-data primitive", __FILE__, __LINE__);
    }
    if (st == NST_OK) {
        dnnl_status_t e = dnnl_memory_create(&s->src, &src_md, impl->eng, DNNL_MEMORY_NONE);
        if (e == dnnl_success) e = dnnl_memory_create(&s->dst, &dst_md, impl->eng, DNNL_MEMORY_NONE);
        if (e == dnnl_success) e = dnnl_memory_create(&s->dsrc, &src_md, impl->eng, DNNL_MEMORY_NONE);
        if (e == dnnl_success) e = dnnl_memory_create(&s->ddst, &dst_md, impl->eng, DNNL_MEMORY_NONE);
        if (e != dnnl_success) st = cpu_dnnl_fail(e, "conv memories", __FILE__, __LINE__);
    }
    for (int r = 0; r < 2; r++)
        if (fpd[r]) dnnl_primitive_desc_destroy(fpd[r]);
    if (bpd) dnnl_primitive_desc_destroy(bpd);
    if (st != NST_OK) shape_release(s);
    else s->used = 1;
    return st;
}

static nst_status shape_get(cpu_impl *impl, nst_conv *c, int h, int w, conv_shape **out)
{
    for (int i = 0; i < CONV_SHAPES; i++)
        if (c->shapes[i].used && c->shapes[i].h == h && c->shapes[i].w == w) {
            *out = &c->shapes[i];
            return NST_OK;
        }
    conv_shape *s = NULL;
    for (int i = 0; i < CONV_SHAPES && !s; i++)
        if (!c->shapes[i].used) s = &c->shapes[i];
    if (!s) {
        s = &c->shapes[c->next_evict];
        c->next_evict = (c->next_evict + 1) % CONV_SHAPES;
        shape_release(s);
    }
    NST_TRY(shape_build(impl, c, s, h, w));
    *out = s;
    return NST_OK;
}

nst_status cpu_conv_forward(nst_backend *be, nst_conv *c, const nst_tensor *x, nst_tensor *y, int relu)
{
    cpu_impl *impl = cpu_of(be);
    NST_TRY(cpu_check_f32(x, "conv_forward"));
    NST_TRY(cpu_check_f32(y, "conv_forward"));
    if (x->c != c->cin || y->c != c->cout || x->h != y->h || x->w != y->w)
        return nst_fail(NST_ERUNTIME, "conv_forward: shapes %dx%dx%d -> %dx%dx%d do not fit a %d->%d conv", x->h, x->w,
                        x->c, y->h, y->w, y->c, c->cin, c->cout);
    conv_shape *s;
    NST_TRY(shape_get(impl, c, x->h, x->w, &s));
    DNNL_TRY(dnnl_memory_set_data_handle(s->src, x->data));
    DNNL_TRY(dnnl_memory_set_data_handle(s->dst, y->data));
    dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, s->src}, {DNNL_ARG_WEIGHTS, s->wf[relu ? 1 : 0]},
                               {DNNL_ARG_BIAS, c->b}, {DNNL_ARG_DST, s->dst}};
    DNNL_TRY(dnnl_primitive_execute(s->fwd[relu ? 1 : 0], impl->stream, 4, args));
    DNNL_TRY(dnnl_stream_wait(impl->stream));
    return NST_OK;
}

nst_status cpu_conv_backward_data(nst_backend *be, nst_conv *c, const nst_tensor *dy, nst_tensor *dx)
{
    cpu_impl *impl = cpu_of(be);
    NST_TRY(cpu_check_f32(dy, "conv_backward_data"));
    NST_TRY(cpu_check_f32(dx, "conv_backward_data"));
    if (dx->c != c->cin || dy->c != c->cout || dx->h != dy->h || dx->w != dy->w)
        return nst_fail(NST_ERUNTIME, "conv_backward_data: shapes %dx%dx%d <- %dx%dx%d do not fit a %d->%d conv", dx->h,
                        dx->w, dx->c, dy->h, dy->w, dy->c, c->cin, c->cout);
    conv_shape *s;
    NST_TRY(shape_get(impl, c, dx->h, dx->w, &s));
    DNNL_TRY(dnnl_memory_set_data_handle(s->ddst, dy->data));
    DNNL_TRY(dnnl_memory_set_data_handle(s->dsrc, dx->data));
    dnnl_exec_arg_t args[3] = {{DNNL_ARG_DIFF_DST, s->ddst}, {DNNL_ARG_WEIGHTS, s->wb}, {DNNL_ARG_DIFF_SRC, s->dsrc}};
    DNNL_TRY(dnnl_primitive_execute(s->bwd, impl->stream, 3, args));
    DNNL_TRY(dnnl_stream_wait(impl->stream));
    return NST_OK;
}

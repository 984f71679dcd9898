/* kernels/cpu/conv_cpu.c: 3x3 convolution forward (bias and ReLU fused) and backward-data with
 * oneDNN on NHWC tensors in the backend's activation dtype: fp32, or bf16 (bf16 weights, fp32
 * bias and accumulation, one rounding to bf16 at the output, as oneDNN's bf16 kernels do).
 *
 * The network's input may stay fp32 in a bf16 network (the backend's in_dtype): bf16 would keep
 * 8 significant bits of the preprocessed image (steps of up to one 8-bit grey level), so the network
 * would not see the optimiser's small changes to the pixels. The first conv then runs in fp32,
 * in bands of rows (the fp32 output of a whole tile would be large), each band rounded to bf16;
 * its backward writes the fp32 input gradient directly (oneDNN's bf16 kernels can).
 *
 * Primitives are built per key (conv_prims_cpu.c). */
#include <stdio.h>
#include <string.h>

#include "../../util/mem.h"
#include "conv_cpu.h"

#define BAND_BYTES (8u << 20) /* the fp32 output of one band of the first conv */

nst_status cpu_dnnl_fail(dnnl_status_t st, const char *call, const char *file, int line)
{
    static const char *names[] = {"success", "out of memory", "invalid arguments", "unimplemented",
                                  "iterator ends", "runtime error", "not required"};
    const char *n = (unsigned)st < sizeof names / sizeof *names ? names[st] : "error";
    return nst_fail(st == dnnl_out_of_memory ? NST_ENOMEM : NST_ERUNTIME, "oneDNN %s: %s (%s:%d)", call, n, file, line);
}

/* wt[i][o][kh][kw] = w[o][i][2-kh][2-kw]: the weights of the forward convolution that computes
 * the backward-data (conv_prims_cpu.c) */
static void transpose_flip(const float *w, int cin, int cout, float *wt)
{
    for (int o = 0; o < cout; o++)
        for (int i = 0; i < cin; i++)
            for (int k = 0; k < 9; k++) wt[((size_t)i * cout + o) * 9 + 8 - k] = w[((size_t)o * cin + i) * 9 + k];
}

nst_status cpu_conv_create(nst_backend *be, int cin, int cout, const float *w, const float *b, nst_conv **out)
{
    cpu_impl *impl = cpu_of(be);
    nst_conv *c = nst_calloc(sizeof *c, "a conv layer");
    if (!c) return NST_ENOMEM;
    c->cin = cin;
    c->cout = cout;
    c->dt = be->act_dtype == NST_BF16 ? dnnl_bf16 : dnnl_f32;
    dnnl_dims_t wd = {cout, cin, 3, 3}, wtd = {cin, cout, 3, 3}, bd = {cout};
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
    TRY_(dnnl_memory_desc_init_by_tag(&c->user_wt_md, 4, wtd, dnnl_f32, dnnl_oihw));
    TRY_(dnnl_memory_desc_init_by_tag(&c->b_md, 1, bd, dnnl_f32, dnnl_x));
    TRY_(dnnl_memory_create(&c->user_w, &c->user_w_md, impl->eng, DNNL_MEMORY_ALLOCATE));
    TRY_(dnnl_memory_create(&c->user_wt, &c->user_wt_md, impl->eng, DNNL_MEMORY_ALLOCATE));
    TRY_(dnnl_memory_create(&c->b, &c->b_md, impl->eng, DNNL_MEMORY_ALLOCATE));
    void *p;
    TRY_(dnnl_memory_get_data_handle(c->user_w, &p));
    memcpy(p, w, (size_t)cout * cin * 9 * sizeof(float));
    TRY_(dnnl_memory_get_data_handle(c->user_wt, &p));
    transpose_flip(w, cin, cout, p);
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
    for (int i = 0; i < CONV_SHAPES; i++) cpu_conv_shape_release(&c->shapes[i]);
    for (int i = 0; i < c->nlayouts; i++) dnnl_memory_destroy(c->layouts[i].mem);
    if (c->user_w) dnnl_memory_destroy(c->user_w);
    if (c->user_wt) dnnl_memory_destroy(c->user_wt);
    if (c->b) dnnl_memory_destroy(c->b);
    nst_free(c);
}

/* The dtypes an op may see: both the layer's, or (a bf16 layer) an fp32 image side and bf16
 * features: the network's input kept in fp32. */
static nst_status check_dt(const nst_conv *c, const nst_tensor *img, const nst_tensor *feat, const char *op)
{
    NST_TRY(cpu_check_act(img, op));
    NST_TRY(cpu_check_act(feat, op));
    int want = c->dt == dnnl_bf16 ? NST_BF16 : NST_F32;
    if ((int)feat->dt != want || (img->dt != feat->dt && !(want == NST_BF16 && img->dt == NST_F32)))
        return nst_fail(NST_ERUNTIME, "%s: %s -> %s tensors through a layer prepared for %s", op, img->dt == NST_BF16 ? "bf16" : "fp32",
                        feat->dt == NST_BF16 ? "bf16" : "fp32", want == NST_BF16 ? "bf16" : "fp32");
    return NST_OK;
}

static conv_key key_of(const nst_tensor *img, const nst_tensor *feat)
{
    conv_key k = {img->h, img->w, img->dt == NST_BF16 ? dnnl_bf16 : dnnl_f32, feat->dt == NST_BF16 ? dnnl_bf16 : dnnl_f32, 1, 1};
    return k;
}

nst_status cpu_conv_probe(nst_backend *be)
{
    float w[8 * 8 * 9] = {0}, b[8] = {0};
    nst_conv *c;
    conv_shape *s;
    NST_TRY(cpu_conv_create(be, 8, 8, w, b, &c));
    nst_tensor x = {4, 4, 8, be->act_dtype, NULL};
    nst_status st = cpu_conv_shape(cpu_of(be), c, key_of(&x, &x), &s);
    cpu_conv_destroy(be, c);
    return st;
}

/* Add c's pinned implementations to the list in out ("name, name"), naming the reference's uses. */
static void add_pins(const nst_conv *c, char *out, size_t cap)
{
    for (int d = 0; d < 2; d++)
        for (int i = 0; i < 2; i++)
            for (int f = 0; f < 2; f++) {
                const char *n = c->pin[d][i][f];
                char item[96];
                if (strcmp(n, "ref:any") == 0)
                    snprintf(item, sizeof item, "ref:any for %d->%d %s (exact, slow)", d ? c->cout : c->cin, d ? c->cin : c->cout,
                             d ? "backward" : "forward");
                else
                    snprintf(item, sizeof item, "%s", n);
                if (*n && !strstr(out, item)) {
                    size_t len = strlen(out);
                    snprintf(out + len, cap - len, "%s%s", len ? ", " : "", item);
                }
            }
}

/* Each conv op once on a 3->64 and a 64->64 layer of 16 x 16 positions, in the dtypes a render
 * uses (the network's input in in_dtype), to name the implementations they are pinned to. */
nst_status cpu_conv_survey(nst_backend *be, char *out, size_t cap)
{
    enum { H = 16 };
    static const int ch[2][2] = {{3, 64}, {64, 64}};
    float *w = nst_calloc((size_t)64 * 64 * 9 * sizeof(float), "the convolution survey"), b[64] = {0};
    char *buf = nst_calloc((size_t)2 * H * H * 64 * sizeof(float), "the convolution survey");
    nst_status st = w && buf ? NST_OK : NST_ENOMEM;
    *out = 0;
    for (int k = 0; k < 2 && st == NST_OK; k++) {
        nst_conv *c = NULL;
        st = cpu_conv_create(be, ch[k][0], ch[k][1], w, b, &c);
        nst_tensor x = {H, H, ch[k][0], k ? be->act_dtype : be->in_dtype, buf}, y = {H, H, ch[k][1], be->act_dtype, buf + H * H * 64 * 4};
        if (st == NST_OK) st = cpu_conv_forward(be, c, &x, &y, 1);
        if (st == NST_OK) st = cpu_conv_backward_data(be, c, &y, &x);
        if (st == NST_OK) add_pins(c, out, cap);
        cpu_conv_destroy(be, c);
    }
    nst_free(w), nst_free(buf);
    return st;
}

static nst_status run_fwd(cpu_impl *impl, nst_conv *c, conv_shape *s, const void *x, void *y, int relu)
{
    DNNL_TRY(dnnl_memory_set_data_handle(s->src, (void *)x));
    DNNL_TRY(dnnl_memory_set_data_handle(s->dst, y));
    dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, s->src}, {DNNL_ARG_WEIGHTS, s->wf[relu ? 1 : 0]}, {DNNL_ARG_BIAS, c->b}, {DNNL_ARG_DST, s->dst}};
    DNNL_TRY(dnnl_primitive_execute(s->fwd[relu ? 1 : 0], impl->stream, 4, args));
    DNNL_TRY(dnnl_stream_wait(impl->stream));
    return NST_OK;
}

/* An fp32 input into bf16 features: fp32 math over bands of output rows [r0, r1) (their input
 * rows with one more above and below where the image has them, zero padding where it ends), each
 * band rounded to bf16 into y. A row's values do not depend on the band it falls in. */
static nst_status forward_fp32_input(cpu_impl *impl, nst_conv *c, const nst_tensor *x, nst_tensor *y, int relu)
{
    const int H = x->h, W = x->w;
    size_t row = (size_t)W * c->cout * sizeof(float);
    int rows = row ? (int)(BAND_BYTES / row) : 1;
    if (rows < 1) rows = 1;
    if ((size_t)rows * row > impl->cscratch_cap) {
        nst_free(impl->cscratch);
        impl->cscratch = nst_alloc((size_t)rows * row, "conv band");
        impl->cscratch_cap = impl->cscratch ? (size_t)rows * row : 0;
        if (!impl->cscratch) return NST_ENOMEM;
    }
    for (int r0 = 0; r0 < H; r0 += rows) {
        int r1 = r0 + rows < H ? r0 + rows : H, i0 = r0 > 0 ? r0 - 1 : 0, i1 = r1 < H ? r1 + 1 : H;
        conv_key k = {i1 - i0, W, dnnl_f32, dnnl_f32, r0 == 0, r1 == H};
        conv_shape *s;
        NST_TRY(cpu_conv_shape(impl, c, k, &s));
        NST_TRY(run_fwd(impl, c, s, (const float *)x->data + (size_t)i0 * W * c->cin, impl->cscratch, relu));
        cpu_from_f32((nst_bf16 *)y->data + (size_t)r0 * W * c->cout, impl->cscratch, (size_t)(r1 - r0) * W * c->cout, NST_BF16);
    }
    return NST_OK;
}

nst_status cpu_conv_forward(nst_backend *be, nst_conv *c, const nst_tensor *x, nst_tensor *y, int relu)
{
    cpu_impl *impl = cpu_of(be);
    NST_TRY(check_dt(c, x, y, "conv_forward"));
    if (x->c != c->cin || y->c != c->cout || x->h != y->h || x->w != y->w)
        return nst_fail(NST_ERUNTIME, "conv_forward: shapes %dx%dx%d -> %dx%dx%d do not fit a %d->%d conv", x->h, x->w,
                        x->c, y->h, y->w, y->c, c->cin, c->cout);
    if (x->dt != y->dt) return forward_fp32_input(impl, c, x, y, relu);
    conv_shape *s;
    NST_TRY(cpu_conv_shape(impl, c, key_of(x, y), &s));
    return run_fwd(impl, c, s, x->data, y->data, relu);
}

nst_status cpu_conv_backward_data(nst_backend *be, nst_conv *c, const nst_tensor *dy, nst_tensor *dx)
{
    cpu_impl *impl = cpu_of(be);
    NST_TRY(check_dt(c, dx, dy, "conv_backward_data"));
    if (dx->c != c->cin || dy->c != c->cout || dx->h != dy->h || dx->w != dy->w)
        return nst_fail(NST_ERUNTIME, "conv_backward_data: shapes %dx%dx%d <- %dx%dx%d do not fit a %d->%d conv", dx->h,
                        dx->w, dx->c, dy->h, dy->w, dy->c, c->cin, c->cout);
    conv_shape *s;
    NST_TRY(cpu_conv_shape(impl, c, key_of(dx, dy), &s));
    DNNL_TRY(dnnl_memory_set_data_handle(s->ddst, dy->data));
    DNNL_TRY(dnnl_memory_set_data_handle(s->dsrc, dx->data));
    dnnl_exec_arg_t args[3] = {{DNNL_ARG_SRC, s->ddst}, {DNNL_ARG_WEIGHTS, s->wb}, {DNNL_ARG_DST, s->dsrc}}; /* a forward of dy */
    DNNL_TRY(dnnl_primitive_execute(s->bwd, impl->stream, 3, args));
    DNNL_TRY(dnnl_stream_wait(impl->stream));
    return NST_OK;
}

/* kernels/cpu/gram_cpu.c: Gram matrices and their gradient with oneDNN matmul (fp32).
 *
 *   gram:     G += F^T F          F: M positions x C channels (the region's rows of an NHWC tensor)
 *   backward: dF += F (scale * D)  D symmetric C x C
 * A region that spans whole rows is a contiguous block of the tensor and is used in place;
 * otherwise its rows are gathered into a scratch buffer first. Primitives are cached by shape. */
#include <string.h>

#include "../../util/mem.h"
#include "cpu.h"

#define MM_CACHE 32

struct matmul_entry {
    int kind; /* 0: gram, 1: backward */
    long long m;
    int c;
    dnnl_primitive_t prim;
    dnnl_memory_t a, b, d;
};

void cpu_matmul_cache_free(cpu_impl *impl)
{
    for (int i = 0; i < impl->nmm; i++) {
        matmul_entry *e = &impl->mm[i];
        dnnl_primitive_destroy(e->prim);
        dnnl_memory_destroy(e->a);
        dnnl_memory_destroy(e->b);
        dnnl_memory_destroy(e->d);
    }
    nst_free(impl->mm);
    impl->mm = NULL;
    impl->nmm = 0;
}

static nst_status matmul_get(cpu_impl *impl, int kind, long long m, int c, matmul_entry **out)
{
    for (int i = 0; i < impl->nmm; i++)
        if (impl->mm[i].kind == kind && impl->mm[i].m == m && impl->mm[i].c == c) {
            *out = &impl->mm[i];
            return NST_OK;
        }
    if (!impl->mm) {
        impl->mm = nst_calloc(MM_CACHE * sizeof(matmul_entry), "matmul cache");
        if (!impl->mm) return NST_ENOMEM;
    }
    matmul_entry *e;
    if (impl->nmm < MM_CACHE) {
        e = &impl->mm[impl->nmm++];
    } else {
        e = &impl->mm[impl->mm_next];
        impl->mm_next = (impl->mm_next + 1) % MM_CACHE;
        dnnl_primitive_destroy(e->prim);
        dnnl_memory_destroy(e->a);
        dnnl_memory_destroy(e->b);
        dnnl_memory_destroy(e->d);
    }
    memset(e, 0, sizeof *e);
    dnnl_memory_desc_t amd, bmd, dmd;
    if (kind == 0) { /* A = F^T (C x M, strided view of F), B = F (M x C), D = G (C x C) */
        dnnl_dims_t ad = {c, m}, as = {1, c}, bd = {m, c}, dd = {c, c};
        DNNL_TRY(dnnl_memory_desc_init_by_strides(&amd, 2, ad, dnnl_f32, as));
        DNNL_TRY(dnnl_memory_desc_init_by_tag(&bmd, 2, bd, dnnl_f32, dnnl_ab));
        DNNL_TRY(dnnl_memory_desc_init_by_tag(&dmd, 2, dd, dnnl_f32, dnnl_ab));
    } else { /* A = F (M x C), B = D (C x C), D = dF (M x C) */
        dnnl_dims_t ad = {m, c}, bd = {c, c};
        DNNL_TRY(dnnl_memory_desc_init_by_tag(&amd, 2, ad, dnnl_f32, dnnl_ab));
        DNNL_TRY(dnnl_memory_desc_init_by_tag(&bmd, 2, bd, dnnl_f32, dnnl_ab));
        DNNL_TRY(dnnl_memory_desc_init_by_tag(&dmd, 2, ad, dnnl_f32, dnnl_ab));
    }
    dnnl_matmul_desc_t md;
    dnnl_primitive_attr_t attr;
    dnnl_post_ops_t po;
    dnnl_primitive_desc_t pd;
    DNNL_TRY(dnnl_matmul_desc_init(&md, &amd, &bmd, NULL, &dmd));
    DNNL_TRY(dnnl_primitive_attr_create(&attr));
    DNNL_TRY(dnnl_post_ops_create(&po));
    DNNL_TRY(dnnl_post_ops_append_sum(po, 1.f)); /* accumulate into the destination */
    DNNL_TRY(dnnl_primitive_attr_set_post_ops(attr, po));
    dnnl_status_t st = dnnl_primitive_desc_create(&pd, &md, attr, impl->eng, NULL);
    dnnl_post_ops_destroy(po);
    dnnl_primitive_attr_destroy(attr);
    if (st != dnnl_success) {
        impl->nmm--;
        return cpu_dnnl_fail(st, "matmul primitive", __FILE__, __LINE__);
    }
    st = dnnl_primitive_create(&e->prim, pd);
    dnnl_primitive_desc_destroy(pd);
    if (st == dnnl_success) st = dnnl_memory_create(&e->a, &amd, impl->eng, DNNL_MEMORY_NONE);
    if (st == dnnl_success) st = dnnl_memory_create(&e->b, &bmd, impl->eng, DNNL_MEMORY_NONE);
    if (st == dnnl_success) st = dnnl_memory_create(&e->d, &dmd, impl->eng, DNNL_MEMORY_NONE);
    if (st != dnnl_success) return cpu_dnnl_fail(st, "matmul memories", __FILE__, __LINE__);
    e->kind = kind;
    e->m = m;
    e->c = c;
    *out = e;
    return NST_OK;
}

static nst_status run_matmul(cpu_impl *impl, matmul_entry *e, const void *a, const void *b, void *d)
{
    DNNL_TRY(dnnl_memory_set_data_handle(e->a, (void *)a));
    DNNL_TRY(dnnl_memory_set_data_handle(e->b, (void *)b));
    DNNL_TRY(dnnl_memory_set_data_handle(e->d, d));
    dnnl_exec_arg_t args[3] = {{DNNL_ARG_SRC, e->a}, {DNNL_ARG_WEIGHTS, e->b}, {DNNL_ARG_DST, e->d}};
    DNNL_TRY(dnnl_primitive_execute(e->prim, impl->stream, 3, args));
    DNNL_TRY(dnnl_stream_wait(impl->stream));
    return NST_OK;
}

static nst_status scratch(cpu_impl *impl, size_t floats, float **out)
{
    if (floats > impl->scratch_cap) {
        nst_free(impl->scratch);
        impl->scratch = nst_alloc_array(floats, sizeof(float), "Gram region buffer");
        impl->scratch_cap = impl->scratch ? floats : 0;
        if (!impl->scratch) return NST_ENOMEM;
    }
    *out = impl->scratch;
    return NST_OK;
}

static int whole_rows(const nst_tensor *t, nst_rect r) { return r.x == 0 && r.w == t->w; }

static void gather(const nst_tensor *t, nst_rect r, float *dst)
{
    const float *src = t->data;
#pragma omp parallel for schedule(static)
    for (int y = 0; y < r.h; y++)
        memcpy(dst + (size_t)y * r.w * t->c, src + ((size_t)(r.y + y) * t->w + r.x) * t->c, (size_t)r.w * t->c * sizeof(float));
}

nst_status cpu_gram_accumulate(nst_backend *be, const nst_tensor *f, nst_rect own, float *g)
{
    cpu_impl *impl = cpu_of(be);
    NST_TRY(cpu_check_f32(f, "gram"));
    NST_TRY(cpu_check_region(f, own, "gram"));
    if (nst_rect_empty(own)) return NST_OK;
    long long m = (long long)own.w * own.h;
    const float *fp;
    if (whole_rows(f, own)) {
        fp = (const float *)f->data + (size_t)own.y * f->w * f->c;
    } else {
        float *buf;
        NST_TRY(scratch(impl, (size_t)m * f->c, &buf));
        gather(f, own, buf);
        fp = buf;
    }
    matmul_entry *e;
    NST_TRY(matmul_get(impl, 0, m, f->c, &e));
    return run_matmul(impl, e, fp, fp, g);
}

nst_status cpu_gram_diff(nst_backend *be, const float *g, float g_scale, const float *a, int c, float *d, double *sumsq)
{
    (void)be;
    double s = 0;
    for (int i = 0; i < c; i++) {
        double row = 0;
        for (int j = 0; j < c; j++) {
            float v = g[(size_t)i * c + j] * g_scale - a[(size_t)i * c + j];
            d[(size_t)i * c + j] = v;
            row += (double)v * v;
        }
        s += row;
    }
    *sumsq = s;
    return NST_OK;
}

nst_status cpu_gram_backward(nst_backend *be, const nst_tensor *f, nst_rect seed, const float *d, float scale,
                             nst_tensor *df)
{
    cpu_impl *impl = cpu_of(be);
    NST_TRY(cpu_check_f32(f, "gram_backward"));
    NST_TRY(cpu_check_f32(df, "gram_backward"));
    NST_TRY(cpu_check_region(f, seed, "gram_backward"));
    if (df->h != f->h || df->w != f->w || df->c != f->c)
        return nst_fail(NST_ERUNTIME, "gram_backward: gradient shape differs from the features");
    if (nst_rect_empty(seed)) return NST_OK;
    const int c = f->c;
    const long long m = (long long)seed.w * seed.h;
    const int rows = whole_rows(f, seed);
    /* scratch: [scaled D (c*c)] [gathered F (m*c)] [result (m*c)] when the region is not whole rows */
    float *buf;
    NST_TRY(scratch(impl, (size_t)c * c + (rows ? 0 : 2 * (size_t)m * c), &buf));
    float *ds = buf;
    for (size_t i = 0; i < (size_t)c * c; i++) ds[i] = d[i] * scale;
    matmul_entry *e;
    NST_TRY(matmul_get(impl, 1, m, c, &e));
    if (rows) {
        size_t off = (size_t)seed.y * f->w * c;
        return run_matmul(impl, e, (const float *)f->data + off, ds, (float *)df->data + off);
    }
    float *fin = buf + (size_t)c * c, *res = fin + (size_t)m * c;
    gather(f, seed, fin);
    memset(res, 0, (size_t)m * c * sizeof(float));
    NST_TRY(run_matmul(impl, e, fin, ds, res));
    float *dst = df->data;
#pragma omp parallel for schedule(static)
    for (int y = 0; y < seed.h; y++) {
        float *o = dst + ((size_t)(seed.y + y) * df->w + seed.x) * c;
        const float *r = res + (size_t)y * seed.w * c;
        for (size_t i = 0; i < (size_t)seed.w * c; i++) o[i] += r[i];
    }
    return NST_OK;
}

/* kernels/cpu/gram_cpu.c: Gram matrices and their gradient.
 *
 *   gram:     G += F^T F          F: M positions x C channels (the region's rows of an NHWC tensor)
 *   backward: dF += F (scale * D)  D symmetric C x C
 *
 * The sums are taken in double (OpenBLAS dsyrk on rows converted from fp32): every product of
 * two fp32 values is exact in double, and the rounding of the sum is far below fp32's, so a
 * tiled image's Gram - summed tile by tile and rank by rank in another order - rounds to the same
 * fp32 matrix as the whole image's. Everything else being bitwise the same for a pixel whatever
 * the tiling, tiled renders then equal the whole-image render. The backward is fp32 oneDNN
 * matmul; its rows do not depend on how many rows are computed together.
 * A region that spans whole rows is a contiguous block of the tensor and is used in place;
 * otherwise its rows are gathered into a scratch buffer, in chunks of rows of at most
 * SCRATCH_BYTES, so the scratch stays small whatever the tile size. Primitives are cached by shape. */
#include <cblas.h>
#include <string.h>

#include "../../util/mem.h"
#include "cpu.h"

#define MM_CACHE 32
#define SCRATCH_BYTES (16u << 20)

struct matmul_entry { /* dF += F D for M rows of C channels */
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

static nst_status matmul_get(cpu_impl *impl, long long m, int c, matmul_entry **out)
{
    for (int i = 0; i < impl->nmm; i++)
        if (impl->mm[i].m == m && impl->mm[i].c == c) {
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
    /* A = F (M x C), B = D (C x C), D = dF (M x C) */
    dnnl_memory_desc_t amd, bmd, dmd;
    dnnl_dims_t ad = {m, c}, bd = {c, c};
    DNNL_TRY(dnnl_memory_desc_init_by_tag(&amd, 2, ad, dnnl_f32, dnnl_ab));
    DNNL_TRY(dnnl_memory_desc_init_by_tag(&bmd, 2, bd, dnnl_f32, dnnl_ab));
    DNNL_TRY(dnnl_memory_desc_init_by_tag(&dmd, 2, ad, dnnl_f32, dnnl_ab));
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

/* Rows per chunk for a region of width w, c channels, and `copies` region-sized buffers. */
static int chunk_rows(int w, int c, int copies)
{
    size_t row = (size_t)w * c * sizeof(float) * copies;
    size_t n = row ? SCRATCH_BYTES / row : 1;
    return n < 1 ? 1 : n > (size_t)1 << 20 ? 1 << 20 : (int)n;
}

static nst_status dscratch(cpu_impl *impl, size_t n, double **out)
{
    if (n > impl->dscratch_cap) {
        nst_free(impl->dscratch);
        impl->dscratch = nst_alloc_array(n, sizeof(double), "Gram double rows");
        impl->dscratch_cap = impl->dscratch ? n : 0;
        if (!impl->dscratch) return NST_ENOMEM;
    }
    *out = impl->dscratch;
    return NST_OK;
}

nst_status cpu_gram_accumulate(nst_backend *be, const nst_tensor *f, nst_rect own, double *g)
{
    cpu_impl *impl = cpu_of(be);
    NST_TRY(cpu_check_f32(f, "gram"));
    NST_TRY(cpu_check_region(f, own, "gram"));
    if (nst_rect_empty(own)) return NST_OK;
    const int c = f->c;
    const int rows = chunk_rows(own.w, c, 2); /* doubles: twice the bytes of a float row */
    double *buf;
    NST_TRY(dscratch(impl, (size_t)rows * own.w * c, &buf));
    const float *src = f->data;
    for (int y0 = 0; y0 < own.h; y0 += rows) {
        int n = own.h - y0 < rows ? own.h - y0 : rows;
#pragma omp parallel for schedule(static)
        for (int y = 0; y < n; y++) {
            const float *in = src + ((size_t)(own.y + y0 + y) * f->w + own.x) * c;
            double *out = buf + (size_t)y * own.w * c;
            for (size_t i = 0; i < (size_t)own.w * c; i++) out[i] = in[i];
        }
        cblas_dsyrk(CblasRowMajor, CblasUpper, CblasTrans, c, n * own.w, 1.0, buf, c, 1.0, g, c);
    }
    return NST_OK;
}

nst_status cpu_gram_diff(nst_backend *be, const double *g, const double *g_prev, double g_scale, const float *a, int c,
                         float *d, double *sumsq)
{
    (void)be;
    double s = 0;
    for (int i = 0; i < c; i++) {
        double row = 0;
        for (int j = 0; j < c; j++) {
            size_t u = i <= j ? (size_t)i * c + j : (size_t)j * c + i; /* the upper triangle holds the sums */
            float now = (float)(g[u] * g_scale) - a[(size_t)i * c + j];
            row += (double)now * now;
            d[(size_t)i * c + j] = g_prev ? (float)((2 * g[u] - g_prev[u]) * g_scale) - a[(size_t)i * c + j] : now;
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
    const int rows_ok = whole_rows(f, seed);
    const int rows = rows_ok ? 0 : chunk_rows(seed.w, c, 2);
    /* scratch: [scale * D (c*c)] then, for regions that are not whole rows, [gathered F][result]
     * for one chunk of rows */
    float *buf;
    NST_TRY(scratch(impl, (size_t)c * c + (rows_ok ? 0 : 2 * (size_t)rows * seed.w * c), &buf));
    float *ds = buf;
    for (size_t i = 0; i < (size_t)c * c; i++) ds[i] = d[i] * scale;
    matmul_entry *e;
    if (rows_ok) {
        size_t off = (size_t)seed.y * f->w * c;
        NST_TRY(matmul_get(impl, (long long)seed.w * seed.h, c, &e));
        return run_matmul(impl, e, (const float *)f->data + off, ds, (float *)df->data + off);
    }
    float *fin = buf + (size_t)c * c, *res = fin + (size_t)rows * seed.w * c;
    float *dst = df->data;
    for (int y0 = 0; y0 < seed.h; y0 += rows) {
        nst_rect part = {seed.x, seed.y + y0, seed.w, seed.h - y0 < rows ? seed.h - y0 : rows};
        long long m = (long long)part.w * part.h;
        gather(f, part, fin);
        memset(res, 0, (size_t)m * c * sizeof(float));
        NST_TRY(matmul_get(impl, m, c, &e));
        NST_TRY(run_matmul(impl, e, fin, ds, res));
#pragma omp parallel for schedule(static)
        for (int y = 0; y < part.h; y++) {
            float *o = dst + ((size_t)(part.y + y) * df->w + part.x) * c;
            const float *r = res + (size_t)y * part.w * c;
            for (size_t i = 0; i < (size_t)part.w * c; i++) o[i] += r[i];
        }
    }
    return NST_OK;
}

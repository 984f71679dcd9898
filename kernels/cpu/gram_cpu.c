/* kernels/cpu/gram_cpu.c: the Gram matrix's difference to its target and its gradient.
 *
 *   diff:     D = G / M - A        (the sums G are gram_sums_cpu.c's)
 *   backward: dF += F (scale * D)  F: positions x C channels (a region's rows of an NHWC tensor),
 *                                  D symmetric C x C
 *
 * The backward is a oneDNN matmul (fp32, or bf16 with scale D rounded to bf16 and fp32
 * accumulation) whose rows do not depend on how many rows are computed together. A mask m
 * weights F's rows first (m_p f_p, rounded to the dtype) and the same matmul follows. Scratch stays
 * small whatever the tile: regions that are not whole rows are taken in chunks of rows of at most
 * SCRATCH_BYTES. Primitives are cached by shape. */
#include <string.h>

#include "../../util/mem.h"
#include "cpu.h"

#define MM_CACHE 32
#define SCRATCH_BYTES (16u << 20)

struct matmul_entry { /* dF (+)= F D for M rows of C channels */
    long long m;
    int c, bf;
    dnnl_primitive_t prim;
    dnnl_memory_t a, b, d;
};

static void entry_release(matmul_entry *e)
{
    if (e->prim) dnnl_primitive_destroy(e->prim);
    if (e->a) dnnl_memory_destroy(e->a);
    if (e->b) dnnl_memory_destroy(e->b);
    if (e->d) dnnl_memory_destroy(e->d);
    memset(e, 0, sizeof *e);
}

void cpu_matmul_cache_free(cpu_impl *impl)
{
    for (int i = 0; i < impl->nmm; i++) entry_release(&impl->mm[i]);
    nst_free(impl->mm);
    impl->mm = NULL;
    impl->nmm = 0;
}

/* A = F (M x C), B = D (C x C), dst = dF, all fp32 or all bf16, accumulated (the sum post-op:
 * dst = round(A B + dst), the product in fp32). */
static nst_status matmul_build(cpu_impl *impl, matmul_entry *e, long long m, int c, int bf)
{
    dnnl_memory_desc_t amd, bmd, dmd;
    dnnl_dims_t ad = {m, c}, bd = {c, c};
    dnnl_data_type_t in = bf ? dnnl_bf16 : dnnl_f32;
    DNNL_TRY(dnnl_memory_desc_init_by_tag(&amd, 2, ad, in, dnnl_ab));
    DNNL_TRY(dnnl_memory_desc_init_by_tag(&bmd, 2, bd, in, dnnl_ab));
    DNNL_TRY(dnnl_memory_desc_init_by_tag(&dmd, 2, ad, in, dnnl_ab));
    dnnl_matmul_desc_t md;
    dnnl_primitive_attr_t attr;
    dnnl_post_ops_t po;
    dnnl_primitive_desc_t pd;
    DNNL_TRY(dnnl_matmul_desc_init(&md, &amd, &bmd, NULL, &dmd));
    DNNL_TRY(dnnl_primitive_attr_create(&attr));
    dnnl_status_t st = dnnl_post_ops_create(&po);
    if (st == dnnl_success) st = dnnl_post_ops_append_sum(po, 1.f); /* accumulate into the destination */
    if (st == dnnl_success) st = dnnl_primitive_attr_set_post_ops(attr, po);
    if (st == dnnl_success) st = dnnl_primitive_desc_create(&pd, &md, attr, impl->eng, NULL);
    dnnl_post_ops_destroy(po);
    dnnl_primitive_attr_destroy(attr);
    if (st != dnnl_success) return cpu_dnnl_fail(st, "matmul primitive", __FILE__, __LINE__);
    st = dnnl_primitive_create(&e->prim, pd);
    dnnl_primitive_desc_destroy(pd);
    if (st == dnnl_success) st = dnnl_memory_create(&e->a, &amd, impl->eng, DNNL_MEMORY_NONE);
    if (st == dnnl_success) st = dnnl_memory_create(&e->b, &bmd, impl->eng, DNNL_MEMORY_NONE);
    if (st == dnnl_success) st = dnnl_memory_create(&e->d, &dmd, impl->eng, DNNL_MEMORY_NONE);
    if (st != dnnl_success) return cpu_dnnl_fail(st, "matmul memories", __FILE__, __LINE__);
    e->m = m, e->c = c, e->bf = bf;
    return NST_OK;
}

static nst_status matmul_get(cpu_impl *impl, long long m, int c, int bf, matmul_entry **out)
{
    for (int i = 0; i < impl->nmm; i++)
        if (impl->mm[i].m == m && impl->mm[i].c == c && impl->mm[i].bf == bf) {
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
        entry_release(e);
    }
    nst_status s = matmul_build(impl, e, m, c, bf);
    if (s != NST_OK) {
        entry_release(e); /* an empty entry (m = 0) matches no later call */
        return s;
    }
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

static nst_status scratch(cpu_impl *impl, size_t bytes, void **out)
{
    if (bytes > impl->scratch_cap) {
        nst_free(impl->scratch);
        impl->scratch = nst_alloc(bytes, "Gram region buffer");
        impl->scratch_cap = impl->scratch ? bytes : 0;
        if (!impl->scratch) return NST_ENOMEM;
    }
    *out = impl->scratch;
    return NST_OK;
}

static int whole_rows(const nst_tensor *t, nst_rect r) { return r.x == 0 && r.w == t->w; }

/* the rows of r, packed, and back */
static void gather(const nst_tensor *t, nst_rect r, void *dst)
{
    size_t es = nst_dtype_size(t->dt), row = (size_t)r.w * t->c * es;
#pragma omp parallel for schedule(static)
    for (int y = 0; y < r.h; y++)
        memcpy((char *)dst + (size_t)y * row, (const char *)t->data + ((size_t)(r.y + y) * t->w + r.x) * t->c * es, row);
}

/* the rows of r, each position weighted by the mask (m_p f_p rounded to t's dtype), packed */
static void gather_weighted(const nst_tensor *t, const nst_tensor *m, nst_rect r, void *dst)
{
    const int bf = t->dt == NST_BF16, c = t->c;
#pragma omp parallel for schedule(static)
    for (int y = 0; y < r.h; y++)
        for (int x = 0; x < r.w; x++) {
            size_t at = (size_t)(r.y + y) * t->w + r.x + x, o = ((size_t)y * r.w + x) * c;
            float w = ((const float *)m->data)[at];
            for (int i = 0; i < c; i++) cpu_st(dst, o + i, w * cpu_ld(t->data, at * c + i, bf), bf);
        }
}

static void scatter(const void *src, nst_rect r, nst_tensor *t)
{
    size_t es = nst_dtype_size(t->dt), row = (size_t)r.w * t->c * es;
#pragma omp parallel for schedule(static)
    for (int y = 0; y < r.h; y++)
        memcpy((char *)t->data + ((size_t)(r.y + y) * t->w + r.x) * t->c * es, (const char *)src + (size_t)y * row, row);
}

/* Rows per chunk for a region of width w, c channels, `bytes` per element and a bound. */
static int chunk_rows(int w, int c, size_t bytes, size_t bound)
{
    size_t row = (size_t)w * c * bytes;
    size_t n = row ? bound / row : 1;
    return n < 1 ? 1 : n > (size_t)1 << 20 ? 1 << 20 : (int)n;
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

/* dF += (m F) (scale D) over seed for fp32 or bf16 tensors: one oneDNN matmul per chunk of rows
 * with the sum post-op (the product accumulated in fp32, added to dF and rounded once). Whole
 * rows without a mask are contiguous and updated in place; other regions are gathered (F, or
 * m F, and dF) into scratch, updated there and scattered back, which is the same arithmetic, so
 * a row's result does not depend on which region a call covers. */
static nst_status backward(cpu_impl *impl, const nst_tensor *f, nst_rect seed, const nst_tensor *m, const float *d, float scale,
                           nst_tensor *df)
{
    const int c = f->c, bf = f->dt == NST_BF16;
    const size_t es = nst_dtype_size(f->dt);
    const int rows_ok = whole_rows(f, seed) && !m;
    const int rows = rows_ok ? seed.h : chunk_rows(seed.w, c, 2 * es, SCRATCH_BYTES);
    /* scratch: [scale * D in the dtype (c*c, padded to 64 bytes)] then, for regions that are not
     * whole rows, [gathered F][gathered dF] for one chunk of rows */
    size_t dbytes = ((size_t)c * c * es + 63) / 64 * 64, chunk = rows_ok ? 0 : (size_t)rows * seed.w * c * es;
    char *buf;
    NST_TRY(scratch(impl, dbytes + 2 * chunk, (void **)&buf));
    for (size_t i = 0; i < (size_t)c * c; i++) cpu_st(buf, i, d[i] * scale, bf);
    char *fin = buf + dbytes, *gin = fin + chunk;
    matmul_entry *e;
    if (rows_ok) {
        size_t off = (size_t)seed.y * f->w * c;
        NST_TRY(matmul_get(impl, (long long)seed.w * seed.h, c, bf, &e));
        return run_matmul(impl, e, cpu_at(f->data, off, bf), buf, cpu_at(df->data, off, bf));
    }
    for (int y0 = 0; y0 < seed.h; y0 += rows) {
        nst_rect part = {seed.x, seed.y + y0, seed.w, seed.h - y0 < rows ? seed.h - y0 : rows};
        if (m)
            gather_weighted(f, m, part, fin);
        else
            gather(f, part, fin);
        gather(df, part, gin);
        NST_TRY(matmul_get(impl, (long long)part.w * part.h, c, bf, &e));
        NST_TRY(run_matmul(impl, e, fin, buf, gin));
        scatter(gin, part, df);
    }
    return NST_OK;
}

nst_status cpu_gram_backward(nst_backend *be, const nst_tensor *f, nst_rect seed, const nst_tensor *m, const float *d, float scale,
                             nst_tensor *df)
{
    NST_TRY(cpu_check_same_dt(f, df, "gram_backward"));
    NST_TRY(cpu_check_region(f, seed, "gram_backward"));
    NST_TRY(nst_tensor_check_mask(f, m, "gram_backward"));
    if (df->h != f->h || df->w != f->w || df->c != f->c)
        return nst_fail(NST_ERUNTIME, "gram_backward: gradient shape differs from the features");
    if (nst_rect_empty(seed)) return NST_OK;
    return backward(cpu_of(be), f, seed, m, d, scale, df);
}

/* nst/inputs/style_cache.c: style targets in memory and in HDF5 files (see style_cache.h). */
#include "style_cache.h"

#include <hdf5.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../../io/atomic_file.h"
#include "../../io/h5_util.h"
#include "../../util/log.h"
#include "../../util/mem.h"

#define KEY_MAX 4096

typedef struct entry {
    char key[KEY_MAX];
    nst_style_targets t;
    struct entry *next;
} entry;

struct nst_style_cache {
    char dir[NST_CFG_STR_MAX];
    entry *head;
    int hits, files_read, files_written;
};

nst_status nst_style_cache_open(const char *dir, nst_style_cache **out)
{
    *out = nst_calloc(sizeof **out, "the style cache");
    if (!*out) return NST_ENOMEM;
    snprintf((*out)->dir, sizeof (*out)->dir, "%s", dir ? dir : "");
    return NST_OK;
}

void nst_style_cache_free(nst_style_cache *c)
{
    if (!c) return;
    for (entry *e = c->head, *n; e; e = n) {
        n = e->next;
        nst_style_targets_free(&e->t);
        nst_free(e);
    }
    nst_free(c);
}

void nst_style_cache_counts(const nst_style_cache *c, int *hits, int *files_read, int *files_written)
{
    *hits = c ? c->hits : 0;
    *files_read = c ? c->files_read : 0;
    *files_written = c ? c->files_written : 0;
}

static uint64_t fnv1a(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static void file_of(const nst_style_cache *c, const char *key, char *path, size_t cap)
{
    snprintf(path, cap, "%s/style-%016llx.h5", c->dir, (unsigned long long)fnv1a(key));
}

/* Deep copy of targets (host matrices). */
static nst_status copy_targets(const nst_style_targets *src, nst_style_targets *dst)
{
    memset(dst, 0, sizeof *dst);
    dst->n = src->n;
    for (int k = 0; k < src->n; k++) {
        dst->C[k] = src->C[k];
        dst->normA[k] = src->normA[k];
        dst->A[k] = nst_alloc_array((size_t)src->C[k] * src->C[k], sizeof(float), "cached style targets");
        if (!dst->A[k]) {
            nst_style_targets_free(dst);
            return NST_ENOMEM;
        }
        memcpy(dst->A[k], src->A[k], (size_t)src->C[k] * src->C[k] * sizeof(float));
    }
    return NST_OK;
}

static int read_file(nst_style_cache *c, const char *key, const int *C, int n, nst_style_targets *result)
{
    nst_style_targets tmp, *out = &tmp; /* *result is touched only on success */
    char path[NST_CFG_STR_MAX + 64];
    file_of(c, key, path, sizeof path);
    FILE *probe = fopen(path, "rb");
    if (!probe) return 0;
    fclose(probe);
    nst_h5_quiet();
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) return 0;
    int ok = 0;
    char *stored = nst_alloc(KEY_MAX + 1, "a cache key");
    if (stored && nst_h5_read_str_attr(f, "key", stored, KEY_MAX + 1) && strcmp(stored, key) == 0) {
        memset(out, 0, sizeof *out);
        out->n = n;
        ok = 1;
        hid_t na = H5Aopen(f, "normA", H5P_DEFAULT);
        ok = na >= 0 && H5Aread(na, H5T_NATIVE_DOUBLE, out->normA) >= 0;
        if (na >= 0) H5Aclose(na);
        for (int k = 0; ok && k < n; k++) {
            char name[16];
            snprintf(name, sizeof name, "A%d", k);
            hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
            hid_t sp = d >= 0 ? H5Dget_space(d) : -1;
            hsize_t dims[2] = {0, 0};
            ok = sp >= 0 && H5Sget_simple_extent_ndims(sp) == 2 && H5Sget_simple_extent_dims(sp, dims, NULL) == 2 && dims[0] == (hsize_t)C[k] &&
                 dims[1] == (hsize_t)C[k];
            out->C[k] = C[k];
            if (ok) out->A[k] = nst_alloc_array((size_t)C[k] * C[k], sizeof(float), "cached style targets");
            ok = ok && out->A[k] && H5Dread(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, out->A[k]) >= 0;
            if (sp >= 0) H5Sclose(sp);
            if (d >= 0) H5Dclose(d);
        }
        if (!ok) nst_style_targets_free(out);
    }
    nst_free(stored);
    H5Fclose(f);
    H5Eclear2(H5E_DEFAULT);
    if (ok) *result = tmp;
    return ok;
}

/* Keep a copy in memory (a failure to allocate only loses the cache entry). */
static void remember(nst_style_cache *c, const char *key, const nst_style_targets *t)
{
    entry *e = nst_calloc(sizeof *e, "a style cache entry");
    if (!e || copy_targets(t, &e->t) != NST_OK) {
        nst_free(e);
        nst_fail_clear();
        return;
    }
    snprintf(e->key, sizeof e->key, "%s", key);
    e->next = c->head;
    c->head = e;
}

int nst_style_cache_get(nst_style_cache *c, const char *key, const int *C, int n, nst_style_targets *out)
{
    if (!c) return 0;
    for (entry *e = c->head; e; e = e->next)
        if (strcmp(e->key, key) == 0 && copy_targets(&e->t, out) == NST_OK) {
            c->hits++;
            return 1;
        }
    if (c->dir[0] && read_file(c, key, C, n, out)) {
        c->hits++;
        c->files_read++;
        remember(c, key, out); /* in memory too */
        return 1;
    }
    return 0;
}

static nst_status write_file(const nst_style_cache *c, const char *key, const nst_style_targets *t, const char *path)
{
    nst_atomic_file af;
    NST_TRY(nst_atomic_begin(&af, path, 1));
    nst_h5_quiet();
    hid_t f = H5Fcreate(af.tmp, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    int ok = f >= 0 && nst_h5_write_str_attr(f, "key", key) && nst_h5_write_str_attr(f, "format", "nstbatch-style-targets") &&
             nst_h5_write_int_attr(f, "layers", t->n);
    if (ok) {
        hsize_t n = (hsize_t)t->n;
        hid_t sp = H5Screate_simple(1, &n, NULL);
        hid_t a = sp >= 0 ? H5Acreate2(f, "normA", H5T_IEEE_F64LE, sp, H5P_DEFAULT, H5P_DEFAULT) : -1;
        ok = a >= 0 && H5Awrite(a, H5T_NATIVE_DOUBLE, t->normA) >= 0;
        if (a >= 0) H5Aclose(a);
        if (sp >= 0) H5Sclose(sp);
    }
    for (int k = 0; ok && k < t->n; k++) {
        char name[16];
        snprintf(name, sizeof name, "A%d", k);
        hsize_t dims[2] = {(hsize_t)t->C[k], (hsize_t)t->C[k]};
        hid_t sp = H5Screate_simple(2, dims, NULL);
        hid_t d = sp >= 0 ? H5Dcreate2(f, name, H5T_IEEE_F32LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT) : -1;
        ok = d >= 0 && H5Dwrite(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, t->A[k]) >= 0;
        if (d >= 0) H5Dclose(d);
        if (sp >= 0) H5Sclose(sp);
    }
    if (f >= 0 && H5Fclose(f) < 0) ok = 0;
    if (!ok) {
        char why[200];
        nst_atomic_abort(&af);
        return nst_fail(NST_ERUNTIME, "%s: cannot write style targets: %s", path, nst_h5_reason(why));
    }
    (void)c;
    return nst_atomic_commit(&af);
}

void nst_style_cache_put(nst_style_cache *c, const char *key, const nst_style_targets *t)
{
    if (!c) return;
    remember(c, key, t);
    if (!c->dir[0]) return;
    char path[NST_CFG_STR_MAX + 64];
    file_of(c, key, path, sizeof path);
    if (write_file(c, key, t, path) == NST_OK) {
        c->files_written++;
    } else {
        nst_warn("%s (the run goes on without it)\n", nst_fail_message());
        nst_fail_clear();
    }
}

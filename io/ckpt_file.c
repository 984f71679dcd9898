/* io/ckpt_file.c: checksummed record files for checkpoints (see ckpt_file.h). */
#define _GNU_SOURCE
#include "ckpt_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static const char MAGIC[8] = {'N', 'S', 'T', 'C', 'K', 'P', 'T', '1'};
static const char TRAILER[8] = {'N', 'S', 'T', 'C', 'K', 'E', 'N', 'D'};

/* ---- the hash ------------------------------------------------------------------------------------ */

static inline uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
static const uint64_t P1 = 0x9E3779B185EBCA87ull, P2 = 0xC2B2AE3D27D4EB4Full, P3 = 0x165667B19E3779F9ull;

typedef struct {
    uint64_t v[4];
    unsigned char tail[32];
    size_t ntail;
    uint64_t total;
} hasher;

static void hash_init(hasher *h, uint64_t seed)
{
    h->v[0] = seed + P1 + P2, h->v[1] = seed + P2, h->v[2] = seed, h->v[3] = seed - P1;
    h->ntail = 0;
    h->total = 0;
}

static inline uint64_t round64(uint64_t acc, uint64_t in) { return rotl(acc + in * P2, 31) * P1; }

static void hash_block(hasher *h, const unsigned char *p)
{
    for (int k = 0; k < 4; k++) {
        uint64_t x;
        memcpy(&x, p + 8 * k, 8);
        h->v[k] = round64(h->v[k], x);
    }
}

static void hash_update(hasher *h, const void *data, size_t n)
{
    const unsigned char *p = data;
    h->total += n;
    if (h->ntail) {
        size_t take = 32 - h->ntail < n ? 32 - h->ntail : n;
        memcpy(h->tail + h->ntail, p, take);
        h->ntail += take, p += take, n -= take;
        if (h->ntail < 32) return;
        hash_block(h, h->tail);
        h->ntail = 0;
    }
    for (; n >= 32; p += 32, n -= 32) hash_block(h, p);
    memcpy(h->tail, p, n);
    h->ntail = n;
}

static uint64_t hash_final(const hasher *h)
{
    uint64_t a = rotl(h->v[0], 1) + rotl(h->v[1], 7) + rotl(h->v[2], 12) + rotl(h->v[3], 18);
    for (int k = 0; k < 4; k++) a = (a ^ round64(0, h->v[k])) * P1 + P3;
    a += h->total;
    for (size_t i = 0; i < h->ntail; i++) a = rotl(a ^ (h->tail[i] * P3), 11) * P1;
    a ^= a >> 33, a *= P2, a ^= a >> 29, a *= P3, a ^= a >> 32;
    return a;
}

uint64_t nst_hash64(const void *data, size_t n, uint64_t seed)
{
    hasher h;
    hash_init(&h, seed);
    hash_update(&h, data, n);
    return hash_final(&h);
}

nst_status nst_sync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return nst_fail(NST_ERUNTIME, "%s: cannot open the directory to sync it: %s", dir, strerror(errno));
    int rc = fsync(fd);
    int e = errno;
    close(fd);
    if (rc != 0 && e != EINVAL) return nst_fail(NST_ERUNTIME, "%s: fsync of the directory failed: %s", dir, strerror(e));
    return NST_OK;
}

/* ---- writing --------------------------------------------------------------------------------------- */

struct nst_ckpt_writer {
    FILE *f;
    hasher h;
    char path[4096], tmp[4200];
};

static nst_status put_raw(nst_ckpt_writer *w, const void *data, size_t n)
{
    if (n && fwrite(data, 1, n, w->f) != n)
        return nst_fail(NST_ERUNTIME, "%s: writing the checkpoint failed: %s", w->tmp, strerror(errno));
    hash_update(&w->h, data, n);
    return NST_OK;
}

nst_status nst_ckpt_writer_open(const char *path, nst_ckpt_writer **out)
{
    *out = NULL;
    nst_ckpt_writer *w = calloc(1, sizeof *w);
    if (!w) return nst_fail(NST_ENOMEM, "out of memory opening a checkpoint file");
    if (strlen(path) >= sizeof w->path) {
        free(w);
        return nst_fail(NST_EINPUT, "%s: checkpoint path too long", path);
    }
    strcpy(w->path, path);
    snprintf(w->tmp, sizeof w->tmp, "%s.tmp-%ld", path, (long)getpid());
    w->f = fopen(w->tmp, "wbe");
    if (!w->f) {
        nst_status s = nst_fail(NST_ERUNTIME, "%s: cannot create the checkpoint file: %s", w->tmp, strerror(errno));
        free(w);
        return s;
    }
    setvbuf(w->f, NULL, _IOFBF, 1 << 20);
    hash_init(&w->h, 0);
    nst_status s = put_raw(w, MAGIC, sizeof MAGIC);
    if (s != NST_OK) {
        nst_ckpt_writer_abort(w);
        return s;
    }
    *out = w;
    return NST_OK;
}

nst_status nst_ckpt_put(nst_ckpt_writer *w, const char *name, const void *data, size_t bytes)
{
    static const unsigned char zeros[8] = {0};
    uint32_t nl = (uint32_t)strlen(name);
    uint64_t nb = bytes;
    if (nl == 0 || nl > 256) return nst_fail(NST_ERUNTIME, "%s: bad checkpoint record name '%s'", w->tmp, name);
    NST_TRY(put_raw(w, &nl, sizeof nl));
    NST_TRY(put_raw(w, name, nl));
    NST_TRY(put_raw(w, zeros, (8 - w->h.total % 8) % 8)); /* the count and the data 8-byte aligned */
    NST_TRY(put_raw(w, &nb, sizeof nb));
    NST_TRY(put_raw(w, data, bytes));
    return put_raw(w, zeros, (8 - w->h.total % 8) % 8);
}

nst_status nst_ckpt_writer_commit(nst_ckpt_writer *w)
{
    uint64_t sum = 0;
    nst_status s = put_raw(w, TRAILER, sizeof TRAILER);
    if (s == NST_OK) {
        sum = hash_final(&w->h);
        if (fwrite(&sum, sizeof sum, 1, w->f) != 1) s = nst_fail(NST_ERUNTIME, "%s: writing the checkpoint failed: %s", w->tmp, strerror(errno));
    }
    if (s == NST_OK && fflush(w->f) != 0) s = nst_fail(NST_ERUNTIME, "%s: writing the checkpoint failed: %s", w->tmp, strerror(errno));
    if (s == NST_OK && fsync(fileno(w->f)) != 0) s = nst_fail(NST_ERUNTIME, "%s: fsync failed: %s", w->tmp, strerror(errno));
    if (fclose(w->f) != 0 && s == NST_OK) s = nst_fail(NST_ERUNTIME, "%s: closing the checkpoint failed: %s", w->tmp, strerror(errno));
    w->f = NULL;
    if (s == NST_OK && rename(w->tmp, w->path) != 0)
        s = nst_fail(NST_ERUNTIME, "%s: cannot rename %s to it: %s", w->path, w->tmp, strerror(errno));
    if (s != NST_OK) unlink(w->tmp);
    free(w);
    return s;
}

void nst_ckpt_writer_abort(nst_ckpt_writer *w)
{
    if (!w) return;
    if (w->f) fclose(w->f);
    unlink(w->tmp);
    free(w);
}

/* ---- reading --------------------------------------------------------------------------------------- */

typedef struct {
    const char *name;
    uint32_t nlen;
    const unsigned char *data;
    uint64_t bytes;
} record;

struct nst_ckpt_reader {
    char path[4096];
    unsigned char *map;
    size_t size;
    record *rec;
    int nrec;
};

static nst_status corrupt(const char *path, const char *what)
{
    return nst_fail(NST_EINPUT, "%s: not a complete nstbatch checkpoint file (%s); remove the checkpoint or start over with --restart", path, what);
}

nst_status nst_ckpt_reader_open(const char *path, nst_ckpt_reader **out)
{
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return nst_fail(NST_EINPUT, "%s: cannot open the checkpoint file: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        close(fd);
        return nst_fail(NST_ERUNTIME, "%s: stat failed: %s", path, strerror(errno));
    }
    size_t size = (size_t)st.st_size;
    if (size < sizeof MAGIC + sizeof TRAILER + 8) {
        close(fd);
        return corrupt(path, "too short");
    }
    void *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED) return nst_fail(NST_ERUNTIME, "%s: mmap failed: %s", path, strerror(errno));
    nst_ckpt_reader *r = calloc(1, sizeof *r);
    if (!r) {
        munmap(map, size);
        return nst_fail(NST_ENOMEM, "out of memory reading a checkpoint");
    }
    snprintf(r->path, sizeof r->path, "%s", path);
    r->map = map, r->size = size;
    const unsigned char *p = map;
    nst_status s = NST_OK;
    uint64_t sum;
    memcpy(&sum, p + size - 8, 8);
    if (memcmp(p, MAGIC, sizeof MAGIC) != 0)
        s = corrupt(path, "bad magic");
    else if (memcmp(p + size - 8 - sizeof TRAILER, TRAILER, sizeof TRAILER) != 0)
        s = corrupt(path, "no end marker: the write did not finish");
    else if (nst_hash64(p, size - 8, 0) != sum)
        s = corrupt(path, "checksum mismatch");
    size_t off = sizeof MAGIC, end = size - 8 - sizeof TRAILER;
    while (s == NST_OK && off < end) {
        uint32_t nl;
        uint64_t nb;
        if (end - off < 4) { s = corrupt(path, "truncated record"); break; }
        memcpy(&nl, p + off, 4), off += 4;
        if (nl == 0 || nl > 256 || end - off < (size_t)nl + 8) { s = corrupt(path, "bad record name"); break; }
        const char *name = (const char *)p + off;
        off += nl;
        off += (8 - off % 8) % 8;
        if (end - off < 8) { s = corrupt(path, "truncated record"); break; }
        memcpy(&nb, p + off, 8), off += 8;
        if (nb > end - off) { s = corrupt(path, "record past the end"); break; }
        record *nr = realloc(r->rec, sizeof(record) * (size_t)(r->nrec + 1));
        if (!nr) { s = nst_fail(NST_ENOMEM, "out of memory reading a checkpoint"); break; }
        r->rec = nr;
        r->rec[r->nrec++] = (record){name, nl, p + off, nb};
        off += nb;
        off += (8 - off % 8) % 8;
    }
    if (s != NST_OK) {
        nst_ckpt_reader_close(r);
        return s;
    }
    *out = r;
    return NST_OK;
}

const void *nst_ckpt_find(const nst_ckpt_reader *r, const char *name, size_t *bytes)
{
    size_t nl = strlen(name);
    for (int i = 0; i < r->nrec; i++)
        if (r->rec[i].nlen == nl && memcmp(r->rec[i].name, name, nl) == 0) {
            *bytes = r->rec[i].bytes;
            return r->rec[i].data;
        }
    nst_fail(NST_EINPUT, "%s: the checkpoint has no record '%s'", r->path, name);
    return NULL;
}

nst_status nst_ckpt_get(const nst_ckpt_reader *r, const char *name, void *dst, size_t bytes)
{
    size_t n;
    const void *p = nst_ckpt_find(r, name, &n);
    if (!p) return NST_EINPUT;
    if (n != bytes)
        return nst_fail(NST_EINPUT, "%s: checkpoint record '%s' holds %zu bytes, this run expects %zu (a different tiling?)", r->path, name, n, bytes);
    memcpy(dst, p, bytes);
    return NST_OK;
}

void nst_ckpt_reader_close(nst_ckpt_reader *r)
{
    if (!r) return;
    if (r->map) munmap(r->map, r->size);
    free(r->rec);
    free(r);
}

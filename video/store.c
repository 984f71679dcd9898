/* video/store.c: the work directory of a clip render (see store.h). */
#include "store.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../io/atomic_file.h"
#include "../io/ckpt_file.h"
#include "../util/mem.h"

#define STATE_MAGIC "NSTVIDF1"

static void path_of(const nst_clip_store *s, const char *kind, long long r, const char *ext, char *out, size_t cap)
{
    snprintf(out, cap, "%s/%s_%08lld.%s", s->dir, kind, r, ext);
}

static nst_status read_key(const char *path, char *buf, size_t cap, int *found)
{
    FILE *f = fopen(path, "r");
    *found = f != NULL;
    if (!f) return errno == ENOENT ? NST_OK : nst_fail(NST_ERUNTIME, "%s: cannot read: %s", path, strerror(errno));
    size_t n = fread(buf, 1, cap - 1, f);
    buf[n] = 0;
    fclose(f);
    return NST_OK;
}

nst_status nst_clip_store_open(nst_clip_store *s, const char *dir, const char *key, int restart)
{
    snprintf(s->dir, sizeof s->dir, "%s", dir);
    struct stat st;
    if (restart && stat(dir, &st) == 0 && nst_remove_tree(dir) != 0)
        return nst_fail(NST_ERUNTIME, "video.work %s: cannot remove it for --restart: %s", dir, strerror(errno));
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return nst_fail(NST_EINPUT, "video.work %s: cannot create the directory: %s (set video.work to a writable directory)", dir,
                        strerror(errno));
    char kpath[4200], have[4096];
    int found;
    snprintf(kpath, sizeof kpath, "%s/clip.key", dir);
    NST_TRY(read_key(kpath, have, sizeof have, &found));
    if (!found) {
        char text[4200];
        snprintf(text, sizeof text, "%s\n", key);
        return nst_atomic_write_text(kpath, text);
    }
    have[strcspn(have, "\n")] = 0;
    if (strcmp(have, key) != 0)
        return nst_fail(NST_EINPUT,
                        "video.work %s holds the frames of another render (%s; this one is %s): remove the directory, set "
                        "video.work elsewhere, or run with --restart",
                        dir, have, key);
    return NST_OK;
}

int nst_clip_store_done(const nst_clip_store *s, long long r)
{
    char p[4200];
    path_of(s, "frame", r, "png", p, sizeof p);
    return access(p, F_OK) == 0;
}

/* A pass's state file: pass 1's is the plain state_NNNNNNNN.f32. */
static void state_path(const nst_clip_store *s, int pass, long long r, char *out, size_t cap)
{
    char kind[32];
    snprintf(kind, sizeof kind, pass > 1 ? "state_p%d" : "state", pass);
    path_of(s, kind, r, "f32", out, cap);
}

/* The float result with a header: magic, width, height, frame, and a checksum of the pixels. */
static nst_status put_state(const nst_clip_store *s, int pass, long long r, const nst_image *img)
{
    char p[4200];
    state_path(s, pass, r, p, sizeof p);
    nst_atomic_file af;
    NST_TRY(nst_atomic_begin(&af, p, 1));
    const size_t n = (size_t)img->w * img->h * 3;
    int64_t head[4] = {img->w, img->h, r, (int64_t)nst_hash64(img->px, n * sizeof(float), 0)};
    FILE *f = fopen(af.tmp, "wb");
    int ok = f && fwrite(STATE_MAGIC, 1, 8, f) == 8 && fwrite(head, sizeof head, 1, f) == 1 && fwrite(img->px, sizeof(float), n, f) == n;
    int e = errno;
    if (f && fclose(f) != 0) ok = 0, e = errno;
    if (!ok) {
        nst_atomic_abort(&af);
        return nst_fail(NST_ERUNTIME, "%s: write error: %s", p, strerror(e));
    }
    return nst_atomic_commit(&af);
}

nst_status nst_clip_store_put(const nst_clip_store *s, long long r, const nst_image *result)
{
    NST_TRY(put_state(s, 1, r, result));
    return nst_clip_store_put_frame(s, r, result);
}

nst_status nst_clip_store_put_frame(const nst_clip_store *s, long long r, const nst_image *result)
{
    char p[4200];
    path_of(s, "frame", r, "png", p, sizeof p);
    return nst_image_write(p, result, 16, 1, NULL);
}

nst_status nst_clip_store_put_pass(const nst_clip_store *s, int pass, long long r, const nst_image *result)
{
    return put_state(s, pass, r, result);
}

int nst_clip_store_has_pass(const nst_clip_store *s, int pass, long long r)
{
    char p[4200];
    state_path(s, pass, r, p, sizeof p);
    return access(p, F_OK) == 0;
}

nst_status nst_clip_store_put_inputs(const nst_clip_store *s, long long r, const nst_image *content, const nst_flow *fwd, const nst_flow *bwd)
{
    char p[4200];
    path_of(s, "content", r, "png", p, sizeof p);
    NST_TRY(nst_image_write(p, content, 16, 1, NULL));
    if (!fwd) return NST_OK; /* a unit's first frame has no earlier frame */
    path_of(s, "fwd", r, "flo", p, sizeof p);
    NST_TRY(nst_flo_write(p, fwd));
    path_of(s, "bwd", r, "flo", p, sizeof p);
    return nst_flo_write(p, bwd);
}

nst_status nst_clip_store_inputs(const nst_clip_store *s, long long r, int w, int h, nst_image *content, nst_flow *fwd, nst_flow *bwd)
{
    char p[4200];
    nst_read_limits lim = nst_default_limits(1e6);
    path_of(s, "content", r, "png", p, sizeof p);
    if (content) NST_TRY(nst_image_read(p, &lim, content, NULL));
    if (!fwd) return NST_OK;
    path_of(s, "fwd", r, "flo", p, sizeof p);
    NST_TRY(nst_flo_read(p, w, h, 0, fwd));
    path_of(s, "bwd", r, "flo", p, sizeof p);
    return nst_flo_read(p, w, h, 0, bwd);
}

void nst_clip_store_drop_pass(const nst_clip_store *s, int passes, long long r)
{
    char p[4200];
    for (int k = 1; k <= passes; k++) {
        state_path(s, k, r, p, sizeof p);
        unlink(p);
    }
    static const char *const kinds[3][2] = {{"content", "png"}, {"fwd", "flo"}, {"bwd", "flo"}};
    for (int k = 0; k < 3; k++) {
        path_of(s, kinds[k][0], r, kinds[k][1], p, sizeof p);
        unlink(p);
    }
}

nst_status nst_clip_store_frame(const nst_clip_store *s, long long r, nst_image *out)
{
    char p[4200];
    path_of(s, "frame", r, "png", p, sizeof p);
    nst_read_limits lim = nst_default_limits(1e6);
    return nst_image_read(p, &lim, out, NULL);
}

nst_status nst_clip_store_state(const nst_clip_store *s, long long r, int w, int h, nst_image *out)
{
    return nst_clip_store_pass(s, 1, r, w, h, out);
}

nst_status nst_clip_store_pass(const nst_clip_store *s, int pass, long long r, int w, int h, nst_image *out)
{
    char p[4200], magic[8];
    int64_t head[4];
    state_path(s, pass, r, p, sizeof p);
    FILE *f = fopen(p, "rb");
    if (!f)
        return nst_fail(NST_EINPUT, "%s: the state of a finished frame is missing (%s): remove video.work's directory or run with --restart",
                        p, strerror(errno));
    nst_status st = nst_image_alloc(out, w, h);
    const size_t n = (size_t)w * h * 3;
    int ok = st == NST_OK && fread(magic, 1, 8, f) == 8 && memcmp(magic, STATE_MAGIC, 8) == 0 && fread(head, sizeof head, 1, f) == 1 &&
             head[0] == w && head[1] == h && head[2] == r && fread(out->px, sizeof(float), n, f) == n &&
             (uint64_t)head[3] == nst_hash64(out->px, n * sizeof(float), 0);
    fclose(f);
    if (st != NST_OK) return st;
    if (!ok) {
        nst_image_free(out);
        return nst_fail(NST_EINPUT, "%s: not the %dx%d state of frame %lld, or damaged: remove video.work's directory or run with --restart",
                        p, w, h, r);
    }
    return NST_OK;
}

void nst_clip_store_drop_state(const nst_clip_store *s, long long r)
{
    char p[4200];
    state_path(s, 1, r, p, sizeof p);
    unlink(p);
}

nst_status nst_clip_store_remove(const nst_clip_store *s)
{
    if (nst_remove_tree(s->dir) != 0 && errno != ENOENT)
        return nst_fail(NST_ERUNTIME, "video.work %s: cannot remove it: %s", s->dir, strerror(errno));
    return NST_OK;
}

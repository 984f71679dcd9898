/* io/conv_choices.c: the timed convolution choices' file (io/conv_choices.h): parse, look up,
 * merge and write it. */
#include "conv_choices.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "atomic_file.h"

#define FORM "'device TEXT', or 'forward|backward-data CIN COUT H W algo A math M ms T'"

static const char *dir_name(int dir) { return dir == NST_CONV_FWD ? "forward" : "backward-data"; }

void nst_conv_choices_free(nst_conv_choices *t)
{
    free(t->v);
    t->v = NULL;
    t->n = t->cap = 0;
}

static int same_key(const nst_conv_choice *a, const char *device, int dir, int cin, int cout, int h, int w)
{
    return a->dir == dir && a->cin == cin && a->cout == cout && a->h == h && a->w == w && strcmp(a->device, device) == 0;
}

const nst_conv_choice *nst_conv_choices_find(const nst_conv_choices *t, const char *device, int dir, int cin, int cout, int h,
                                             int w)
{
    for (int i = 0; i < t->n; i++)
        if (same_key(&t->v[i], device, dir, cin, cout, h, w)) return &t->v[i];
    return NULL;
}

nst_status nst_conv_choices_put(nst_conv_choices *t, const nst_conv_choice *c)
{
    nst_conv_choice *old = (nst_conv_choice *)nst_conv_choices_find(t, c->device, c->dir, c->cin, c->cout, c->h, c->w);
    if (old) {
        *old = *c;
        return NST_OK;
    }
    if (t->n == t->cap) {
        int cap = t->cap ? 2 * t->cap : 32;
        nst_conv_choice *v = realloc(t->v, (size_t)cap * sizeof *v);
        if (!v) return nst_fail(NST_ENOMEM, "out of host memory for the convolution choices (%d of them)", cap);
        t->v = v, t->cap = cap;
    }
    t->v[t->n++] = *c;
    return NST_OK;
}

/* One choice line after its direction word; 1 if it is well formed and in range. */
static int parse_choice(const char *rest, nst_conv_choice *c)
{
    int used = -1;
    if (sscanf(rest, " %d %d %d %d algo %d math %d ms %lf %n", &c->cin, &c->cout, &c->h, &c->w, &c->algo, &c->math, &c->ms, &used) != 7 ||
        used < 0 || rest[used] != '\0')
        return 0;
    const int big = 1 << 24;
    return c->cin > 0 && c->cin <= big && c->cout > 0 && c->cout <= big && c->h > 0 && c->h <= big && c->w > 0 && c->w <= big &&
           c->algo >= 0 && c->algo < 64 && c->math >= 0 && c->math < 16 && isfinite(c->ms) && c->ms >= 0;
}

/* One line (no newline, trailing blanks stripped); *device is the section it is in. */
static nst_status parse_line(nst_conv_choices *t, char *line, char *device, const char *path, int lineno)
{
    char *s = line + strspn(line, " \t");
    if (*s == '\0' || *s == '#') return NST_OK;
    if (strncmp(s, "device ", 7) == 0) {
        const char *d = s + 7 + strspn(s + 7, " \t");
        if (*d && strlen(d) < NST_CONV_DEVICE_MAX) {
            snprintf(device, NST_CONV_DEVICE_MAX, "%s", d);
            return NST_OK;
        }
    } else {
        nst_conv_choice c;
        memset(&c, 0, sizeof c);
        const size_t fl = strlen("forward"), bl = strlen("backward-data");
        int ok = 0;
        if (strncmp(s, "forward ", fl + 1) == 0) c.dir = NST_CONV_FWD, ok = parse_choice(s + fl, &c);
        else if (strncmp(s, "backward-data ", bl + 1) == 0) c.dir = NST_CONV_BWD_DATA, ok = parse_choice(s + bl, &c);
        if (ok && *device) {
            snprintf(c.device, sizeof c.device, "%s", device);
            return nst_conv_choices_put(t, &c);
        }
    }
    return nst_fail(NST_EINPUT, "%s line %d: expected %s, after a device line; nstbatch writes this file: delete it to time the convolutions again",
                    path, lineno, FORM);
}

nst_status nst_conv_choices_load(nst_conv_choices *t, const char *path)
{
    nst_conv_choices_free(t);
    FILE *f = fopen(path, "r");
    if (!f) {
        if (errno == ENOENT) return NST_OK;
        return nst_fail(NST_EINPUT, "%s: cannot read it (%s): gpu.conv_choices must name a readable file, or one to be made", path,
                        strerror(errno));
    }
    char line[512], device[NST_CONV_DEVICE_MAX] = "";
    nst_status s = NST_OK;
    for (int lineno = 1; s == NST_OK && fgets(line, sizeof line, f); lineno++) {
        size_t n = strlen(line);
        if (n == sizeof line - 1 && line[n - 1] != '\n') {
            s = nst_fail(NST_EINPUT, "%s line %d: longer than %zu characters: expected %s; nstbatch writes this file: delete it to time the convolutions again",
                         path, lineno, sizeof line - 2, FORM);
            break;
        }
        while (n && (line[n - 1] == '\n' || line[n - 1] == '\r' || line[n - 1] == ' ' || line[n - 1] == '\t')) line[--n] = '\0';
        s = parse_line(t, line, device, path, lineno);
    }
    if (s == NST_OK && ferror(f)) s = nst_fail(NST_ERUNTIME, "%s: read error", path);
    fclose(f);
    if (s != NST_OK) nst_conv_choices_free(t);
    return s;
}

/* Append the lines of one device's section to buf (size cap, *len used). */
static int put_section(char *buf, size_t cap, size_t *len, const nst_conv_choices *t, const char *device)
{
    int w = snprintf(buf + *len, cap - *len, "device %s\n", device);
    if (w < 0 || (size_t)w >= cap - *len) return 0;
    *len += (size_t)w;
    for (int i = 0; i < t->n; i++) {
        const nst_conv_choice *c = &t->v[i];
        if (strcmp(c->device, device) != 0) continue;
        w = snprintf(buf + *len, cap - *len, "%s %d %d %d %d algo %d math %d ms %.4f\n", dir_name(c->dir), c->cin, c->cout, c->h, c->w,
                     c->algo, c->math, c->ms);
        if (w < 0 || (size_t)w >= cap - *len) return 0;
        *len += (size_t)w;
    }
    return 1;
}

/* Merge and write, the caller holding the lock. */
static nst_status save_locked(const nst_conv_choices *t, const char *device, const char *path)
{
    nst_conv_choices all = {0};
    NST_TRY(nst_conv_choices_load(&all, path)); /* what the file holds now: other devices' sections, another rank's lines */
    nst_status s = NST_OK;
    for (int i = 0; s == NST_OK && i < t->n; i++)
        if (strcmp(t->v[i].device, device) == 0) s = nst_conv_choices_put(&all, &t->v[i]);
    const size_t cap = 4096 + (size_t)all.n * (NST_CONV_DEVICE_MAX + 96);
    char *buf = s == NST_OK ? malloc(cap) : NULL;
    if (s == NST_OK && !buf) s = nst_fail(NST_ENOMEM, "out of host memory writing %s", path);
    if (s == NST_OK) {
        size_t len = (size_t)snprintf(buf, cap, "# nstbatch: convolution algorithms chosen by timing (gpu.conv_algorithms = timed),\n"
                                                "# per device and libraries; delete the file to time them again.\n");
        int ok = 1;
        for (int i = 0; ok && i < all.n; i++) { /* each device's section once, in first-seen order */
            int first = 1;
            for (int j = 0; first && j < i; j++) first = strcmp(all.v[j].device, all.v[i].device) != 0;
            if (first) ok = put_section(buf, cap, &len, &all, all.v[i].device);
        }
        s = ok ? nst_atomic_write_text(path, buf) : nst_fail(NST_ERUNTIME, "%s: the choices did not fit the text buffer", path);
    }
    free(buf);
    nst_conv_choices_free(&all);
    return s;
}

nst_status nst_conv_choices_save(const nst_conv_choices *t, const char *device, const char *path)
{
    char lock[4200];
    snprintf(lock, sizeof lock, "%s.lock", path);
    int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return nst_fail(NST_ERUNTIME, "%s: cannot open it to take turns writing %s (%s)", lock, path, strerror(errno));
    nst_status s = NST_OK;
    while (flock(fd, LOCK_EX) != 0)
        if (errno != EINTR) {
            s = nst_fail(NST_ERUNTIME, "%s: cannot lock it to take turns writing %s (%s)", lock, path, strerror(errno));
            break;
        }
    if (s == NST_OK) s = save_locked(t, device, path);
    close(fd); /* (releases the lock) */
    return s;
}

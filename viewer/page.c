/* viewer/page.c: nst_viewer_write (page.h): the viewer page beside a Deep Zoom output. The
 * assets are copied first and the page itself written last, so that OUT.html existing means the
 * rest is there (nstbatch-view writes a page only when OUT.html is missing). */
#include "page.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../io/atomic_file.h"
#include "assets.h"
#include "http.h"
#include "view_json.h"

#define TEMPLATE_MAX (1 << 20)
/* what the page template says where the asset folder's name goes */
#define ASSETS_MARK "@ASSETS@"

typedef struct {
    const nst_viewer_page *page;
    const char *image, *content; /* file names, beside the page */
    const char *html;            /* the page template */
    const char *assets_url;      /* OUT_viewer, URL-encoded */
} writing;

typedef int (*writer_fn)(FILE *f, const writing *w);

/* path written through a temporary file renamed into place (io/atomic_file.h) */
static nst_status write_atomically(const char *path, writer_fn fn, const writing *w)
{
    nst_atomic_file af;
    NST_TRY(nst_atomic_begin(&af, path, 1));
    FILE *f = fopen(af.tmp, "w");
    if (!f) {
        int e = errno;
        nst_atomic_abort(&af);
        return nst_fail(NST_ERUNTIME, "%s: cannot write %s: %s", path, af.tmp, strerror(e));
    }
    int bad = fn(f, w) != 0 || ferror(f);
    int e = errno;
    if (fclose(f) != 0 && !bad) bad = 1, e = errno;
    if (bad) {
        nst_atomic_abort(&af);
        return nst_fail(NST_ERUNTIME, "%s: write error: %s (is the disk full?)", path, strerror(e));
    }
    return nst_atomic_commit(&af);
}

static int write_json(FILE *f, const writing *w)
{
    return nst_viewer_json_write(f, w->page, w->image, w->content);
}

/* the template with every ASSETS_MARK replaced by the asset folder's URL */
static int write_html(FILE *f, const writing *w)
{
    const char *t = w->html, *m;
    while ((m = strstr(t, ASSETS_MARK))) {
        fwrite(t, 1, (size_t)(m - t), f);
        fputs(w->assets_url, f);
        t = m + strlen(ASSETS_MARK);
    }
    fputs(t, f);
    return ferror(f) ? -1 : 0;
}

static nst_status read_template(const char *assets, char **text)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/web/viewer.html", assets);
    FILE *f = fopen(path, "rb");
    if (!f) return nst_fail(NST_ERUNTIME, "%s: cannot read the page template: %s", path, strerror(errno));
    char *buf = malloc(TEMPLATE_MAX + 1);
    size_t n = buf ? fread(buf, 1, TEMPLATE_MAX, f) : 0;
    int bad = !buf || ferror(f) || !feof(f);
    fclose(f);
    if (bad) {
        free(buf);
        return buf ? nst_fail(NST_ERUNTIME, "%s: cannot read the page template (over 1 MiB?)", path)
                   : nst_fail(NST_ENOMEM, "%s: out of memory", path);
    }
    buf[n] = '\0';
    *text = buf;
    return NST_OK;
}

/* The folder of path, resolved ("." for a bare name); -1 if it does not exist. */
static int real_dir(const char *path, char *out)
{
    char dir[4096];
    const char *slash = strrchr(path, '/');
    if (!slash) snprintf(dir, sizeof dir, ".");
    else if (slash == path) snprintf(dir, sizeof dir, "/");
    else snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    return realpath(dir, out) ? 0 : -1;
}

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

static nst_status check_page(const nst_viewer_page *p, char *stem, size_t cap)
{
    if (!p || !p->image_dzi || !*p->image_dzi) return nst_fail(NST_EINPUT, "viewer page: no image .dzi given");
    size_t n = strlen(p->image_dzi);
    if (n < 5 || strcmp(p->image_dzi + n - 4, ".dzi") != 0 || p->image_dzi[n - 5] == '/')
        return nst_fail(NST_EINPUT, "%s: the viewer page needs a Deep Zoom image named NAME.dzi", p->image_dzi);
    if (n - 4 + 16 >= cap) return nst_fail(NST_EINPUT, "%s: path too long", p->image_dzi);
    snprintf(stem, cap, "%.*s", (int)(n - 4), p->image_dzi);
    if (p->width <= 0 || p->height <= 0)
        return nst_fail(NST_EINPUT, "%s: the viewer page needs the image's size (got %dx%d)", p->image_dzi, p->width,
                        p->height);
    char dir[PATH_MAX], cdir[PATH_MAX];
    if (real_dir(p->image_dzi, dir) != 0)
        return nst_fail(NST_EINPUT, "%s: its folder does not exist: %s", p->image_dzi, strerror(errno));
    if (p->content_dzi) {
        if (real_dir(p->content_dzi, cdir) != 0 || strcmp(dir, cdir) != 0)
            return nst_fail(NST_EINPUT, "%s: the content image must be in the folder of %s (the page is served from there)",
                            p->content_dzi, p->image_dzi);
    }
    return NST_OK;
}

nst_status nst_viewer_write(const nst_viewer_page *p)
{
    char stem[4096], assets[4096], path[4200], url[4096], folder[4200];
    NST_TRY(check_page(p, stem, sizeof stem));
    NST_TRY(nst_viewer_assets(assets, sizeof assets));
    char *html = NULL;
    NST_TRY(read_template(assets, &html));
    snprintf(folder, sizeof folder, "%s_viewer", stem);
    nst_http_url_encode(base_name(folder), url, sizeof url);
    writing w = {p, base_name(p->image_dzi), p->content_dzi ? base_name(p->content_dzi) : NULL, html, url};
    nst_status s = nst_viewer_copy_assets(assets, folder);
    if (s == NST_OK) {
        snprintf(path, sizeof path, "%s.view.json", stem);
        s = write_atomically(path, write_json, &w);
    }
    if (s == NST_OK) {
        snprintf(path, sizeof path, "%s.html", stem);
        s = write_atomically(path, write_html, &w);
    }
    free(html);
    return s;
}

/* viewer/page.h: the viewer page written beside a Deep Zoom output (docs: docs/VIEWER.md).
 *
 * Beside OUT.dzi (and OUT_content.dzi when the content is shown for comparison) it writes
 * OUT.html (the page), OUT.view.json (what the page shows: the image names, size, the run's
 * configuration and losses) and OUT_viewer/ (the page's script and style, and OpenSeadragon).
 * The page needs no network beyond that folder; nstbatch-view serves it. */
#ifndef NST_VIEWER_PAGE_H
#define NST_VIEWER_PAGE_H

#include <stddef.h>

#include "../util/status.h"

typedef struct {
    double total, content, style, tv;
} nst_viewer_loss;

typedef struct {
    const char *image_dzi;   /* path of the stylised .dzi (the page goes beside it) */
    const char *content_dzi; /* path of the content .dzi (in the same folder), or NULL */
    int width, height;       /* of the image, in pixels */
    const char *config_text; /* the resolved INI, may be NULL */
    const char *version;     /* nstbatch's version string (NULL: "unknown") */
    int have_loss;
    nst_viewer_loss first, last;
} nst_viewer_page;

/* Writes <stem>.html, <stem>.view.json and <stem>_viewer/ (OpenSeadragon) beside image_dzi,
 * each atomically (temporary name, then rename; the asset folder as a temporary folder renamed
 * into place, an older one replaced), the page last. Returns NST_OK or a failure naming the file
 * (NST_EINPUT for a bad argument, NST_ERUNTIME for I/O or missing assets). */
nst_status nst_viewer_write(const nst_viewer_page *p);

/* Where the page's assets are: a folder holding web/ (viewer.html, viewer.js, viewer.css) and
 * OpenSeadragon's build, as openseadragon/ (installed) or node_modules/openseadragon/build/
 * openseadragon/ (the source tree after `make viewer`). Looked for in NSTBATCH_VIEWER_DIR, then
 * ../share/nstbatch/viewer beside the running program (an installed one), then the source tree's
 * viewer/ compiled in (NST_VIEWER_DIR). Or a failure whose message says what to do. */
nst_status nst_viewer_assets(char *dir, size_t cap);

#endif

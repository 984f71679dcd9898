/* viewer/view_json.h: OUT.view.json, the data the viewer page reads (schema in docs/VIEWER.md). */
#ifndef NST_VIEWER_VIEW_JSON_H
#define NST_VIEWER_VIEW_JSON_H

#include <stdio.h>

#include "page.h"

/* The whole view.json of page p; image and content are the file names the page loads (beside it),
 * content NULL for none. Returns 0, or -1 if a write failed (errno set). */
int nst_viewer_json_write(FILE *f, const nst_viewer_page *p, const char *image, const char *content);

#endif

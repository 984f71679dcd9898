/* viewer/assets.h: the page's assets: where they are (nst_viewer_assets in page.h) and the copy of
 * them that every output gets as OUT_viewer/. */
#ifndef NST_VIEWER_ASSETS_H
#define NST_VIEWER_ASSETS_H

#include <stddef.h>

#include "../util/status.h"

/* OpenSeadragon's build folder under the assets folder `dir`, in either layout (installed:
 * openseadragon/; source tree: node_modules/openseadragon/build/openseadragon/). 0 and the
 * folder in out, or -1 when it is in neither. */
int nst_viewer_osd_dir(const char *dir, char *out, size_t cap);

/* Make `dest` (OUT_viewer) from the assets in `assets`: web/ less the page template, and
 * OpenSeadragon's script, images and licence in openseadragon/. The copy is made in a temporary
 * folder beside dest and renamed into place; an older dest is swapped out atomically
 * (RENAME_EXCHANGE where the file system has it) and removed. */
nst_status nst_viewer_copy_assets(const char *assets, const char *dest);

#endif

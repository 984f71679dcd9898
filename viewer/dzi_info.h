/* viewer/dzi_info.h: what nstbatch-view needs to know of a Deep Zoom descriptor (OUT.dzi):
 * the image's size, to write a page for an output that has none. */
#ifndef NST_VIEWER_DZI_INFO_H
#define NST_VIEWER_DZI_INFO_H

#include "../util/status.h"

/* Width and Height of the <Size> element of the .dzi at path (an
 * http://schemas.microsoft.com/deepzoom/2008 <Image>), or a failure naming the file. */
nst_status nst_dzi_size(const char *path, int *width, int *height);

#endif

/* io/video/plugin_calls.c: what nstbatch-video.so calls back in the program (util/plugin.syms),
 * both halves' in one list. Each loader (video_load.c, flow/dis_load.c) references the list, so
 * that a program linking either defines every function the plugin needs: the plugin is loaded
 * whole (RTLD_NOW), whichever half the program uses. */
#include "../../util/mem.h"
#include "../../util/plugin.h"
#include "../../util/text.h"
#include "../atomic_file.h"
#include "../image/pixels.h"
#include "clip.h"

void *const nst_plugin_calls[] = {
    (void *)nst_alloc_array,   (void *)nst_atomic_abort,      (void *)nst_atomic_begin,      (void *)nst_atomic_check_target,
    (void *)nst_atomic_commit, (void *)nst_calloc,            (void *)nst_clip_display_name, (void *)nst_clip_is_pattern,
    (void *)nst_fail,          (void *)nst_free,              (void *)nst_image_alloc,       (void *)nst_image_get_row,
    (void *)nst_image_put_row, (void *)nst_ll_append,         (void *)nst_ll_cmp,            (void *)nst_vcodec_name,
};

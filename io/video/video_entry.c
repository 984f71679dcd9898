/* io/video/video_entry.c: the video files' half of nstbatch-video.so (util/plugin.h): the table of
 * video_read.c's and video_write.c's functions, under the one name the plugin shows for them.
 * Built into the plugin only, beside those two files. */
#include "video_parts.h"

NST_PLUGIN_EXPORT const nst_vfile_table *nst_plugin_vfile(void);

const nst_vfile_table *nst_plugin_vfile(void)
{
    static const nst_vfile_table t = {
        .head = {NST_PLUGIN_ABI, NST_PLUGIN_ID, sizeof t},
        .open = nst_vfile_open,
        .read = nst_vfile_read,
        .close = nst_vfile_close,
        .check_target = nst_vfile_check_target,
        .writer_open = nst_vfile_writer_open,
        .writer_put = nst_vfile_writer_put,
        .writer_finish = nst_vfile_writer_finish,
        .writer_abort = nst_vfile_writer_abort,
    };
    return &t;
}

/* flow/dis_entry.c: the DIS half of nstbatch-video.so (util/plugin.h): dis.cpp's functions as a
 * table, under the one name the plugin shows for them. Built into the plugin only, beside dis.cpp. */
#include "dis.h"

NST_PLUGIN_EXPORT const nst_dis_table *nst_plugin_dis(void);

const nst_dis_table *nst_plugin_dis(void)
{
    static const nst_dis_table t = {
        .head = {NST_PLUGIN_ABI, NST_PLUGIN_ID, sizeof t},
        .open = nst_dis_open,
        .flow = nst_dis_flow,
        .close = nst_dis_close,
    };
    return &t;
}

/* flow/dis_load.c: DIS optical flow in a build with OpenCV. dis.cpp lives in nstbatch-video.so
 * (util/plugin.h), so that a process that computes no flow never loads OpenCV's libraries; these
 * calls go through its table, the first one loading it. */
#include <string.h>

#include "dis.h"

/* (kept: the program links and exports what the plugin calls back, util/plugin.h) */
__attribute__((used)) static void *const *const calls_back = nst_plugin_calls;

static nst_status table(const nst_dis_table **t)
{
    return nst_plugin_table(NST_DIS_SYMBOL, "optical flow (DIS)", sizeof **t, (const void **)t);
}

int nst_dis_available(void) { return nst_plugin_has(NST_DIS_SYMBOL, sizeof(nst_dis_table)); }

nst_status nst_dis_open(const char *preset, nst_dis **out)
{
    const nst_dis_table *t;
    *out = NULL;
    NST_TRY(table(&t));
    return t->open(preset, out);
}

/* (a flow is asked of an open nst_dis only: the table is loaded) */
nst_status nst_dis_flow(nst_dis *d, const float *a, const float *b, int w, int h, nst_flow *out)
{
    const nst_dis_table *t;
    memset(out, 0, sizeof *out);
    NST_TRY(table(&t));
    return t->flow(d, a, b, w, h, out);
}

void nst_dis_close(nst_dis *d)
{
    const nst_dis_table *t;
    if (d && table(&t) == NST_OK) t->close(d);
}

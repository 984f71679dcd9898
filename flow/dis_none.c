/* flow/dis_none.c: flow/dis.h where nstbatch was built without OpenCV: every call says how to get it. */
#ifndef NST_HAVE_OPENCV
#include "dis.h"

#include <string.h>

static nst_status missing(void)
{
    return nst_fail(NST_EINPUT, "optical flow (DIS) needs OpenCV: install libopencv-video-dev (scripts/install-deps.sh) and rebuild, "
                    "or give the flow as .flo files");
}

int nst_dis_available(void) { return 0; }
nst_status nst_dis_open(const char *preset, nst_dis **out)
{
    (void)preset;
    *out = NULL;
    return missing();
}
nst_status nst_dis_flow(nst_dis *d, const float *a, const float *b, int w, int h, nst_flow *out)
{
    (void)d, (void)a, (void)b, (void)w, (void)h;
    memset(out, 0, sizeof *out);
    return missing();
}
void nst_dis_close(nst_dis *d) { (void)d; }
#else
typedef int nst_dis_none_unused; /* (an empty translation unit is not ISO C) */
#endif

/* flow/dis.h: dense optical flow between two frames with OpenCV's DIS (Kroeger et al., "Fast
 * optical flow using dense inverse search", ECCV 2016; Debian's libopencv-video 4.6), through a
 * small C++ file (flow/dis.cpp) behind this C interface, as the CUDA files are. Built where
 * OpenCV's headers are (NST_HAVE_OPENCV), into the video plugin (util/plugin.h: dis_entry.c
 * publishes its table there, dis_load.c calls through it); elsewhere every call says how to get
 * it (dis_none.c). */
#ifndef NST_FLOW_DIS_H
#define NST_FLOW_DIS_H

#include "../io/video/flo.h"
#include "../util/plugin.h"

typedef struct nst_dis nst_dis;

/* 1 where nstbatch was built with OpenCV. */
int nst_dis_available(void);
/* preset: "ultrafast", "fast" or "medium" (OpenCV's presets: speed against accuracy). */
nst_status nst_dis_open(const char *preset, nst_dis **out);
/* The flow from frame a to frame b (w x h, packed float RGB in [0, 1], turned to 8-bit gray as DIS
 * takes them): for every pixel of a, where it is in b. out->uv is allocated here. */
nst_status nst_dis_flow(nst_dis *d, const float *a, const float *b, int w, int h, nst_flow *out);
void nst_dis_close(nst_dis *d);

/* ---- the same, as the video plugin's table (dis_entry.c, dis_load.c) ----------------------------- */
#define NST_DIS_SYMBOL "nst_plugin_dis"
typedef struct {
    nst_plugin_head head;
    nst_status (*open)(const char *, nst_dis **);
    nst_status (*flow)(nst_dis *, const float *, const float *, int, int, nst_flow *);
    void (*close)(nst_dis *);
} nst_dis_table;

#endif

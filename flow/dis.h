/* flow/dis.h: dense optical flow between two frames with OpenCV's DIS (Kroeger et al., "Fast
 * optical flow using dense inverse search", ECCV 2016; Debian's libopencv-video 4.6), through a
 * small C++ file (flow/dis.cpp) behind this C interface, as the CUDA files are. Built where
 * OpenCV's headers are (NST_HAVE_OPENCV); elsewhere every call says how to get it. */
#ifndef NST_FLOW_DIS_H
#define NST_FLOW_DIS_H

#include "../io/video/flo.h"

typedef struct nst_dis nst_dis;

/* 1 where nstbatch was built with OpenCV. */
int nst_dis_available(void);
/* preset: "ultrafast", "fast" or "medium" (OpenCV's presets: speed against accuracy). */
nst_status nst_dis_open(const char *preset, nst_dis **out);
/* The flow from frame a to frame b (w x h, packed float RGB in [0, 1], turned to 8-bit gray as DIS
 * takes them): for every pixel of a, where it is in b. out->uv is allocated here. */
nst_status nst_dis_flow(nst_dis *d, const float *a, const float *b, int w, int h, nst_flow *out);
void nst_dis_close(nst_dis *d);

#endif

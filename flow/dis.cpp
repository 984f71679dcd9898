// flow/dis.cpp: OpenCV's DIS optical flow behind flow/dis.h's C interface. OpenCV reports errors by
// C++ exceptions; none leaves this file: each becomes one line through nst_fail.
#include <opencv2/core.hpp>
#include <opencv2/video/tracking.hpp>

#include <cstring>
#include <stdexcept>

extern "C" {
#include "dis.h"
#include "../util/mem.h"
}

struct nst_dis {
    cv::Ptr<cv::DISOpticalFlow> dis;
};

extern "C" nst_status nst_dis_open(const char *preset, nst_dis **out)
{
    *out = nullptr;
    int p = !std::strcmp(preset, "ultrafast") ? cv::DISOpticalFlow::PRESET_ULTRAFAST
            : !std::strcmp(preset, "fast")    ? cv::DISOpticalFlow::PRESET_FAST
            : !std::strcmp(preset, "medium")  ? cv::DISOpticalFlow::PRESET_MEDIUM
                                              : -1;
    if (p < 0) return nst_fail(NST_EINPUT, "DIS preset '%s': valid: ultrafast, fast, medium", preset);
    try {
        nst_dis *d = new nst_dis;
        d->dis = cv::DISOpticalFlow::create(p);
        *out = d;
        return NST_OK;
    } catch (const std::exception &e) {
        return nst_fail(NST_ERUNTIME, "OpenCV DIS optical flow: cannot create it: %s", e.what());
    }
}

// Rec. 601 luma of [0, 1] RGB, rounded to 8 bits: what DIS reads.
static cv::Mat gray8(const float *rgb, int w, int h)
{
    cv::Mat g(h, w, CV_8UC1);
    for (int y = 0; y < h; y++) {
        unsigned char *row = g.ptr<unsigned char>(y);
        for (int x = 0; x < w; x++) {
            const float *p = rgb + 3 * ((size_t)y * w + x);
            float v = 0.299f * p[0] + 0.587f * p[1] + 0.114f * p[2];
            row[x] = (unsigned char)(v <= 0 ? 0 : v >= 1 ? 255 : v * 255 + 0.5f);
        }
    }
    return g;
}

// Two hazards in OpenCV 4.6's DISOpticalFlowImpl::calc (modules/video/src/dis_flow.cpp), both avoided here:
//
// 1. The cause of the crashes seen: calc() takes a flow argument that already has the frames' size and
//    type CV_32FC2 as an INITIAL flow (use_input_flow: its vectors become "temporal candidates" in the
//    patch search). This file used to hand it our freshly malloc'ed, uninitialized output buffer. Where
//    malloc recycled memory holding NaN bit patterns, a NaN candidate passed the std::min/std::max clamps
//    of the patch position (NaN compares false), (int)NaN became INT_MIN and the patch read 2 GiB below
//    the image: a segfault inside a parallel_for_ body (gdb: faulting address = image - ~2^31). Which
//    frame sizes crashed only reflected which allocations came back dirty (a NaN-filled flow crashes
//    every size, an empty one none). So the flow goes to DIS as an empty Mat: no initial flow is read,
//    DIS allocates its own output, and we copy it out.
//
// 2. Small frames: calc() picks coarsest = min((int)(log2(max/(4 p)) + 0.5), (int)log2(min / p)) (p the
//    patch size, integer division). Where coarsest < the preset's finest scale it falls back to
//    autoSelectPatchSizeAndScales(width), which picks levels from the WIDTH alone (a wide, low frame gets
//    pyramid levels fewer rows high than a patch: reads past the image, empty densification sets, 0/0)
//    and rewrites the object's finest scale and patch size for all later calls. We pad both frames
//    (replicated borders, right and bottom, so pixel coordinates are unchanged) to at least
//    p * (2^finest + 1) on the short side and 4 p 2^finest on the long side. Then floor(min / p) >
//    2^finest and log2(max / (4 p)) + 0.5 >= finest + 0.5, so coarsest >= finest by a margin that float
//    rounding of log() cannot erase: the fallback never runs, the parameters never change, and every
//    level from finest to coarsest is at least p x p (floor(n / 2^k) >= p for n >= p 2^k). The flow of
//    the padded frames is cropped back to w x h; frames already that large are not padded at all.
static cv::Mat pad_to(const cv::Mat &g, int pw, int ph)
{
    if (pw == g.cols && ph == g.rows) return g;
    cv::Mat out;
    cv::copyMakeBorder(g, out, 0, ph - g.rows, 0, pw - g.cols, cv::BORDER_REPLICATE);
    return out;
}

extern "C" nst_status nst_dis_flow(nst_dis *d, const float *a, const float *b, int w, int h, nst_flow *out)
{
    std::memset(out, 0, sizeof *out);
    float *uv = (float *)nst_alloc_array((size_t)w * h * 2, sizeof(float), "a flow field");
    if (!uv) return NST_ENOMEM;
    try {
        int p = d->dis->getPatchSize(), fs = d->dis->getFinestScale();
        int short_min = p * ((1 << fs) + 1), long_min = 4 * p * (1 << fs);
        int pw = w, ph = h;
        if (pw < short_min) pw = short_min;
        if (ph < short_min) ph = short_min;
        if (pw < long_min && ph < long_min) {
            if (pw >= ph) pw = long_min;
            else ph = long_min;
        }
        cv::Mat flow; // empty: no initial flow (see 1 above); DIS allocates it
        d->dis->calc(pad_to(gray8(a, w, h), pw, ph), pad_to(gray8(b, w, h), pw, ph), flow);
        if (flow.rows != ph || flow.cols != pw || flow.type() != CV_32FC2)
            throw std::runtime_error("unexpected flow size or type");
        for (int y = 0; y < h; y++)
            std::memcpy(uv + (size_t)y * w * 2, flow.ptr<float>(y), (size_t)w * 2 * sizeof(float));
    } catch (const std::exception &e) {
        nst_free(uv);
        return nst_fail(NST_ERUNTIME, "OpenCV DIS optical flow on %dx%d frames: %s", w, h, e.what());
    }
    *out = nst_flow{w, h, uv};
    return NST_OK;
}

extern "C" void nst_dis_close(nst_dis *d) { delete d; }

// flow/dis.cpp: OpenCV's DIS optical flow behind flow/dis.h's C interface. OpenCV reports errors by
// C++ exceptions; none leaves this file: each becomes one line through nst_fail.
#include <opencv2/core.hpp>
#include <opencv2/video/tracking.hpp>

#include <cstring>

extern "C" {
#include "dis.h"
#include "../util/mem.h"
}

struct nst_dis {
    cv::Ptr<cv::DISOpticalFlow> dis;
};

extern "C" int nst_dis_available(void) { return 1; }

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

extern "C" nst_status nst_dis_flow(nst_dis *d, const float *a, const float *b, int w, int h, nst_flow *out)
{
    std::memset(out, 0, sizeof *out);
    float *uv = (float *)nst_alloc_array((size_t)w * h * 2, sizeof(float), "a flow field");
    if (!uv) return NST_ENOMEM;
    try {
        cv::Mat flow(h, w, CV_32FC2, uv); // DIS writes straight into our buffer
        d->dis->calc(gray8(a, w, h), gray8(b, w, h), flow);
        if (flow.data != (unsigned char *)uv) std::memcpy(uv, flow.data, (size_t)w * h * 2 * sizeof(float));
    } catch (const std::exception &e) {
        nst_free(uv);
        return nst_fail(NST_ERUNTIME, "OpenCV DIS optical flow on %dx%d frames: %s", w, h, e.what());
    }
    *out = nst_flow{w, h, uv};
    return NST_OK;
}

extern "C" void nst_dis_close(nst_dis *d) { delete d; }

/* tests/fuzz/fuzz_video.c: libFuzzer target for the video reader (io/video/video.h) on untrusted bytes:
 * opened from memory, every frame decoded and converted, with a deployment's kind of caps scaled
 * down (1 megapixel, 64 frames) so that each input stays fast. FFmpeg itself is not instrumented;
 * what is fuzzed is nstbatch's side: the counting pass, the rate check, the limits, the
 * conversion and every error path's cleanup (leaks included). Seeds: tests/fuzz/corpus_video
 * (tiny clips in MP4, MOV, Matroska, AVI, MPEG-TS and Y4M made by the ffmpeg program, and
 * oom_matroska_size.mkv, a find: 3.7 kB that asked FFmpeg for 1.3 GB before the reader capped
 * FFmpeg's allocations).
 *
 *   make fuzz && build/fuzz/fuzz_video tests/fuzz/corpus_video -max_total_time=60 -rss_limit_mb=2048 */
#include "../../io/video/video.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    const nst_clip_limits lim = {1e6, 4096, 64, "content.path"};
    nst_clip_reader *r;
    nst_clip_info info;
    nst_fail_clear();
    if (nst_clip_open_memory("fuzz.mkv", data, size, &lim, &r, &info) != NST_OK) return 0;
    for (long long i = 0; i < info.frames; i++) {
        nst_image img;
        if (nst_clip_read(r, i, &img) != NST_OK) break;
        /* touch every pixel: a reader that claimed success must have filled them */
        volatile float sum = 0;
        for (size_t k = 0; k < (size_t)img.w * img.h * 3; k++) sum += img.px[k];
        nst_image_free(&img);
    }
    nst_clip_close(r);
    return 0;
}

/* tests/fuzz/fuzz_tiff.c: libFuzzer target for the TIFF region reader on untrusted bytes: open as
 * a region source (16-megapixel limits, the deployment caps), then read regions as the renderer
 * does: a few rectangles chosen from the input's bytes, and a resampled window (the streaming
 * resampler reading by band). Any crash, overflow or allocation beyond the caps is a finding.
 *
 *   make fuzz && build/fuzz/fuzz_tiff tests/fuzz/corpus_tiff -max_total_time=60 -rss_limit_mb=2048 */
#include <stdint.h>
#include <string.h>

#include "../../io/image/resample.h"
#include "../../io/image/source.h"
#include "../../util/mem.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    nst_source *src;
    nst_source_limits lim = nst_source_default_limits(16, 16);
    nst_fail_clear();
    if (size < 8 || !(data[0] == 'I' || data[0] == 'M')) return 0; /* TIFF only: the image target covers the rest */
    if (nst_source_open_memory("fuzz.tif", data, size, &lim, &src) != NST_OK) return 0;
    uint64_t x = 0x9e3779b97f4a7c15ull ^ size;
    for (size_t i = 0; i < size && i < 64; i++) x = x * 6364136223846793005ull + data[size - 1 - i];
    for (int k = 0; k < 3; k++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        int rw = 1 + (int)((x >> 33) % (uint64_t)(src->w < 256 ? src->w : 256));
        int rh = 1 + (int)((x >> 13) % (uint64_t)(src->h < 256 ? src->h : 256));
        int rx = (int)((x >> 41) % (uint64_t)(src->w - rw + 1)), ry = (int)((x >> 23) % (uint64_t)(src->h - rh + 1));
        float *buf = nst_alloc_array((size_t)rw * rh, 3 * sizeof(float), "fuzz region");
        if (!buf) break;
        if (nst_source_read(src, nst_rect_make(rx, ry, rw, rh), buf) == NST_OK) {
            volatile float sum = 0; /* a reader that claimed success must have filled them */
            for (size_t i = 0; i < (size_t)rw * rh * 3; i++) sum += buf[i];
        }
        nst_free(buf);
    }
    int W = src->w / 3 + 1, H = src->h / 3 + 1, w = W < 64 ? W : 64, h = H < 64 ? H : 64;
    float *out = nst_alloc_array((size_t)w * h, 3 * sizeof(float), "fuzz resample");
    if (out) nst_resample_rect(src, W, H, nst_rect_make(W - w, H - h, w, h), out);
    nst_free(out);
    nst_source_close(src);
    return 0;
}

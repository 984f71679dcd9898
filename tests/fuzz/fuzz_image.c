/* tests/fuzz/fuzz_image.c: libFuzzer target for the PNG, JPEG and TIFF readers on untrusted bytes.
 * Limits as a deployment would set them (16 megapixels); any crash, overflow or allocation beyond
 * the caps is a finding.
 *
 *   make fuzz && build/fuzz/fuzz_image tests/fuzz/corpus_image -max_total_time=60 -rss_limit_mb=2048 */
#include "../../io/image/image.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    nst_image img;
    nst_read_limits lim = nst_default_limits(16);
    nst_fail_clear();
    if (nst_image_read_memory("fuzz", data, size, &lim, &img, NULL) == NST_OK) {
        /* touch every pixel: a reader that claimed success must have filled them */
        volatile float sum = 0;
        for (size_t i = 0; i < (size_t)img.w * img.h * 3; i++) sum += img.px[i];
        nst_image_free(&img);
    }
    return 0;
}

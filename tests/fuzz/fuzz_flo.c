/* tests/fuzz/fuzz_flo.c: libFuzzer target for the Middlebury .flo reader (io/video/flo.h) on untrusted
 * bytes, with a deployment's cap (16 megapixels); any crash, overflow or allocation beyond it is a
 * finding.
 *
 *   make fuzz && build/fuzz/fuzz_flo tests/fuzz/corpus_flo -max_total_time=60 -rss_limit_mb=2048 */
#include "../../io/video/flo.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    nst_flow f;
    nst_fail_clear();
    if (nst_flo_parse("fuzz.flo", data, size, 0, 0, 16e6, &f) == NST_OK) {
        /* touch every value: a reader that claimed success must have filled them */
        volatile float sum = 0;
        for (size_t i = 0; i < (size_t)f.w * f.h * 2; i++) sum += f.uv[i];
        nst_flow_free(&f);
    }
    return 0;
}

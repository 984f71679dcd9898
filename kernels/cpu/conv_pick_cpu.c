/* kernels/cpu/conv_pick_cpu.c: which of oneDNN's convolution implementations the CPU backend
 * takes, by name. The tiling is exact only if a convolution's output at a position does not depend
 * on the size of the call it is computed in (a window's against the whole image's). oneDNN
 * promises results that repeat for the same shape, not across shapes, so nstbatch walks oneDNN's
 * list of implementations for each primitive and takes the first one named in ALLOWED: the
 * implementations whose per-output order of summation we have read to be a function of the
 * channel counts, dtypes and instruction set only (docs/DESIGN.md, "Shape-invariant kernels").
 *
 * Everything else is skipped, and so is any name a newer oneDNN brings. Where the list offers
 * none of the allowed ones, the reference implementation is taken: plain loops in a fixed order,
 * exact and slow, and the backend's description (the run's first line, from cpu_conv_survey)
 * says so. A layer's implementation is pinned at its first primitive: every later shape must get
 * the same one, or the op fails saying so, never silently taking another. */
#include <stdio.h>
#include <string.h>

#include "conv_cpu.h"

/* The names oneDNN 2.6 reports (dnnl_query_impl_info_str) for direct convolutions whose order of
 * summation for an output is fixed by the channel counts, dtypes and instruction set: one call per
 * block of input channels in ascending order, each summing (kernel row, kernel column, channel) in
 * a fixed nest from the previous call's fp32 partial sum, bias first and ReLU last, taps in the
 * zero padding skipped (adding nothing), no sum split over threads, no partial sum rounded to
 * bf16 (the reading, with oneDNN's sources, is in docs/DESIGN.md). Not listed: brgconv, oneDNN's
 * first choice on AVX-512, which sizes its blocks of input channels and kernel rows by a cost model
 * of the output's width and height and sums each block from zero before adding it (windows of
 * its 512 -> 512 layer differ from the whole: the harness's sweep, check_contracts.c), on AMX too;
 * x64:gemm:jit, whose GEMM picks its kernels and splits the sum by the number of positions; Winograd.
 * jit:avx512_core_amx_bf16 (oneDNN 2.6's direct AMX convolution, jit_avx512_core_amx_conv_kernel.cpp)
 * sums each output in one chain of TDPBF16PS from zero: blocks of 32 input channels in ascending
 * order (nb_ic_blocking = 1: never split across calls), within each the kernel rows then columns;
 * for few input channels (conv1_1's 3 padded) the "reduced lowering" folds (kernel column,
 * channel) into one reduction of the same fixed order. Both choices (is_relo, kw_per_tile) are
 * made from the channel counts and the kernel size alone, the input is copied into a zero-padded
 * buffer (the image's padding adds zeros), and the width and height only block the outputs. */
static const char *const ALLOWED[] = {
    "jit:avx512_core",           /* fp32, AVX-512 */
    "jit:avx512_core_amx_bf16",  /* bf16, AMX tiles (granted by Linux: arch_prctl) */
    "jit_bf16:avx512_core_bf16", /* bf16, native AVX512_BF16 */
    "jit_bf16:avx512_core",      /* bf16, emulated on AVX-512 without BF16 */
    "jit:avx2",                  /* fp32, AVX2 */
    "jit:sse41",                 /* fp32, SSE4.1 (not for 64 -> 3: oneDNN needs 8 | cout) */
};
#define REFERENCE "ref:any"

int cpu_conv_impl_allowed(const char *name)
{
    for (size_t i = 0; i < sizeof ALLOWED / sizeof *ALLOWED; i++)
        if (strcmp(name, ALLOWED[i]) == 0) return 1;
    return 0;
}

static const char *impl_name(const_dnnl_primitive_desc_t pd)
{
    const char *s = NULL;
    return dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &s) == dnnl_success && s ? s : "?";
}

/* Is this implementation the one to take: the pinned name, or else an allowed one. */
static int wanted(const char *name, const char *pinned) { return *pinned ? strcmp(name, pinned) == 0 : cpu_conv_impl_allowed(name); }

nst_status cpu_conv_pick(cpu_impl *impl, const dnnl_convolution_desc_t *cd, const_dnnl_primitive_attr_t attr, char *pin, size_t pin_cap,
                         const char *what, dnnl_primitive_desc_t *out)
{
    dnnl_primitive_desc_iterator_t it;
    DNNL_TRY(dnnl_primitive_desc_iterator_create(&it, cd, attr, impl->eng, NULL));
    dnnl_primitive_desc_t ref = NULL;
    char offered[160] = "";
    size_t used = 0;
    *out = NULL;
    dnnl_status_t st = dnnl_success;
    while (st == dnnl_success && !*out) {
        dnnl_primitive_desc_t pd = dnnl_primitive_desc_iterator_fetch(it);
        if (!pd) break;
        const char *name = impl_name(pd);
        if (used < sizeof offered) used += (size_t)snprintf(offered + used, sizeof offered - used, "%s%s", used ? ", " : "", name);
        if (wanted(name, pin)) {
            *out = pd;
        } else if (!*pin && !ref && strcmp(name, REFERENCE) == 0) {
            ref = pd;
        } else {
            dnnl_primitive_desc_destroy(pd);
        }
        if (!*out) st = dnnl_primitive_desc_iterator_next(it);
    }
    dnnl_primitive_desc_iterator_destroy(it);
    if (!*out && ref) { /* nothing allowed offered: the reference, exact and slow */
        *out = ref;
        ref = NULL;
    }
    if (ref) dnnl_primitive_desc_destroy(ref);
    if (!*out) {
        if (*pin)
            return nst_fail(NST_ERUNTIME, "%s: oneDNN offers %s for this shape, not %s, which the layer's other shapes use: a tiled "
                                          "render would not be exact (report this with the oneDNN version)", what, offered, pin);
        return nst_fail(NST_ERUNTIME, "%s: oneDNN offers no shape-invariant convolution and no reference one (offered: %s)", what, offered);
    }
    if (!*pin) snprintf(pin, pin_cap, "%s", impl_name(*out));
    return NST_OK;
}

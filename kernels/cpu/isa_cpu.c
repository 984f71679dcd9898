/* kernels/cpu/isa_cpu.c: which instruction set the CPU backend's own kernels (the Gram sums and
 * the Gram backward) may use. One knob limits oneDNN and them alike: ONEDNN_MAX_CPU_ISA, which
 * oneDNN reads once and reports through dnnl_get_effective_cpu_isa(). So a machine with AVX-512
 * runs, and tests, the AVX2 and portable paths under ONEDNN_MAX_CPU_ISA=AVX2 or SSE41.
 *
 * Every path of every kernel gives the same bits (each output is one sum in a fixed order, and a
 * fused multiply-add is used wherever the portable path uses fma()), so the level only changes
 * speed; but for one: at AVX512_BF16 (where oneDNN runs its bf16 kernels natively) the bf16 Gram
 * backward runs on VDPBF16PS, the same chain with subnormal partial sums flushed to zero
 * (gram_backward_cpu.c), and that level is the ranks' to agree on with oneDNN's.
 * NSTBATCH_CPU_KERNELS=portable|avx2|avx512 (a test hook, read at every call) lowers it further
 * within one process, where oneDNN's level is already fixed. */
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

/* what the processor runs and oneDNN allows, without the test hook */
static cpu_isa_level hardware_level(void)
{
    dnnl_cpu_isa_t i = dnnl_get_effective_cpu_isa();
    int fma = __builtin_cpu_supports("fma");
    if ((i & dnnl_cpu_isa_avx512_core_bf16) == dnnl_cpu_isa_avx512_core_bf16 && __builtin_cpu_supports("avx512bf16") &&
        __builtin_cpu_supports("avx512f") && fma)
        return CPU_ISA_AVX512_BF16;
    if ((i & dnnl_cpu_isa_avx512_core) == dnnl_cpu_isa_avx512_core && __builtin_cpu_supports("avx512f") && fma) return CPU_ISA_AVX512;
    if ((i & dnnl_cpu_isa_avx2) == dnnl_cpu_isa_avx2 && __builtin_cpu_supports("avx2") && fma) return CPU_ISA_AVX2;
    return CPU_ISA_PORTABLE;
}

cpu_isa_level cpu_kernels_isa(void)
{
    cpu_isa_level l = hardware_level();
    const char *cap = getenv("NSTBATCH_CPU_KERNELS");
    if (cap && strcmp(cap, "portable") == 0) return CPU_ISA_PORTABLE;
    if (cap && strcmp(cap, "avx2") == 0 && l > CPU_ISA_AVX2) return CPU_ISA_AVX2;
    if (cap && strcmp(cap, "avx512") == 0 && l > CPU_ISA_AVX512) return CPU_ISA_AVX512;
    return l;
}

cpu_isa_level cpu_kernels_isa_for(nst_dtype dt)
{
    cpu_isa_level l = cpu_kernels_isa();
    return l == CPU_ISA_AVX512_BF16 && dt != NST_BF16 ? CPU_ISA_AVX512 : l; /* fp32 data: fp32 products */
}

const char *cpu_isa_level_name(cpu_isa_level l)
{
    return l == CPU_ISA_AVX512_BF16 ? "AVX-512 BF16" : l == CPU_ISA_AVX512 ? "AVX-512" : l == CPU_ISA_AVX2 ? "AVX2" : "portable";
}

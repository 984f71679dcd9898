/* kernels/cpu/backend_cpu.h: opening the CPU backend (see kernels/backend.h for the interface). */
#ifndef NST_BACKEND_CPU_H
#define NST_BACKEND_CPU_H

#include "../backend.h"

/* threads: 0 = every core this process may use; precision: fp32 or bf16 (activations and their
 * gradients stored in bf16, fp32 accumulation); bf16 fails with a message where oneDNN has no
 * bf16 convolution for this CPU. */
nst_status nst_cpu_backend_open(int threads, nst_precision precision, nst_backend **out);

/* The instruction-set level the CPU arithmetic runs at: oneDNN's effective ISA, which counts AMX
 * only where Linux granted this process its tile state (arch_prctl), capped by
 * ONEDNN_MAX_CPU_ISA, named as that variable takes it ("AVX512_CORE_AMX", "AVX512_CORE_BF16",
 * "AVX512_CORE_VNNI", "AVX512_CORE", "AVX2", "AVX", "SSE41"). */
typedef struct {
    char name[24];
    int bf16_native; /* native bf16 dot products: AVX512_BF16, or AMX */
    int amx;         /* AMX tiles granted */
    int amd;         /* an AMD core (the auto precision's rule) */
} nst_cpu_level;
void nst_cpu_level_get(nst_cpu_level *l);

/* run.precision = auto on this CPU: NST_PREC_BF16 or NST_PREC_FP32, and why, for the first line. */
nst_precision nst_cpu_auto_precision(const nst_cpu_level *l, char *why, size_t cap);

#endif

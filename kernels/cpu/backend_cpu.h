/* kernels/cpu/backend_cpu.h: opening the CPU backend (see kernels/backend.h for the interface). */
#ifndef NST_BACKEND_CPU_H
#define NST_BACKEND_CPU_H

#include "../backend.h"

/* threads: 0 = every core this process may use; precision: fp32 or bf16 (activations and their
 * gradients stored in bf16, fp32 accumulation); bf16 fails with a message where oneDNN has no
 * bf16 convolution for this CPU. */
nst_status nst_cpu_backend_open(int threads, nst_precision precision, nst_backend **out);

/* Whether oneDNN runs native bf16 dot products here (AVX512_BF16 or AMX; ONEDNN_MAX_CPU_ISA can
 * lower it); isa (may be NULL) gets the ISA's name for messages. */
int nst_cpu_bf16_native(char *isa, size_t n);

#endif

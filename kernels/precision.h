/* kernels/precision.h: storage dtypes, run.precision, and the one feature-scaling policy every
 * backend follows.
 *
 * Feature scale. Activations and their gradients (which are linear in them) may be stored
 * multiplied by a power of two, so a format with a narrow exponent keeps the network's values in
 * range; every op that leaves the activation domain divides it out (Gram sums and sums of squares
 * by its square, the image gradient and downloads by it), and powers of two make that exact.
 *   fp32, bf16: 1. Both have fp32's 8-bit exponent (normal range 1.2e-38 .. 3.4e38), far around
 *               every value a render holds (tests/test_bf16.c measures the largest activation
 *               and the smallest image gradient), so no scale helps range; and a scale never
 *               helps precision, which is relative. Where bf16 loses precision that matters, the
 *               backend keeps the value wider instead: the CPU keeps the network's input in fp32
 *               (in_dtype, kernels/cpu/conv_cpu.c).
 *   fp16:       1/8: its largest value is 65504, for headroom under Caffe-scaled activations.
 * The policy lives here so the CPU and CUDA backends cannot drift apart. */
#ifndef NST_PRECISION_H
#define NST_PRECISION_H

#include <stddef.h>

typedef enum { NST_F32 = 0, NST_BF16, NST_F16 } nst_dtype;

/* run.precision: activation storage and convolution math. fp32 and tf32 store fp32 (tf32: tensor
 * cores round the products' inputs to 10-bit mantissas); bf16 and fp16 store 16 bits; all
 * accumulate in fp32. auto: bf16 on a GPU, and on a CPU where bf16 is the faster (AMX, AMD's
 * AVX512_BF16: kernels/cpu/backend_cpu.c, nst_cpu_auto_precision); fp32 on other CPUs. The CPU
 * backend has fp32 and bf16. */
typedef enum { NST_PREC_AUTO = 0, NST_PREC_FP32, NST_PREC_TF32, NST_PREC_BF16, NST_PREC_FP16 } nst_precision;

/* "auto", "fp32", ... and back (-1 for an unknown name) */
const char *nst_precision_name(nst_precision p);
int nst_precision_parse(const char *s);

static inline size_t nst_dtype_size(nst_dtype d) { return d == NST_F32 ? 4 : 2; }

/* The factor activations of dtype d are stored multiplied by (see the file comment). */
float nst_feature_scale(nst_dtype d);

/* Unit roundoff (half an ulp, relative) of a value stored in dtype d: 2^-24, 2^-8, 2^-11. */
double nst_dtype_unit_roundoff(nst_dtype d);
/* Unit roundoff of a product's inputs in the convolution math of precision p: 2^-11 for tf32
 * (tensor cores round fp32 inputs to 10-bit mantissas), else 0 (inputs are used as stored). */
double nst_precision_input_roundoff(nst_precision p);
/* The storage dtype of activations under precision p (auto: not resolved, fp32). */
nst_dtype nst_precision_dtype(nst_precision p);

#endif

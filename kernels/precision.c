/* kernels/precision.c: precision names, the feature-scaling policy and unit roundoffs (see precision.h). */
#include "precision.h"

#include <string.h>

static const char *const prec_names[] = {"auto", "fp32", "tf32", "bf16", "fp16"};

const char *nst_precision_name(nst_precision p) { return (unsigned)p < 5 ? prec_names[p] : "?"; }

int nst_precision_parse(const char *s)
{
    for (int i = 0; i < 5; i++)
        if (strcmp(s, prec_names[i]) == 0) return i;
    return -1;
}

float nst_feature_scale(nst_dtype d) { return d == NST_F16 ? 0.125f : 1.f; }

double nst_dtype_unit_roundoff(nst_dtype d)
{
    switch (d) {
    case NST_BF16: return 0x1p-8;  /* 8 significant bits */
    case NST_F16: return 0x1p-11;  /* 11 */
    default: return 0x1p-24;       /* 24 */
    }
}

double nst_precision_input_roundoff(nst_precision p) { return p == NST_PREC_TF32 ? 0x1p-11 : 0; }

nst_dtype nst_precision_dtype(nst_precision p)
{
    return p == NST_PREC_BF16 ? NST_BF16 : p == NST_PREC_FP16 ? NST_F16 : NST_F32;
}

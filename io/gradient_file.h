/* io/gradient_file.h: the first iteration's loss terms and image gradient of a render, as a file
 * (run.first_gradient), so that two devices can be compared where a comparison is stable: before
 * any optimiser step has turned rounding differences into pixel differences (docs/GPUS.md).
 *
 * The file: a few text lines, then the gradient as W x H x 3 little-endian float32 (row-major,
 * RGB), which the header's sizes must account for exactly:
 *
 *     nstbatch first-gradient 1
 *     size W H
 *     precision NAME          (the storage precision the render ran in: fp32, tf32, bf16, fp16)
 *     depth N                 (convolutions from the image to the deepest loss layer)
 *     loss TOTAL CONTENT STYLE TV TEMPORAL   (%.17g)
 *     data
 */
#ifndef NST_GRADIENT_FILE_H
#define NST_GRADIENT_FILE_H

#include "../util/status.h"

typedef struct {
    int w, h;
    char precision[16];
    int depth;
    double total, content, style, tv, temporal;
    float *g; /* w * h * 3 */
} nst_gradient_file;

/* Write atomically (replacing an existing file: a diagnostic, not an output). */
nst_status nst_gradient_file_write(const char *path, const nst_gradient_file *f);
/* Read and check it against its own length; f->g allocated here (nst_gradient_file_free). */
nst_status nst_gradient_file_read(const char *path, nst_gradient_file *f);
void nst_gradient_file_free(nst_gradient_file *f);

#endif

/* nst/report/first_gradient.h: run.first_gradient, the diagnostic that compares devices where a
 * comparison is stable. A render's first objective evaluation (before any optimiser step) gives
 * the loss terms and the image gradient; every rank's owned pixels are gathered on rank 0 and
 * written with io/gradient_file.h. Tiles that are exact (the CPU) give the one-tile gradient bit
 * for bit; a device whose libraries pick algorithms per shape (cuDNN) gives it within the
 * precision's rounding, which the tolerance table bounds (kernels/check/tolerance.c,
 * NST_TOL_FIRST_GRADIENT). Pixels after many Adam steps cannot be judged that way: Adam's first
 * steps follow the gradient's sign, so rounding differences grow. */
#ifndef NST_FIRST_GRADIENT_H
#define NST_FIRST_GRADIENT_H

#include "../../io/gradient_file.h"
#include "../plan/layout.h"
#include "../optimise/objective.h"

/* The file's header for a render of W x H under spec on be, with its first loss terms. */
void nst_first_gradient_header(nst_gradient_file *f, int W, int H, const nst_loss_spec *spec, const nst_backend *be,
                               const nst_loss_terms *t);
/* Gather cores[i] (local tile i's owned gradient, host fp32) on rank 0 and write path there.
 * Collective over the layout's ranks (the current group). */
nst_status nst_first_gradient_write(const char *path, const nst_layout *L, float *const *cores, const nst_gradient_file *header);
/* Place local tile i's core into a whole W x H x 3 gradient (one process). */
void nst_first_gradient_place(float *whole, int W, nst_rect core, const float *px);

#endif

/* nst/model/random_vgg.h: the seeded random VGG-19. Without ImageNet weights a random network still
 * transfers texture (random deep features keep much of the Gram statistics' power); it is the
 * built-in default, and narrow versions (width divisor 4 or 8) serve tests and quick checks.
 * The values depend only on (seed, divisor): integer RNG, no libm, the same on every machine. */
#ifndef NST_RANDOM_VGG_H
#define NST_RANDOM_VGG_H

#include <stdint.h>

#include "../../io/weights/weights.h"

/* All 16 convs, widths std_cout / divisor (divisor: a power of two, 1..64). He-uniform kernels
 * (bound sqrt(6 / fan_in)), biases uniform in +-1/sqrt(fan_in); torchvision preprocessing. */
nst_status nst_weights_random(nst_weights *w, uint64_t seed, int width_divisor);

#endif

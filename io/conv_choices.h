/* io/conv_choices.h: the convolution algorithms a GPU backend chose by timing them
 * (gpu.conv_algorithms = timed), kept in a text file (gpu.conv_choices) so that a rerun on the
 * same device and libraries takes the same ones: the same bits as the run that chose them, and no
 * search. A timed choice depends on the clock's noise, so without the file two runs may choose
 * differently and differ within the convolutions' tolerance.
 *
 * The file, one line each (a file nstbatch writes; '#' starts a comment):
 *   device TEXT                      the device and libraries the lines below were timed on
 *   forward CIN COUT H W algo A math M ms T
 *   backward-data CIN COUT H W algo A math M ms T
 * A is cuDNN's algorithm number for that direction, M its math type, T the milliseconds measured.
 * Sections of several devices may share a file (a cluster of mixed GPUs): a backend takes only its
 * own device's lines and keeps the others when it saves. Saving rewrites the whole file atomically
 * (io/atomic_file.h), merged with what the file holds then, under an exclusive lock of PATH.lock
 * (flock), so ranks and jobs that share the file take turns and lose no line, and a killed run
 * leaves the old file whole. Nothing here knows cuDNN: the backend checks that a loaded choice is
 * one it may use (kernels/cuda/conv_cuda.cu). */
#ifndef NST_CONV_CHOICES_H
#define NST_CONV_CHOICES_H

#include "../util/status.h"

#define NST_CONV_DEVICE_MAX 160

enum { NST_CONV_FWD = 0, NST_CONV_BWD_DATA = 1 };

typedef struct {
    char device[NST_CONV_DEVICE_MAX];
    int dir; /* NST_CONV_FWD, NST_CONV_BWD_DATA */
    int cin, cout, h, w;
    int algo, math;
    double ms;
} nst_conv_choice;

typedef struct {
    nst_conv_choice *v;
    int n, cap;
} nst_conv_choices;

/* Read path into t (emptied first; every device's lines). A missing file is an empty table. A line
 * that is not one of the forms above fails with NST_EINPUT naming the file and line. */
nst_status nst_conv_choices_load(nst_conv_choices *t, const char *path);
/* The choice for this device, direction and shape; NULL if none. */
const nst_conv_choice *nst_conv_choices_find(const nst_conv_choices *t, const char *device, int dir, int cin, int cout, int h,
                                             int w);
/* Add c, replacing the choice for its device, direction and shape. */
nst_status nst_conv_choices_put(nst_conv_choices *t, const nst_conv_choice *c);
/* Write t's choices of `device` to path, with every other line the file holds now (re-read, so that
 * another rank's or job's lines stay), atomically, holding PATH.lock's lock. */
nst_status nst_conv_choices_save(const nst_conv_choices *t, const char *device, const char *path);
void nst_conv_choices_free(nst_conv_choices *t);

#endif

/* nst/run/conv_store.h: the timed convolution choices a GPU backend finds (gpu.conv_algorithms =
 * timed), kept for it for the run (a tile shape met again, after the backend's cache of shapes let
 * it go, takes the same algorithms) and in gpu.conv_choices' file where one is set
 * (io/conv_choices.h): read before the backend opens, each new timing added and the file rewritten
 * at once, so a killed run keeps what it timed. */
#ifndef NST_CONV_STORE_H
#define NST_CONV_STORE_H

#include "../../kernels/backend.h"

typedef struct nst_conv_store nst_conv_store;

/* Read path (a missing file is an empty store; a malformed one fails naming its line, NST_EINPUT)
 * and check that it can be written; path NULL or "": the run's memory only. *memory is then the
 * backend's view of it. */
nst_status nst_conv_store_open(const char *path, nst_conv_store **out, nst_conv_memory *memory);
void nst_conv_store_close(nst_conv_store *s);

#endif

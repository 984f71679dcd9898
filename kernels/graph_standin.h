/* kernels/graph_standin.h: CUDA graphs' semantics on the CPU, for the tests (NSTBATCH_GRAPH_STANDIN=1).
 *
 * The render records a quiet iteration once and replays it (nst/render/recorded.h, gpu.graphs);
 * only a GPU has graphs, so that logic would otherwise run nowhere here. The stand-in wraps the CPU
 * backend's op table as a GPU's stream behaves under capture: between graph_begin and graph_end an
 * op is recorded with its arguments (tensors by value) and not run, while the host code around it
 * runs once; graph_launch runs a segment's recorded ops again in order. An op that would make the
 * host wait, or return a value to the host, fails the recording, as on a GPU. It also hides the
 * CPU's exact paths (gram_fixed, dot_exact), which read values back on the host, as the CUDA
 * backend has none: a stand-in render sums its Gram matrices in fp64 like a GPU's, and adds them
 * over ranks through reads and writes that wait (nst/run/device.c), as a GPU without NCCL. The
 * queued transfers (download_rect_queued, upload_rect_queued) behave as in a GPU's stream: a
 * download reaches the host only at the next wait, and an upload's host buffer changed before
 * that wait is reported there, so a missing wait shows in the render. With NSTBATCH_CUDA_OVERLAP=1
 * it has the CUDA backend's side stream (backend.h: side, join): the Gram sums called on the side
 * run at the join, the latest a GPU could run them, so a missing join shows in the render too;
 * any other op on the side fails. With NSTBATCH_CUDA_CONV1=own it has conv1_1 from the image
 * (backend.h: conv_forward_image), as the CPU's two ops in turn, so the render's path without an
 * input pass runs here too. */
#ifndef NST_GRAPH_STANDIN_H
#define NST_GRAPH_STANDIN_H

#include "backend.h"

/* Wrap be's ops (a CPU backend) with the stand-in. */
nst_status nst_graph_standin_attach(nst_backend *be);
void nst_graph_standin_detach(nst_backend *be);

#endif

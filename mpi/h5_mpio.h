/* mpi/h5_mpio.h: parallel HDF5's view of the process group. The HDF5 writer (io/image/h5_image.c)
 * opens files over MPI-IO through these, so that it never names an MPI communicator itself. */
#ifndef NST_H5_MPIO_H
#define NST_H5_MPIO_H

#include <hdf5.h>

#include "../util/status.h"

/* File access over MPI-IO on the ranks of the current group, with collective metadata reads and writes. */
nst_status nst_comm_h5_fapl(hid_t fapl);
/* Collective raw-data transfers (required for filtered datasets written in parallel), done as
 * independent MPI-IO writes of whole chunks. */
nst_status nst_comm_h5_dxpl(hid_t dxpl);

#endif

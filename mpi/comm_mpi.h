/* mpi/comm_mpi.h: for the other files of mpi/ only: the MPI communicator of the current group. */
#ifndef NST_COMM_MPI_H
#define NST_COMM_MPI_H

#include <mpi.h>

MPI_Comm nst_comm_mpi(void);

#endif

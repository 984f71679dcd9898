/* mpi/singleton.h: for the files of mpi/ only: a run started without a launcher (a singleton) keeps
 * Open MPI's session directory under a base of its own, and removes those of singletons that were
 * killed (singleton.c says why and how). */
#ifndef NST_SINGLETON_H
#define NST_SINGLETON_H

/* Before MPI_Init: where no launcher started this process, Open MPI's isolated singleton mode and a
 * session base of its own, TMPDIR/nstbatch-mpi.HOST.XXXXXX (or under OMPI_MCA_orte_tmpdir_base),
 * held by a lock; the bases on this host whose owner has ended without removing them are removed.
 * Nothing is done for a launched rank. */
void nst_singleton_begin(void);

/* After MPI_Finalize: the session base removed (Open MPI removed the tree inside it). */
void nst_singleton_end(void);

#endif

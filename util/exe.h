/* util/exe.h: the running program's own folder, where an installed program finds the files that
 * come with it (its plugin, the viewer's assets, the programs beside it). */
#ifndef NST_EXE_H
#define NST_EXE_H

#include <stddef.h>

/* The folder of /proc/self/exe into out (cap bytes): 0, or -1 with out "" where it cannot be read
 * or does not fit. */
int nst_exe_dir(char *out, size_t cap);

#endif

/* io/versions.h: versions of the file libraries this build runs with. */
#ifndef NST_IO_VERSIONS_H
#define NST_IO_VERSIONS_H

#include <stddef.h>

void nst_io_versions(char *out, size_t cap);

#endif

/* util/version.h: the version (the Makefile passes -DNST_VERSION). */
#ifndef NST_VERSION_H
#define NST_VERSION_H

#ifndef NST_BUILD_FLAGS
#define NST_BUILD_FLAGS "unknown"
#endif
#ifndef NST_VERSION
#define NST_VERSION "0.1.0"
#endif

#endif

/* util/mem.c: checked, aligned allocation (see mem.h). */
#include "mem.h"

#include <stdlib.h>
#include <sys/resource.h>
#include <string.h>

#include "checked.h"

void *nst_alloc(size_t bytes, const char *what)
{
    void *p = NULL;
    size_t rounded = (bytes + 63) & ~(size_t)63;
    if (rounded < bytes || rounded == 0) rounded = 64;
    if (posix_memalign(&p, 64, rounded) != 0) {
        nst_fail(NST_ENOMEM, "out of memory allocating %zu bytes for %s", bytes, what);
        return NULL;
    }
    return p;
}

void *nst_calloc(size_t bytes, const char *what)
{
    void *p = nst_alloc(bytes, what);
    if (p) memset(p, 0, bytes);
    return p;
}

void *nst_alloc_array(size_t count, size_t size, const char *what)
{
    size_t bytes;
    if (!nst_mul_size(count, size, &bytes)) {
        nst_fail(NST_ENOMEM, "size overflow allocating %zu x %zu bytes for %s", count, size, what);
        return NULL;
    }
    return nst_alloc(bytes, what);
}

void nst_free(void *p) { free(p); }

size_t nst_peak_rss(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0) return 0;
    return (size_t)ru.ru_maxrss * 1024; /* Linux reports KiB */
}

/* util/plant.c: NSTBATCH_PLANT (see plant.h). */
#include "plant.h"

#include <stdlib.h>
#include <string.h>

#include "log.h"

int nst_planted(const char *name)
{
    static int warned;
    const char *v = getenv("NSTBATCH_PLANT");
    if (!v || !*v) return 0;
    size_t n = strlen(name);
    for (const char *p = v; *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && strncmp(p, name, n) == 0) {
            if (!warned) nst_warn("NSTBATCH_PLANT=%s: planted on purpose, for the tests (a defect, or a delay); do not trust this run's results\n", v);
            warned = 1;
            return 1;
        }
        p += len + (end != NULL);
    }
    return 0;
}

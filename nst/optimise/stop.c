/* nst/optimise/stop.c: a level's stopping rule (see stop.h). */
#include "stop.h"

#include <math.h>
#include <string.h>

#include "../../util/mem.h"
#include "../state/checkpoint.h"

nst_status nst_stop_init(nst_stop *s, double tolerance, int window, long long min)
{
    memset(s, 0, sizeof *s);
    s->last_drop = NAN;
    if (tolerance <= 0 || window < 1) return NST_OK;
    s->tolerance = tolerance;
    s->window = window;
    s->min = min;
    s->ring = nst_calloc(sizeof(double) * 2 * (size_t)window, "the stopping rule's history");
    return s->ring ? NST_OK : NST_ENOMEM;
}

void nst_stop_free(nst_stop *s)
{
    nst_free(s->ring);
    memset(s, 0, sizeof *s);
}

/* The mean of `window` entries of the ring, from logical position `from` (0: the oldest kept). */
static double window_mean(const nst_stop *s, long long from)
{
    const long long n = 2 * (long long)s->window, start = s->seen - n; /* the oldest kept, as an iteration */
    double sum = 0;
    for (int i = 0; i < s->window; i++) sum += s->ring[(start + from + i) % n];
    return sum / s->window;
}

int nst_stop_feed(nst_stop *s, double loss)
{
    if (!s->ring) return 0;
    const long long n = 2 * (long long)s->window;
    s->ring[s->seen % n] = loss;
    s->seen++;
    if (s->seen < n) return 0;
    const double older = window_mean(s, 0), newer = window_mean(s, s->window);
    s->last_drop = older != 0 ? (older - newer) / older : newer == 0 ? 0 : -INFINITY;
    /* |drop|: a window that rose (a spike in it, or a climb) is no plateau either; a NaN never
     * stops a level here (the comparison fails); seen - 1: the steps taken */
    return s->seen - 1 >= s->min && fabs(s->last_drop) < s->tolerance;
}

nst_status nst_stop_state(nst_stop *s, const nst_ckpt_io *io)
{
    if (!s->ring) return NST_OK;
    int64_t seen = s->seen;
    NST_TRY(nst_ckpt_io_host(io, "stop", &seen, sizeof seen));
    NST_TRY(nst_ckpt_io_host(io, "stop.ring", s->ring, sizeof(double) * 2 * (size_t)s->window));
    s->seen = seen;
    return NST_OK;
}

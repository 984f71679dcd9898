/* mpi/watchdog_clock.c: what the stall watchdog (watchdog.c) reads: the limits, this rank's state
 * inside or outside MPI, and the render's clock (a loop's iterations, or the phase between loops),
 * written by the main thread and read by the watchdog's thread. */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>

#include "../util/timer.h"
#include "comm.h"
#include "comm_mpi.h"
#include "watchdog.h"
#include "watchdog_impl.h"

#define AUTO_FLOOR 300.0  /* auto: at least 5 minutes... */
#define AUTO_FIRST 1800.0 /* ...and 30 minutes until one iteration has finished */

/* ---- the limits ------------------------------------------------------------------------------------ */

static double limit_of(double setting, double slowest, int seen, double floor, double first)
{
    if (setting > 0) return setting;
    if (!seen) return first;
    return WD_AUTO_FACTOR * slowest > floor ? WD_AUTO_FACTOR * slowest : floor;
}

double nst_watchdog_limit(double setting, double slowest, int seen) { return limit_of(setting, slowest, seen, AUTO_FLOOR, AUTO_FIRST); }

static double phase_limit_of(double setting, double slowest, int seen, double floor, double first)
{
    const double a = limit_of(0, slowest, seen, floor, first);
    return setting > a ? setting : a;
}

double nst_watchdog_phase_limit(double setting, double slowest, int seen)
{
    return phase_limit_of(setting, slowest, seen, AUTO_FLOOR, AUTO_FIRST);
}

/* The test hook NSTBATCH_STALL_FLOOR=SECONDS puts auto's floor (and its limit before the first
 * iteration) there, so that the tests can watch the auto rule in seconds, not minutes. */
static double floor_hook = -1;

void wd_floor_read(void)
{
    const char *e = getenv("NSTBATCH_STALL_FLOOR");
    floor_hook = e ? atof(e) : 0;
}

static double hook_floor(void)
{
    if (floor_hook < 0) wd_floor_read(); /* the main thread, before the watchdog's starts */
    return floor_hook;
}

static double auto_limit(double setting, double slowest, int seen)
{
    const double f = hook_floor();
    return f > 0 ? limit_of(setting, slowest, seen, f, f) : nst_watchdog_limit(setting, slowest, seen);
}

static double phase_auto_limit(double setting, double slowest, int seen)
{
    const double f = hook_floor();
    return f > 0 ? phase_limit_of(setting, slowest, seen, f, f) : nst_watchdog_phase_limit(setting, slowest, seen);
}

double nst_watchdog_floor(void) { return auto_limit(0, 0, 1); }

/* ---- inside or outside MPI (comm.c marks its blocking calls) ----------------------------------------- */

/* One word, so that a ping never reads a depth with another moment's time: the milliseconds of the
 * last change (an entry, a departure, a request completed inside) above 16 bits of depth. */
static atomic_ullong mpi_word;

static unsigned long long now_ms(void) { return (unsigned long long)(nst_now() * 1000); }

static void mpi_update(int step, int progress)
{
    unsigned long long old = atomic_load(&mpi_word), nw;
    do {
        if (step < 0 && (old & 0xffff) == 0) return; /* a departure never entered: stay outside */
        const unsigned long long depth = (old & 0xffff) + (unsigned long long)(long long)step;
        const int edge = (step > 0 && depth == 1) || (step < 0 && depth == 0) || (progress && depth > 0);
        nw = ((edge ? now_ms() : old >> 16) << 16) | (depth & 0xffff);
    } while (!atomic_compare_exchange_weak(&mpi_word, &old, nw));
}

void nst_watchdog_mpi(int enter) { mpi_update(enter ? 1 : -1, 0); }
void nst_watchdog_mpi_progress(void) { mpi_update(0, 1); }
_Noreturn void nst_watchdog_hang(void)
{
    nst_watchdog_mpi(1);
    for (;;) sleep(60); /* (a signal's handler returns here: still waiting) */
}
void wd_mpi_reset(void) { atomic_store(&mpi_word, now_ms() << 16); }

uint32_t wd_my_state(void)
{
    const unsigned long long w = atomic_load(&mpi_word), t = now_ms(), at = w >> 16;
    const unsigned long long s = t > at ? (t - at) / 1000 : 0;
    return ((w & 0xffff) ? 0x80000000u : 0) | (uint32_t)(s > 0x7fffffff ? 0x7fffffff : s);
}

/* The answers hold whole seconds, rounded down: a rank has computed for secs to secs + 1 s, or
 * waited inside MPI that long. Each test leans to "moving", so that rounding never ends a job. The
 * rule is the same in a loop and in a phase: a rank computing at all came out of MPI since its last
 * wait, and one back inside MPI for less than half the limit computed until lately. In a loop this
 * matters at a slow iteration's end: the slow rank, done with its work, computes the rest of its
 * step or has just joined the others' collective while the clock runs out (a loaded machine made
 * exactly that a stall). A stopped network still ends the job: every rank then waits inside MPI,
 * the last one since at most an iteration (1/20 of the auto limit) after the stop, or since the
 * previous round's extension. */
int nst_watchdog_moving(double limit, unsigned mine, const unsigned *state, int n)
{
    const double half = limit / 2;
    int moving = 0;
    for (int i = -1; i < n; i++) {
        const unsigned st = i < 0 ? mine : state[i];
        const double secs = (double)(st & 0x7fffffffu);
        moving |= !(st & 0x80000000u) || secs < half; /* computing, or back inside MPI lately */
    }
    return moving;
}

/* A slow iteration's rank, for the warning: computing, not waiting inside MPI, for half the limit. */
int nst_watchdog_slow(double limit, unsigned st) { return !(st & 0x80000000u) && (double)(st & 0x7fffffffu) + 1 > limit / 2; }

/* ---- the render's clock (written by the main thread, read by the watchdog) --------------------------- */

static struct {
    pthread_mutex_t mu;
    int armed, phase, began, seen; /* phase: between the loops; began: a loop has begun in this run */
    double setting, last, slowest; /* last: the latest beat (or the arm); slowest: between beats */
    long long it;                  /* iterations done */
    char where[320], outer[320];   /* outer: the enclosing phase (the self-test), "" for none */
    char saved[4400];
} clk = {PTHREAD_MUTEX_INITIALIZER, 0, 0, 0, 0, 0, 0, 0, 0, "", "", ""};

void nst_watchdog_setting(double setting)
{
    pthread_mutex_lock(&clk.mu);
    clk.setting = setting;
    pthread_mutex_unlock(&clk.mu);
}

void nst_watchdog_arm(double setting, const char *where, long long it0)
{
    pthread_mutex_lock(&clk.mu);
    clk.armed = 1, clk.phase = 0, clk.began = 1, clk.setting = setting, clk.last = nst_now(), clk.it = it0;
    snprintf(clk.where, sizeof clk.where, "%.200s", where);
    pthread_mutex_unlock(&clk.mu);
}

void nst_watchdog_beat(long long done)
{
    double t = nst_now();
    pthread_mutex_lock(&clk.mu);
    if (t - clk.last > clk.slowest) clk.slowest = t - clk.last;
    clk.seen = 1, clk.last = t, clk.it = done;
    pthread_mutex_unlock(&clk.mu);
}

static void freeze_hook(const char *key);

/* The phase begins: its words, and the clock from now. */
static void phase_set(const char *what, int encloses)
{
    pthread_mutex_lock(&clk.mu);
    clk.armed = 1, clk.phase = 1, clk.last = nst_now();
    snprintf(clk.where, sizeof clk.where, "%s", what);
    if (encloses >= 0) snprintf(clk.outer, sizeof clk.outer, "%s", encloses ? what : "");
    pthread_mutex_unlock(&clk.mu);
}

void nst_watchdog_disarm(void)
{
    char after[320];
    pthread_mutex_lock(&clk.mu);
    if (clk.outer[0]) snprintf(after, sizeof after, "%s", clk.outer);
    else snprintf(after, sizeof after, "after %.200s, iteration %lld (its outputs, or the set-up of what follows)", clk.where, clk.it);
    pthread_mutex_unlock(&clk.mu);
    phase_set(after, -1);
    freeze_hook("after");
}

/* The test hook NSTBATCH_FREEZE=RANK:KEY[:SECONDS][,...] (watchdog.h), as phase `key` begins. */
static void freeze_hook(const char *key)
{
    const char *f = getenv("NSTBATCH_FREEZE");
    for (const char *p = f; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
        char k[32];
        int rank;
        double secs = 0;
        if (sscanf(p, "%d:%31[^:,]:%lf", &rank, k, &secs) < 2 || rank != nst_comm_world_rank() || strcmp(k, key) != 0) continue;
        fprintf(stderr, "nstbatch: test hook NSTBATCH_FREEZE: rank %d %s as phase %s begins\n", rank, secs > 0 ? "computes" : "stops (SIGSTOP)", key);
        fflush(stderr);
        if (secs <= 0) {
            raise(SIGSTOP); /* frozen, as a stopped process or host: no answer to rank 0's questions */
            return;
        }
        nst_sleep(secs); /* computing, as far as the watchdog can tell */
        fprintf(stderr, "nstbatch: test hook NSTBATCH_FREEZE: rank %d has computed its %.0f s\n", rank, secs);
        return;
    }
}

void nst_watchdog_phase(const char *key, const char *what, int encloses)
{
    phase_set(what, encloses != 0);
    freeze_hook(key);
}

void nst_watchdog_saved(const char *what)
{
    pthread_mutex_lock(&clk.mu);
    snprintf(clk.saved, sizeof clk.saved, "%s", what);
    pthread_mutex_unlock(&clk.mu);
}

/* In a loop the clock runs from the latest beat; in a phase only while this rank waits inside MPI,
 * from the latest of its entry, a request of that wait completed, and the phase's start (or
 * rank 0's "moving"). */
void wd_clock_read(wd_clock *c)
{
    const uint32_t st = wd_my_state();
    pthread_mutex_lock(&clk.mu);
    const double fresh = nst_now() - clk.last, in = (double)(st & 0x7fffffffu);
    c->since = !clk.armed ? -1 : !clk.phase ? fresh : !(st & 0x80000000u) ? 0 : in < fresh ? in : fresh;
    c->limit = clk.phase ? phase_auto_limit(clk.setting, clk.slowest, clk.seen) : auto_limit(clk.setting, clk.slowest, clk.seen);
    c->phase = clk.phase;
    const char *lead = clk.phase ? "outside the iterations" : "run.stall_timeout = auto";
    const char *tail = clk.phase ? ", or run.stall_timeout where larger" : "";
    if (clk.setting > 0 && clk.setting >= c->limit) snprintf(c->how, sizeof c->how, "run.stall_timeout = %g", clk.setting);
    else if (!clk.seen) snprintf(c->how, sizeof c->how, "%s: %.0f s before the first iteration ends%s", lead, c->limit, tail);
    else snprintf(c->how, sizeof c->how, "%s: %dx the slowest iteration so far, %.2f s, at least %.0f s%s", lead, WD_AUTO_FACTOR, clk.slowest,
                  auto_limit(0, 0, 1), tail);
    if (clk.phase) snprintf(c->where, sizeof c->where, "%s", clk.where);
    else snprintf(c->where, sizeof c->where, "at %s, iteration %lld", clk.where, clk.it);
    pthread_mutex_unlock(&clk.mu);
}

double nst_watchdog_limit_now(void)
{
    wd_clock c;
    wd_clock_read(&c);
    return c.since < 0 ? 0 : c.limit;
}

void wd_clock_extend(void)
{
    pthread_mutex_lock(&clk.mu);
    clk.last = nst_now();
    pthread_mutex_unlock(&clk.mu);
}

void wd_saved_read(char *out, size_t cap)
{
    pthread_mutex_lock(&clk.mu);
    snprintf(out, cap, "%s", clk.saved[0]  ? clk.saved
                           : !clk.began    ? "no render had begun in this run (checkpoints written before it are kept)"
                                           : "nothing was saved (checkpoint.path is not set): a run again starts over");
    pthread_mutex_unlock(&clk.mu);
}

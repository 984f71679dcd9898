/* mpi/watchdog.c: the stall and lost-rank watchdog (see watchdog.h): this rank's state inside or
 * outside MPI, the render's clock (iterations, or a phase between them), and the thread that
 * reads both and the lifeline. */
#include "watchdog.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "../util/log.h"
#include "../util/timer.h"
#include "comm.h"
#include "comm_mpi.h"
#include "lifeline.h"

#define AUTO_FACTOR 20      /* auto: this many times the slowest iteration... */
#define AUTO_FLOOR 300.0    /* ...at least 5 minutes... */
#define AUTO_FIRST 1800.0   /* ...and 30 minutes until one iteration has finished */
#define PING_SECONDS 5.0    /* rank 0 waits this long for every rank's answer */
#define GRACE_SECONDS 15.0  /* a rank that stalled waits this long for rank 0's verdict */
#define QUIET_SECONDS 10.0  /* after rank 0's verdict, for its MPI_Abort to end this rank */
#define GATHER_SECONDS 0.3  /* after a lost rank, for the rest of its host to go too */
#define BACKSTOP_SECONDS 10 /* MPI_Abort may never return on a rank cut off from its launcher */

static double limit_of(double setting, double slowest, int seen, double floor, double first)
{
    if (setting > 0) return setting;
    if (!seen) return first;
    return AUTO_FACTOR * slowest > floor ? AUTO_FACTOR * slowest : floor;
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
static double hook_floor(void)
{
    const char *e = getenv("NSTBATCH_STALL_FLOOR");
    return e ? atof(e) : 0;
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

/* ---- inside or outside MPI (comm.c marks its blocking calls) -------------------------------------- */

static atomic_int mpi_depth;
static atomic_llong mpi_since_ms; /* when this rank last entered or left MPI */

void nst_watchdog_mpi(int enter)
{
    int before = atomic_fetch_add(&mpi_depth, enter ? 1 : -1);
    if ((enter && before == 0) || (!enter && before == 1)) atomic_store(&mpi_since_ms, (long long)(nst_now() * 1000));
}

/* This rank's state for a ping's answer: bit 31 set while inside MPI, the seconds in that state below. */
static uint32_t my_state(void)
{
    long long s = (long long)(nst_now() * 1000) - atomic_load(&mpi_since_ms);
    uint32_t secs = s < 0 ? 0 : s / 1000 > 0x7fffffff ? 0x7fffffff : (uint32_t)(s / 1000);
    return (atomic_load(&mpi_depth) > 0 ? 0x80000000u : 0) | secs;
}

int nst_watchdog_moving(int phase, double limit, unsigned mine, const unsigned *state, int n)
{
    const unsigned half = (unsigned)(limit / 2);
    int moving = 0;
    for (int i = -1; i < n; i++) {
        const unsigned st = i < 0 ? mine : state[i], secs = st & 0x7fffffffu;
        if (st & 0x80000000u) moving |= phase && secs < half; /* came out of MPI lately: it moves */
        else moving |= phase || secs >= half;                  /* computing */
    }
    return moving;
}

/* ---- the render's clock (written by the main thread, read by the watchdog) ------------------------ */

static struct {
    pthread_mutex_t mu;
    int armed, phase, began, seen; /* phase: between the loops; began: a loop has begun in this run */
    double setting, last, slowest; /* last: the latest beat (or the arm); slowest: between beats */
    long long it;                  /* iterations done */
    char where[320], saved[4400];
} clk = {PTHREAD_MUTEX_INITIALIZER, 0, 0, 0, 0, 0, 0, 0, 0, "", ""};

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

void nst_watchdog_disarm(void)
{
    char after[320];
    pthread_mutex_lock(&clk.mu);
    snprintf(after, sizeof after, "after %.200s, iteration %lld (its outputs, or the set-up of what follows)", clk.where, clk.it);
    pthread_mutex_unlock(&clk.mu);
    nst_watchdog_phase("after", after);
}

/* The test hook NSTBATCH_FREEZE=RANK:KEY[:SECONDS] (watchdog.h), as phase `key` begins. */
static void freeze_hook(const char *key)
{
    const char *f = getenv("NSTBATCH_FREEZE");
    char k[32];
    int rank;
    double secs = 0;
    if (!f || sscanf(f, "%d:%31[^:]:%lf", &rank, k, &secs) < 2 || rank != nst_comm_world_rank() || strcmp(k, key) != 0) return;
    fprintf(stderr, "nstbatch: test hook NSTBATCH_FREEZE: rank %d %s as phase %s begins\n", rank, secs > 0 ? "computes" : "stops (SIGSTOP)", key);
    fflush(stderr);
    if (secs <= 0) {
        raise(SIGSTOP); /* frozen, as a stopped process or host: no answer to rank 0's questions */
        return;
    }
    struct timespec t = {(time_t)secs, (long)((secs - (double)(time_t)secs) * 1e9)};
    while (nanosleep(&t, &t) != 0) continue; /* computing, as far as the watchdog can tell */
}

void nst_watchdog_phase(const char *key, const char *what)
{
    pthread_mutex_lock(&clk.mu);
    clk.armed = 1, clk.phase = 1, clk.last = nst_now();
    snprintf(clk.where, sizeof clk.where, "%s", what);
    pthread_mutex_unlock(&clk.mu);
    freeze_hook(key);
}

void nst_watchdog_saved(const char *what)
{
    pthread_mutex_lock(&clk.mu);
    snprintf(clk.saved, sizeof clk.saved, "%s", what);
    pthread_mutex_unlock(&clk.mu);
}

/* Seconds this rank's clock has run when armed (else -1), with the limit, a description of it,
 * where the render is ("at level 1, iteration 41", or the phase's words) and whether that is a
 * phase. In a loop the clock runs from the latest beat; in a phase only while this rank waits
 * inside MPI, from the later of its entry and the phase's start (or rank 0's "moving"). */
static double clock_read(double *limit, char *how, size_t cap, char *where, size_t wcap, int *phase)
{
    pthread_mutex_lock(&clk.mu);
    const double now = nst_now(), in = now - (double)atomic_load(&mpi_since_ms) / 1000, fresh = now - clk.last;
    double since = !clk.armed ? -1 : !clk.phase ? fresh : atomic_load(&mpi_depth) == 0 ? 0 : in < fresh ? in : fresh;
    *limit = clk.phase ? phase_auto_limit(clk.setting, clk.slowest, clk.seen) : auto_limit(clk.setting, clk.slowest, clk.seen);
    const char *lead = clk.phase ? "outside the iterations" : "run.stall_timeout = auto", *tail = clk.phase ? ", or run.stall_timeout where larger" : "";
    if (clk.setting > 0 && clk.setting >= *limit) snprintf(how, cap, "run.stall_timeout = %g", clk.setting);
    else if (!clk.seen) snprintf(how, cap, "%s: %.0f s before the first iteration ends%s", lead, *limit, tail);
    else snprintf(how, cap, "%s: %dx the slowest iteration so far, %.2f s, at least %.0f s%s", lead, AUTO_FACTOR, clk.slowest, auto_limit(0, 0, 1), tail);
    if (clk.phase) snprintf(where, wcap, "%s", clk.where);
    else snprintf(where, wcap, "at %s, iteration %lld", clk.where, clk.it);
    if (phase) *phase = clk.phase;
    pthread_mutex_unlock(&clk.mu);
    return since;
}

/* What ran out: "no iteration finished for 13 s (run.stall_timeout = 8)", or in a phase "a wait
 * inside MPI passed 300 s (...)". */
static void ran_out(char *out, size_t cap, int phase, double secs, const char *how)
{
    if (phase) snprintf(out, cap, "a wait inside MPI passed %.0f s (%s)", secs, how);
    else snprintf(out, cap, "no iteration finished for %.0f s (%s)", secs, how);
}

/* Restart the clock without counting the wait as an iteration (rank 0 found a rank still working). */
static void clock_extend(void)
{
    pthread_mutex_lock(&clk.mu);
    clk.last = nst_now();
    pthread_mutex_unlock(&clk.mu);
}

static void saved_read(char *out, size_t cap)
{
    pthread_mutex_lock(&clk.mu);
    snprintf(out, cap, "%s", clk.saved[0]  ? clk.saved
                           : !clk.began    ? "no render had begun in this run (checkpoints written before it are kept)"
                                           : "nothing was saved (checkpoint.path is not set): a run again starts over");
    pthread_mutex_unlock(&clk.mu);
}

/* ---- the thread's state (the thread's own, but for `stop`) ---------------------------------------- */

enum { PEER_LIVE, PEER_BYE, PEER_LOST };

static struct {
    pthread_t thread;
    int running;
    atomic_int stop;
    int wake;              /* an eventfd: stop wakes the thread at once (an exit is not held up) */
    int me, hub, deputy;   /* hub: world rank 0; deputy: speaks when rank 0 cannot */
    int ending;            /* the job is ending: said here, by rank 0, or by an abort elsewhere */
    double fired;          /* this rank's clock ran out (0: not) */
    double verdict_wait;   /* a rank other than 0: since when it waits for rank 0's verdict */
    double quiet_until;    /* the job ends elsewhere: end this rank by then if still alive */
    int n, *peer;          /* per link: PEER_* */
    double lost_at;        /* rank 0: the first lost rank */
    double ping_at;        /* rank 0's round of questions, since (0: none) */
    double round_limit;    /* and the limit that started it */
    int round_from;        /* the rank whose clock ran out */
    int round_phase;       /* in a phase (watchdog.h: nst_watchdog_moving's rule) */
    uint32_t *state;       /* per link: the state answered */
    char *answered;
    int warned;            /* a slow iteration was reported once */
} wd;

/* ---- ending the job ------------------------------------------------------------------------------ */

static void *backstop(void *p)
{
    (void)p;
    sleep(BACKSTOP_SECONDS);
    _exit(NST_EXIT_REQUEUE);
    return NULL;
}

/* "75 LINE" to NSTBATCH_END_NOTE, for the launcher's wrapper (the first rank to write it wins). */
static void write_note(const char *line)
{
    const char *path = getenv("NSTBATCH_END_NOTE");
    if (!path || !*path) return;
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) return;
    dprintf(fd, "%d %s\n", NST_EXIT_REQUEUE, line);
    close(fd);
}

/* End the job with status 75: the line (NULL: another rank says it), the note, the others told
 * (rank 0 tells every rank that it speaks; another rank tells rank 0 that it is not lost). */
_Noreturn static void end_job(const char *line)
{
    char quiet[200];
    wd.ending = 1;
    if (line) {
        fprintf(stderr, "nstbatch: error: %s\n", line);
        fflush(stderr);
    }
    snprintf(quiet, sizeof quiet, "rank %d (%s) ended with the job (the watchdog's line came from another rank)", wd.me, nst_comm_host());
    write_note(line ? line : quiet);
    for (int i = 0; i < wd.n; i++) nst_lifeline_send(i, wd.hub ? 'S' : 'A', 0);
    pthread_t b;
    if (pthread_create(&b, NULL, backstop, NULL) == 0) pthread_detach(b);
    MPI_Abort(MPI_COMM_WORLD, NST_EXIT_REQUEUE);
    _exit(NST_EXIT_REQUEUE);
}

_Noreturn void nst_watchdog_end(const char *line) { end_job(line); }

double nst_watchdog_floor(void) { return auto_limit(0, 0, 1); }

/* "ranks 2, 3 on nsth-b; rank 5 on nsth-c": the ranks of the links picked by want[], by host. */
static void ranks_by_host(const char *want, char *out, size_t cap)
{
    int *rank = malloc(sizeof *rank * ((size_t)wd.n + 1)), n = 0;
    out[0] = 0;
    if (!want || !rank) {
        free(rank);
        return;
    }
    for (int i = 0; i < wd.n; i++)
        if (want[i]) rank[n++] = nst_lifeline_peer(i);
    nst_lifeline_ranks_by_host(rank, n, out, cap);
    free(rank);
}

/* ---- rank 0: lost ranks, rounds of questions, verdicts ---------------------------------------------- */

static void lost_verdict(void)
{
    char *want = calloc((size_t)wd.n + 1, 1), who[1024], saved[4400], line[8192], how[256], where[400];
    for (int i = 0; want && i < wd.n; i++) want[i] = wd.peer[i] == PEER_LOST;
    if (want) ranks_by_host(want, who, sizeof who);
    else snprintf(who, sizeof who, "ranks");
    free(want);
    double limit, since = clock_read(&limit, how, sizeof how, where, sizeof where, NULL);
    saved_read(saved, sizeof saved);
    snprintf(line, sizeof line, "lost %s%s%s: their processes ended without a word (killed, crashed, or their host went down); %s; "
             "ending the job with exit status 75: run again with the same rank count (on the hosts left, or on all) to resume",
             who, since >= 0 ? " " : "", since >= 0 ? where : "", saved);
    end_job(line);
}

static void start_round(double limit, int from, int phase)
{
    if (wd.ping_at > 0) return;
    wd.ping_at = nst_now(), wd.round_limit = limit, wd.round_from = from, wd.round_phase = phase;
    for (int i = 0; i < wd.n; i++) {
        wd.answered[i] = 0;
        if (wd.peer[i] == PEER_LIVE) nst_lifeline_send(i, 'P', 0);
    }
}

/* Every live rank answered, and nst_watchdog_moving says the job moves: in a loop, one (rank 0
 * too) has computed outside MPI for half the limit or more, a slow iteration (said once per run);
 * in a phase, one computes or came out of MPI lately (said nowhere: a phase's waits for one rank's
 * work, such as rank 0 writing an image, are what phases do). The ranks' clocks start again. */
static int slow_but_moving(const char *silent)
{
    const uint32_t half = (uint32_t)(wd.round_limit / 2), mine = my_state();
    for (int i = 0; silent && i < wd.n; i++)
        if (silent[i]) return 0; /* a rank that does not answer: a stall */
    char *working = calloc((size_t)wd.n + 1, 1), who[1024] = "";
    unsigned *heard = calloc((size_t)wd.n + 1, sizeof *heard); /* the answers of this round */
    if (!silent || !working || !heard) {
        free(working), free(heard);
        return 0;
    }
    int n = 0;
    for (int i = 0; i < wd.n; i++) {
        if (wd.answered[i]) heard[n++] = wd.state[i];
        working[i] = wd.answered[i] && !(wd.state[i] & 0x80000000u) && wd.state[i] >= half;
    }
    const int moving = nst_watchdog_moving(wd.round_phase, wd.round_limit, mine, heard, n), zero = !(mine & 0x80000000u) && mine >= half;
    free(heard);
    if (moving && !wd.round_phase && !wd.warned) {
        ranks_by_host(working, who, sizeof who);
        char all[1200];
        snprintf(all, sizeof all, "%s%s%s%s", zero ? "rank 0 on " : "", zero ? nst_comm_host() : "", zero && who[0] ? "; " : "", who);
        nst_warn("no iteration has finished for %.0f s, but still computing (not waiting inside MPI): %s: a slow iteration, not a "
                 "stall; waiting on\n", wd.round_limit, all);
        wd.warned = 1;
    }
    free(working);
    return moving;
}

static void stall_verdict(const char *silent)
{
    char who[1024], saved[4400], line[8192], how[256], where[400], what[1200], out[400];
    int phase;
    double limit, since = clock_read(&limit, how, sizeof how, where, sizeof where, &phase);
    ranks_by_host(silent, who, sizeof who);
    if (who[0])
        snprintf(what, sizeof what, "no answer from %s: stopped (a frozen process or host) or cut off by the network", who);
    else if (wd.n == 0)
        snprintf(what, sizeof what, "no other rank could be asked why (none reached rank 0's lifeline over TCP at the start)");
    else if (wd.round_phase)
        snprintf(what, sizeof what, "every rank answers, and each has waited inside MPI for %.0f s or more: they wait for each other "
                 "inside MPI, whose network has stopped", wd.round_limit / 2);
    else
        snprintf(what, sizeof what, "every rank answers, and none has computed for %.0f s: they wait for each other inside MPI, whose "
                 "network has stopped", wd.round_limit / 2);
    saved_read(saved, sizeof saved);
    if (wd.round_phase && !phase) /* a rank with no iterations of its own (no tiles) asked: its limit, not rank 0's */
        snprintf(out, sizeof out, "a wait inside MPI on rank %d (%s) passed %.0f s (its limit outside the iterations)", wd.round_from,
                 nst_lifeline_host(wd.round_from), wd.round_limit);
    else
        ran_out(out, sizeof out, phase, phase ? wd.round_limit : since, how);
    if (since >= 0)
        snprintf(line, sizeof line, "stalled %s: %s; %s; %s; ending the job with exit status 75: run again (or requeue) to resume", where,
                 out, what, saved);
    else
        snprintf(line, sizeof line, "stalled: rank %d (%s) saw no iteration finish for %.0f s; %s; %s; ending the job with exit status "
                 "75: run again (or requeue) to resume", wd.round_from, nst_lifeline_host(wd.round_from), wd.round_limit, what, saved);
    end_job(line);
}

/* The round is over when every live rank answered or the time is up: wait on, or end the job. */
static void round_check(void)
{
    int all = 1;
    for (int i = 0; i < wd.n; i++) all &= wd.peer[i] != PEER_LIVE || wd.answered[i];
    if (!all && nst_now() - wd.ping_at < PING_SECONDS) return;
    char *silent = calloc((size_t)wd.n + 1, 1);
    for (int i = 0; silent && i < wd.n; i++) silent[i] = wd.peer[i] == PEER_LIVE && !wd.answered[i];
    wd.ping_at = 0;
    if (silent && slow_but_moving(silent)) {
        for (int i = 0; i < wd.n; i++)
            if (wd.peer[i] == PEER_LIVE) nst_lifeline_send(i, 'W', 0);
        clock_extend();
        wd.fired = 0;
    } else {
        stall_verdict(silent);
    }
    free(silent);
}

/* ---- the other ranks: rank 0 lost or silent ---------------------------------------------------------- */

/* Rank 0 is gone, or gave no verdict on this rank's stall: the deputy says so, every rank ends. */
static void alone(const char *what)
{
    char saved[4400], line[8192], how[256], where[400];
    double limit, since = clock_read(&limit, how, sizeof how, where, sizeof where, NULL);
    saved_read(saved, sizeof saved);
    if (wd.me != wd.deputy) end_job(NULL);
    snprintf(line, sizeof line, "rank %d (%s)%s%s: %s; %s; ending the job with exit status 75: run again (or requeue) to resume", wd.me,
             nst_comm_host(), since >= 0 ? " " : "", since >= 0 ? where : "", what, saved);
    end_job(line);
}

static void rank0_lost(void)
{
    char what[400];
    snprintf(what, sizeof what, "lost rank 0 on %s: its process ended without a word (killed, crashed, or its host went down; its "
             "host's other ranks may be gone with it)", nst_lifeline_host(0));
    alone(what);
}

static void rank0_silent(int phase, double limit, const char *how)
{
    char what[800], out[400];
    ran_out(out, sizeof out, phase, limit, how);
    if (wd.n == 0) /* no lifeline: nobody to ask */
        snprintf(what, sizeof what, "%s, and this rank has no lifeline to rank 0 on %s to ask why (it could not reach rank 0 over TCP at "
                 "the start)", out, nst_lifeline_host(0));
    else
        snprintf(what, sizeof what, "%s, and rank 0 on %s gave no answer in %.0f s more: it stopped, or the network between %s and %s is "
                 "cut", out, nst_lifeline_host(0), GRACE_SECONDS, nst_comm_host(), nst_lifeline_host(0));
    alone(what);
}

/* ---- messages and the clock -------------------------------------------------------------------------- */

static void on_message(int i, const nst_lifeline_msg *m)
{
    switch (m->type) {
    case 'B': wd.peer[i] = PEER_BYE; break;       /* finished: its end is no loss */
    case 'A': wd.ending = 1; break;                /* an abort elsewhere: that rank said why, Open MPI ends the job */
    case 'S': wd.ending = 1;                       /* rank 0 ends the job and says why */
              wd.quiet_until = nst_now() + QUIET_SECONDS; break;
    case 'P': nst_lifeline_send(i, 'p', my_state()); break;
    case 'p': wd.answered[i] = 1, wd.state[i] = m->value; break;
    case 'F': start_round((double)(m->value & 0x7fffffffu), nst_lifeline_peer(i), (int)(m->value >> 31)); break; /* bit 31: a phase */
    case 'W': clock_extend(); wd.fired = 0, wd.verdict_wait = 0; break;
    default: break;
    }
}

static void on_closed(int i)
{
    if (wd.peer[i] != PEER_LIVE) return;
    wd.peer[i] = PEER_LOST;
    if (wd.ending) return;
    if (wd.hub && wd.lost_at == 0) wd.lost_at = nst_now();
    if (!wd.hub) rank0_lost();
}

/* Once per wake: this rank's clock, a loss to report, a round to close, a verdict that is late. */
static void tick(void)
{
    char how[256], where[400];
    int phase;
    double limit, since = clock_read(&limit, how, sizeof how, where, sizeof where, &phase), t = nst_now();
    if (wd.ending) {
        if (wd.quiet_until > 0 && t > wd.quiet_until) end_job(NULL);
        return;
    }
    if (wd.hub && wd.lost_at > 0 && t - wd.lost_at > GATHER_SECONDS) lost_verdict();
    if (since > limit && wd.fired == 0) {
        wd.fired = t;
        if (wd.hub) start_round(limit, 0, phase);
        else if (wd.n > 0) nst_lifeline_send(0, 'F', (limit < 2e9 ? (uint32_t)(limit + 0.999) : 2000000000u) | (phase ? 0x80000000u : 0)), wd.verdict_wait = t;
        else rank0_silent(phase, limit, how); /* no lifeline: nobody to ask */
    }
    if (wd.hub && wd.ping_at > 0) round_check();
    if (!wd.hub && wd.verdict_wait > 0 && t - wd.verdict_wait > GRACE_SECONDS) rank0_silent(phase, limit, how);
}

static void *watch(void *p)
{
    (void)p;
    struct pollfd *pf = calloc((size_t)wd.n + 1, sizeof *pf);
    while (pf && !atomic_load(&wd.stop)) {
        for (int i = 0; i < wd.n; i++) pf[i] = (struct pollfd){nst_lifeline_fd(i), POLLIN, 0};
        pf[wd.n] = (struct pollfd){wd.wake, POLLIN, 0};
        poll(pf, (nfds_t)wd.n + 1, 250);
        for (int i = 0; i < wd.n && !atomic_load(&wd.stop); i++) {
            nst_lifeline_msg m;
            int r;
            if (!pf[i].revents) continue;
            while ((r = nst_lifeline_read(i, &m)) == 1) on_message(i, &m);
            if (r < 0) on_closed(i);
        }
        if (!atomic_load(&wd.stop)) tick();
    }
    free(pf);
    return NULL;
}

/* ---- start and stop (comm.c) ------------------------------------------------------------------------- */

/* The lowest rank on a host other than rank 0's (rank 1 when they share one): it speaks for the
 * job when rank 0 cannot. */
static int find_deputy(void)
{
    for (int r = 1; r < nst_comm_world_size(); r++)
        if (strcmp(nst_lifeline_host(r), nst_lifeline_host(0)) != 0) return r;
    return 1;
}

nst_status nst_watchdog_start(void)
{
    if (nst_comm_world_size() < 2) return NST_OK;
    NST_TRY(nst_lifeline_open());
    wd.me = nst_comm_world_rank(), wd.hub = wd.me == 0, wd.deputy = find_deputy();
    wd.n = nst_lifeline_count();
    wd.peer = calloc((size_t)wd.n + 1, sizeof *wd.peer);
    wd.state = calloc((size_t)wd.n + 1, sizeof *wd.state);
    wd.answered = calloc((size_t)wd.n + 1, 1);
    if (!wd.peer || !wd.state || !wd.answered) return nst_fail(NST_ENOMEM, "out of memory for the watchdog");
    atomic_store(&mpi_since_ms, (long long)(nst_now() * 1000));
    wd.wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (pthread_create(&wd.thread, NULL, watch, NULL) != 0) return nst_fail(NST_ERUNTIME, "cannot start the watchdog thread");
    wd.running = 1;
    return NST_OK;
}

/* Goodbye on every link (so that this rank's end is no loss), the thread joined, the links closed. */
void nst_watchdog_stop(void)
{
    if (wd.running) {
        uint64_t one = 1;
        atomic_store(&wd.stop, 1);
        if (write(wd.wake, &one, sizeof one) < 0) { /* the thread then wakes within 250 ms */ }
        pthread_join(wd.thread, NULL);
        wd.running = 0;
    }
    if (wd.wake > 0) close(wd.wake);
    wd.wake = -1;
    for (int i = 0; i < wd.n; i++) nst_lifeline_send(i, 'B', 0);
    nst_lifeline_close();
    free(wd.peer), free(wd.state), free(wd.answered);
    wd.peer = NULL, wd.state = NULL, wd.answered = NULL, wd.n = 0;
}

/* nst_comm_abort: this rank ends the job with its own message; it is not lost. */
void nst_watchdog_aborting(void)
{
    for (int i = 0; i < wd.n; i++) nst_lifeline_send(i, 'A', 0);
}

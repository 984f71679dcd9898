/* mpi/watchdog.c: the stall and lost-rank watchdog (see watchdog.h): the thread that reads the
 * render's clock and this rank's MPI state (watchdog_clock.c) and the lifeline, asks, judges and
 * ends the job. */
#include "watchdog.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
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
#include "watchdog_impl.h"

#define PING_SECONDS 5.0        /* rank 0 waits this long for every rank's answer in a loop... */
#define PHASE_PING_SECONDS 10.0 /* ...and in a phase, where it asks routinely (under GRACE_SECONDS) */
#define GRACE_SECONDS 15.0      /* a rank that stalled waits this long for rank 0's verdict */
#define QUIET_SECONDS 10.0      /* after rank 0's verdict, for its MPI_Abort to end this rank */
#define GATHER_SECONDS 0.3      /* after a lost rank, for the rest of its host to go too */
#define SETTLE_SECONDS 2.0      /* the deputy, rank 0 lost: for an abort from elsewhere (which kills rank 0 first) to end it */
#define BACKSTOP_SECONDS 10     /* MPI_Abort may never return on a rank cut off from its launcher */
#define SUSPEND_SECONDS 10.0    /* a tick this late: the job (or this host) was suspended, not stalled */

/* ---- the thread's state (the thread's own, but for `stop`) ---------------------------------------- */

enum { PEER_LIVE, PEER_BYE, PEER_LOST };

static struct {
    pthread_t thread;
    int running;
    atomic_int stop;
    int wake;              /* an eventfd: stop wakes the thread at once (an exit is not held up) */
    int me, hub, deputy;   /* hub: world rank 0; deputy: speaks when rank 0 cannot */
    int unlinked;          /* rank 0: ranks with no lifeline (they could not reach it over TCP) */
    int ending;            /* the job is ending: said here, by rank 0, or by an abort elsewhere */
    double fired;          /* this rank's clock ran out (0: not) */
    double verdict_wait;   /* a rank other than 0: since when it waits for rank 0's verdict */
    double quiet_until;    /* the job ends elsewhere: end this rank by then if still alive */
    double speak_at;       /* not the deputy, rank 0 silent or lost: speak then if the deputy has not ended the job */
    int speak_lost;        /* rank 0 lost (its link closed), not only silent: nothing it says can call that off */
    char speak[1200];      /* and what */
    int n, *peer;          /* per link: PEER_* */
    double lost_at;        /* rank 0: the first lost rank */
    double ping_at;        /* rank 0's round of questions, since (0: none) */
    double round_end;      /* rank 0: when the latest round ended (a phase asks every limit) */
    double round_limit;    /* and the limit that started it */
    int round_from;        /* the rank whose clock ran out */
    int round_phase;       /* in a phase (watchdog.h: nst_watchdog_moving's rule) */
    int round_presence;    /* rank 0 asked on its own, in a phase: only silence is judged */
    uint32_t *state;       /* per link: the state answered */
    char *answered;
    int warned;            /* a slow iteration was reported once */
    double last_tick;      /* the previous tick, to see a suspension */
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
    char *want = calloc((size_t)wd.n + 1, 1), who[1024], saved[4400], line[8192];
    wd_clock c;
    for (int i = 0; want && i < wd.n; i++) want[i] = wd.peer[i] == PEER_LOST;
    if (want) ranks_by_host(want, who, sizeof who);
    else snprintf(who, sizeof who, "ranks");
    free(want);
    wd_clock_read(&c);
    wd_saved_read(saved, sizeof saved);
    snprintf(line, sizeof line, "lost %s%s%s: their processes ended without a word (killed, crashed, or their host went down); %s; "
             "ending the job with exit status 75: run again with the same rank count (on the hosts left, or on all) to resume",
             who, c.since >= 0 ? " " : "", c.since >= 0 ? c.where : "", saved);
    end_job(line);
}

/* A round of questions: started by a rank whose clock ran out, or by rank 0 itself in a phase
 * (presence: every limit, to find a stopped rank however the others wait). A rank's question
 * during a presence round makes it that rank's round. */
static void start_round(double limit, int from, int phase, int presence)
{
    if (wd.ping_at > 0) {
        if (wd.round_presence && !presence) wd.round_presence = 0, wd.round_limit = limit, wd.round_from = from, wd.round_phase = phase;
        return;
    }
    wd.ping_at = nst_now(), wd.round_limit = limit, wd.round_from = from, wd.round_phase = phase, wd.round_presence = presence;
    for (int i = 0; i < wd.n; i++) {
        wd.answered[i] = 0;
        if (wd.peer[i] == PEER_LIVE) nst_lifeline_send(i, 'P', 0);
    }
}

/* Every live rank answered, and nst_watchdog_moving says the job moves: a rank (rank 0 too)
 * computes, or began its wait inside MPI lately; or, in a phase, a rank without a lifeline, whose
 * state rank 0 cannot know, may be at work. In a loop that is a slow iteration, said once per run,
 * naming the ranks that have computed for half the limit (or those that just did); in a phase
 * nothing is said (a phase's waits for one rank's work, such as rank 0 writing an image, are what
 * phases do). The ranks' clocks start again. */
static int slow_but_moving(const char *silent)
{
    const uint32_t mine = wd_my_state();
    for (int i = 0; silent && i < wd.n; i++)
        if (silent[i]) return 0; /* a rank that does not answer: a stall */
    char *working = calloc((size_t)wd.n + 1, 1), who[1024] = "";
    unsigned *heard = calloc((size_t)wd.n + 1, sizeof *heard); /* the answers of this round */
    if (!silent || !working || !heard) {
        free(working), free(heard);
        return 0;
    }
    int n = 0;
    for (int i = 0; i < wd.n; i++)
        if (wd.answered[i]) heard[n++] = wd.state[i];
    const int moving = nst_watchdog_moving(wd.round_limit, mine, heard, n) || (wd.round_phase && wd.unlinked > 0);
    /* the ranks to name: those computing for half the limit; where none is, those moving at all */
    int zero = nst_watchdog_slow(wd.round_limit, mine), slow = zero;
    for (int i = 0; i < wd.n; i++) slow |= working[i] = wd.answered[i] && nst_watchdog_slow(wd.round_limit, wd.state[i]);
    if (!slow) {
        zero = nst_watchdog_moving(wd.round_limit, mine, NULL, 0);
        for (int i = 0; i < wd.n; i++) working[i] = wd.answered[i] && nst_watchdog_moving(wd.round_limit, wd.state[i], NULL, 0);
    }
    free(heard);
    if (moving && !wd.round_phase && !wd.warned) {
        ranks_by_host(working, who, sizeof who);
        char all[1200];
        snprintf(all, sizeof all, "%s%s%s%s", zero ? "rank 0 on " : "", zero ? nst_comm_host() : "", zero && who[0] ? "; " : "", who);
        if (slow)
            nst_warn("no iteration has finished for %.0f s, but still computing (not waiting inside MPI): %s: a slow iteration, not "
                     "a stall; waiting on\n", wd.round_limit, all);
        else
            nst_warn("no iteration has finished for %.0f s, but computing within the last %.3g s: %s: a slow iteration ending, not "
                     "a stall; waiting on\n", wd.round_limit, wd.round_limit / 2, all);
        wd.warned = 1;
    }
    free(working);
    return moving;
}

/* The words for a clock that ran out, before its seconds: in a phase, or in a loop. */
static const char *ran_out(int phase) { return phase ? "a wait inside MPI passed" : "no iteration finished for"; }

/* What ran out, for the verdict: rank 0's own clock, or the asking rank's, or rank 0's questions. */
static void what_ran_out(const wd_clock *c, char *out, size_t cap)
{
    const char *kind = ran_out(wd.round_phase);
    if (wd.round_presence)
        snprintf(out, cap, "rank 0 asks every rank every %.0f s (%s)", wd.round_limit, c->how);
    else if (!wd.round_phase && !c->phase) /* a loop: one iteration clock for every rank, told as rank 0's */
        snprintf(out, cap, "%s %.0f s (%s)", kind, c->since, c->how);
    else if (wd.round_from == 0)
        snprintf(out, cap, "%s %.0f s (%s)", kind, wd.round_limit, c->how);
    else if (wd.round_phase == c->phase)
        snprintf(out, cap, "%s %.0f s on rank %d (%s) (%s)", kind, wd.round_limit, wd.round_from, nst_lifeline_host(wd.round_from), c->how);
    else /* a rank in another state than rank 0's (one with no tiles of its own, say): its limit */
        snprintf(out, cap, "%s %.0f s on rank %d (%s) (its limit %s)", kind, wd.round_limit, wd.round_from,
                 nst_lifeline_host(wd.round_from), wd.round_phase ? "outside the iterations" : "in the iterations");
}

static void stall_verdict(const char *silent)
{
    char who[1024], saved[4400], line[8192], what[1200], out[800];
    wd_clock c;
    wd_clock_read(&c);
    ranks_by_host(silent, who, sizeof who);
    if (who[0])
        snprintf(what, sizeof what, "no answer from %s: stopped (a frozen process or host) or cut off by the network", who);
    else if (wd.n == 0)
        snprintf(what, sizeof what, "no other rank could be asked why (none reached rank 0's lifeline over TCP at the start)");
    else
        snprintf(what, sizeof what, "every rank answers, and each has waited inside MPI for %g s or more: they wait for each other "
                 "inside MPI, whose network has stopped", wd.round_limit / 2);
    wd_saved_read(saved, sizeof saved);
    what_ran_out(&c, out, sizeof out);
    if (c.since >= 0)
        snprintf(line, sizeof line, "stalled %s: %s; %s; %s; ending the job with exit status 75: run again (or requeue) to resume", c.where,
                 out, what, saved);
    else
        snprintf(line, sizeof line, "stalled: rank %d (%s) saw no iteration finish for %.0f s; %s; %s; ending the job with exit status "
                 "75: run again (or requeue) to resume", wd.round_from, nst_lifeline_host(wd.round_from), wd.round_limit, what, saved);
    end_job(line);
}

/* The round is over when every live rank answered or the time is up: wait on, or end the job. A
 * presence round judges only silence, and says nothing when every rank answered. */
static void round_check(void)
{
    int all = 1;
    for (int i = 0; i < wd.n; i++) all &= wd.peer[i] != PEER_LIVE || wd.answered[i];
    if (!all && nst_now() - wd.ping_at < (wd.round_phase ? PHASE_PING_SECONDS : PING_SECONDS)) return;
    wd.ping_at = 0, wd.round_end = nst_now();
    if (wd.round_presence && all) return; /* every rank is there */
    char *silent = calloc((size_t)wd.n + 1, 1);
    for (int i = 0; silent && i < wd.n; i++) silent[i] = wd.peer[i] == PEER_LIVE && !wd.answered[i];
    if (silent && !wd.round_presence && slow_but_moving(silent)) {
        for (int i = 0; i < wd.n; i++)
            if (wd.peer[i] == PEER_LIVE) nst_lifeline_send(i, 'W', 0);
        wd_clock_extend();
        wd.fired = 0;
    } else {
        stall_verdict(silent);
    }
    free(silent);
}

/* ---- the other ranks: rank 0 lost or silent ---------------------------------------------------------- */

/* Rank 0 is gone, or gave no verdict on this rank's stall: the deputy says so, at once for a
 * silence and SETTLE_SECONDS after a loss (another rank's abort kills rank 0 first: that rank has
 * spoken, and the abort ends the deputy meanwhile). Another rank says so too, QUIET_SECONDS later,
 * if the job has not ended by then: the deputy may be computing, with no clock of its own running,
 * or cut off as well. */
static void alone(const char *what, int lost)
{
    char saved[4400], line[8192];
    wd_clock c;
    wd_clock_read(&c);
    wd_saved_read(saved, sizeof saved);
    snprintf(line, sizeof line, "rank %d (%s)%s%s: %s; %s; ending the job with exit status 75: run again (or requeue) to resume", wd.me,
             nst_comm_host(), c.since >= 0 ? " " : "", c.since >= 0 ? c.where : "", what, saved);
    if ((wd.me == wd.deputy && !lost) || (wd.speak_at > 0 && nst_now() >= wd.speak_at)) end_job(line);
    if (wd.speak_at == 0 || (lost && !wd.speak_lost)) {
        wd.speak_at = nst_now() + (wd.me == wd.deputy ? SETTLE_SECONDS : QUIET_SECONDS), wd.speak_lost = lost;
        snprintf(wd.speak, sizeof wd.speak, "%s", what);
    }
}

static void rank0_lost(void)
{
    char what[400];
    snprintf(what, sizeof what, "lost rank 0 on %s: its process ended without a word (killed, crashed, or its host went down; its "
             "host's other ranks may be gone with it)", nst_lifeline_host(0));
    alone(what, 1);
}

static void rank0_silent(const wd_clock *c)
{
    char what[1200], out[600];
    snprintf(out, sizeof out, "%s %.0f s (%s)", ran_out(c->phase), c->limit, c->how);
    if (wd.n == 0) /* no lifeline: nobody to ask */
        snprintf(what, sizeof what, "%s, and this rank has no lifeline to rank 0 on %s to ask why (it could not reach rank 0 over TCP at "
                 "the start)", out, nst_lifeline_host(0));
    else
        snprintf(what, sizeof what, "%s, and rank 0 on %s gave no answer in %.0f s more: it stopped, or the network between %s and %s is "
                 "cut", out, nst_lifeline_host(0), GRACE_SECONDS, nst_comm_host(), nst_lifeline_host(0));
    alone(what, 0);
}

/* ---- messages and the clock -------------------------------------------------------------------------- */

static void on_message(int i, const nst_lifeline_msg *m)
{
    switch (m->type) {
    case 'B': wd.peer[i] = PEER_BYE; break;       /* finished: its end is no loss */
    case 'A': wd.ending = 1; break;                /* an abort elsewhere: that rank said why, Open MPI ends the job */
    case 'S': wd.ending = 1;                       /* rank 0 ends the job and says why */
              wd.quiet_until = nst_now() + QUIET_SECONDS; break;
    case 'P': nst_lifeline_send(i, 'p', wd_my_state()); /* rank 0 asks: it is alive, so a wait for its verdict starts again */
              if (wd.verdict_wait > 0) wd.verdict_wait = nst_now();
              if (!wd.speak_lost) wd.speak_at = 0;
              break;
    case 'p': wd.answered[i] = 1, wd.state[i] = m->value; break;
    case 'F': start_round((double)(m->value & 0x7fffffffu), nst_lifeline_peer(i), (int)(m->value >> 31), 0); break; /* bit 31: a phase */
    case 'W': wd_clock_extend(); wd.fired = 0, wd.verdict_wait = 0; /* rank 0 answered: not silent after all */
              if (!wd.speak_lost) wd.speak_at = 0;
              break;
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

/* This rank's clock ran out: rank 0 asks; another rank asks rank 0. Without a lifeline a rank can
 * only judge by itself, and does so in a loop, not in a phase, where one-sided waits are the rule. */
static void clock_out(const wd_clock *c, double t)
{
    if (!wd.hub && wd.n == 0 && c->phase) return; /* nobody to ask, and no fired state to clear later */
    wd.fired = t;
    if (wd.hub) start_round(c->limit, 0, c->phase, 0);
    else if (wd.n > 0)
        nst_lifeline_send(0, 'F', (c->limit < 2e9 ? (uint32_t)(c->limit + 0.999) : 2000000000u) | (c->phase ? 0x80000000u : 0)),
            wd.verdict_wait = t;
    else
        rank0_silent(c);
}

/* Once per wake: a suspension to forgive, this rank's clock, a loss to report, a round to close,
 * a verdict that is late, a deputy that did not speak. */
static void tick(void)
{
    wd_clock c;
    wd_clock_read(&c);
    const double t = nst_now(), gap = wd.last_tick > 0 ? t - wd.last_tick : 0;
    wd.last_tick = t;
    if (wd.ending) {
        if (wd.quiet_until > 0 && t > wd.quiet_until) end_job(NULL);
        return;
    }
    if (gap > SUSPEND_SECONDS) { /* every clock ran on while nothing here could run: start them again */
        wd_clock_extend();
        wd.fired = 0, wd.verdict_wait = 0, wd.round_end = t;
        if (wd.ping_at > 0 && !wd.round_presence) /* a rank asked: its answer is that the clocks start again */
            for (int i = 0; i < wd.n; i++)
                if (wd.peer[i] == PEER_LIVE) nst_lifeline_send(i, 'W', 0);
        wd.ping_at = 0; /* the answers so far are from before the gap */
        return;
    }
    if (wd.speak_at > 0 && t >= wd.speak_at) alone(wd.speak, wd.speak_lost);
    if (wd.hub && wd.lost_at > 0 && t - wd.lost_at > GATHER_SECONDS) lost_verdict();
    if (c.since > c.limit && wd.fired == 0) clock_out(&c, t);
    if (wd.hub && c.phase && wd.ping_at == 0 && t - wd.round_end > c.limit)
        start_round(c.limit, 0, 1, 1);
    if (wd.hub && wd.ping_at > 0) round_check();
    if (!wd.hub && wd.verdict_wait > 0 && t - wd.verdict_wait > GRACE_SECONDS) rank0_silent(&c);
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

/* Rank 0: the ranks that could not reach its lifeline over TCP, said once. Their losses and stalls
 * are judged by their own clocks, and in a phase not at all. */
static void warn_unlinked(void)
{
    const int size = nst_comm_world_size();
    char *linked = calloc((size_t)size, 1), who[1024] = "";
    int *rank = calloc((size_t)size, sizeof *rank), k = 0;
    if (!linked || !rank) {
        free(linked), free(rank);
        return;
    }
    for (int i = 0; i < wd.n; i++) linked[nst_lifeline_peer(i)] = 1;
    for (int r = 1; r < size; r++)
        if (!linked[r]) rank[k++] = r;
    wd.unlinked = k;
    if (k > 0) {
        nst_lifeline_ranks_by_host(rank, k, who, sizeof who);
        nst_warn("the watchdog's lifeline (TCP to rank 0 on %s) could not be made from %s: a rank lost or stopped there is not "
                 "named, and a stall outside the iterations is not judged there; let the nodes reach each other over TCP (any "
                 "port) to have both\n", nst_comm_host(), who);
    }
    free(linked), free(rank);
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
    if (wd.hub) warn_unlinked();
    wd_floor_read();
    wd_mpi_reset();
    wd.round_end = nst_now();
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

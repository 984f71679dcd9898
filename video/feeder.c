/* video/feeder.c: decoding and optical flow one frame ahead, on a thread (see feeder.h). The
 * thread calls no MPI; the queue holds one finished frame, so at most two frames and the
 * earlier frames the flows need are in memory at once. */
#include "feeder.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../flow/dis.h"
#include "../io/image/resample.h"
#include "../util/mem.h"
#include "../util/timer.h"

struct nst_feeder {
    nst_feeder_spec spec;
    long long unit_start, from, to;
    nst_clip_reader *reader;
    nst_dis *dis;
    nst_image ring[NST_MAX_TEMPORAL + 1]; /* the last frames decoded, by r modulo the ring's size */
    pthread_t thread;
    int started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    nst_fed_frame *ready; /* the finished frame waiting to be taken */
    int stop, done;       /* asked to stop; the thread has finished (status in st) */
    nst_status st;
    char msg[1024];
};

static int ring_size(const nst_feeder *f) { return (f->spec.nj ? f->spec.j[f->spec.nj - 1] : 0) + 1; }

/* Frame r of the range, resized to the render size, into the ring. */
static nst_status decode(nst_feeder *f, long long r, double *secs)
{
    double t0 = nst_now();
    nst_image raw = {0}, *slot = &f->ring[r % ring_size(f)];
    nst_image_free(slot);
    NST_TRY(nst_clip_read(f->reader, f->spec.first + r * f->spec.step, &raw));
    nst_status s = NST_OK;
    if (raw.w == f->spec.W && raw.h == f->spec.H) {
        *slot = raw;
    } else {
        s = nst_image_resize(&raw, f->spec.W, f->spec.H, slot);
        nst_image_free(&raw);
    }
    *secs += nst_now() - t0;
    return s;
}

/* The flows between frame r and r - j, both ways. */
static nst_status flows(nst_feeder *f, long long r, int j, nst_flow *fwd, nst_flow *bwd)
{
    const nst_feeder_spec *s = &f->spec;
    if (s->files) { /* numbered by clip frame: fwd i is i -> i + 1, bwd i is i + 1 -> i */
        char p[4200];
        long long i = s->first + (r - 1) * s->step;
        snprintf(p, sizeof p, s->fwd_pattern, i);
        NST_TRY(nst_flo_read(p, s->W, s->H, 0, fwd));
        snprintf(p, sizeof p, s->bwd_pattern, i);
        return nst_flo_read(p, s->W, s->H, 0, bwd);
    }
    const nst_image *a = &f->ring[(r - j) % ring_size(f)], *b = &f->ring[r % ring_size(f)];
    NST_TRY(nst_dis_flow(f->dis, a->px, b->px, s->W, s->H, fwd));
    return nst_dis_flow(f->dis, b->px, a->px, s->W, s->H, bwd);
}

/* Frame r for the queue: a copy of its image and its flows to the unit's earlier frames. */
static nst_status make_frame(nst_feeder *f, long long r, double decode_s, nst_fed_frame **out)
{
    nst_fed_frame *fr = nst_calloc(sizeof *fr, "a decoded frame");
    if (!fr) return NST_ENOMEM;
    fr->r = r;
    fr->decode_seconds = decode_s;
    const nst_image *src = &f->ring[r % ring_size(f)];
    nst_status s = nst_image_alloc(&fr->frame, src->w, src->h);
    if (s == NST_OK) memcpy(fr->frame.px, src->px, sizeof(float) * 3 * (size_t)src->w * src->h);
    double t0 = nst_now();
    for (int k = 0; s == NST_OK && k < f->spec.nj && r - f->spec.j[k] >= f->unit_start; k++) {
        s = flows(f, r, f->spec.j[k], &fr->fwd[k], &fr->bwd[k]);
        if (s == NST_OK) fr->nflows = k + 1;
    }
    fr->flow_seconds = nst_now() - t0;
    if (s != NST_OK) {
        nst_fed_frame_free(fr);
        return s;
    }
    *out = fr;
    return NST_OK;
}

/* Hand fr over, waiting while the previous one has not been taken; 0 when asked to stop. */
static int put(nst_feeder *f, nst_fed_frame *fr)
{
    pthread_mutex_lock(&f->mu);
    while (f->ready && !f->stop) pthread_cond_wait(&f->cv, &f->mu);
    int ok = !f->stop;
    if (ok) f->ready = fr;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
    if (!ok) nst_fed_frame_free(fr);
    return ok;
}

static void *run(void *arg)
{
    nst_feeder *f = arg;
    nst_status s = NST_OK;
    long long back = ring_size(f) - 1, r0 = f->from - back > f->unit_start ? f->from - back : f->unit_start;
    for (long long r = r0; s == NST_OK && r < f->to; r++) {
        double dsec = 0;
        s = decode(f, r, &dsec);
        nst_fed_frame *fr = NULL;
        if (s == NST_OK && r >= f->from) s = make_frame(f, r, dsec, &fr);
        if (s == NST_OK && fr && !put(f, fr)) break;
    }
    pthread_mutex_lock(&f->mu);
    f->st = s;
    if (s != NST_OK) nst_fail_take(f->msg, sizeof f->msg);
    f->done = 1;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
    return NULL;
}

nst_status nst_feeder_start(const nst_feeder_spec *s, long long unit_start, long long from, long long to, nst_feeder **out)
{
    nst_feeder *f = nst_calloc(sizeof *f, "the frame feeder");
    if (!f) return NST_ENOMEM;
    f->spec = *s, f->unit_start = unit_start, f->from = from, f->to = to;
    pthread_mutex_init(&f->mu, NULL);
    pthread_cond_init(&f->cv, NULL);
    nst_clip_info info;
    nst_status st = nst_clip_open(s->path, s->fps_num, s->fps_den, &s->lim, &f->reader, &info);
    if (st == NST_OK && s->nj && !s->files) st = nst_dis_open(s->dis_preset, &f->dis);
    if (st == NST_OK && pthread_create(&f->thread, NULL, run, f) != 0) st = nst_fail(NST_ERUNTIME, "cannot start the frame decoding thread");
    f->started = st == NST_OK;
    if (st != NST_OK) {
        nst_feeder_stop(f);
        return st;
    }
    *out = f;
    return NST_OK;
}

nst_status nst_feeder_next(nst_feeder *f, nst_fed_frame **out)
{
    *out = NULL;
    pthread_mutex_lock(&f->mu);
    while (!f->ready && !f->done) pthread_cond_wait(&f->cv, &f->mu);
    nst_status s = NST_OK;
    if (f->ready) {
        *out = f->ready;
        f->ready = NULL;
        pthread_cond_broadcast(&f->cv);
    } else {
        s = f->st != NST_OK ? nst_fail(f->st, "%s", f->msg) : nst_fail(NST_ERUNTIME, "the clip ended before the frames planned");
    }
    pthread_mutex_unlock(&f->mu);
    return s;
}

void nst_fed_frame_free(nst_fed_frame *fr)
{
    if (!fr) return;
    nst_image_free(&fr->frame);
    for (int k = 0; k < NST_MAX_TEMPORAL; k++) nst_flow_free(&fr->fwd[k]), nst_flow_free(&fr->bwd[k]);
    nst_free(fr);
}

void nst_feeder_stop(nst_feeder *f)
{
    if (!f) return;
    if (f->started) {
        pthread_mutex_lock(&f->mu);
        f->stop = 1;
        pthread_cond_broadcast(&f->cv);
        pthread_mutex_unlock(&f->mu);
        pthread_join(f->thread, NULL);
    }
    nst_fed_frame_free(f->ready);
    for (int k = 0; k <= NST_MAX_TEMPORAL; k++) nst_image_free(&f->ring[k]);
    nst_dis_close(f->dis);
    nst_clip_close(f->reader);
    pthread_mutex_destroy(&f->mu);
    pthread_cond_destroy(&f->cv);
    nst_free(f);
}

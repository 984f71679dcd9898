/* kernels/graph_standin.c: CUDA graphs' semantics on the CPU, for the tests (see graph_standin.h):
 * the recording's segments and their launch, the ops that wait, the queued transfers, and the
 * stand-in's op table; the recorded ops are in graph_standin_ops.c. */
#include "graph_standin.h"

#include <stdlib.h>
#include <string.h>

#include "../util/mem.h"
#include "graph_standin_impl.h"

/* ---- queued transfers, as a GPU's stream orders them ------------------------------------------ */
/* A queued download reads the device when the stream reaches it (here: at once), but the host sees
 * it only after a wait: its values are held until the next wait and written then, so host code
 * that reads the buffer before waiting reads what was there before. A queued upload reads the
 * host buffer when the stream reaches it, at any time before the next wait: a buffer changed in
 * between is a race, which the next wait reports. */
struct pending {
    float *host, *copy;
    size_t n;
    int upload;
};

static nst_status pend(struct nst_graph_standin *g, float *host, size_t n, int upload, float **copy)
{
    if (g->npend == g->cap_pend) {
        size_t cap = g->cap_pend ? 2 * g->cap_pend : 64;
        struct pending *v = nst_alloc_array(cap, sizeof *v, "queued transfers");
        if (!v) return NST_ENOMEM;
        if (g->npend) memcpy(v, g->pend, g->npend * sizeof *v);
        nst_free(g->pend);
        g->pend = v, g->cap_pend = cap;
    }
    *copy = nst_alloc_array(n ? n : 1, sizeof(float), "a queued transfer");
    if (!*copy) return NST_ENOMEM;
    g->pend[g->npend++] = (struct pending){host, *copy, n, upload};
    return NST_OK;
}

/* the wait: downloads land, uploads' buffers checked */
static nst_status settle(struct nst_graph_standin *g)
{
    nst_status s = NST_OK;
    for (size_t i = 0; i < g->npend; i++) {
        struct pending *p = &g->pend[i];
        if (!p->upload) memcpy(p->host, p->copy, p->n * sizeof(float));
        else if (s == NST_OK && memcmp(p->host, p->copy, p->n * sizeof(float)) != 0)
            s = nst_fail(NST_ERUNTIME, "graph stand-in: the host buffer of a queued upload changed before the backend was waited for");
        nst_free(p->copy);
    }
    g->npend = 0;
    return s;
}

/* an op a recording cannot hold: it fails the recording, saying why */
nst_status gs_refuse(nst_backend *be, const char *name, const char *what)
{
    G(be)->failed = 1;
    return nst_fail(NST_ERUNTIME, "%s %s while an iteration is recorded (graph stand-in)", name, what);
}

/* only the Gram sums go on the side stream (kernels/backend.h: side) */
nst_status gs_off_side(const char *name)
{
    return nst_fail(NST_ERUNTIME, "graph stand-in: %s called on the side stream, where only gram_accumulate goes", name);
}

/* an op that makes the host wait: it fails a recording, joins the side stream as the CUDA backend
 * does, and settles the queued transfers */
#define WAITS(be, name, CALL)                                                     \
    do {                                                                          \
        if (G(be)->side_open) return gs_off_side(name);                           \
        if (G(be)->recording) return gs_refuse(be, name, "waits for the device"); \
        NST_TRY(gs_side_join(be));                                                \
        NST_TRY(settle(G(be)));                                                   \
        return CALL;                                                              \
    } while (0)

/* ---- waits: they fail a recording ------------------------------------------------------------------ */
static nst_status s_upload(nst_backend *be, void *dst, const float *src, size_t n, nst_dtype dt) { WAITS(be, "upload", REAL(be)->upload(be, dst, src, n, dt)); }
static nst_status s_download(nst_backend *be, float *dst, const void *src, size_t n, nst_dtype dt) { WAITS(be, "download", REAL(be)->download(be, dst, src, n, dt)); }
static nst_status s_sync(nst_backend *be) { WAITS(be, "synchronize", REAL(be)->synchronize(be)); }
static nst_status s_download_rect(nst_backend *be, const nst_tensor *src, nst_rect r, float *host) { WAITS(be, "download_rect", REAL(be)->download_rect(be, src, r, host)); }
static nst_status s_upload_rect(nst_backend *be, const float *host, nst_tensor *dst, nst_rect r) { WAITS(be, "upload_rect", REAL(be)->upload_rect(be, host, dst, r)); }
static nst_status s_dot(nst_backend *be, const float *a, const float *b, size_t n, double *out) { WAITS(be, "dot", REAL(be)->dot(be, a, b, n, out)); }
static nst_status s_read(nst_backend *be, void *host, const void *src, size_t bytes) { WAITS(be, "read", REAL(be)->read(be, host, src, bytes)); }
static nst_status s_write(nst_backend *be, void *dst, const void *host, size_t bytes) { WAITS(be, "write", REAL(be)->write(be, dst, host, bytes)); }
static nst_status s_clocks_read(nst_backend *be, int n, double *sec) { WAITS(be, "clocks_read", REAL(be)->clocks_read(be, n, sec)); }

/* the queued transfers move host memory, which the render never records (they are host steps
 * between ranks: nst/optimise/host_step.h): one inside a recording fails it */
static nst_status s_download_rect_queued(nst_backend *be, const nst_tensor *src, nst_rect r, float *host)
{
    if (G(be)->recording) return gs_refuse(be, "download_rect_queued", "moves host memory");
    NST_TRY(gs_side_join(be)); /* as the CUDA backend's transfers */
    float *copy;
    NST_TRY(pend(G(be), host, (size_t)nst_rect_area(r) * src->c, 0, &copy));
    return REAL(be)->download_rect_queued(be, src, r, copy);
}
static nst_status s_upload_rect_queued(nst_backend *be, const float *host, nst_tensor *dst, nst_rect r)
{
    if (G(be)->recording) return gs_refuse(be, "upload_rect_queued", "moves host memory");
    NST_TRY(gs_side_join(be)); /* as the CUDA backend's transfers */
    float *copy;
    const size_t n = (size_t)nst_rect_area(r) * dst->c;
    NST_TRY(pend(G(be), (float *)host, n, 1, &copy));
    memcpy(copy, host, n * sizeof(float));
    return REAL(be)->upload_rect_queued(be, host, dst, r);
}

/* ---- the graph --------------------------------------------------------------------------------- */
static nst_status s_graph_begin(nst_backend *be, int seg)
{
    struct nst_graph_standin *g = G(be);
    if (g->recording) return nst_fail(NST_ERUNTIME, "graph stand-in: a recording is under way already");
    if (seg < 0 || seg >= NST_GRAPH_SEGMENTS || (seg > 0 && seg != g->nseg)) /* in order, from 0, as on a GPU */
        return nst_fail(NST_ERUNTIME, "graph stand-in: segment %d recorded after %d held", seg, g->nseg);
    if (seg == 0) g->nseg = 0;
    NST_TRY(gs_side_join(be)); /* a capture starts joined, as the CUDA backend's */
    g->recording = 1, g->failed = 0, g->rec.n = 0, g->at = seg;
    return NST_OK;
}

static nst_status s_graph_end(nst_backend *be)
{
    struct nst_graph_standin *g = G(be);
    if (gs_side_join(be) != NST_OK) g->failed = 1; /* a capture ends joined, as the CUDA backend's */
    g->recording = 0;
    if (g->failed) return NST_ERUNTIME; /* the failed op's message stands */
    if (g->rec.n == 0) return NST_OK;   /* nothing recorded: no segment, as on a GPU */
    rec_list t = g->seg[g->at];
    g->seg[g->at] = g->rec, g->rec = t; /* the recording becomes the segment */
    g->nseg = g->at + 1;
    return NST_OK;
}

static nst_status s_graph_launch(nst_backend *be, int seg, int *launched)
{
    struct nst_graph_standin *g = G(be);
    *launched = seg >= 0 && seg < g->nseg;
    for (size_t i = 0; *launched && i < g->seg[seg].n; i++) NST_TRY(gs_replay(be, &g->seg[seg].v[i]));
    return NST_OK;
}

static int s_graph_segments(nst_backend *be) { return G(be)->nseg; }

nst_status nst_graph_standin_attach(nst_backend *be)
{
    if (strcmp(be->name, "cpu") != 0) return nst_fail(NST_ERUNTIME, "the graph stand-in wraps the CPU backend only");
    struct nst_graph_standin *g = nst_calloc(sizeof *g, "the graph stand-in");
    if (!g) return NST_ENOMEM;
    g->real = be->ops;
    g->ops = *be->ops;
    nst_backend_ops *o = &g->ops;
    gs_ops_install(o);
    o->upload = s_upload, o->download = s_download, o->synchronize = s_sync, o->download_rect = s_download_rect;
    o->upload_rect = s_upload_rect, o->dot = s_dot, o->read = s_read, o->write = s_write, o->clocks_read = s_clocks_read;
    o->gram_fixed = NULL, o->dot_exact = NULL; /* as the CUDA backend: no exact paths that read back */
    o->graph_begin = s_graph_begin, o->graph_end = s_graph_end, o->graph_launch = s_graph_launch;
    o->graph_segments = s_graph_segments;
    o->download_rect_queued = s_download_rect_queued, o->upload_rect_queued = s_upload_rect_queued;
    const char *overlap = getenv("NSTBATCH_CUDA_OVERLAP"); /* the side stream, as the CUDA backend has it */
    if (overlap && strcmp(overlap, "1") == 0) gs_side_install(o);
    const char *conv1 = getenv("NSTBATCH_CUDA_CONV1"); /* conv1_1 from the image, as the CUDA backend's own kernels */
    if (conv1 && strcmp(conv1, "own") == 0) gs_image_install(o);
    be->graph_standin = g;
    be->ops = &g->ops;
    be->tiles_exact = 0; /* fp64 Gram sums, as a GPU's: tiles agree within tolerances */
    return NST_OK;
}

void nst_graph_standin_detach(nst_backend *be)
{
    struct nst_graph_standin *g = be->graph_standin;
    if (!g) return;
    gs_image_release(be);
    be->ops = g->real;
    be->graph_standin = NULL;
    for (size_t i = 0; i < g->npend; i++) nst_free(g->pend[i].copy); /* (their host buffers may be gone) */
    nst_free(g->pend);
    nst_free(g->rec.v);
    nst_free(g->side.v);
    for (int k = 0; k < NST_GRAPH_SEGMENTS; k++) nst_free(g->seg[k].v);
    nst_free(g);
}

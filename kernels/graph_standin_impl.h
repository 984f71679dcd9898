/* kernels/graph_standin_impl.h: the graph stand-in's insides, shared by its files (the interface:
 * graph_standin.h): graph_standin.c the segments, their launch, the waits and queued transfers;
 * graph_standin_ops.c the ops as recorded and replayed; graph_standin_side.c the side stream;
 * graph_standin_image.c conv1_1 from the image. */
#ifndef NST_GRAPH_STANDIN_IMPL_H
#define NST_GRAPH_STANDIN_IMPL_H

#include "graph_standin.h"

typedef enum {
    R_ZERO, R_COPY, R_COPY_RECT, R_CONV_F, R_CONV_B, R_RELU_B, R_POOL_F, R_POOL_B, R_PRE, R_PRE_B, R_GRAM_ACC, R_GRAM_DIFF,
    R_GRAM_B, R_MSE, R_TV, R_ADAM, R_ADAM_TICK, R_SUMSQ, R_AXPBY, R_BOX_HOLD, R_BOX_STEP, R_STAMP
} rec_op;

/* One recorded op: its arguments as the call gave them, tensors by value (a shared activation's
 * view is reshaped from tile to tile; the replay must see each call's shape). */
typedef struct {
    rec_op op;
    nst_tensor t[4];
    int has[4];
    nst_rect r[2];
    void *p[5];
    size_t n;
    int i[2];
    float f[2];
    double d;
    nst_conv *conv;
    nst_pool_kind kind;
    nst_preproc pre;
    nst_adam_params ap;
} rec;

typedef struct {
    rec *v;
    size_t n, cap;
} rec_list;

struct nst_graph_standin {
    const nst_backend_ops *real;
    nst_backend_ops ops;
    int recording, failed;
    rec_list rec;                        /* being recorded */
    rec_list seg[NST_GRAPH_SEGMENTS];    /* the recorded iteration's segments */
    int nseg, at;                        /* segments held; the one being recorded */
    struct pending *pend;                /* queued transfers not yet waited for (graph_standin.c) */
    size_t npend, cap_pend;
    int side_open;                       /* between side(1) and side(0) (NSTBATCH_CUDA_OVERLAP=1) */
    rec_list side;                       /* the side stream's ops, not yet joined (graph_standin_side.c) */
    nst_status side_status;              /* a failure of side work run at a free, reported at the next join */
    void *image_in;                      /* conv1_1 from the image: its network input or gradient (graph_standin_image.c) */
    size_t image_cap;
    const nst_conv *reads_image[8];      /* the layers created that take that path */
};

static inline struct nst_graph_standin *G(nst_backend *be) { return be->graph_standin; }
#define REAL(be) (G(be)->real)

/* the recording's list, grown (NULL: out of memory), and the op appended to it */
rec *gs_add_to(rec_list *l, rec_op op);
static inline rec *gs_add(struct nst_graph_standin *g, rec_op op) { return gs_add_to(&g->rec, op); }
/* one recorded op, run */
nst_status gs_replay(nst_backend *be, const rec *r);
/* an op a recording cannot hold: it fails the recording, saying why */
nst_status gs_refuse(nst_backend *be, const char *name, const char *what);
/* an op other than the Gram sums called on the side stream */
nst_status gs_off_side(const char *name);
/* the side's held-back ops run (or recorded) now: the join (graph_standin_side.c) */
nst_status gs_side_join(nst_backend *be);

/* the op tables' parts: the recorded ops; the side stream (NSTBATCH_CUDA_OVERLAP=1); conv1_1 from the
 * image (NSTBATCH_CUDA_CONV1=own), and its buffer's release */
void gs_ops_install(nst_backend_ops *o);
void gs_side_install(nst_backend_ops *o);
void gs_image_install(nst_backend_ops *o);
void gs_image_release(nst_backend *be);

#endif

/* nst/optimise/lbfgs.h: L-BFGS on pixels spread over tiles and ranks.
 *
 * The history (s, y pairs) and the search direction are sharded like the pixels: each rank keeps
 * the values of its tiles' cores. The two-loop recursion needs only dot products, summed over
 * all tiles. Where the backend has exact dots (the CPU's dot_exact): each row of a core adds its
 * products in double over runs of `seg` pixels (the tiles' alignment, so runs fall at the same
 * image columns on every tiling), and the runs' sums are added exactly (kernels/xsum.h) over
 * threads, tiles and ranks: a dot product is the same number on any tiling and any rank count,
 * so L-BFGS keeps tiled == one tile bit for bit. Elsewhere (CUDA, not tile-exact anyway) every
 * tile's partial sum is added over ranks as a vector indexed by tile and then in tile order: the
 * same number whichever rank holds which tile.
 *
 * No line search (as neural-style's L-BFGS): the quasi-Newton step scaled by optim.lbfgs_step,
 * the first step a gradient step of length min(1, 1/||g||) times that. A pair is kept only when
 * y.s > 0 (curvature); a direction that is not a descent direction resets the history.
 *
 * In the box [0, 1] (optim.clamp, the default): a pixel on a bound that its gradient pushes
 * against is held: it leaves the gradient the recursion sees and the direction, and the step is
 * projected into the box. The pair keeps the step actually taken (s = the new x minus the old),
 * so y.s stays the curvature along the path the pixels moved. The image the optimiser reports is
 * then the one written: an unprojected iterate leaves [0, 1], and the output, clamped, would be
 * another picture with another loss (hundreds of times higher, measured). Every operation is
 * per pixel or a tile-ordered dot product, so the tiling stays exact.
 */
#ifndef NST_LBFGS_H
#define NST_LBFGS_H

#include "../../kernels/backend.h"
#include "objective.h"

typedef struct {
    nst_backend *be;
    nst_collectives coll;
    int m, k, newest;        /* history capacity, pairs held, ring slot of the newest */
    int nlocal, ntiles;      /* this rank's tiles; tiles of the whole grid (partials by tile) */
    int *tile;               /* grid index of each local tile */
    size_t *n;               /* values per local tile */
    int *w, seg;             /* its width in pixels, and the runs of the exact dots */
    float **xp, **gp;        /* room for the step's pixel and gradient pointers, one per local tile */
    struct {
        nst_xsum acc[2];     /* the exact dots' accumulators */
        int64_t failed;      /* and the ranks that failed, summed in the same message */
    } *xs;
    float **s, **y;          /* [slot * nlocal + i]: backend buffers */
    float **d, **gprev;      /* per local tile: the direction, then the step taken; the previous gradient */
    double *rho, *alpha;     /* per slot */
    double gamma, step;
    double *part;            /* partials: 2 x ntiles */
    long long iter;
    int resets;              /* directions that were not descent directions */
    int box;                 /* pixels kept in [0, 1] (projected steps, held bounds) */
} nst_lbfgs;

/* Bytes per optimised value the state holds (for the planner): 2 m + 2 floats. */
static inline size_t nst_lbfgs_bytes_per_value(int m) { return (size_t)(2 * m + 2) * sizeof(float); }

/* nlocal tiles: grid index, values n[i] = w[i] x rows x 3; seg: the pixels each run of a row adds in
 * double before the exact sum (a divisor of every core's column in the image). */
nst_status nst_lbfgs_init(nst_lbfgs *L, nst_backend *be, nst_collectives coll, int m, double step, int box, int nlocal,
                          const int *tile_index, int ntiles, const size_t *n, const int *w, int seg);
/* One step: x[i] (local tile i, n[i] values) moves along the L-BFGS direction from the gradient
 * g[i] at x. Collective, and every rank makes the same collective calls whatever fails: pending (a
 * failure of this rank before the step) or a failing op skips the rest of its local work but not
 * the sums, which tell the other ranks; all then return a failure (only the rank that failed with
 * a message of its own, for nst_comm_agree to pass on). */
nst_status nst_lbfgs_step(nst_lbfgs *L, float *const *x, float *const *g, nst_status pending);
void nst_lbfgs_free(nst_lbfgs *L);

/* The whole state (history ring, direction, previous gradient, scalars) to a checkpoint file, or
 * back into an L initialised with the same tiles and history size (io's direction). */
struct nst_ckpt_io;
nst_status nst_lbfgs_state(nst_lbfgs *L, const struct nst_ckpt_io *io);

#endif

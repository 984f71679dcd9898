/* kernels/check/check.h: the op harness. Every op of a backend under test against the CPU backend
 * in fp32 (the reference), on a table of shapes (1x1, odd sizes, image edges, regions that are not
 * whole rows, conv1_1's 3 channels, a Gram large enough to be summed in several chunks), with one
 * tolerance per op class and precision (tolerance.c). Inputs are made on the backend under test
 * first and read back, so both sides see the same rounded values and an error measures the op,
 * not the input's rounding. Any NaN or Inf in a result fails its comparison.
 *
 * Used by make test (tests/test_backend_ops.c: the CPU's bf16 and every CUDA precision) and by
 * nstbatch --self-test on the user's machine; both read the same table. */
#ifndef NST_CHECK_H
#define NST_CHECK_H

#include <stdio.h>

#include "../backend.h"

typedef enum {
    NST_TOL_ELEMENT,        /* element ops: one rounding to the storage dtype */
    NST_TOL_CONV,           /* convolutions: rounding to storage, fp32 sums of 9 cin products */
    NST_TOL_GRAM_BACKWARD,  /* dF += F (scale D): D and the result rounded to storage */
    NST_TOL_GRAM_SUMS,      /* the Gram sums */
    NST_TOL_SUM,            /* double reductions of identical values */
    NST_TOL_F32_MATH,       /* the optimisers' fp32 element arithmetic */
    NST_TOL_EXACT,          /* contracts of the tiling where the backend is tile-exact: the same bits, or it fails */
    /* the same contracts on a backend that is not (backend.h: tiles_exact) */
    NST_TOL_CONV_SHAPES,           /* a conv's output over a window against the whole tensor's there */
    NST_TOL_GRAM_BACKWARD_SHAPES,  /* the Gram backward over a region against over the whole */
    NST_TOL_GRAM_TILED,            /* the Gram sums of a region's parts against the region's, rounded to fp32 */
    /* a render's first objective on a device against the CPU in fp32, or on tiles against one tile
     * (nst_first_verdict): `terms` is the depth, the convolutions to the deepest loss layer */
    NST_TOL_FIRST_LOSS,           /* each loss term, relative */
    NST_TOL_FIRST_GRADIENT,       /* each image-gradient sample, relative to the reference gradient's rms */
    NST_TOL_FIRST_GRADIENT_SHARE, /* the share of samples allowed past NST_TOL_FIRST_GRADIENT */
} nst_tol_class;

/* The tolerance of class k under precision p, for a result summing `terms` products. */
double nst_tolerance(nst_tol_class k, nst_precision p, double terms);
/* The class of a tiling contract on backend be: NST_TOL_EXACT where it is tile-exact, else inexact. */
nst_tol_class nst_contract_class(const nst_backend *be, nst_tol_class inexact);
const char *nst_tol_class_name(nst_tol_class k);

#define NST_CHECK_ROWS 64

/* One line of the report: an op (as compared), its worst error relative to its tolerance. */
typedef struct {
    char op[48];
    nst_tol_class tol_class;
    int cases, failed;
    double err, tol;  /* of the case with the largest err / tol */
    char worst[96];   /* that case: shape, channels, region */
} nst_check_row;

typedef struct nst_check {
    nst_backend *ref;   /* the CPU backend in fp32 */
    nst_backend *dev;   /* the backend under test */
    int quick;          /* a smaller table of shapes (the self-test's time budget) */
    double deadline;    /* nst_now() after which no further op group starts (0: none) */
    char skipped[96];   /* the op groups the deadline left out, comma-separated ("" when none) */
    /* called for every failed comparison (may be NULL) */
    void (*on_fail)(void *user, const nst_check_row *row, const char *what, double err, double tol);
    void *user;
    nst_check_row row[NST_CHECK_ROWS];
    int nrows;
    unsigned rng;
    void *dsum;         /* the loss sums in the backend under test's memory (check.c) */
} nst_check;

/* Run every op group (conv, eltwise, gram, losses, optimiser, contracts), each only while
 * c->deadline has not passed. Failed comparisons are counted in the rows; an op that returns an
 * error counts as a failed case with an infinite error. Returns NST_OK unless the harness itself
 * could not run (host memory). */
nst_status nst_check_ops(nst_check *c);

/* A render's first objective (the loss terms and the image gradient before any optimiser step,
 * run.first_gradient) against a reference's: the comparison that stays stable on a device whose
 * arithmetic differs (pixels after Adam steps do not: its first steps follow the gradient's sign,
 * so rounding differences grow). Loss terms: continuous in the rounding, each within
 * NST_TOL_FIRST_LOSS. Gradient: piecewise constant in the network's gates (ReLU, max-pool's
 * winner), so a gate within rounding of its threshold moves a patch of samples by O(1): at most
 * NST_TOL_FIRST_GRADIENT_SHARE of the samples may be more than NST_TOL_FIRST_GRADIENT x the
 * reference's rms apart. `exact` (a tile-exact backend against itself): every sample equal, each
 * loss term within NST_TOL_SUM (sums of doubles in another order). NaN or Inf always fails. */
enum { NST_LOSS_TOTAL, NST_LOSS_CONTENT, NST_LOSS_STYLE, NST_LOSS_TV, NST_LOSS_TEMPORAL, NST_LOSS_NTERMS };
typedef struct {
    double threshold, max_share, loss_tol; /* from the precision and depth */
    double share, max_err, l2;             /* measured: the share over, the largest |g-r| / rms(r), ||g-r|| / ||r|| */
    double loss_err;                       /* the worst term's relative error */
    int loss_worst;                        /* its NST_LOSS_ index */
    int ok;
} nst_first_verdict;
void nst_first_verdict_judge(nst_precision p, int depth, int exact, const double *ref_loss, const double *got_loss, const float *ref,
                             const float *got, size_t n, nst_first_verdict *v);
/* "0.0012 of samples over 8.5e-06 rms (max 0.05), loss 1.2e-07 (max 1.7e-06, style)" */
void nst_first_verdict_describe(const nst_first_verdict *v, char *out, size_t cap);
const char *nst_loss_term_name(int k);

/* Only the tiling's contracts on c->dev (windows against the whole: check_contracts.c): for a
 * backend that is its own reference (the CPU in fp32), whose other ops nothing can be compared with. */
nst_status nst_check_contracts(nst_check *c);

/* err / tol, as the report shows it: infinite for an error over a tolerance of 0 (an exact contract). */
double nst_check_ratio(double err, double tol);

/* Cases failed over all rows. */
int nst_check_failures(const nst_check *c);

/* The report: one line per op (precision, cases, worst error, its tolerance, verdict, the case),
 * each prefixed by `indent`. */
void nst_check_print(const nst_check *c, FILE *f, const char *indent);

#endif

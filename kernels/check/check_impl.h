/* kernels/check/check_impl.h: the harness's shared pieces (check.c) for its op groups (check_ops.c). */
#ifndef NST_CHECK_IMPL_H
#define NST_CHECK_IMPL_H

#include "check.h"

/* A tensor on both backends holding the same values: r on the reference, d on the backend under
 * test (in its activation dtype when act, else fp32), h the values on the host. */
typedef struct {
    nst_tensor r, d;
    float *h;
} ck_pair;

float ck_rand(nst_check *c, float lo, float hi);
/* random values in [lo, hi], made on the device and read back; 0 on failure (recorded) */
int ck_pair_make(nst_check *c, ck_pair *p, int h, int w, int ch, int act, float lo, float hi);
/* the same in a given dtype on the device (e.g. its network input's) */
int ck_pair_make_dt(nst_check *c, ck_pair *p, int h, int w, int ch, nst_dtype dt, float lo, float hi);
/* A mask of h x w (fp32, one channel; kernels/backend.h) on both sides: all ones, or a fixed
 * pattern of weights in [0, 1], multiples of 2^-16, with 0 and 1 among them */
int ck_mask_make(nst_check *c, ck_pair *p, int h, int w, int ones);
void ck_pair_free(nst_check *c, ck_pair *p);
/* max |got - ref| / max |ref| (infinite on NaN or Inf in either) */
double ck_rel_err(const float *ref, const float *got, size_t n);
/* For the exact contracts: max |a - b| over the values that differ / max |a|: 0 when every value
 * is the same (infinite where a differing value is NaN or Inf) */
double ck_same_err(const double *a, const double *b, size_t n);
double ck_same_err_f(const float *a, const float *b, size_t n);
/* the error between a pair's two sides */
double ck_pair_err(nst_check *c, const ck_pair *p);
/* Record one comparison of op (class k, `terms` products per result) with its case description. */
void ck_record(nst_check *c, const char *op, nst_tol_class k, double terms, double err, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
/* Both ops ran: 1; else record a failed case for op with the failing side's message and 0. */
int ck_ran(nst_check *c, const char *op, nst_status ref, nst_status dev);

/* The backend under test adds its loss sums where they are, in its memory (kernels/backend.h):
 * exact accumulator i (0 or 1) and a double there, zeroed (NULL when they could not be made:
 * recorded); and their values read back (the accumulator zeroed again; NaN when a read fails). */
nst_xsum *ck_dev_sum(nst_check *c, int i);
double ck_dev_take(nst_check *c, int i);
double *ck_dev_double(nst_check *c);
double ck_dev_double_read(nst_check *c);

/* round n host floats as the device stores activations (its weights, for the reference) */
int ck_round_host(nst_check *c, float *v, size_t n);

/* the table of spatial shapes (a quick run takes the first 3) and the regions of one */
extern const int ck_shapes[5][2];
#define NSHAPES(c) ((c)->quick ? 3 : 5)
/* whole, whole rows, an interior block, a one-pixel corner, empty; returns how many */
int ck_regions(int h, int w, nst_rect *r);
/* run the same op on both sides (a variable `op` names it) */
#define BOTH(c, call_r, call_d) ck_ran(c, op, (call_r), (call_d))

/* the groups */
void ck_conv(nst_check *c);
void ck_eltwise(nst_check *c);
void ck_gram(nst_check *c);
void ck_losses(nst_check *c);
void ck_optimiser(nst_check *c);
void ck_contracts(nst_check *c);

#endif

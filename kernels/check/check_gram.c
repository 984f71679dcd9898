/* kernels/check/check_gram.c: the Gram ops in the harness: the sums over regions, the tiled-sum
 * contract (the sums of a region's parts, added, round to the same fp32 matrix as the region's:
 * what makes a tiled render equal the one-tile render), the difference to the target with and
 * without the lagged extrapolation, and the backward into a gradient that already holds values.
 * The sums, the contract and the backward again with a mask (kernels/backend.h), and a mask of
 * ones against none on the backend under test: the same bits. */
#include <math.h>
#include <string.h>

#include "../../util/mem.h"
#include "check_impl.h"

/* The upper triangles of G (sums accumulated twice on the device, so it must accumulate) against
 * the reference's. */
static double sums_err(const double *ref, const double *dev2, int c)
{
    double m = 0, e = 0;
    for (int i = 0; i < c; i++)
        for (int j = i; j < c; j++) {
            size_t u = (size_t)i * c + j;
            if (!isfinite(ref[u]) || !isfinite(dev2[u])) return INFINITY;
            if (fabs(ref[u]) > m) m = fabs(ref[u]);
            if (fabs(dev2[u] / 2 - ref[u]) > e) e = fabs(dev2[u] / 2 - ref[u]);
        }
    return m > 0 ? e / m : e;
}

/* G over r (weighted by the mask m, or none) on the reference (hr) and twice on the device (hd) */
static int sums(nst_check *c, const ck_pair *f, const ck_pair *m, nst_rect r, double *gr, double *gd, double *hr, double *hd)
{
    nst_backend *R = c->ref, *D = c->dev;
    size_t bytes = (size_t)f->r.c * f->r.c * sizeof(double);
    const char *op = m ? "gram_accumulate masked" : "gram_accumulate";
    const nst_tensor *mr = m ? &m->r : NULL, *md = m ? &m->d : NULL;
    nst_status a = R->ops->zero(R, gr, bytes), b = D->ops->zero(D, gd, bytes);
    if (a == NST_OK) a = R->ops->gram_accumulate(R, &f->r, r, mr, gr);
    if (b == NST_OK) b = D->ops->gram_accumulate(D, &f->d, r, md, gd);
    if (b == NST_OK) b = D->ops->gram_accumulate(D, &f->d, r, md, gd); /* twice: it accumulates */
    if (a == NST_OK) a = R->ops->read(R, hr, gr, bytes);
    if (b == NST_OK) b = D->ops->read(D, hd, gd, bytes);
    return BOTH(c, a, b);
}

/* The contract: G of the whole region against the sum of G over three bands of its rows (in
 * another order), both rounded to fp32: any difference fails. With a mask m, or none. */
static void tiled_contract(nst_check *c, const ck_pair *f, const ck_pair *m, double *gd, double *hw, double *hp)
{
    nst_backend *D = c->dev;
    int h = f->r.h, w = f->r.w, ch = f->r.c;
    size_t bytes = (size_t)ch * ch * sizeof(double);
    const char *op = m ? "gram tiled sums masked" : "gram tiled sums";
    const nst_tensor *md = m ? &m->d : NULL;
    nst_rect whole = nst_rect_make(0, 0, w, h);
    nst_status s = D->ops->zero(D, gd, bytes);
    if (s == NST_OK) s = D->ops->gram_accumulate(D, &f->d, whole, md, gd);
    if (s == NST_OK) s = D->ops->read(D, hw, gd, bytes);
    if (s == NST_OK) s = D->ops->zero(D, gd, bytes);
    int cut[4] = {0, h / 3, 2 * h / 3 + 1 < h ? 2 * h / 3 + 1 : h, h};
    for (int k = 2; s == NST_OK && k >= 0; k--) /* bottom band first: another order */
        s = D->ops->gram_accumulate(D, &f->d, nst_rect_make(0, cut[k], w, cut[k + 1] - cut[k]), md, gd);
    if (s == NST_OK) s = D->ops->read(D, hp, gd, bytes);
    if (!BOTH(c, NST_OK, s)) return;
    double big = 0, e = 0;
    for (int i = 0; i < ch; i++)
        for (int j = i; j < ch; j++) {
            size_t u = (size_t)i * ch + j;
            float a = (float)hw[u], b = (float)hp[u];
            if (fabsf(a) > big) big = fabsf(a);
            if (a != b) {
                double d = isfinite(a) && isfinite(b) ? fabsf(a - b) : INFINITY;
                if (!(d <= e)) e = d;
            }
        }
    ck_record(c, op, nst_contract_class(c->dev, NST_TOL_GRAM_TILED), (double)h * w, big > 0 ? e / big : e, "c %d %dx%d in 3 bands", ch, h, w);
}

static void diff_cases(nst_check *c, int ch, double *gr, double *gd, float *ar, float *ad, float *dr, float *dd)
{
    nst_backend *R = c->ref, *D = c->dev;
    size_t cc = (size_t)ch * ch;
    double *hg = nst_alloc_array(cc, sizeof(double), "g"), *hp = nst_alloc_array(cc, sizeof(double), "g"), *pr = NULL, *pd = NULL;
    float *ha = nst_alloc_array(cc, sizeof(float), "a"), *o1 = nst_alloc_array(cc, sizeof(float), "d"),
          *o2 = nst_alloc_array(cc, sizeof(float), "d");
    const char *op = "gram_diff";
    if (!hg || !hp || !ha || !o1 || !o2) goto out;
    for (size_t i = 0; i < cc; i++) hg[i] = ck_rand(c, 0, 100), ha[i] = ck_rand(c, 0, 1), hp[i] = hg[i] * 0.9;
    if (!BOTH(c, R->ops->alloc(R, cc * 8, (void **)&pr), D->ops->alloc(D, cc * 8, (void **)&pd))) goto out;
    nst_status a = R->ops->write(R, gr, hg, cc * 8), b = D->ops->write(D, gd, hg, cc * 8);
    if (a == NST_OK) a = R->ops->write(R, ar, ha, cc * 4);
    if (b == NST_OK) b = D->ops->write(D, ad, ha, cc * 4);
    if (a == NST_OK) a = R->ops->write(R, pr, hp, cc * 8);
    if (b == NST_OK) b = D->ops->write(D, pd, hp, cc * 8);
    if (!BOTH(c, a, b)) goto out;
    for (int lag = 0; lag < 2; lag++) {
        double sr = 0, sd, *sdev = ck_dev_double(c); /* the device's sum in its memory */
        if (!sdev || !BOTH(c, R->ops->gram_diff(R, gr, lag ? pr : NULL, 1.0 / 37, ar, ch, dr, &sr),
                           D->ops->gram_diff(D, gd, lag ? pd : NULL, 1.0 / 37, ad, ch, dd, sdev)))
            continue;
        sd = ck_dev_double_read(c);
        if (!BOTH(c, R->ops->read(R, o1, dr, cc * 4), D->ops->read(D, o2, dd, cc * 4))) continue;
        ck_record(c, op, NST_TOL_F32_MATH, 1, ck_rel_err(o1, o2, cc), "c %d lag %d", ch, lag);
        ck_record(c, "gram_diff sum", NST_TOL_SUM, 1, fabs(sd - sr) / (sr > 0 ? sr : 1), "c %d lag %d", ch, lag);
    }
out:
    if (pr) R->ops->free(R, pr);
    if (pd) D->ops->free(D, pd);
    nst_free(hg), nst_free(hp), nst_free(ha), nst_free(o1), nst_free(o2);
}

/* random symmetric d of c x c on the host */
static void random_d(nst_check *c, float *hd, int ch)
{
    for (size_t i = 0; i < (size_t)ch * ch; i++) hd[i] = ck_rand(c, -1, 1);
    for (int i = 0; i < ch; i++) /* symmetric */
        for (int j = 0; j < i; j++) hd[(size_t)i * ch + j] = hd[(size_t)j * ch + i];
}

/* the backward over each region, weighted by the mask m or not */
static void backward_cases(nst_check *c, const ck_pair *f, const ck_pair *m, const nst_rect *r, int nr, float *dr, float *dd)
{
    nst_backend *R = c->ref, *D = c->dev;
    int h = f->r.h, w = f->r.w, ch = f->r.c;
    size_t cc = (size_t)ch * ch;
    float *hd = nst_alloc_array(cc, sizeof(float), "d");
    const char *op = m ? "gram_backward masked" : "gram_backward";
    const nst_tensor *mr = m ? &m->r : NULL, *md = m ? &m->d : NULL;
    for (int k = 0; hd && k < nr; k++) {
        ck_pair df;
        if (!ck_pair_make(c, &df, h, w, ch, 1, -1, 1)) continue;
        random_d(c, hd, ch);
        if (BOTH(c, R->ops->write(R, dr, hd, cc * 4), D->ops->write(D, dd, hd, cc * 4)) &&
            BOTH(c, R->ops->gram_backward(R, &f->r, r[k], mr, dr, 0.25f, &df.r),
                 D->ops->gram_backward(D, &f->d, r[k], md, dd, 0.25f, &df.d)))
            ck_record(c, op, NST_TOL_GRAM_BACKWARD, ch, ck_pair_err(c, &df), "c %d %dx%d region %dx%d+%d+%d", ch, h, w, r[k].w, r[k].h,
                      r[k].x, r[k].y);
        ck_pair_free(c, &df);
    }
    nst_free(hd);
}

/* the sums over each region, weighted by the mask m or not, against the reference */
static void sums_cases(nst_check *c, const ck_pair *f, const ck_pair *m, const nst_rect *r, int nr, double *gr, double *gd, double *hr,
                       double *hd)
{
    int h = f->r.h, w = f->r.w, ch = f->r.c;
    for (int k = 0; k < nr; k++)
        if (sums(c, f, m, r[k], gr, gd, hr, hd))
            ck_record(c, m ? "gram_accumulate masked" : "gram_accumulate", NST_TOL_GRAM_SUMS, (double)nst_rect_area(r[k]),
                      sums_err(hr, hd, ch), "c %d %dx%d region %dx%d+%d+%d", ch, h, w, r[k].w, r[k].h, r[k].x, r[k].y);
}

/* The sums and the backward with a mask of ones against none, on the backend under test alone:
 * the same bits (kernels/backend.h), whatever the region. The gradients start from the features'
 * values, so the addition into them takes part. */
static void ones_cases(nst_check *c, const ck_pair *f, const ck_pair *ones, const nst_rect *r, int nr, double *gd, double *h1,
                       double *h2, float *dd)
{
    nst_backend *D = c->dev;
    const int h = f->d.h, w = f->d.w, ch = f->d.c;
    const size_t cc = (size_t)ch * ch, n = (size_t)h * w * ch;
    const char *op = "mask of ones = no mask";
    float *hd = nst_alloc_array(cc, sizeof(float), "d"), *o[2] = {nst_alloc_array(n + 1, sizeof(float), "df"),
                                                                  nst_alloc_array(n + 1, sizeof(float), "df")};
    nst_tensor df[2] = {{0}, {0}};
    nst_status s = hd && o[0] && o[1] ? NST_OK : NST_ENOMEM;
    for (int pass = 0; pass < 2; pass++)
        if (s == NST_OK) s = nst_tensor_alloc(D, h, w, ch, f->d.dt, &df[pass]);
    if (s == NST_OK) random_d(c, hd, ch), s = D->ops->write(D, dd, hd, cc * sizeof(float));
    for (int k = 0; s == NST_OK && k < nr; k++) {
        for (int pass = 0; s == NST_OK && pass < 2; pass++) { /* none, then the ones */
            const nst_tensor *m = pass ? &ones->d : NULL;
            s = D->ops->zero(D, gd, cc * sizeof(double));
            if (s == NST_OK) s = D->ops->gram_accumulate(D, &f->d, r[k], m, gd);
            if (s == NST_OK) s = D->ops->read(D, pass ? h2 : h1, gd, cc * sizeof(double));
            if (s == NST_OK) s = D->ops->copy(D, df[pass].data, f->d.data, n * nst_dtype_size(f->d.dt));
            if (s == NST_OK) s = D->ops->gram_backward(D, &f->d, r[k], m, dd, 0.25f, &df[pass]);
            if (s == NST_OK && n) s = D->ops->download(D, o[pass], df[pass].data, n, df[pass].dt);
        }
        if (s == NST_OK)
            ck_record(c, op, NST_TOL_EXACT, 1, fmax(ck_same_err(h1, h2, cc), ck_same_err_f(o[0], o[1], n)),
                      "gram c %d %dx%d region %dx%d+%d+%d", ch, h, w, r[k].w, r[k].h, r[k].x, r[k].y);
    }
    BOTH(c, NST_OK, s);
    nst_tensor_free(D, &df[0]), nst_tensor_free(D, &df[1]);
    nst_free(hd), nst_free(o[0]), nst_free(o[1]);
}

/* The sums and the backward with a mask over regions r, the tiled contract with it (tiled), and
 * a mask of ones against none over regions ro. */
static void masked_cases(nst_check *c, const ck_pair *f, const nst_rect *r, int nr, const nst_rect *ro, int no, int tiled, double *gr,
                         double *gd, double *hr, double *hd, float *dr, float *dd)
{
    ck_pair m, ones;
    if (!ck_mask_make(c, &m, f->r.h, f->r.w, 0)) return;
    sums_cases(c, f, &m, r, nr, gr, gd, hr, hd);
    if (tiled && f->r.h >= 3) tiled_contract(c, f, &m, gd, hr, hd);
    backward_cases(c, f, &m, r, nr, dr, dd);
    ck_pair_free(c, &m);
    if (!ck_mask_make(c, &ones, f->r.h, f->r.w, 1)) return;
    ones_cases(c, f, &ones, ro, no, gd, hr, hd, dd);
    ck_pair_free(c, &ones);
}

/* every Gram op on one feature tensor of h x w x ch */
static void gram_case(nst_check *c, int h, int w, int ch, int all_regions)
{
    nst_backend *R = c->ref, *D = c->dev;
    size_t cc = (size_t)ch * ch;
    ck_pair f;
    if (!ck_pair_make(c, &f, h, w, ch, 1, 0, 2)) return;
    double *gr = NULL, *gd = NULL, *hr = nst_alloc_array(cc, sizeof(double), "g"), *hd = nst_alloc_array(cc, sizeof(double), "g");
    float *ar = NULL, *ad = NULL, *dr = NULL, *dd = NULL;
    const char *op = "alloc";
    int ok = hr && hd && BOTH(c, R->ops->alloc(R, cc * 8, (void **)&gr), D->ops->alloc(D, cc * 8, (void **)&gd));
    ok = ok && BOTH(c, R->ops->alloc(R, cc * 4, (void **)&ar), D->ops->alloc(D, cc * 4, (void **)&ad));
    ok = ok && BOTH(c, R->ops->alloc(R, cc * 4, (void **)&dr), D->ops->alloc(D, cc * 4, (void **)&dd));
    nst_rect r[5];
    int nr = all_regions ? ck_regions(h, w, r) : 2;
    if (!all_regions) r[0] = nst_rect_make(0, 0, w, h), r[1] = nst_rect_make(1, 0, w - 2, h); /* whole rows; packed */
    if (ok) sums_cases(c, &f, NULL, r, nr, gr, gd, hr, hd);
    if (ok && h >= 3) tiled_contract(c, &f, NULL, gd, hr, hd);
    if (ok) diff_cases(c, ch, gr, gd, ar, ad, dr, dd);
    if (ok) backward_cases(c, &f, NULL, r, nr, dr, dd);
    /* with a mask: every region of the table's shapes; of the large one (for the GPU's chunks),
     * the packed region against the reference and whole rows (the GPU's weighted copy placed at
     * the in-place alignment) with ones against none */
    const int nm = all_regions ? nr : 1;
    if (ok) masked_cases(c, &f, all_regions ? r : r + 1, nm, r, nm, all_regions, gr, gd, hr, hd, dr, dd);
    if (gr) R->ops->free(R, gr);
    if (ar) R->ops->free(R, ar);
    if (dr) R->ops->free(R, dr);
    if (gd) D->ops->free(D, gd);
    if (ad) D->ops->free(D, ad);
    if (dd) D->ops->free(D, dd);
    nst_free(hr), nst_free(hd);
    ck_pair_free(c, &f);
}

void ck_gram(nst_check *c)
{
    const int cs[] = {3, 64, 77};
    for (int k = 0; k < 3; k++)
        for (int s = 0; s < NSHAPES(c); s++) gram_case(c, ck_shapes[s][0], ck_shapes[s][1], cs[k], 1);
    /* 36.8 M elements: the GPU sums the whole region, and the one of part rows, in 5 chunks of at
     * most 2^23 features (half of CUDA_CHUNK_ELEMS, kernels/cuda/gram_cuda.cu) and each band of
     * the tiled contract in 2, and takes the backward in 3 chunks of at most 2^24 (481 whole
     * rows); the CPU in its own blocks */
    if (!c->quick) gram_case(c, 1056, 544, 64, 0);
}

/* nst/state/snapshot.c: output.save_every's preview of the image being rendered (see snapshot.h).
 *
 * The preview grid: image column x falls in preview column x * pw / W (integer division), and
 * likewise for rows, so the preview pixels partition the image and each is the mean of its
 * block. A core contributes partial sums to the preview rectangle it touches; rank 0 adds the
 * rectangles of rank 0, 1, ... in order and divides by the block areas. */
#include "snapshot.h"

#include <string.h>

#include "../../io/image/image.h"
#include "../../io/image/resample.h"
#include "../../mpi/comm.h"
#include "../../util/log.h"
#include "../../util/mem.h"

typedef struct {
    int pw, ph, W, H;
} grid;

static int col_of(const grid *g, int x) { return (int)((long long)x * g->pw / g->W); }
static int row_of(const grid *g, int y) { return (int)((long long)y * g->ph / g->H); }

/* The preview rectangle that core r touches. */
static nst_rect block_of(const grid *g, nst_rect r)
{
    int x0 = col_of(g, r.x), y0 = row_of(g, r.y);
    return nst_rect_make(x0, y0, col_of(g, r.x + r.w - 1) - x0 + 1, row_of(g, r.y + r.h - 1) - y0 + 1);
}

/* Partial sums of core r's pixels into out (b's w x h x 3, zeroed here). */
static void reduce_core(const grid *g, nst_rect r, const float *px, nst_rect b, float *out)
{
    memset(out, 0, sizeof(float) * 3 * (size_t)nst_rect_area(b));
    for (int y = 0; y < r.h; y++) {
        float *orow = out + (size_t)(row_of(g, r.y + y) - b.y) * b.w * 3;
        const float *in = px + (size_t)y * r.w * 3;
        for (int x = 0; x < r.w; x++) {
            float *o = orow + (size_t)(col_of(g, r.x + x) - b.x) * 3;
            o[0] += in[3 * x], o[1] += in[3 * x + 1], o[2] += in[3 * x + 2];
        }
    }
}

/* This rank's message: n rectangles, then each one's sums. *bytes: its size. */
static unsigned char *pack(const grid *g, const nst_rect *cores, float *const *px, int n, size_t *bytes)
{
    size_t len = sizeof(int) + (size_t)n * sizeof(nst_rect);
    for (int i = 0; i < n; i++) len += sizeof(float) * 3 * (size_t)nst_rect_area(block_of(g, cores[i]));
    unsigned char *m = nst_alloc(len, "the preview's partial sums");
    if (!m) return NULL;
    memcpy(m, &n, sizeof n);
    nst_rect *rects = (nst_rect *)(m + sizeof(int));
    float *sums = (float *)(rects + n);
    for (int i = 0; i < n; i++) {
        rects[i] = block_of(g, cores[i]);
        reduce_core(g, cores[i], px[i], rects[i], sums);
        sums += 3 * (size_t)nst_rect_area(rects[i]);
    }
    *bytes = len;
    return m;
}

/* Rank 0: a message's sums added into acc (pw x ph x 3); 0 if it is malformed. */
static int add(const grid *g, const unsigned char *m, size_t bytes, double *acc)
{
    int n;
    if (bytes < sizeof n) return 0;
    memcpy(&n, m, sizeof n);
    if (n < 0 || (size_t)n > (bytes - sizeof n) / sizeof(nst_rect)) return 0;
    const nst_rect *rects = (const nst_rect *)(m + sizeof(int));
    const float *sums = (const float *)(rects + n);
    size_t left = (bytes - sizeof n - (size_t)n * sizeof(nst_rect)) / sizeof(float);
    for (int i = 0; i < n; i++) {
        nst_rect b = rects[i];
        size_t k = 3 * (size_t)nst_rect_area(b);
        if (b.x < 0 || b.y < 0 || b.w < 1 || b.h < 1 || b.x + b.w > g->pw || b.y + b.h > g->ph || k > left) return 0;
        for (int y = 0; y < b.h; y++)
            for (int x = 0; x < 3 * b.w; x++) acc[((size_t)(b.y + y) * g->pw + b.x) * 3 + x] += sums[(size_t)y * b.w * 3 + x];
        sums += k;
        left -= k;
    }
    return 1;
}

/* Rank 0: the means (each block's sum over its area) written to path. */
static nst_status finish(const grid *g, const double *acc, const char *path, int bits)
{
    int *cw = nst_calloc(sizeof(int) * ((size_t)g->pw + g->ph), "the preview's blocks");
    nst_image img = {0};
    nst_status s = cw ? nst_image_alloc(&img, g->pw, g->ph) : NST_ENOMEM;
    if (s == NST_OK) {
        int *ch = cw + g->pw;
        for (int x = 0; x < g->W; x++) cw[col_of(g, x)]++;
        for (int y = 0; y < g->H; y++) ch[row_of(g, y)]++;
        for (int y = 0; y < g->ph; y++)
            for (int x = 0; x < g->pw; x++)
                for (int c = 0; c < 3; c++) {
                    size_t i = ((size_t)y * g->pw + x) * 3 + c;
                    img.px[i] = (float)(acc[i] / ((double)cw[x] * ch[y]));
                }
        s = nst_image_write(path, &img, bits, 1, NULL);
    }
    nst_image_free(&img);
    nst_free(cw);
    return s;
}

nst_status nst_snapshot_write(const char *path, int side, int bits, int img_w, int img_h, const nst_rect *cores, float *const *px, int n)
{
    const int rank = nst_comm_rank(), size = nst_comm_size();
    grid g = {img_w, img_h, img_w, img_h};
    if (img_w > side || img_h > side) nst_fit_long_side(img_w, img_h, side, &g.pw, &g.ph);
    size_t bytes = 0;
    unsigned char *mine = pack(&g, cores, px, n, &bytes);
    nst_status s = nst_comm_agree(mine ? NST_OK : NST_ENOMEM);
    if (s != NST_OK) {
        nst_free(mine);
        return s;
    }
    if (rank != 0) { /* the size, then the sums */
        unsigned long long len = bytes;
        s = nst_comm_send(&len, sizeof len, 0);
        if (s == NST_OK) s = nst_comm_send(mine, bytes, 0);
        nst_free(mine);
        return nst_comm_agree(s);
    }
    double *acc = nst_calloc(sizeof(double) * 3 * (size_t)g.pw * g.ph, "the preview");
    int ok = acc && add(&g, mine, bytes, acc);
    nst_free(mine);
    for (int r = 1; r < size && s == NST_OK; r++) { /* every rank's message is received, whatever happened */
        unsigned long long len = 0;
        s = nst_comm_recv(&len, sizeof len, r);
        unsigned char *m = s == NST_OK ? nst_alloc(len ? (size_t)len : 1, "a rank's preview sums") : NULL;
        if (s == NST_OK && !m) s = NST_ENOMEM;
        if (s == NST_OK) s = nst_comm_recv(m, (size_t)len, r);
        if (s == NST_OK && ok) ok = add(&g, m, (size_t)len, acc);
        nst_free(m);
    }
    if (s == NST_OK) { /* the render goes on without its preview: a warning, not an error */
        nst_status w = !acc ? nst_fail(NST_ENOMEM, "out of memory for the preview") : !ok ? nst_fail(NST_ERUNTIME, "malformed partial sums") : finish(&g, acc, path, bits);
        if (w != NST_OK) nst_warn("the preview %s (output.save_every) was not written: %s\n", path, nst_fail_message());
        nst_fail_clear();
    }
    nst_free(acc);
    return nst_comm_agree(s);
}

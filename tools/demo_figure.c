/* tools/demo_figure.c: the README's picture of the demo (docs/demo.jpg) made from what `make
 * demo` rendered, and the check that the picture has not drifted from it.
 *
 *   demo_figure DIR RESULT.png OUT.jpg          content | style | result (DIR/content.png,
 *                                               DIR/style.png, RESULT.png), each 256 px high,
 *                                               8 px white gaps, JPEG quality 92
 *   demo_figure --check DIR RESULT.png FIG.jpg  the figure these files would make against FIG.jpg:
 *                                               the same size, and a result panel as far from the
 *                                               content as the render is (within 25 %), with the
 *                                               same mean colour (within 8/255)
 *   --masks (first, before either form)         the masks demo's figure (docs/masks.jpg): the
 *                                               middle panel is DIR/sky.png, its mask
 *
 * Why statistics and not pixels: a render on another CPU (bf16 against fp32, other rounding) is a
 * different image of the same stylisation; what must not happen is a figure of another demo, such
 * as an older, barely stylised one. Exit status 0, 1 drifted, 2 bad arguments or files. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../io/image/image.h"
#include "../io/image/jpeg_write.h"
#include "../io/image/resample.h"
#include "../util/mem.h"
#include "../util/status.h"

#define PANEL_H 256
#define GAP 8

/* The three panels side by side (content, middle, result); *result_x, *result_w: the result
 * panel's columns. */
static nst_status compose(const char *dir, const char *middle, const char *result, nst_image *fig, int *result_x, int *result_w)
{
    const char *names[2] = {"content.png", middle};
    nst_image in[3] = {{0}}, sc[3] = {{0}};
    nst_read_limits lim = nst_default_limits(100);
    nst_image_info info;
    nst_status s = NST_OK;
    int total = 2 * GAP;
    for (int i = 0; s == NST_OK && i < 3; i++) {
        char path[4200];
        if (i < 2)
            snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        else
            snprintf(path, sizeof path, "%s", result);
        s = nst_image_read(path, &lim, &in[i], &info);
        if (s == NST_OK) s = nst_image_resize(&in[i], (int)lround((double)in[i].w * PANEL_H / in[i].h), PANEL_H, &sc[i]);
        if (s == NST_OK) total += sc[i].w;
    }
    if (s == NST_OK) s = nst_image_alloc(fig, total, PANEL_H);
    if (s == NST_OK) {
        for (size_t k = 0; k < (size_t)total * PANEL_H * 3; k++) fig->px[k] = 1.0f; /* white gaps */
        for (int i = 0, x0 = 0; i < 3; x0 += sc[i].w + GAP, i++) {
            for (int y = 0; y < PANEL_H; y++)
                memcpy(fig->px + ((size_t)y * total + x0) * 3, sc[i].px + (size_t)y * sc[i].w * 3, sizeof(float) * 3 * (size_t)sc[i].w);
            if (i == 2) *result_x = x0, *result_w = sc[i].w;
        }
    }
    for (int i = 0; i < 3; i++) nst_image_free(&in[i]), nst_image_free(&sc[i]);
    return s;
}

/* Mean |a - b| over columns [ax, ax+w) of a against [bx, bx+w) of b. */
static double panel_distance(const nst_image *a, int ax, const nst_image *b, int bx, int w)
{
    double sum = 0;
    for (int y = 0; y < a->h; y++)
        for (int x = 0; x < 3 * w; x++)
            sum += fabs(a->px[((size_t)y * a->w + ax) * 3 + x] - b->px[((size_t)y * b->w + bx) * 3 + x]);
    return sum / (3.0 * w * a->h);
}

static void panel_mean(const nst_image *a, int ax, int w, double m[3])
{
    m[0] = m[1] = m[2] = 0;
    for (int y = 0; y < a->h; y++)
        for (int x = 0; x < w; x++)
            for (int c = 0; c < 3; c++) m[c] += a->px[((size_t)y * a->w + ax + x) * 3 + c];
    for (int c = 0; c < 3; c++) m[c] /= (double)w * a->h;
}

static int check(const nst_image *now, int rx, int rw, const char *fig_path)
{
    nst_image fig = {0};
    nst_image_info info;
    nst_read_limits lim = nst_default_limits(100);
    if (nst_image_read(fig_path, &lim, &fig, &info) != NST_OK) {
        fprintf(stderr, "demo_figure: %s\n", nst_fail_message());
        return 2;
    }
    int rc = 0;
    if (fig.w != now->w || fig.h != now->h) {
        printf("demo_figure: %s is %dx%d; the demo's figure would be %dx%d: run make demo-figure\n", fig_path, fig.w, fig.h, now->w, now->h);
        rc = 1;
    } else {
        double d_now = panel_distance(now, rx, now, 0, rw), d_fig = panel_distance(&fig, rx, &fig, 0, rw);
        double m_now[3], m_fig[3], dm = 0;
        panel_mean(now, rx, rw, m_now);
        panel_mean(&fig, rx, rw, m_fig);
        for (int c = 0; c < 3; c++) dm = fmax(dm, fabs(m_now[c] - m_fig[c]));
        int ok = fabs(d_fig - d_now) <= 0.25 * d_now && dm <= 8.0 / 255;
        printf("demo_figure: result panel's mean distance from the content: figure %.4f, render %.4f; mean colour differs by %.1f/255: %s\n", d_fig,
               d_now, dm * 255, ok ? "the figure shows this demo" : "drifted: run make demo-figure");
        rc = ok ? 0 : 1;
    }
    nst_image_free(&fig);
    return rc;
}

int main(int argc, char **argv)
{
    int masks = argc > 1 && strcmp(argv[1], "--masks") == 0; /* the masks demo: its sky mask in the middle */
    argc -= masks, argv += masks;
    int checking = argc == 5 && strcmp(argv[1], "--check") == 0;
    if (argc != 4 && !checking) {
        fprintf(stderr, "usage: demo_figure [--masks] DIR RESULT.png OUT.jpg | demo_figure [--masks] --check DIR RESULT.png FIG.jpg\n");
        return 2;
    }
    nst_image fig = {0};
    int rx = 0, rw = 0;
    if (compose(argv[1 + checking], masks ? "sky.png" : "style.png", argv[2 + checking], &fig, &rx, &rw) != NST_OK) {
        fprintf(stderr, "demo_figure: %s\n", nst_fail_message());
        return 2;
    }
    int rc = 0;
    if (checking) {
        rc = check(&fig, rx, rw, argv[4]);
    } else if (nst_jpeg_write(argv[3], &fig, 92,
                              masks ? "nstbatch masks demo: content | sky mask | result (tools/demo_figure.c)"
                                    : "nstbatch demo: content | style | result (tools/demo_figure.c)") != NST_OK) {
        fprintf(stderr, "demo_figure: %s\n", nst_fail_message());
        rc = 2;
    } else {
        printf("wrote %s (%dx%d)\n", argv[3], fig.w, fig.h);
    }
    nst_image_free(&fig);
    return rc;
}

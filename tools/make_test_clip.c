/* tools/make_test_clip.c: a synthetic clip whose motion is known exactly, for the video mode's tests
 * and benchmarks: a textured disc moving over a textured background that pans, with its exact
 * optical flow both ways and its occlusions. No downloaded data.
 *
 *   make_test_clip OUTDIR [--size WxH] [--frames N] [--motion translate|rotate|zoom|all]
 *
 * Writes, for frames i = 0 .. N-1 (numbered %05d):
 *   frame_i.png  8-bit RGB;
 *   fwd_i.flo    frame i -> i + 1 (i < N - 1), Middlebury .flo: where each pixel of frame i is in i + 1;
 *   bwd_i.flo    frame i + 1 -> i (i < N - 1): where each pixel of frame i + 1 was in frame i;
 *   occ_i.png    255 where frame i's pixel is not visible in frame i + 1 (covered by the disc, or
 *                leaving the image), else 0;
 *   dis_i.png    255 where frame i + 1's pixel was not visible in frame i (disoccluded: the
 *                background the disc uncovers, or entering the image), else 0.
 * The textures are smooth functions of the surface point (periods of tens of pixels), evaluated at
 * pixel centres, so a frame warped by the exact flow matches its neighbour up to the bilinear
 * interpolation's error away from the disc's edge. Motion per frame: the background pans by
 * (1.5, 0.5) px; the disc moves by (3, 1) px (translate), turns by 2 degrees (rotate), grows by
 * 1.5 % (zoom), or all three. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../io/video/flo.h"
#include "../io/image/image.h"
#include "../io/image/png_write.h"
#include "../util/mem.h"

typedef struct {
    int w, h, n;
    double bx, by;          /* background pan per frame */
    double vx, vy, om, zm;  /* disc: velocity, turn (radians), growth per frame */
    double cx0, cy0, r;     /* disc: first centre, radius in its own units */
} clip;

/* The disc's pose at frame t: centre, angle, scale. */
static void pose(const clip *c, double t, double *cx, double *cy, double *a, double *s)
{
    *cx = c->cx0 + c->vx * t, *cy = c->cy0 + c->vy * t, *a = c->om * t, *s = pow(1 + c->zm, t);
}

/* Image point (x, y) at frame t in the disc's own coordinates; 1 when it is on the disc. */
static int on_disc(const clip *c, double t, double x, double y, double *qx, double *qy)
{
    double cx, cy, a, s;
    pose(c, t, &cx, &cy, &a, &s);
    double dx = (x - cx) / s, dy = (y - cy) / s;
    *qx = cos(a) * dx + sin(a) * dy, *qy = -sin(a) * dx + cos(a) * dy;
    return *qx * *qx + *qy * *qy < c->r * c->r;
}

/* The disc's point (qx, qy) in the image at frame t. */
static void from_disc(const clip *c, double t, double qx, double qy, double *x, double *y)
{
    double cx, cy, a, s;
    pose(c, t, &cx, &cy, &a, &s);
    *x = cx + s * (cos(a) * qx - sin(a) * qy), *y = cy + s * (sin(a) * qx + cos(a) * qy);
}

static void background(double u, double v, float *rgb)
{
    rgb[0] = (float)(0.5 + 0.3 * sin(0.11 * u + 0.07 * v));
    rgb[1] = (float)(0.5 + 0.3 * cos(0.05 * u - 0.13 * v));
    rgb[2] = (float)(0.5 + 0.2 * sin(0.09 * v) * cos(0.06 * u));
}

static void disc(double qx, double qy, float *rgb)
{
    double rr = sqrt(qx * qx + qy * qy);
    rgb[0] = (float)(0.55 + 0.35 * sin(0.35 * qx) * cos(0.2 * qy));
    rgb[1] = (float)(0.45 + 0.35 * cos(0.25 * rr));
    rgb[2] = (float)(0.5 + 0.4 * sin(0.3 * qy + 0.1 * qx));
}

/* Where pixel (x, y) of frame t is at frame t + dt (dt = +1 or -1); *hidden: it is not visible
 * there (covered by the disc, or outside the image). */
static void track(const clip *c, double t, double dt, double x, double y, double *x2, double *y2, int *hidden)
{
    double qx, qy, ignore_x, ignore_y;
    if (on_disc(c, t, x, y, &qx, &qy)) {
        from_disc(c, t + dt, qx, qy, x2, y2);
        *hidden = 0;
    } else {
        *x2 = x + dt * c->bx, *y2 = y + dt * c->by;
        *hidden = on_disc(c, t + dt, *x2, *y2, &ignore_x, &ignore_y);
    }
    *hidden |= *x2 < 0 || *y2 < 0 || *x2 > c->w - 1 || *y2 > c->h - 1;
}

static int frame(const clip *c, int t, const char *dir)
{
    nst_image img;
    if (nst_image_alloc(&img, c->w, c->h) != NST_OK) return 1;
    for (int y = 0; y < c->h; y++)
        for (int x = 0; x < c->w; x++) {
            double qx, qy;
            float *px = img.px + 3 * ((size_t)y * c->w + x);
            if (on_disc(c, t, x, y, &qx, &qy)) disc(qx, qy, px);
            else background(x - c->bx * t, y - c->by * t, px);
        }
    char path[4200];
    snprintf(path, sizeof path, "%s/frame_%05d.png", dir, t);
    nst_status s = nst_png_write(path, &img, 8, NULL);
    nst_image_free(&img);
    return s != NST_OK;
}

/* The flows between frames t and t + 1 and frame t's occlusion mask. */
static int flows(const clip *c, int t, const char *dir)
{
    nst_flow fwd = {c->w, c->h, nst_alloc_array((size_t)c->w * c->h * 2, sizeof(float), "flow")};
    nst_flow bwd = {c->w, c->h, nst_alloc_array((size_t)c->w * c->h * 2, sizeof(float), "flow")};
    nst_image occ, dis;
    if (!fwd.uv || !bwd.uv || nst_image_alloc(&occ, c->w, c->h) != NST_OK || nst_image_alloc(&dis, c->w, c->h) != NST_OK) return 1;
    for (int y = 0; y < c->h; y++)
        for (int x = 0; x < c->w; x++) {
            size_t i = (size_t)y * c->w + x;
            double x2, y2;
            int hidden;
            track(c, t, 1, x, y, &x2, &y2, &hidden);
            fwd.uv[2 * i] = (float)(x2 - x), fwd.uv[2 * i + 1] = (float)(y2 - y);
            occ.px[3 * i] = occ.px[3 * i + 1] = occ.px[3 * i + 2] = hidden ? 1.f : 0.f;
            track(c, t + 1, -1, x, y, &x2, &y2, &hidden);
            bwd.uv[2 * i] = (float)(x2 - x), bwd.uv[2 * i + 1] = (float)(y2 - y);
            dis.px[3 * i] = dis.px[3 * i + 1] = dis.px[3 * i + 2] = hidden ? 1.f : 0.f;
        }
    char path[4200];
    nst_status s = NST_OK;
    snprintf(path, sizeof path, "%s/fwd_%05d.flo", dir, t);
    if (s == NST_OK) s = nst_flo_write(path, &fwd);
    snprintf(path, sizeof path, "%s/bwd_%05d.flo", dir, t);
    if (s == NST_OK) s = nst_flo_write(path, &bwd);
    snprintf(path, sizeof path, "%s/occ_%05d.png", dir, t);
    if (s == NST_OK) s = nst_png_write(path, &occ, 8, NULL);
    snprintf(path, sizeof path, "%s/dis_%05d.png", dir, t);
    if (s == NST_OK) s = nst_png_write(path, &dis, 8, NULL);
    nst_flow_free(&fwd), nst_flow_free(&bwd), nst_image_free(&occ), nst_image_free(&dis);
    return s != NST_OK;
}

static int usage(const char *why)
{
    fprintf(stderr, "make_test_clip: %s\nusage: make_test_clip OUTDIR [--size WxH] [--frames N] [--motion translate|rotate|zoom|all]\n", why);
    return 2;
}

int main(int argc, char **argv)
{
    if (argc < 2 || argv[1][0] == '-') return usage("give the output folder");
    const char *dir = argv[1], *motion = "all";
    clip c = {320, 240, 8, 1.5, 0.5, 0, 0, 0, 0, 0, 0, 0};
    for (int a = 2; a < argc; a++) {
        if (a + 1 >= argc) return usage("an option without its value");
        if (!strcmp(argv[a], "--size") && sscanf(argv[a + 1], "%dx%d", &c.w, &c.h) == 2 && c.w >= 16 && c.h >= 16 && c.w <= 8192 && c.h <= 8192) a++;
        else if (!strcmp(argv[a], "--frames") && (c.n = atoi(argv[a + 1])) >= 2 && c.n <= 10000) a++;
        else if (!strcmp(argv[a], "--motion")) motion = argv[++a];
        else return usage("bad option or value (--size 16x16 to 8192x8192, --frames 2 to 10000)");
    }
    int all = !strcmp(motion, "all");
    if (!all && strcmp(motion, "translate") && strcmp(motion, "rotate") && strcmp(motion, "zoom"))
        return usage("--motion: translate, rotate, zoom or all");
    if (all || !strcmp(motion, "translate")) c.vx = 3, c.vy = 1;
    if (all || !strcmp(motion, "rotate")) c.om = 2 * M_PI / 180;
    if (all || !strcmp(motion, "zoom")) c.zm = 0.015;
    c.cx0 = 0.35 * c.w, c.cy0 = 0.45 * c.h, c.r = 0.22 * (c.w < c.h ? c.w : c.h);
    if (mkdir(dir, 0755) != 0 && access(dir, W_OK) != 0) return fprintf(stderr, "make_test_clip: %s: cannot create\n", dir), 1;
    for (int t = 0; t < c.n; t++)
        if (frame(&c, t, dir) || (t + 1 < c.n && flows(&c, t, dir)))
            return fprintf(stderr, "make_test_clip: %s\n", nst_fail_message()), 1;
    printf("make_test_clip: %d frames of %dx%d in %s (motion: %s)\n", c.n, c.w, c.h, dir, motion);
    return 0;
}

/* tools/draw_demo_images.c: draws the demo's content and style images, so the demo needs no
 * downloaded or copied pictures.
 *
 *   draw_demo_images DIR     writes DIR/content.png (384x256), DIR/style.png and DIR/style2.png
 *                            (320x320 each)
 *
 * content: a lake landscape: sky gradient, sun, two ridges of hills, a house, trees, and their
 *          rippled reflection in the water.
 * style:   a "painting" of thick brush strokes that follow a swirling flow field, in a blue,
 *          yellow and orange palette with dark outlines.
 * Everything is a deterministic function of fixed seeds (util/rng), so every build draws the
 * same pictures. Built by `make demo-images`.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/image/image.h"
#include "util/rng.h"

typedef struct {
    float r, g, b;
} rgb;

static rgb mix(rgb a, rgb b, float t)
{
    rgb c = {a.r + (b.r - a.r) * t, a.g + (b.g - a.g) * t, a.b + (b.b - a.b) * t};
    return c;
}

static float clampf(float v, float lo, float hi) { return v < lo ? lo : v > hi ? hi : v; }

static float smooth(float e0, float e1, float x)
{
    float t = clampf((x - e0) / (e1 - e0), 0.f, 1.f);
    return t * t * (3.f - 2.f * t);
}

static void put(nst_image *im, int x, int y, rgb c)
{
    if (x < 0 || y < 0 || x >= im->w || y >= im->h) return;
    float *p = im->px + ((size_t)y * im->w + x) * 3;
    p[0] = clampf(c.r, 0, 1);
    p[1] = clampf(c.g, 0, 1);
    p[2] = clampf(c.b, 0, 1);
}

static rgb get(const nst_image *im, int x, int y)
{
    x = x < 0 ? 0 : x >= im->w ? im->w - 1 : x;
    y = y < 0 ? 0 : y >= im->h ? im->h - 1 : y;
    const float *p = im->px + ((size_t)y * im->w + x) * 3;
    rgb c = {p[0], p[1], p[2]};
    return c;
}

/* A smooth 1-D ridge: a few seeded sines. */
static float ridge(float x, uint64_t seed, int octaves, float amp)
{
    float v = 0, a = amp, f = 0.01f;
    for (int o = 0; o < octaves; o++) {
        float phase = 6.2831853f * nst_rng_uniform(seed, 1, (uint64_t)o);
        v += a * sinf(x * f + phase);
        a *= 0.5f;
        f *= 2.1f;
    }
    return v;
}

/* Value noise on a lattice, smoothly interpolated: texture for the grass and the strokes. */
static float noise2(float x, float y, uint64_t seed)
{
    int xi = (int)floorf(x), yi = (int)floorf(y);
    float fx = x - xi, fy = y - yi;
    fx = fx * fx * (3 - 2 * fx);
    fy = fy * fy * (3 - 2 * fy);
    float v00 = nst_rng_uniform(seed, (uint64_t)(xi * 73856093) ^ (uint64_t)(yi * 19349663), 0);
    float v10 = nst_rng_uniform(seed, (uint64_t)((xi + 1) * 73856093) ^ (uint64_t)(yi * 19349663), 0);
    float v01 = nst_rng_uniform(seed, (uint64_t)(xi * 73856093) ^ (uint64_t)((yi + 1) * 19349663), 0);
    float v11 = nst_rng_uniform(seed, (uint64_t)((xi + 1) * 73856093) ^ (uint64_t)((yi + 1) * 19349663), 0);
    return (v00 * (1 - fx) + v10 * fx) * (1 - fy) + (v01 * (1 - fx) + v11 * fx) * fy;
}

static void draw_content(nst_image *im)
{
    const int W = im->w, H = im->h, horizon = (int)(H * 0.62f);
    const rgb sky_top = {0.16f, 0.32f, 0.62f}, sky_low = {0.93f, 0.78f, 0.60f};
    const rgb far = {0.42f, 0.46f, 0.62f}, near = {0.20f, 0.42f, 0.20f}, near_dark = {0.09f, 0.26f, 0.11f};
    const float sun_x = W * 0.72f, sun_y = H * 0.30f, sun_r = H * 0.075f;
    for (int y = 0; y < horizon; y++)
        for (int x = 0; x < W; x++) {
            float t = (float)y / horizon;
            rgb c = mix(sky_top, sky_low, powf(t, 1.4f));
            float d = hypotf(x - sun_x, y - sun_y);
            c = mix(c, (rgb){1.f, 0.93f, 0.70f}, 0.55f * expf(-d / (sun_r * 2.5f)));
            if (d < sun_r) c = mix(c, (rgb){1.f, 0.97f, 0.86f}, smooth(sun_r, sun_r - 1.5f, d));
            /* distant range */
            float far_top = horizon - 60 - ridge((float)x, 11, 5, 26.f);
            if (y > far_top) c = mix(far, sky_low, 0.35f * (float)(horizon - y) / 90.f);
            /* near hills with grass texture */
            float near_top = horizon - 22 - ridge((float)x + 500, 23, 4, 14.f);
            if (y > near_top) {
                float n = noise2(x * 0.25f, y * 0.25f, 5);
                c = mix(near_dark, near, 0.5f + 0.5f * (float)(y - near_top) / 30.f * n);
            }
            put(im, x, y, c);
        }
    /* a house on the near hill */
    int hx = (int)(W * 0.25f), hy = horizon - 6, hw = 34, hh = 22;
    for (int y = hy - hh; y < hy; y++)
        for (int x = hx; x < hx + hw; x++) put(im, x, y, (rgb){0.86f, 0.80f, 0.68f});
    for (int y = hy - hh - 14; y < hy - hh; y++)
        for (int x = hx - 4; x < hx + hw + 4; x++)
            if (abs(x - (hx + hw / 2)) < (y - (hy - hh - 14)) * 1.35f + 2) put(im, x, y, (rgb){0.62f, 0.18f, 0.12f});
    for (int y = hy - 14; y < hy; y++)
        for (int x = hx + 13; x < hx + 21; x++) put(im, x, y, (rgb){0.30f, 0.18f, 0.10f});
    for (int y = hy - 18; y < hy - 11; y++)
        for (int x = hx + 4; x < hx + 10; x++) put(im, x, y, (rgb){0.95f, 0.86f, 0.45f});
    /* trees: trunks and round crowns */
    const int trees[][3] = {{70, 10, 15}, {150, 4, 12}, {212, 8, 17}, {300, 12, 13}, {345, 6, 16}};
    for (size_t k = 0; k < sizeof trees / sizeof *trees; k++) {
        int tx = trees[k][0], ty = horizon - trees[k][1], r = trees[k][2];
        for (int y = ty - r; y < ty + 2; y++)
            for (int x = tx - 2; x <= tx + 2; x++) put(im, x, y, (rgb){0.28f, 0.17f, 0.08f});
        for (int y = ty - 3 * r; y < ty - r / 2; y++)
            for (int x = tx - r; x <= tx + r; x++) {
                float d = hypotf((float)(x - tx), (float)(y - (ty - 2 * r)) * 1.1f);
                if (d < r) put(im, x, y, mix((rgb){0.10f, 0.34f, 0.12f}, (rgb){0.30f, 0.56f, 0.20f}, noise2(x * 0.4f, y * 0.4f, 9)));
            }
    }
    /* the lake: a rippled, darkened reflection */
    for (int y = horizon; y < H; y++)
        for (int x = 0; x < W; x++) {
            float depth = (float)(y - horizon) / (H - horizon);
            int sx = x + (int)lroundf(2.5f * sinf(y * 0.9f + x * 0.05f) * (0.3f + depth));
            int sy = 2 * horizon - y - 1;
            rgb c = mix(get(im, sx, sy), (rgb){0.05f, 0.18f, 0.32f}, 0.35f + 0.4f * depth);
            put(im, x, y, c);
        }
}

static const rgb palette[] = {
    {0.05f, 0.10f, 0.35f}, {0.10f, 0.25f, 0.62f}, {0.22f, 0.45f, 0.80f}, {0.55f, 0.72f, 0.92f},
    {0.98f, 0.85f, 0.25f}, {0.96f, 0.58f, 0.12f}, {0.92f, 0.94f, 0.88f},
};

/* The flow direction at (x, y): the curl of a sum of seeded swirls. */
static void flow(float x, float y, float *dx, float *dy)
{
    float gx = 0, gy = 0;
    for (int k = 0; k < 6; k++) {
        float cx = 320 * nst_rng_uniform(77, 2, (uint64_t)k), cy = 320 * nst_rng_uniform(77, 3, (uint64_t)k);
        float s = (k & 1) ? 1.f : -1.f, r2 = (x - cx) * (x - cx) + (y - cy) * (y - cy);
        float w = s * expf(-r2 / (2 * 70.f * 70.f));
        gx += -(y - cy) * w;
        gy += (x - cx) * w;
    }
    gx += 0.35f * 40.f * sinf(y * 0.03f);
    gy += 0.35f * 40.f * cosf(x * 0.025f);
    float n = hypotf(gx, gy) + 1e-6f;
    *dx = gx / n;
    *dy = gy / n;
}

static void draw_style(nst_image *im)
{
    const int W = im->w, H = im->h;
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) put(im, x, y, mix(palette[0], palette[1], (float)y / H));
    /* ~2600 strokes, each a thick polyline traced along the flow, dark rim then colour */
    for (uint64_t s = 0; s < 2600; s++) {
        float x = W * nst_rng_uniform(31, 0, s), y = H * nst_rng_uniform(31, 1, s);
        float band = noise2(x * 0.012f, y * 0.012f, 41) + 0.35f * nst_rng_uniform(31, 2, s);
        int ci = (int)(band * 7.0f) % 7;
        rgb c = palette[ci];
        float len = 10 + 22 * nst_rng_uniform(31, 3, s), rad = 1.6f + 2.2f * nst_rng_uniform(31, 4, s);
        for (int pass = 0; pass < 2; pass++) {
            float px = x, py = y, r = pass == 0 ? rad + 1.0f : rad;
            rgb col = pass == 0 ? mix(c, (rgb){0.02f, 0.03f, 0.08f}, 0.7f) : c;
            for (float t = 0; t < len; t += 0.7f) {
                float dx, dy;
                flow(px, py, &dx, &dy);
                px += 0.7f * dx;
                py += 0.7f * dy;
                float shade = 0.85f + 0.3f * t / len;
                for (int oy = -(int)r - 1; oy <= (int)r + 1; oy++)
                    for (int ox = -(int)r - 1; ox <= (int)r + 1; ox++)
                        if (ox * ox + oy * oy <= r * r)
                            put(im, (int)px + ox, (int)py + oy, pass ? mix(col, (rgb){1, 1, 1}, 0.25f * (shade - 0.85f)) : col);
            }
        }
    }
}

/* style2: a mosaic: irregular tiles (the cells around 140 seeded points) in reds, greens and
 * ochre, each tile a little mottled, set in dark grout where two cells meet. A second style for
 * the masks demo, as unlike the first as a texture gets. */
static const rgb tiles2[] = {{0.62f, 0.10f, 0.08f}, {0.80f, 0.36f, 0.18f}, {0.30f, 0.45f, 0.14f},
                             {0.12f, 0.30f, 0.16f}, {0.86f, 0.68f, 0.26f}, {0.90f, 0.85f, 0.70f}};
static void draw_style2(nst_image *im)
{
    enum { N = 140 };
    float px[N], py[N];
    for (int k = 0; k < N; k++) px[k] = im->w * nst_rng_uniform(53, 0, (uint64_t)k), py[k] = im->h * nst_rng_uniform(53, 1, (uint64_t)k);
    for (int y = 0; y < im->h; y++)
        for (int x = 0; x < im->w; x++) {
            float d1 = 1e30f, d2 = 1e30f;
            int near = 0;
            for (int k = 0; k < N; k++) {
                float d = (x - px[k]) * (x - px[k]) + (y - py[k]) * (y - py[k]);
                if (d < d1) d2 = d1, d1 = d, near = k;
                else if (d < d2) d2 = d;
            }
            rgb c = tiles2[nst_rng_bits(59, 0, (uint64_t)near) % (sizeof tiles2 / sizeof tiles2[0])];
            c = mix(c, (rgb){1, 1, 1}, 0.18f * noise2(x * 0.15f, y * 0.15f, 61));
            float edge = sqrtf(d2) - sqrtf(d1); /* twice the distance to the cells' border */
            put(im, x, y, mix((rgb){0.08f, 0.07f, 0.06f}, c, smooth(2.0f, 3.5f, edge)));
        }
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    char path[4096];
    nst_image content, style, style2;
    if (nst_image_alloc(&content, 384, 256) != NST_OK || nst_image_alloc(&style, 320, 320) != NST_OK ||
        nst_image_alloc(&style2, 320, 320) != NST_OK) {
        fprintf(stderr, "draw_demo_images: %s\n", nst_fail_message());
        return 1;
    }
    draw_content(&content);
    draw_style(&style);
    draw_style2(&style2);
    snprintf(path, sizeof path, "%s/content.png", argv[1]);
    nst_status s = nst_image_write(path, &content, 8, 1, NULL);
    snprintf(path, sizeof path, "%s/style.png", argv[1]);
    if (s == NST_OK) s = nst_image_write(path, &style, 8, 1, NULL);
    snprintf(path, sizeof path, "%s/style2.png", argv[1]);
    if (s == NST_OK) s = nst_image_write(path, &style2, 8, 1, NULL);
    if (s != NST_OK) {
        fprintf(stderr, "draw_demo_images: %s\n", nst_fail_message());
        return 1;
    }
    printf("wrote %s/content.png (384x256), %s/style.png and %s/style2.png (320x320)\n", argv[1], argv[1], argv[1]);
    nst_image_free(&content);
    nst_image_free(&style);
    nst_image_free(&style2);
    return 0;
}

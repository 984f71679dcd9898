/* kernels/cuda/reduce_cuda.cu: the loss terms that reduce (content MSE, masked or not, total
 * variation, sums of squares, dot products) and the optimiser's element ops (Adam, axpby).
 * Reductions sum in double: each thread over a grid stride, each block by a fixed tree, the
 * blocks' partials by one more block in index order; the launch shape depends on the element
 * count only, so a result repeats exactly from run to run. The loss sums stay on the device
 * (kernels/backend.h); only the dot products (L-BFGS) come back to the host. */
#include <math.h>

#include "cuda_impl.h"
#include "../xsum_core.h" /* after cuda_impl.h: xsum.h's functions keep their C linkage */
#include "reduce_kernels.cuh" /* (the kernels; tests/test_cuda_emu.cpp runs them on the CPU) */

extern "C" {
#include "../../util/plant.h"
}

/* NSTBATCH_PLANT=race: two kernels with a shared-memory hazard (a warp reads what the other wrote,
 * no barrier between), launched once, named after the first and the last of the names
 * tests/test_gpu_render.sh filters racecheck to, so that a filter that checks none of our kernels
 * cannot pass as clean. Never launched otherwise. */
__device__ double planted_sink[64];
__global__ void k_gram_sums_planted_race(void)
{
    __shared__ double sh[64];
    sh[threadIdx.x] = threadIdx.x;
    planted_sink[threadIdx.x] = sh[threadIdx.x ^ 32]; /* the hazard */
}
__global__ void k_finish_planted_race(void) /* (its own values: no write of what the first left there) */
{
    __shared__ double sh[64];
    sh[threadIdx.x] = -(double)threadIdx.x - 1;
    planted_sink[threadIdx.x] += sh[threadIdx.x ^ 32]; /* the hazard */
}

static nst_status plant_race(cuda_impl *im)
{
    static int done;
    if (done || !nst_planted("race")) return NST_OK;
    done = 1;
    k_gram_sums_planted_race<<<1, 64, 0, im->stream>>>();
    k_finish_planted_race<<<1, 64, 0, im->stream>>>();
    LAUNCH_TRY("the planted race");
    return NST_OK;
}

static unsigned red_blocks(size_t n)
{
    unsigned b = cuda_blocks(n, RED_THREADS);
    return b > RED_BLOCKS ? RED_BLOCKS : b;
}

nst_status cuda_reduce_on_device(nst_backend *be, unsigned blocks, double *out, nst_xsum *acc, double div)
{
    cuda_impl *im = cuda_of(be);
    NST_TRY(plant_race(im));
    k_finish<<<1, RED_THREADS, 0, im->stream>>>(im->red, blocks, out, acc, div);
    LAUNCH_TRY("reduce (the partial sums' total)");
    return NST_OK;
}

nst_status cuda_reduce_to_host(nst_backend *be, unsigned blocks, double *out)
{
    cuda_impl *im = cuda_of(be);
    NST_TRY(cuda_reduce_on_device(be, blocks, NULL, NULL, 1.0));
    CUDA_TRY(cudaMemcpyAsync(im->red_host, im->red + RED_BLOCKS, sizeof(double), cudaMemcpyDeviceToHost, im->stream));
    NST_TRY(cuda_wait(be, 1));
    *out = *im->red_host;
    return NST_OK;
}

static region region_of(const nst_tensor *t, nst_rect r) { return region{r.x, r.y, r.w, t->w, t->c}; }

nst_status cuda_sumsq(nst_backend *be, const nst_tensor *t, nst_rect own, nst_xsum *out)
{
    NST_TRY(cuda_check(t, "sumsq"));
    NST_TRY(cuda_check_region(t, own, "sumsq"));
    size_t n = (size_t)nst_rect_area(own) * t->c;
    if (!n) return NST_OK;
    cuda_impl *im = cuda_of(be);
    unsigned b = red_blocks(n);
    region g = region_of(t, own);
#define SS(T) (k_sumsq<T><<<b, RED_THREADS, 0, im->stream>>>((const T *)t->data, g, n, im->red), 0)
    CUDA_DISPATCH(t->dt, SS);
#undef SS
    LAUNCH_TRY("sumsq");
    float s = cuda_act_scale(im, t->dt); /* the tile's double, added exactly (not tile-exact: see backend.h) */
    return cuda_reduce_on_device(be, b, NULL, out, (double)s * s);
}

nst_status cuda_mse(nst_backend *be, const nst_tensor *f, const nst_tensor *p, nst_rect own, nst_rect seed, const nst_tensor *mask,
                    float scale, nst_xsum *sumsq, nst_tensor *df)
{
    NST_TRY(cuda_check(f, "mse"));
    NST_TRY(cuda_check(p, "mse"));
    NST_TRY(cuda_check_region(f, own, "mse"));
    NST_TRY(nst_tensor_check_mask(f, mask, "mse"));
    if (mask) NST_TRY(cuda_check(mask, "mse"));
    if (p->h != f->h || p->w != f->w || p->c != f->c || p->dt != f->dt) return nst_fail(NST_ERUNTIME, "mse: target shape differs");
    cuda_impl *im = cuda_of(be);
    const float *w = mask ? (const float *)mask->data : NULL;
    size_t n = (size_t)nst_rect_area(own) * f->c;
    if (n) {
        unsigned b = red_blocks(n);
        region g = region_of(f, own);
#define MSE(T) (k_mse<T><<<b, RED_THREADS, 0, im->stream>>>((const T *)f->data, (const T *)p->data, w, g, n, im->red), 0)
        CUDA_DISPATCH(f->dt, MSE);
#undef MSE
        LAUNCH_TRY("mse");
        float s = cuda_act_scale(im, f->dt);
        NST_TRY(cuda_reduce_on_device(be, b, NULL, sumsq, (double)s * s));
    }
    if (!df) return NST_OK;
    NST_TRY(cuda_check(df, "mse"));
    NST_TRY(cuda_check_region(f, seed, "mse"));
    size_t m = (size_t)nst_rect_area(seed) * f->c;
    if (!m) return NST_OK;
    region g = region_of(f, seed);
    /* stored f - p carries the feature scale, as the stored gradient does: scale is unchanged */
#define MG(T)                                                                                                             \
    (k_mse_grad<T><<<cuda_blocks(m, 256), 256, 0, im->stream>>>((const T *)f->data, (const T *)p->data, w, g, m, scale, \
                                                                (T *)df->data),                                      \
     0)
    CUDA_DISPATCH(f->dt, MG);
#undef MG
    LAUNCH_TRY("mse");
    return NST_OK;
}

nst_status cuda_tv(nst_backend *be, const nst_tensor *img, nst_rect own, nst_rect seed, float scale, nst_xsum *sum, nst_tensor *dimg)
{
    NST_TRY(cuda_check(img, "tv"));
    NST_TRY(cuda_check_region(img, own, "tv"));
    if (img->dt != NST_F32) return nst_fail(NST_ERUNTIME, "tv: fp32 images only");
    cuda_impl *im = cuda_of(be);
    size_t n = (size_t)nst_rect_area(own) * img->c;
    if (n) {
        unsigned b = red_blocks(n);
        k_tv<<<b, RED_THREADS, 0, im->stream>>>((const float *)img->data, img->w, img->h, img->c, region_of(img, own), n, im->red);
        LAUNCH_TRY("tv");
        NST_TRY(cuda_reduce_on_device(be, b, NULL, sum, 1.0));
    }
    if (!dimg) return NST_OK;
    NST_TRY(cuda_check(dimg, "tv"));
    NST_TRY(cuda_check_region(img, seed, "tv"));
    size_t m = (size_t)nst_rect_area(seed) * img->c;
    if (!m) return NST_OK;
    k_tv_grad<<<cuda_blocks(m, 256), 256, 0, im->stream>>>((const float *)img->data, img->w, img->h, img->c, region_of(img, seed), m,
                                                           scale, (float *)dimg->data);
    LAUNCH_TRY("tv");
    return NST_OK;
}

nst_status cuda_dot(nst_backend *be, const float *a, const float *b, size_t n, double *out)
{
    *out = 0;
    if (!n) return NST_OK;
    cuda_impl *im = cuda_of(be);
    unsigned blocks = red_blocks(n);
    k_dot<<<blocks, RED_THREADS, 0, im->stream>>>(a, b, n, im->red);
    LAUNCH_TRY("dot");
    return cuda_reduce_to_host(be, blocks, out);
}

nst_status cuda_axpby(nst_backend *be, float *y, const float *x, size_t n, float a, float b)
{
    if (!n) return NST_OK;
    k_axpby<<<cuda_blocks(n, 256), 256, 0, cuda_of(be)->stream>>>(y, x, n, a, b);
    LAUNCH_TRY("axpby");
    return NST_OK;
}

nst_status cuda_box_hold(nst_backend *be, float *v, const float *x, const float *g, size_t n)
{
    if (!n) return NST_OK;
    k_box_hold<<<cuda_blocks(n, 256), 256, 0, cuda_of(be)->stream>>>(v, x, g, n);
    LAUNCH_TRY("box_hold");
    return NST_OK;
}

nst_status cuda_box_step(nst_backend *be, float *x, float *d, size_t n, float t)
{
    if (!n) return NST_OK;
    k_box_step<<<cuda_blocks(n, 256), 256, 0, cuda_of(be)->stream>>>(x, d, n, t);
    LAUNCH_TRY("box_step");
    return NST_OK;
}

nst_status cuda_adam(nst_backend *be, float *x, const float *g, float *m, float *v, size_t n, const nst_adam_params *p,
                     const nst_adam_step *s)
{
    if (!n) return NST_OK;
    float step = 0.f, rbc2 = 0.f; /* from s on the device where given */
    if (!s) {
        const double bc1 = 1.0 - pow(p->beta1, (double)p->t), bc2 = 1.0 - pow(p->beta2, (double)p->t);
        step = (float)(p->lr / bc1), rbc2 = (float)(1.0 / sqrt(bc2));
    }
    k_adam<<<cuda_blocks(n, 256), 256, 0, cuda_of(be)->stream>>>(x, g, m, v, n, p->beta1, p->beta2, p->eps, step, rbc2, p->clamp, s);
    LAUNCH_TRY("adam");
    return NST_OK;
}

nst_status cuda_adam_tick(nst_backend *be, const nst_adam_params *p, nst_adam_step *s)
{
    k_adam_tick<<<1, 1, 0, cuda_of(be)->stream>>>(s, p->lr, p->beta1, p->beta2);
    LAUNCH_TRY("adam_tick");
    return NST_OK;
}

/* nst/report/first_gradient.c: run.first_gradient (see first_gradient.h). */
#include "first_gradient.h"

#include <stdio.h>
#include <string.h>

#include "../../mpi/comm.h"
#include "../../util/log.h"
#include "../../util/mem.h"

void nst_first_gradient_header(nst_gradient_file *f, int W, int H, const nst_loss_spec *spec, const nst_backend *be,
                               const nst_loss_terms *t)
{
    memset(f, 0, sizeof *f);
    f->w = W, f->h = H;
    snprintf(f->precision, sizeof f->precision, "%s", nst_precision_name(be->precision));
    f->depth = spec->deepest >= 0 ? nst_vgg_layer_at(spec->deepest)->conv + 1 : 0;
    f->total = t->total, f->content = t->content, f->style = t->style, f->tv = t->tv, f->temporal = t->temporal;
}

void nst_first_gradient_place(float *whole, int W, nst_rect core, const float *px)
{
    for (int y = 0; y < core.h; y++)
        memcpy(whole + ((size_t)(core.y + y) * W + core.x) * 3, px + (size_t)y * core.w * 3, (size_t)core.w * 3 * sizeof(float));
}

static int local_index(const nst_layout *L, int t)
{
    for (int i = 0; i < L->nlocal; i++)
        if (L->local[i] == t) return i;
    return -1;
}

/* Every tile's core to rank 0, in tile order (each owner sends its own in that order too, so no
 * rank waits on a message that is queued behind one rank 0 has not asked for yet). */
static nst_status gather(const nst_layout *L, float *const *cores, float *whole, float *buf, int W)
{
    const int me = nst_comm_rank();
    nst_status s = NST_OK;
    for (int t = 0; s == NST_OK && t < L->grid.ntiles; t++) {
        nst_rect core = nst_grid_core(&L->grid, t);
        size_t bytes = (size_t)nst_rect_area(core) * 3 * sizeof(float);
        int owner = L->owner[t], li = local_index(L, t);
        if (me == 0 && owner == 0) nst_first_gradient_place(whole, W, core, cores[li]);
        else if (me == 0) {
            s = nst_comm_recv(buf, bytes, owner);
            if (s == NST_OK) nst_first_gradient_place(whole, W, core, buf);
        } else if (owner == me)
            s = nst_comm_send(cores[li], bytes, 0);
    }
    return s;
}

nst_status nst_first_gradient_write(const char *path, const nst_layout *L, float *const *cores, const nst_gradient_file *header)
{
    const int root = nst_comm_rank() == 0;
    const int W = header->w, H = header->h;
    size_t largest = 0;
    for (int t = 0; t < L->grid.ntiles; t++) {
        size_t a = (size_t)nst_rect_area(nst_grid_core(&L->grid, t)) * 3;
        if (a > largest) largest = a;
    }
    float *whole = root ? nst_alloc_array((size_t)W * H * 3, sizeof(float), "the first gradient") : NULL;
    float *buf = root ? nst_alloc_array(largest, sizeof(float), "a tile's first gradient") : NULL;
    nst_status s = nst_comm_agree(!root || (whole && buf) ? NST_OK : NST_ENOMEM);
    if (s == NST_OK) s = nst_comm_agree(gather(L, cores, whole, buf, W));
    if (s == NST_OK && root) {
        nst_gradient_file f = *header;
        f.g = whole;
        s = nst_gradient_file_write(path, &f);
        if (s == NST_OK) nst_info("run.first_gradient: the first iteration's loss terms and image gradient written to %s\n", path);
    }
    nst_free(whole);
    nst_free(buf);
    return nst_comm_agree(s);
}

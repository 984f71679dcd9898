/* nst/output/output_content.c: the content image at the output size as a second Deep Zoom pyramid
 * (NAME_content.dzi, output.dzi_content), so the viewer can compare the two at any zoom. It is read
 * by region over the render's last layout, as the render read it, and written by the same pipeline
 * as the image, so no rank holds more of it than its own tiles. */
#include <string.h>

#include "../../util/mem.h"
#include "../../mpi/comm.h"
#include "../inputs/inputs.h"
#include "output.h"

nst_status nst_output_content_dzi(const nst_config *cfg, const nst_output_spec *o, const nst_layout *L, int W, int H, int content_random,
                                  nst_output_stats *st)
{
    const nst_grid *g = &L->grid;
    memset(st, 0, sizeof *st);
    nst_rect *rects = nst_alloc_array((size_t)g->ntiles + 1, sizeof(nst_rect), "content cores");
    float **content = nst_calloc(sizeof(float *) * ((size_t)L->nlocal + 1), "content cores");
    nst_status s = nst_comm_agree(rects && content ? NST_OK : NST_ENOMEM);
    nst_source *src = NULL;
    if (s == NST_OK) {
        for (int t = 0; t < g->ntiles; t++) rects[t] = nst_grid_core(g, t);
        s = nst_read_rects(cfg, NST_K_content_path, cfg->content_path, &src, content_random, W, H, rects, L->owner, g->ntiles, content, NULL, NULL);
    }
    if (src) nst_source_close(src);
    nst_output_spec *c = s == NST_OK ? nst_alloc(sizeof *c, "the content's output spec") : NULL; /* (large: its paths) */
    if (s == NST_OK && !c) s = NST_ENOMEM;
    s = nst_comm_agree(s);
    if (s == NST_OK) {
        *c = *o;
        memset(c->want, 0, sizeof c->want);
        c->want[NST_OUT_DZI] = 1;
        memcpy(c->path[NST_OUT_DZI], o->dzi_content, sizeof c->path[NST_OUT_DZI]);
        memcpy(c->dzi_files, o->dzi_content_files, sizeof c->dzi_files);
        c->preview_path[0] = 0;
        c->bits = 8;
        s = nst_output_write(c, L, content, W, H, NULL, st); /* frees the cores */
    } else {
        for (int i = 0; content && i < L->nlocal; i++) nst_free(content[i]);
    }
    nst_free(c);
    nst_free(content);
    nst_free(rects);
    return s;
}

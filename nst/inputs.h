/* nst/inputs.h: the content, initial and style images at the working resolution, where they are
 * needed, without any rank holding a gigapixel input.
 *
 * Rank 0 opens the content first (its header gives the output size) and reads and resizes the
 * style image, which it alone needs (style targets). Once the layout is known, every rank needs
 * the windows of its tiles: from a TIFF, each rank opens the file itself and resamples each
 * window from the source pixels under it (io/resample.h: streaming, by region); from a PNG or
 * JPEG (decoded whole, once, by rank 0) rank 0 resamples every window and sends it to its owner.
 * Either way a window's pixels are the same as the whole image resized would have there.
 */
#ifndef NST_INPUTS_H
#define NST_INPUTS_H

#include "../io/config.h"
#include "../io/image.h"
#include "../io/source.h"
#include "layout.h"
#include "spec.h"

typedef struct {
    int W, H;            /* the output (working) size */
    nst_image style;     /* rank 0: the style image at its working size (empty without style layers) */
    nst_source *content; /* rank 0 from nst_inputs_open; every rank during the windows when random access */
    int content_random;  /* the content is a TIFF, read by region on every rank */
    int init_random;
    double seconds;      /* this rank's time reading and resampling */
    double read_seconds; /* of which decoding source pixels (nst_source_read) */
    unsigned long long read_pixels; /* source pixels decoded (halos and filter footprints included) */
} nst_inputs;

/* Rank 0: open the content and size the output; every rank learns the size. Collective. */
nst_status nst_inputs_open(const nst_config *cfg, const nst_loss_spec *spec, nst_inputs *in);
/* Rank 0: read and resize the style image (when there is an optimisation with style layers);
 * every rank learns its size (0 x 0 without). Collective. */
nst_status nst_inputs_style(const nst_config *cfg, const nst_loss_spec *spec, nst_inputs *in, int *style_w, int *style_h);
/* Every rank: the content windows of its local tiles (content[i], allocated here), and the
 * initial image's when optim.init = image (init[i], else untouched). Collective. */
nst_status nst_inputs_windows(const nst_config *cfg, nst_inputs *in, const nst_layout *L, float **content, float **init);
void nst_inputs_close(nst_inputs *in);

/* Output size from output.width/height/size and the content's aspect. */
void nst_output_size(const nst_config *cfg, int cw, int ch, int *w, int *h);

#endif

/* nst/inputs/inputs.h: input images at a working resolution, where they are needed, without any rank
 * holding a gigapixel input.
 *
 * Rank 0 opens the content first (its header gives the output size). Once a layout is known,
 * every rank needs the windows of its tiles, at that level's size: from a TIFF, each rank opens
 * the file itself (once, kept for every level) and resamples each window from the source pixels
 * under it (io/image/resample.h: streaming, by region); from a PNG or JPEG (decoded whole, once, by rank
 * 0) rank 0 resamples every window and sends it to its owner. Either way a window's pixels are the
 * same as the whole image resized would have there. The style images go the same way
 * (nst_read_rects) for their tiles.
 */
#ifndef NST_INPUTS_H
#define NST_INPUTS_H

#include "../../io/config/config.h"
#include "../../io/image/image.h"
#include "../../io/image/source.h"
#include "../plan/layout.h"
#include "../model/spec.h"

typedef struct {
    int W, H;            /* the output size */
    int AW, AH;          /* its aspect before rounding (nst_output_aspect): what pyramid.levels = auto sizes from */
    nst_source *content; /* rank 0 from nst_inputs_open; every rank once it reads windows, when random access */
    nst_source *init;    /* optim.init_path, the same way */
    int content_random;  /* the content is a TIFF, read by region on every rank */
    int init_random;
    double seconds;      /* this rank's time reading and resampling */
    double read_seconds; /* of which decoding source pixels (nst_source_read) */
    unsigned long long read_pixels; /* source pixels decoded (halos and filter footprints included) */
} nst_inputs;

/* Rank 0: open the content and size the output; every rank learns the size. Collective. */
nst_status nst_inputs_open(const nst_config *cfg, const nst_loss_spec *spec, nst_inputs *in);
/* Every rank: the content windows of its local tiles at W x H (content[i], allocated here), and
 * the initial image's (optim.init_path) when init != NULL. Collective. */
nst_status nst_inputs_windows(const nst_config *cfg, nst_inputs *in, const nst_layout *L, int W, int H, float **content,
                              float **init);
void nst_inputs_close(nst_inputs *in);

/* Rectangles rects[0..n) of the image at `path` resized to W x H, each to the rank owner[i]
 * (out[j] for this rank's j-th rectangle, allocated here). *src: the open source, or NULL to open
 * it here (every rank when random, else rank 0; the caller closes it). key names the config key in
 * messages. Decoding time and pixels are added to *read_seconds, *read_pixels (may be NULL).
 * Collective. */
nst_status nst_read_rects(const nst_config *cfg, int key, const char *path, nst_source **src, int random, int W, int H,
                          const nst_rect *rects, const int *owner, int n, float **out, double *read_seconds,
                          unsigned long long *read_pixels);
/* Open an input for the config key (limits from input.*); errors name the key. */
nst_status nst_open_input(const nst_config *cfg, int key, const char *path, nst_source **src);

/* Broadcast *obj (bytes) from rank 0 after agreeing on s; its n open sources src[] (inside obj)
 * stay rank 0's, NULL on the others. Collective. */
nst_status nst_bcast_keeping_sources(nst_status s, void *obj, size_t bytes, nst_source **src, int n);

/* The size whose ratio is the output's aspect before rounding: the content's (cw x ch), where the
 * output's size follows it, else output.width x output.height. Levels sized from it (not from the
 * rounded output) are the same for a preview and a print of one picture: 1024x683 and 4096x2731 of
 * a 3:2 picture would otherwise give 512x342 and 512x341. */
void nst_output_aspect(const nst_config *cfg, int cw, int ch, int *aw, int *ah);
/* Output size from output.width/height/size and the content's aspect. */
void nst_output_size(const nst_config *cfg, int cw, int ch, int *w, int *h);

#endif

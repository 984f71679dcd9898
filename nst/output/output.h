/* nst/output/output.h: the rendered image out of the ranks and into files, without any rank holding it.
 *
 * The render leaves each rank with the cores of its tiles (floats). They are quantised (8 or 16
 * bits) and moved to the owners of the output tiles (tiler/pyramid.h): every output tile is then
 * whole on one rank. Level by level: each format gets the level's tiles (TIFF: compressed in
 * parallel by their owners, written by rank 0 with raw tile writes; Deep Zoom: the same, one file
 * per tile; HDF5: collective writes of whole chunks by their owners; PNG: rows streamed through
 * rank 0, one row of tiles at a time),
 * then every owner halves its tiles into the next level's pieces and those move to their owners.
 * The preview is the smallest level at least output.preview pixels long, gathered to rank 0 and
 * resized. Every file is written under a temporary name; all are renamed into place together once
 * every one of them is complete, or all are removed.
 *
 * Memory per rank: the float cores (12 B/px owned) until they are quantised, then at most two
 * levels of its output tiles (3 or 6 B/px owned, times 1.25), the exchange buffers (at most the
 * same again), and per format a fixed number of tiles or one row of tiles in flight.
 */
#ifndef NST_OUTPUT_H
#define NST_OUTPUT_H

#include "../../io/config/config.h"
#include "../../io/image/h5_image.h"
#include "../../io/image/tiff_write.h"
#include "../plan/layout.h"

enum { NST_OUT_TIFF, NST_OUT_HDF5, NST_OUT_PNG, NST_OUT_JPEG, NST_OUT_DZI, NST_OUT_NFORMATS };

typedef struct {
    int want[NST_OUT_NFORMATS];           /* the formats asked for */
    char path[NST_OUT_NFORMATS][4096];    /* each format's file */
    char preview_path[4096];              /* "" when output.preview = 0 */
    int bits, overwrite, pyramid, preview_side, png_level;
    double dpi; /* output.dpi: TIFF, PNG and JPEG resolution, 0 none */
    int jpeg_quality;                     /* the JPEG output's output.quality (also Deep Zoom's JPEG tiles) */
    char dzi_files[4096];                 /* the Deep Zoom output's tile folder (NAME_files) */
    char dzi_content[4096];               /* NAME_content.dzi with output.dzi_content, else "" */
    char dzi_content_files[4096];
    int dzi_png;                          /* output.dzi_tiles = png */
    long long save_every;                 /* output.save_every: the preview every N iterations while rendering (0: not) */
    const char *bigtiff;                  /* auto | yes | no */
    nst_tiff_params tiff;
    nst_h5_params h5;
} nst_output_spec;

/* From the config: formats, paths (output.path's extension replaced by each format's), codec
 * parameters; errors name the config key and the valid values. Also checks that every file may
 * be written (directory exists, no file in the way unless output.overwrite). */
nst_status nst_output_spec_parse(const nst_config *cfg, nst_output_spec *o);
/* Checks that need the output size (BigTIFF refused for an image that needs it). */
nst_status nst_output_spec_check_size(const nst_config *cfg, const nst_output_spec *o, int W, int H);
/* "out.tif, out.h5" (the files, for messages). */
void nst_output_describe(const nst_output_spec *o, char *buf, size_t cap);

typedef struct {
    double seconds;                        /* the whole output phase */
    double exchange_seconds;               /* moving pixels to tile owners, halving levels */
    double format_seconds[NST_OUT_NFORMATS]; /* compressing + writing, per format (this rank's wall time in it) */
    double io_seconds[NST_OUT_NFORMATS];   /* rank 0's (HDF5: this rank's) time in the writing calls alone */
    unsigned long long bytes[NST_OUT_NFORMATS]; /* file sizes (rank 0) */
    int levels;                            /* levels written */
    size_t peak_bytes;                     /* this rank's largest output buffers at one time */
} nst_output_stats;

/* Write the W x H image whose cores are cores[i] for the layout's local tiles (float RGB; freed
 * here, as soon as they are quantised). description: the resolved config, stored in the files.
 * Collective. */
nst_status nst_output_write(const nst_output_spec *o, const nst_layout *L, float **cores, int W, int H,
                            const char *description, nst_output_stats *st);

/* With output.dzi_content: the content at W x H over the layout's cores, as the Deep Zoom pyramid
 * o->dzi_content (8-bit, no preview). After nst_output_write. Collective. */
nst_status nst_output_content_dzi(const nst_config *cfg, const nst_output_spec *o, const nst_layout *L, int W, int H, int content_random,
                                  nst_output_stats *st);

#endif

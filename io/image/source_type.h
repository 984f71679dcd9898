/* io/image/source_type.h: what an nst_source is: an open image that hands out rectangles of its
 * pixels through its read and close functions. source.c makes the sources held in memory and
 * opens files by their format; a format module that reads by region (tiff_read.c) makes its own.
 * Both include this header and not each other's, so that source.c can open a TIFF source
 * without tiff_read.c including source.h back. */
#ifndef NST_SOURCE_TYPE_H
#define NST_SOURCE_TYPE_H

#include "../../tiler/rect.h"
#include "pixels.h"

typedef struct nst_source nst_source;

struct nst_source {
    char name[4096];     /* for messages: the path */
    int w, h;
    int band;            /* rows that decode together (a tile row, a strip): reads aligned to it decode nothing twice */
    int random_access;   /* 1: regions are decoded from the file on demand; 0: the image is in memory */
    nst_image_info info; /* what the file holds */
    double read_seconds; /* time spent in nst_source_read (decoding), for the throughput report */
    unsigned long long read_pixels;
    nst_status (*read)(nst_source *s, nst_rect r, float *out);
    void (*close)(nst_source *s);
    void *impl;
};

#endif

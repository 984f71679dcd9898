/* io/image/h5_image.c: the parallel HDF5 image writer (see h5_image.h). */
#include "h5_image.h"

#include <stdio.h>
#include <string.h>

#include "../../mpi/h5_mpio.h"
#include "../../util/mem.h"
#include "../h5_util.h"

struct nst_h5_image {
    hid_t file, dset, dxpl;
    nst_h5_params p;
    int nlevels, level, w, h;
    char path[4096];
};

static nst_status h5_error(const nst_h5_image *hi, const char *what)
{
    char why[200];
    return nst_fail(NST_ERUNTIME, "%s: HDF5 %s failed: %s", hi->path, what, nst_h5_reason(why));
}

nst_status nst_h5_image_create(const char *path, const nst_h5_params *p, int nlevels, const char *config, const char *version,
                               nst_h5_image **out)
{
    *out = NULL;
    nst_h5_quiet();
    nst_h5_image *hi = nst_calloc(sizeof *hi, "an HDF5 writer");
    if (!hi) return NST_ENOMEM;
    hi->p = *p;
    hi->nlevels = nlevels;
    hi->level = -1;
    hi->file = hi->dset = hi->dxpl = -1;
    snprintf(hi->path, sizeof hi->path, "%s", path);
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    nst_status s = fapl < 0 ? h5_error(hi, "H5Pcreate") : nst_comm_h5_fapl(fapl);
    if (s == NST_OK) {
        hi->file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
        if (hi->file < 0) s = h5_error(hi, "file creation");
    }
    if (fapl >= 0) H5Pclose(fapl);
    if (s == NST_OK) {
        hi->dxpl = H5Pcreate(H5P_DATASET_XFER);
        s = hi->dxpl < 0 ? h5_error(hi, "H5Pcreate") : nst_comm_h5_dxpl(hi->dxpl);
    }
    if (s == NST_OK && !(nst_h5_write_str_attr(hi->file, "nstbatch_version", version) &&
                         nst_h5_write_str_attr(hi->file, "nstbatch_config", config ? config : "") &&
                         nst_h5_write_int_attr(hi->file, "levels", nlevels)))
        s = h5_error(hi, "root attributes");
    if (s != NST_OK) {
        if (hi->dxpl >= 0) H5Pclose(hi->dxpl);
        if (hi->file >= 0) H5Fclose(hi->file);
        nst_free(hi);
        return s;
    }
    *out = hi;
    return NST_OK;
}

nst_status nst_h5_image_level(nst_h5_image *hi, int level, int w, int h)
{
    if (level != hi->level + 1 || level >= hi->nlevels || hi->dset >= 0)
        return nst_fail(NST_ERUNTIME, "%s: HDF5 level %d out of order", hi->path, level);
    hi->level = level;
    hi->w = w;
    hi->h = h;
    hsize_t dims[3] = {(hsize_t)h, (hsize_t)w, 3};
    hsize_t chunk[3] = {(hsize_t)(h < hi->p.tile ? h : hi->p.tile), (hsize_t)(w < hi->p.tile ? w : hi->p.tile), 3};
    hid_t space = H5Screate_simple(3, dims, NULL), dcpl = H5Pcreate(H5P_DATASET_CREATE);
    int ok = space >= 0 && dcpl >= 0 && H5Pset_chunk(dcpl, 3, chunk) >= 0 && H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER) >= 0 &&
             H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_INCR) >= 0;
    if (ok && hi->p.deflate > 0) ok = H5Pset_shuffle(dcpl) >= 0 && H5Pset_deflate(dcpl, (unsigned)hi->p.deflate) >= 0;
    char name[32];
    snprintf(name, sizeof name, "level%d", level);
    if (ok) {
        hi->dset = H5Dcreate2(hi->file, name, hi->p.bits == 16 ? H5T_STD_U16LE : H5T_STD_U8LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
        ok = hi->dset >= 0;
    }
    if (space >= 0) H5Sclose(space);
    if (dcpl >= 0) H5Pclose(dcpl);
    if (!ok) return h5_error(hi, "dataset creation");
    /* the HDF5 Image specification 1.2, and where the level sits in the pyramid */
    int maxv = hi->p.bits == 16 ? 65535 : 255;
    unsigned short range16[2] = {0, (unsigned short)maxv};
    unsigned char range8[2] = {0, (unsigned char)maxv};
    hsize_t two = 2;
    hid_t rs = H5Screate_simple(1, &two, NULL);
    hid_t ra = rs >= 0 ? H5Acreate2(hi->dset, "IMAGE_MINMAXRANGE", hi->p.bits == 16 ? H5T_STD_U16LE : H5T_STD_U8LE, rs, H5P_DEFAULT,
                                    H5P_DEFAULT)
                       : -1;
    ok = ra >= 0 && H5Awrite(ra, hi->p.bits == 16 ? H5T_NATIVE_USHORT : H5T_NATIVE_UCHAR, hi->p.bits == 16 ? (void *)range16 : (void *)range8) >= 0;
    if (ra >= 0) H5Aclose(ra);
    if (rs >= 0) H5Sclose(rs);
    ok = ok && nst_h5_write_str_attr(hi->dset, "CLASS", "IMAGE") && nst_h5_write_str_attr(hi->dset, "IMAGE_VERSION", "1.2") &&
         nst_h5_write_str_attr(hi->dset, "IMAGE_SUBCLASS", "IMAGE_TRUECOLOR") &&
         nst_h5_write_str_attr(hi->dset, "INTERLACE_MODE", "INTERLACE_PIXEL") && nst_h5_write_int_attr(hi->dset, "level", level) &&
         nst_h5_write_int_attr(hi->dset, "downsample", 1 << level);
    return ok ? NST_OK : h5_error(hi, "image attributes");
}

nst_status nst_h5_image_write_block(nst_h5_image *hi, int x, int y, int w, int h, const void *data)
{
    if (hi->dset < 0) return nst_fail(NST_ERUNTIME, "%s: HDF5 block written outside a level", hi->path);
    hid_t fs = H5Dget_space(hi->dset), ms = -1;
    int ok = fs >= 0;
    hsize_t start[3] = {(hsize_t)y, (hsize_t)x, 0}, count[3] = {(hsize_t)h, (hsize_t)w, 3};
    if (ok) ok = w > 0 ? H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL) >= 0 : H5Sselect_none(fs) >= 0;
    if (ok) {
        hsize_t mdims[3] = {w > 0 ? (hsize_t)h : 1, w > 0 ? (hsize_t)w : 1, 3};
        ms = H5Screate_simple(3, mdims, NULL);
        ok = ms >= 0 && (w > 0 || H5Sselect_none(ms) >= 0);
    }
    if (ok) ok = H5Dwrite(hi->dset, hi->p.bits == 16 ? H5T_NATIVE_USHORT : H5T_NATIVE_UCHAR, ms, fs, hi->dxpl, w > 0 ? data : NULL) >= 0;
    if (ms >= 0) H5Sclose(ms);
    if (fs >= 0) H5Sclose(fs);
    return ok ? NST_OK : h5_error(hi, "collective write");
}

nst_status nst_h5_image_end_level(nst_h5_image *hi)
{
    if (hi->dset < 0) return NST_OK;
    herr_t r = H5Dclose(hi->dset);
    hi->dset = -1;
    return r < 0 ? h5_error(hi, "dataset close") : NST_OK;
}

nst_status nst_h5_image_close(nst_h5_image *hi)
{
    nst_status s = NST_OK;
    if (hi->dset >= 0 && H5Dclose(hi->dset) < 0) s = h5_error(hi, "dataset close");
    if (hi->level != hi->nlevels - 1 && s == NST_OK)
        s = nst_fail(NST_ERUNTIME, "%s: HDF5 closed with level %d of %d", hi->path, hi->level, hi->nlevels);
    if (hi->dxpl >= 0) H5Pclose(hi->dxpl);
    if (H5Fclose(hi->file) < 0 && s == NST_OK) s = h5_error(hi, "file close");
    nst_free(hi);
    return s;
}

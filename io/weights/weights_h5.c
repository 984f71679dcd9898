/* io/weights/weights_h5.c: reading VGG-19 weights from HDF5 (Keras and nstbatch layouts) and writing the
 * nstbatch layout (see weights.h). HDF5 never prints its error stack; the innermost HDF5 message
 * is folded into our one-line error. Every hid_t is closed on every path. */
#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../../util/checked.h"
#include "../../util/mem.h"
#include "../atomic_file.h"
#include "../h5_util.h"
#include "weights.h"

#define NST_FORMAT_NAME "nstbatch-vgg19"

static const float caffe_mean_bgr[3] = {103.939f, 116.779f, 123.68f};

/* ---- HDF5 helpers ------------------------------------------------------------------------ */

static int link_exists(hid_t loc, const char *path)
{
    /* H5Lexists fails on a path whose intermediate component is missing: check each prefix. */
    char buf[256];
    if (strlen(path) >= sizeof buf) return 0;
    strcpy(buf, path);
    for (char *p = buf; ; p++) {
        if (*p == '/' || *p == 0) {
            char c = *p;
            *p = 0;
            if (H5Lexists(loc, buf, H5P_DEFAULT) <= 0) return 0;
            if (!c) return 1;
            *p = c;
        }
    }
}

static int read_float_attr(hid_t obj, const char *name, float *out, int n)
{
    if (H5Aexists(obj, name) <= 0) return 0;
    hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
    if (a < 0) return 0;
    hid_t sp = H5Aget_space(a);
    hssize_t np = H5Sget_simple_extent_npoints(sp);
    int ok = np == n && H5Aread(a, H5T_NATIVE_FLOAT, out) >= 0;
    H5Sclose(sp);
    H5Aclose(a);
    return ok;
}

/* Dimensions of a float dataset; returns rank, or -1 with a message. */
static int dataset_dims(hid_t d, hsize_t dims[4], const char *file, const char *what)
{
    hid_t t = H5Dget_type(d), sp = H5Dget_space(d);
    int rank = sp >= 0 ? H5Sget_simple_extent_ndims(sp) : -1;
    int is_float = t >= 0 && H5Tget_class(t) == H5T_FLOAT;
    if (rank >= 1 && rank <= 4) H5Sget_simple_extent_dims(sp, dims, NULL);
    if (t >= 0) H5Tclose(t);
    if (sp >= 0) H5Sclose(sp);
    if (!is_float) {
        nst_fail(NST_EINPUT, "%s: %s is not a floating-point dataset", file, what);
        return -1;
    }
    if (rank < 1 || rank > 4) {
        nst_fail(NST_EINPUT, "%s: %s has rank %d", file, what, rank);
        return -1;
    }
    return rank;
}

static nst_status read_floats(hid_t d, float *out, const char *file, const char *what)
{
    char why[200];
    if (H5Dread(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, out) < 0)
        return nst_fail(NST_EINPUT, "%s: cannot read %s (truncated or corrupt file?): %s", file, what, nst_h5_reason(why));
    return NST_OK;
}

/* ---- Keras layout ------------------------------------------------------------------------ */

typedef struct {
    char kernel[256], bias[256];
    int nkernel, nbias;
} keras_find;

static herr_t keras_visit(hid_t g, const char *name, const H5L_info_t *info, void *data)
{
    keras_find *kf = data;
    if (info->type != H5L_TYPE_HARD) return 0;
    hid_t d = H5Dopen2(g, name, H5P_DEFAULT);
    if (d < 0) {
        H5Eclear2(H5E_DEFAULT);
        return 0; /* a group */
    }
    hid_t sp = H5Dget_space(d);
    int rank = H5Sget_simple_extent_ndims(sp);
    H5Sclose(sp);
    H5Dclose(d);
    if (rank == 4 && kf->nkernel++ == 0) snprintf(kf->kernel, sizeof kf->kernel, "%s", name);
    if (rank == 1 && kf->nbias++ == 0) snprintf(kf->bias, sizeof kf->bias, "%s", name);
    return 0;
}

static nst_status keras_layer(hid_t root, int k, const char *file, nst_weights *w, int *present)
{
    const nst_vgg_layer *L = nst_vgg_layer_at(nst_vgg_conv_layer(k));
    char gname[32];
    /* conv3_1 -> block3_conv1 */
    snprintf(gname, sizeof gname, "block%c_conv%c", L->name[4], L->name[6]);
    *present = link_exists(root, gname);
    if (!*present) return NST_OK;
    hid_t g = H5Gopen2(root, gname, H5P_DEFAULT);
    if (g < 0) return nst_fail(NST_EINPUT, "%s: %s is not a group", file, gname);
    keras_find kf = {"", "", 0, 0};
    herr_t vr = H5Lvisit(g, H5_INDEX_NAME, H5_ITER_NATIVE, keras_visit, &kf);
    nst_status s = NST_OK;
    hid_t dk = -1, db = -1;
    hsize_t kd[4] = {0}, bd[4] = {0};
    if (vr < 0)
        s = nst_fail(NST_EINPUT, "%s: cannot list %s", file, gname);
    else if (kf.nkernel != 1 || kf.nbias != 1)
        s = nst_fail(NST_EINPUT,
                     "%s: %s should hold one 4-D kernel and one 1-D bias (found %d and %d); expected e.g. %s/%s_W_1:0 or %s/%s/kernel:0",
                     file, gname, kf.nkernel, kf.nbias, gname, gname, gname, gname);
    if (s == NST_OK) {
        dk = H5Dopen2(g, kf.kernel, H5P_DEFAULT);
        db = H5Dopen2(g, kf.bias, H5P_DEFAULT);
        char what[320];
        snprintf(what, sizeof what, "%s/%s", gname, kf.kernel);
        if (dk < 0 || db < 0 || dataset_dims(dk, kd, file, what) != 4 || dataset_dims(db, bd, file, "bias") != 1) {
            if (dk < 0 || db < 0) s = nst_fail(NST_EINPUT, "%s: cannot open the datasets of %s", file, gname);
            else s = NST_EINPUT;
        }
    }
    if (s == NST_OK) {
        /* HWIO: (3, 3, cin, cout) */
        if (kd[0] != 3 || kd[1] != 3 || kd[2] < 1 || kd[2] > NST_MAX_CHANNELS || kd[3] < 1 || kd[3] > NST_MAX_CHANNELS ||
            bd[0] != kd[3])
            s = nst_fail(NST_EINPUT, "%s: %s kernel has shape (%llu, %llu, %llu, %llu) and bias (%llu); expected (3, 3, in, out) and (out)",
                         file, gname, (unsigned long long)kd[0], (unsigned long long)kd[1], (unsigned long long)kd[2],
                         (unsigned long long)kd[3], (unsigned long long)bd[0]);
    }
    float *hwio = NULL;
    if (s == NST_OK) s = nst_weights_alloc_layer(w, k, (int)kd[2], (int)kd[3]);
    if (s == NST_OK) {
        hwio = nst_alloc_array(kd[2] * kd[3], 9 * sizeof(float), "a Keras kernel");
        if (!hwio) s = NST_ENOMEM;
    }
    if (s == NST_OK) s = read_floats(dk, hwio, file, gname);
    if (s == NST_OK) s = read_floats(db, w->conv[k].b, file, gname);
    if (s == NST_OK) {
        int ci = (int)kd[2], co = (int)kd[3];
        for (int o = 0; o < co; o++)
            for (int i = 0; i < ci; i++)
                for (int t = 0; t < 9; t++) w->conv[k].w[((size_t)o * ci + i) * 9 + t] = hwio[((size_t)t * ci + i) * co + o];
    }
    nst_free(hwio);
    if (dk >= 0) H5Dclose(dk);
    if (db >= 0) H5Dclose(db);
    H5Gclose(g);
    return s;
}

/* ---- nstbatch layout --------------------------------------------------------------------- */

static nst_status project_layer(hid_t root, int k, const char *file, nst_weights *w, int *present)
{
    const char *lname = nst_vgg_layer_at(nst_vgg_conv_layer(k))->name;
    char wp[64], bp[64];
    snprintf(wp, sizeof wp, "%s/weight", lname);
    snprintf(bp, sizeof bp, "%s/bias", lname);
    *present = link_exists(root, lname);
    if (!*present) return NST_OK;
    if (!link_exists(root, wp) || !link_exists(root, bp))
        return nst_fail(NST_EINPUT, "%s: %s lacks its weight or bias dataset", file, lname);
    hid_t dw = H5Dopen2(root, wp, H5P_DEFAULT), db = H5Dopen2(root, bp, H5P_DEFAULT);
    hsize_t wd[4] = {0}, bd[4] = {0};
    nst_status s = NST_OK;
    if (dw < 0 || db < 0)
        s = nst_fail(NST_EINPUT, "%s: cannot open the datasets of %s", file, lname);
    else if (dataset_dims(dw, wd, file, wp) != 4 || dataset_dims(db, bd, file, bp) != 1)
        s = NST_EINPUT;
    else if (wd[2] != 3 || wd[3] != 3 || wd[0] < 1 || wd[0] > NST_MAX_CHANNELS || wd[1] < 1 || wd[1] > NST_MAX_CHANNELS ||
             bd[0] != wd[0])
        s = nst_fail(NST_EINPUT, "%s: %s weight has shape (%llu, %llu, %llu, %llu) and bias (%llu); expected (out, in, 3, 3) and (out)",
                     file, lname, (unsigned long long)wd[0], (unsigned long long)wd[1], (unsigned long long)wd[2],
                     (unsigned long long)wd[3], (unsigned long long)bd[0]);
    if (s == NST_OK) s = nst_weights_alloc_layer(w, k, (int)wd[1], (int)wd[0]);
    if (s == NST_OK) s = read_floats(dw, w->conv[k].w, file, wp);
    if (s == NST_OK) s = read_floats(db, w->conv[k].b, file, bp);
    if (dw >= 0) H5Dclose(dw);
    if (db >= 0) H5Dclose(db);
    return s;
}

static nst_status project_preprocessing(hid_t root, const char *file, nst_weights *w)
{
    char order[16];
    if (!nst_h5_read_str_attr(root, "input_order", order, sizeof order) || (strcmp(order, "RGB") && strcmp(order, "BGR")))
        return nst_fail(NST_EINPUT, "%s: attribute input_order must be \"RGB\" or \"BGR\"", file);
    w->bgr = strcmp(order, "BGR") == 0;
    if (!read_float_attr(root, "input_scale", &w->scale, 1) || !read_float_attr(root, "input_mean", w->mean, 3) ||
        !read_float_attr(root, "input_std", w->std, 3))
        return nst_fail(NST_EINPUT, "%s: attributes input_scale (1 value), input_mean and input_std (3 values each) are required",
                        file);
    return NST_OK;
}

nst_status nst_weights_read(const char *path, nst_weights *w)
{
    char why[200], fmt[64];
    memset(w, 0, sizeof *w);
    nst_h5_quiet();
    htri_t is = H5Fis_hdf5(path);
    if (is <= 0) {
        FILE *f = fopen(path, "rb");
        if (!f) return nst_fail(NST_EINPUT, "%s: cannot open weights file", path);
        fclose(f);
        return nst_fail(NST_EINPUT, "%s: not an HDF5 file (truncated, or not a weights file)", path);
    }
    hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (file < 0) return nst_fail(NST_EINPUT, "%s: cannot open as HDF5 (truncated or corrupt?): %s", path, nst_h5_reason(why));

    nst_status s = NST_OK;
    hid_t root = -1;
    int project = nst_h5_read_str_attr(file, "format", fmt, sizeof fmt) && strcmp(fmt, NST_FORMAT_NAME) == 0;
    if (project) {
        root = H5Gopen2(file, "/", H5P_DEFAULT);
        s = project_preprocessing(root, path, w);
        char desc[200] = "";
        nst_h5_read_str_attr(root, "description", desc, sizeof desc);
        snprintf(w->description, sizeof w->description, "%s", desc[0] ? desc : "nstbatch-layout VGG-19");
    } else {
        const char *base = link_exists(file, "block1_conv1") ? "/" : link_exists(file, "model_weights/block1_conv1") ? "/model_weights" : NULL;
        if (!base) {
            s = nst_fail(NST_EINPUT,
                         "%s: not a VGG-19 weights file: no block1_conv1 group (Keras) and no format = \"%s\" attribute (nstbatch layout)",
                         path, NST_FORMAT_NAME);
        } else {
            root = H5Gopen2(file, base, H5P_DEFAULT);
            w->bgr = 1;
            w->scale = 255.f;
            for (int c = 0; c < 3; c++) {
                w->mean[c] = caffe_mean_bgr[c];
                w->std[c] = 1.f;
            }
            snprintf(w->description, sizeof w->description, "Keras VGG-19 (caffe preprocessing)");
        }
    }
    for (int k = 0; s == NST_OK && k < NST_VGG_NCONV; k++) {
        int present = 0;
        s = project ? project_layer(root, k, path, w, &present) : keras_layer(root, k, path, w, &present);
        if (s != NST_OK || !present) break;
        w->nconv = k + 1;
    }
    /* Layers must form a prefix: nothing may follow the first missing one. */
    for (int k = w->nconv + 1; s == NST_OK && k < NST_VGG_NCONV; k++) {
        const nst_vgg_layer *L = nst_vgg_layer_at(nst_vgg_conv_layer(k));
        char kname[32];
        snprintf(kname, sizeof kname, "block%c_conv%c", L->name[4], L->name[6]);
        if (link_exists(root, project ? L->name : kname)) {
            const nst_vgg_layer *M = nst_vgg_layer_at(nst_vgg_conv_layer(w->nconv));
            s = nst_fail(NST_EINPUT, "%s: layer %s is missing (later layers such as %s are present)", path, M->name, L->name);
        }
    }
    if (s == NST_OK && w->nconv == 0)
        s = nst_fail(NST_EINPUT, "%s: no conv1_1 layer found", path);
    if (s == NST_OK) s = nst_weights_validate(w, path);
    if (root >= 0) H5Gclose(root);
    H5Fclose(file);
    if (s != NST_OK) nst_weights_free(w);
    return s;
}

/* ---- writing the nstbatch layout --------------------------------------------------------- */

static int write_dataset(hid_t loc, const char *name, const float *v, int rank, const hsize_t *dims)
{
    hid_t sp = H5Screate_simple(rank, dims, NULL);
    hid_t d = H5Dcreate2(loc, name, H5T_IEEE_F32LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    int ok = d >= 0 && H5Dwrite(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) >= 0;
    if (d >= 0) H5Dclose(d);
    H5Sclose(sp);
    return ok;
}

nst_status nst_weights_write(const char *path, const nst_weights *w, int overwrite)
{
    char why[200];
    nst_atomic_file af;
    nst_h5_quiet();
    NST_TRY(nst_atomic_begin(&af, path, overwrite));
    hid_t f = H5Fcreate(af.tmp, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    if (f < 0) {
        nst_atomic_abort(&af);
        return nst_fail(NST_ERUNTIME, "%s: cannot create HDF5 file: %s", path, nst_h5_reason(why));
    }
    int ok = nst_h5_write_str_attr(f, "format", NST_FORMAT_NAME) && nst_h5_write_int_attr(f, "format_version", 1) &&
             nst_h5_write_str_attr(f, "description", w->description) && nst_h5_write_str_attr(f, "input_order", w->bgr ? "BGR" : "RGB") &&
             nst_h5_write_float_attr(f, "input_scale", &w->scale, 1) && nst_h5_write_float_attr(f, "input_mean", w->mean, 3) &&
             nst_h5_write_float_attr(f, "input_std", w->std, 3);
    for (int k = 0; ok && k < w->nconv; k++) {
        const nst_conv_weights *c = &w->conv[k];
        hid_t g = H5Gcreate2(f, nst_vgg_layer_at(nst_vgg_conv_layer(k))->name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        hsize_t wd[4] = {(hsize_t)c->cout, (hsize_t)c->cin, 3, 3}, bd[1] = {(hsize_t)c->cout};
        ok = g >= 0 && write_dataset(g, "weight", c->w, 4, wd) && write_dataset(g, "bias", c->b, 1, bd);
        if (g >= 0) H5Gclose(g);
    }
    if (H5Fclose(f) < 0) ok = 0;
    if (!ok) {
        nst_atomic_abort(&af);
        return nst_fail(NST_ERUNTIME, "%s: cannot write HDF5 weights: %s", path, nst_h5_reason(why));
    }
    return nst_atomic_commit(&af);
}

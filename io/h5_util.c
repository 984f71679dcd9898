/* io/h5_util.c: HDF5 error folding and attribute writing (see h5_util.h). */
#include "h5_util.h"

#include <stdio.h>
#include <string.h>

static herr_t last_error_cb(unsigned n, const H5E_error2_t *e, void *data)
{
    (void)n;
    if (e->desc && *e->desc) snprintf(data, 200, "%s", e->desc);
    return 0;
}

const char *nst_h5_reason(char *buf)
{
    buf[0] = 0;
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, last_error_cb, buf);
    H5Eclear2(H5E_DEFAULT);
    return buf;
}

void nst_h5_quiet(void) { H5Eset_auto2(H5E_DEFAULT, NULL, NULL); }

int nst_h5_write_str_attr(hid_t obj, const char *name, const char *value)
{
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, strlen(value) + 1);
    H5Tset_strpad(t, H5T_STR_NULLTERM);
    hid_t sp = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(obj, name, t, sp, H5P_DEFAULT, H5P_DEFAULT);
    int ok = a >= 0 && H5Awrite(a, t, value) >= 0;
    if (a >= 0) H5Aclose(a);
    H5Sclose(sp);
    H5Tclose(t);
    return ok;
}

int nst_h5_write_float_attr(hid_t obj, const char *name, const float *v, hsize_t n)
{
    hid_t sp = H5Screate_simple(1, &n, NULL);
    hid_t a = H5Acreate2(obj, name, H5T_IEEE_F32LE, sp, H5P_DEFAULT, H5P_DEFAULT);
    int ok = a >= 0 && H5Awrite(a, H5T_NATIVE_FLOAT, v) >= 0;
    if (a >= 0) H5Aclose(a);
    H5Sclose(sp);
    return ok;
}

int nst_h5_write_int_attr(hid_t obj, const char *name, int v)
{
    hid_t sp = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(obj, name, H5T_STD_I32LE, sp, H5P_DEFAULT, H5P_DEFAULT);
    int ok = a >= 0 && H5Awrite(a, H5T_NATIVE_INT, &v) >= 0;
    if (a >= 0) H5Aclose(a);
    H5Sclose(sp);
    return ok;
}

/* A string attribute, fixed- or variable-length; 0 if absent or not a string. */
int nst_h5_read_str_attr(hid_t obj, const char *name, char *out, size_t cap)
{
    out[0] = 0;
    if (H5Aexists(obj, name) <= 0) return 0;
    hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
    if (a < 0) return 0;
    hid_t t = H5Aget_type(a);
    int ok = 0;
    if (t >= 0 && H5Tget_class(t) == H5T_STRING) {
        hid_t mt = H5Tcopy(H5T_C_S1);
        if (H5Tis_variable_str(t) > 0) {
            char *s = NULL;
            H5Tset_size(mt, H5T_VARIABLE);
            if (H5Aread(a, mt, &s) >= 0 && s) {
                snprintf(out, cap, "%s", s);
                ok = 1;
            }
            if (s) H5free_memory(s);
        } else {
            size_t n = H5Tget_size(t);
            if (n > 0 && n < cap) {
                H5Tset_size(mt, n + 1);
                H5Tset_strpad(mt, H5T_STR_NULLTERM);
                ok = H5Aread(a, mt, out) >= 0;
            }
        }
        H5Tclose(mt);
    }
    if (t >= 0) H5Tclose(t);
    H5Aclose(a);
    return ok;
}

/* A float attribute of exactly n values; 0 if absent or of another size. */

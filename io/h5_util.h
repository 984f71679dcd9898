/* io/h5_util.h: what every HDF5 module here shares: silence HDF5's own error printing, fold its
 * innermost message into our one-line errors, write small attributes. */
#ifndef NST_H5_UTIL_H
#define NST_H5_UTIL_H

#include <hdf5.h>

/* Stop HDF5 printing its error stack (we report through our error channel). */
void nst_h5_quiet(void);
/* The innermost message of the current HDF5 error stack into buf (200 bytes), "" if none; clears it. */
const char *nst_h5_reason(char *buf);
/* Scalar attributes; fixed-length, null-terminated strings (what HDFView and H5IM expect). 1 on success. */
int nst_h5_write_str_attr(hid_t obj, const char *name, const char *value);
int nst_h5_write_int_attr(hid_t obj, const char *name, int v);
int nst_h5_write_float_attr(hid_t obj, const char *name, const float *v, hsize_t n);
/* A string attribute, fixed- or variable-length, into out (cap bytes); 0 if absent or not a string. */
int nst_h5_read_str_attr(hid_t obj, const char *name, char *out, size_t cap);

#endif

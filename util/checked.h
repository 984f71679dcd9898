/* util/checked.h: overflow-checked size arithmetic for everything sized from untrusted input
 * (image headers, weight shapes). Returns 0 on overflow, 1 on success. */
#ifndef NST_CHECKED_H
#define NST_CHECKED_H

#include <stddef.h>
#include <stdint.h>

static inline int nst_mul_size(size_t a, size_t b, size_t *out)
{
    return !__builtin_mul_overflow(a, b, out);
}

static inline int nst_mul3_size(size_t a, size_t b, size_t c, size_t *out)
{
    size_t t;
    return nst_mul_size(a, b, &t) && nst_mul_size(t, c, out);
}

static inline int nst_add_size(size_t a, size_t b, size_t *out)
{
    return !__builtin_add_overflow(a, b, out);
}

#endif

/* io/gradient_file.c: the first-gradient file (see gradient_file.h). x86-64 and every target
 * nstbatch builds for are little-endian, so the floats are written as they are in memory. */
#define _POSIX_C_SOURCE 200809L
#include "gradient_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../util/mem.h"
#include "atomic_file.h"

#define MAGIC "nstbatch first-gradient 1"

nst_status nst_gradient_file_write(const char *path, const nst_gradient_file *f)
{
    nst_atomic_file af;
    NST_TRY(nst_atomic_begin(&af, path, 1));
    FILE *out = fopen(af.tmp, "wb");
    size_t n = (size_t)f->w * f->h * 3;
    int ok = out && fprintf(out, MAGIC "\nsize %d %d\nprecision %s\ndepth %d\nloss %.17g %.17g %.17g %.17g %.17g\ndata\n", f->w, f->h,
                            f->precision, f->depth, f->total, f->content, f->style, f->tv, f->temporal) > 0 &&
             fwrite(f->g, sizeof(float), n, out) == n;
    if (out && fclose(out) != 0) ok = 0;
    if (!ok) {
        int e = errno;
        nst_atomic_abort(&af);
        return nst_fail(NST_ERUNTIME, "run.first_gradient %s: write error: %s", path, strerror(e));
    }
    return nst_atomic_commit(&af);
}

/* The header's lines, in order, up to and with "data\n". */
static int read_header(FILE *in, nst_gradient_file *f)
{
    char magic[64];
    if (!fgets(magic, sizeof magic, in) || strcmp(magic, MAGIC "\n") != 0) return 0;
    return fscanf(in, "size %d %d\nprecision %15s\ndepth %d\nloss %lg %lg %lg %lg %lg\ndata", &f->w, &f->h, f->precision, &f->depth,
                  &f->total, &f->content, &f->style, &f->tv, &f->temporal) == 9 &&
           fgetc(in) == '\n' && f->w > 0 && f->h > 0 && f->w <= 1 << 20 && f->h <= 1 << 20;
}

nst_status nst_gradient_file_read(const char *path, nst_gradient_file *f)
{
    memset(f, 0, sizeof *f);
    FILE *in = fopen(path, "rb");
    if (!in) return nst_fail(NST_EINPUT, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    nst_status s = NST_OK;
    if (fstat(fileno(in), &st) != 0 || !read_header(in, f)) {
        s = nst_fail(NST_EINPUT, "%s: not a first-gradient file (written by run.first_gradient)", path);
    } else {
        size_t n = (size_t)f->w * f->h * 3;
        long at = ftell(in);
        if (at < 0 || (unsigned long long)st.st_size - (unsigned long long)at != (unsigned long long)n * sizeof(float))
            s = nst_fail(NST_EINPUT, "%s: %dx%d gradient needs %zu bytes of data, the file has %lld", path, f->w, f->h, n * sizeof(float),
                         (long long)st.st_size - at);
        else if (!(f->g = nst_alloc_array(n, sizeof(float), "a first gradient")))
            s = NST_ENOMEM;
        else if (fread(f->g, sizeof(float), n, in) != n)
            s = nst_fail(NST_EINPUT, "%s: short read", path);
    }
    fclose(in);
    if (s != NST_OK) nst_gradient_file_free(f);
    return s;
}

void nst_gradient_file_free(nst_gradient_file *f)
{
    nst_free(f->g);
    f->g = NULL;
}

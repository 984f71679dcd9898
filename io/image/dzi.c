/* io/image/dzi.c: Deep Zoom descriptors and tiles (see dzi.h). */
#include "dzi.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "jpeg_write.h"
#include "png_write.h"

const char *nst_dzi_ext(const nst_dzi_codec *c) { return c->png ? "png" : "jpg"; }

size_t nst_dzi_descriptor(char *buf, size_t cap, const nst_dzi_codec *c, int tile, int W, int H)
{
    int n = snprintf(buf, cap,
                     "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                     "<Image xmlns=\"http://schemas.microsoft.com/deepzoom/2008\" Format=\"%s\" Overlap=\"0\" TileSize=\"%d\">\n"
                     "  <Size Width=\"%d\" Height=\"%d\"/>\n"
                     "</Image>\n",
                     nst_dzi_ext(c), tile, W, H);
    return n > 0 && (size_t)n < cap ? (size_t)n : 0;
}

nst_status nst_dzi_encode(const nst_dzi_codec *c, const void *samples, int w, int h, int sample_bytes, unsigned char *scratch,
                          unsigned char **buf, size_t *len)
{
    const unsigned char *px = samples;
    if (sample_bytes == 2) { /* v * 255 / 65535, to nearest */
        const uint16_t *v = samples;
        size_t n = (size_t)w * h * 3;
        for (size_t i = 0; i < n; i++) scratch[i] = (unsigned char)(((uint32_t)v[i] * 255u + 32767u) / 65535u);
        px = scratch;
    }
    return c->png ? nst_png_encode_mem(px, w, h, 8, c->png_level, buf, len) : nst_jpeg_encode_mem(px, w, h, c->quality, buf, len);
}

nst_status nst_write_whole(const char *path, const void *bytes, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return nst_fail(NST_ERUNTIME, "%s: cannot create: %s", path, strerror(errno));
    size_t done = 0;
    while (done < len) {
        ssize_t n = write(fd, (const unsigned char *)bytes + done, len - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            int e = n < 0 ? errno : ENOSPC;
            close(fd);
            return nst_fail(NST_ERUNTIME, "%s: write error: %s", path, strerror(e));
        }
        done += (size_t)n;
    }
    if (close(fd) != 0) return nst_fail(NST_ERUNTIME, "%s: write error: %s", path, strerror(errno));
    return NST_OK;
}

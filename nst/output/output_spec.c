/* nst/output/output_spec.c: the output keys of the config turned into formats, files and codec
 * parameters, checked before anything is rendered (see output.h). */
#include "output.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../../io/atomic_file.h"
#include "../../io/image/jpeg_write.h"
#include "../../util/text.h"

static const char *const format_names[NST_OUT_NFORMATS] = {"tiff", "hdf5", "png", "jpeg", "dzi"};
static const char *const format_ext[NST_OUT_NFORMATS] = {".tif", ".h5", ".png", ".jpg", ".dzi"};

/* The format output.path's extension names, or -1. */
static int format_of_extension(const char *ext)
{
    if (!ext) return -1;
    if (strcasecmp(ext, ".tif") == 0 || strcasecmp(ext, ".tiff") == 0) return NST_OUT_TIFF;
    if (strcasecmp(ext, ".h5") == 0 || strcasecmp(ext, ".hdf5") == 0) return NST_OUT_HDF5;
    if (strcasecmp(ext, ".png") == 0) return NST_OUT_PNG;
    if (strcasecmp(ext, ".jpg") == 0 || strcasecmp(ext, ".jpeg") == 0) return NST_OUT_JPEG;
    if (strcasecmp(ext, ".dzi") == 0) return NST_OUT_DZI;
    return -1;
}

static const char *extension(const char *path)
{
    const char *dot = strrchr(path, '.'), *slash = strrchr(path, '/');
    return dot && (!slash || dot > slash) && dot[1] ? dot : NULL;
}

/* The formats: output.format, or the extension (ext_format, -1 when unknown). */
static nst_status parse_formats(const nst_config *cfg, nst_output_spec *o, int ext_format, const char *where)
{
    if (cfg->output_format[0]) {
        char list[NST_CFG_STR_MAX];
        snprintf(list, sizeof list, "%s", cfg->output_format);
        for (char *save = NULL, *tok = strtok_r(list, ", \t", &save); tok; tok = strtok_r(NULL, ", \t", &save)) {
            int f = -1;
            for (int i = 0; i < NST_OUT_NFORMATS; i++)
                if (strcasecmp(tok, format_names[i]) == 0) f = i;
            if (strcasecmp(tok, "tif") == 0 || strcasecmp(tok, "bigtiff") == 0) f = NST_OUT_TIFF;
            if (strcasecmp(tok, "h5") == 0) f = NST_OUT_HDF5;
            if (strcasecmp(tok, "jpg") == 0) f = NST_OUT_JPEG;
            if (strcasecmp(tok, "deepzoom") == 0) f = NST_OUT_DZI;
            if (f < 0)
                return nst_fail(NST_EINPUT, "%s: output.format: unknown format '%s'; valid: tiff, hdf5, png, jpeg, dzi (comma-separated)",
                                nst_config_origin(cfg, NST_K_output_format), tok);
            o->want[f] = 1;
        }
        int any = 0;
        for (int f = 0; f < NST_OUT_NFORMATS; f++) any |= o->want[f];
        if (!any)
            return nst_fail(NST_EINPUT, "%s: output.format is empty; valid: tiff, hdf5, png, jpeg, dzi (comma-separated)",
                            nst_config_origin(cfg, NST_K_output_format));
    } else if (ext_format >= 0) {
        o->want[ext_format] = 1;
    } else {
        return nst_fail(NST_EINPUT, "%s: output.path = '%s': unknown format; valid extensions: .tif, .tiff, .h5, .hdf5, .png, .jpg, .jpeg, .dzi (or set output.format)",
                        where, cfg->output_path);
    }

    return NST_OK;
}

/* The files (with output.format, a known extension is replaced by each format's own), the
 * preview's name and output.save_every. */
static nst_status name_files(const nst_config *cfg, nst_output_spec *o, const char *ext, int ext_format, const char *where)
{
    size_t stem = strlen(cfg->output_path);
    if (ext_format >= 0) stem -= strlen(ext);
    for (int f = 0; f < NST_OUT_NFORMATS; f++) {
        if (!o->want[f]) continue;
        if (!cfg->output_format[0] || f == ext_format)
            snprintf(o->path[f], sizeof o->path[f], "%s", cfg->output_path);
        else if (stem + 5 >= sizeof o->path[f])
            return nst_fail(NST_EINPUT, "%s: output.path is too long", where);
        else
            snprintf(o->path[f], sizeof o->path[f], "%.*s%s", (int)stem, cfg->output_path, format_ext[f]);
    }
    o->preview_side = (int)cfg->output_preview;
    if (o->preview_side > 0) {
        if (stem + 13 >= sizeof o->preview_path) return nst_fail(NST_EINPUT, "%s: output.path is too long", where);
        int jpeg_only = o->want[NST_OUT_JPEG] && !o->want[NST_OUT_TIFF] && !o->want[NST_OUT_HDF5] && !o->want[NST_OUT_PNG] && !o->want[NST_OUT_DZI];
        snprintf(o->preview_path, sizeof o->preview_path, "%.*s.preview.%s", (int)stem, cfg->output_path, jpeg_only ? "jpg" : "png");
    }
    if (o->want[NST_OUT_DZI]) { /* NAME.dzi's tiles: NAME_files */
        size_t n = strlen(o->path[NST_OUT_DZI]) - 4;
        if (n + 7 >= sizeof o->dzi_files) return nst_fail(NST_EINPUT, "%s: output.path is too long", where);
        snprintf(o->dzi_files, sizeof o->dzi_files, "%.*s_files", (int)n, o->path[NST_OUT_DZI]);
        if (cfg->output_dzi_content) {
            if (n + 20 >= sizeof o->dzi_content) return nst_fail(NST_EINPUT, "%s: output.path is too long", where);
            snprintf(o->dzi_content, sizeof o->dzi_content, "%.*s_content.dzi", (int)n, o->path[NST_OUT_DZI]);
            snprintf(o->dzi_content_files, sizeof o->dzi_content_files, "%.*s_content_files", (int)n, o->path[NST_OUT_DZI]);
        }
    }
    o->save_every = cfg->output_save_every;
    if (o->save_every > 0 && !o->preview_path[0])
        return nst_fail(NST_EINPUT, "%s: output.save_every = %lld writes the preview, but output.preview = 0 turns it off: set output.preview "
                        "to its long side (e.g. 1024) or output.save_every = 0", nst_config_origin(cfg, NST_K_output_save_every), o->save_every);

    return NST_OK;
}

/* The codecs' parameters, and the keys that would do nothing or contradict a format. */
static nst_status codec_params(const nst_config *cfg, nst_output_spec *o)
{
    o->bits = atoi(cfg->output_bits);
    o->overwrite = cfg->output_overwrite;
    o->pyramid = cfg->output_pyramid;
    o->bigtiff = cfg->output_bigtiff;
    int tile = (int)cfg->output_tile_size, level = (int)cfg->output_level;
    if (tile % 16)
        return nst_fail(NST_EINPUT, "%s: output.tile_size = %d: must be a multiple of 16 (e.g. 256, 512, 1024)",
                        nst_config_origin(cfg, NST_K_output_tile_size), tile);
    o->dpi = cfg->output_dpi;
    o->jpeg_quality = (int)cfg->output_quality;
    o->dzi_png = strcmp(cfg->output_dzi_tiles, "png") == 0;
    if (o->dzi_png && !o->want[NST_OUT_DZI])
        return nst_fail(NST_EINPUT, "%s: output.dzi_tiles = png applies to a Deep Zoom output only, and this run writes none: remove the key, "
                        "or add dzi to output.format", nst_config_origin(cfg, NST_K_output_dzi_tiles));
    if (o->want[NST_OUT_JPEG] && o->bits != 8)
        return nst_fail(NST_EINPUT, "%s: output.bits = %d, but a JPEG holds 8 bits per sample: set output.bits = 8, or write the JPEG "
                        "in a run of its own", nst_config_origin(cfg, NST_K_output_bits), o->bits);
    o->tiff = (nst_tiff_params){o->bits, (nst_tiff_codec)nst_tiff_codec_parse(cfg->output_compression), level,
                                (int)cfg->output_quality, tile, o->dpi};
    if (strcmp(cfg->output_compression, "deflate") != 0 && !o->want[NST_OUT_TIFF]) { /* a key that would do nothing */
        static const char *const shown[NST_OUT_NFORMATS] = {"TIFF", "HDF5", "PNG", "JPEG", "Deep Zoom"};
        char files[NST_OUT_NFORMATS * 8] = "";
        for (int f = 0; f < NST_OUT_NFORMATS; f++)
            if (o->want[f]) snprintf(files + strlen(files), sizeof files - strlen(files), "%s%s", files[0] ? ", " : "", shown[f]);
        return nst_fail(NST_EINPUT, "%s: output.compression = %s applies to TIFF outputs only, and this run writes none (%s): "
                        "remove the key, or add tiff to output.format%s", nst_config_origin(cfg, NST_K_output_compression),
                        cfg->output_compression, files, o->want[NST_OUT_JPEG] ? " (a JPEG output takes output.quality alone)" : "");
    }
    if (o->want[NST_OUT_TIFF]) {
        nst_status s = nst_tiff_params_check(&o->tiff);
        if (s != NST_OK) {
            int key = o->tiff.codec == NST_TC_JPEG && o->bits != 8 ? NST_K_output_bits
                      : (o->tiff.codec == NST_TC_DEFLATE || o->tiff.codec == NST_TC_ZSTD) && level ? NST_K_output_level
                                                                                                  : NST_K_output_compression;
            return nst_fail_context(s, "%s: %s", nst_config_origin(cfg, key), nst_config_keys(NULL)[key].full);
        }
    }
    int deflate_used = (o->want[NST_OUT_TIFF] && o->tiff.codec == NST_TC_DEFLATE) || o->want[NST_OUT_PNG] || (o->want[NST_OUT_DZI] && o->dzi_png) ||
                       (o->want[NST_OUT_HDF5] && strcmp(cfg->output_hdf5_compression, "deflate") == 0);
    int zstd_used = o->want[NST_OUT_TIFF] && o->tiff.codec == NST_TC_ZSTD;
    if (level > 9 && deflate_used && !zstd_used)
        return nst_fail(NST_EINPUT, "%s: output.level = %d: deflate levels are 1 to 9 (0: 6)", nst_config_origin(cfg, NST_K_output_level),
                        level);
    if (level > 9 && deflate_used && zstd_used)
        return nst_fail(NST_EINPUT,
                        "%s: output.level = %d is a zstd level, but the %s output is deflate-compressed (levels 1 to 9): "
                        "write them in separate runs or choose a level up to 9",
                        nst_config_origin(cfg, NST_K_output_level), level, o->want[NST_OUT_PNG] ? "PNG" : "HDF5");
    int deflate_level = level > 0 && level <= 9 ? level : 6;
    o->png_level = deflate_level;
    o->h5 = (nst_h5_params){o->bits, strcmp(cfg->output_hdf5_compression, "deflate") == 0 ? deflate_level : 0, tile};

    return NST_OK;
}

/* Every file may be written (output.overwrite); the preview is always replaced. */
static nst_status check_targets(const nst_config *cfg, const nst_output_spec *o, const char *where)
{
    for (int f = 0; f < NST_OUT_NFORMATS; f++) {
        if (!o->want[f]) continue;
        nst_status s = nst_atomic_check_target(o->path[f], o->overwrite);
        if (s != NST_OK) return nst_fail_context(s, "%s: output.path", where);
    }
    if (o->want[NST_OUT_DZI]) {
        nst_status s = nst_atomic_dir_check_target(o->dzi_files, o->overwrite);
        if (s != NST_OK) return nst_fail_context(s, "%s: output.path (the Deep Zoom tiles)", where);
    }
    if (o->dzi_content[0]) {
        nst_status s = nst_atomic_check_target(o->dzi_content, o->overwrite);
        if (s == NST_OK) s = nst_atomic_dir_check_target(o->dzi_content_files, o->overwrite);
        if (s != NST_OK) return nst_fail_context(s, "%s: output.dzi_content", nst_config_origin(cfg, NST_K_output_dzi_content));
    }
    if (o->preview_path[0]) { /* the preview belongs to the outputs of its name: replaced with them, never refused */
        nst_status s = nst_atomic_check_target(o->preview_path, 1);
        if (s != NST_OK) return nst_fail_context(s, "%s: output.preview", nst_config_origin(cfg, NST_K_output_preview));
    }
    return NST_OK;
}

nst_status nst_output_spec_parse(const nst_config *cfg, nst_output_spec *o)
{
    memset(o, 0, sizeof *o);
    const char *where = nst_config_origin(cfg, NST_K_output_path);
    if (!cfg->output_path[0])
        return nst_fail(NST_EINPUT, "output.path is not set: give it in the config ([output] path = FILE) or with --set output.path=FILE");
    const char *ext = extension(cfg->output_path);
    int ext_format = format_of_extension(ext);
    NST_TRY(parse_formats(cfg, o, ext_format, where));
    NST_TRY(name_files(cfg, o, ext, ext_format, where));
    NST_TRY(codec_params(cfg, o));
    return check_targets(cfg, o, where);
}

nst_status nst_output_spec_check_size(const nst_config *cfg, const nst_output_spec *o, int W, int H)
{
    if (o->want[NST_OUT_TIFF] && strcmp(o->bigtiff, "no") == 0) {
        double raw = (double)W * H * 3 * (o->bits / 8) * (o->pyramid ? 4.0 / 3.0 : 1.0);
        if (raw > 3.9e9)
            return nst_fail(NST_EINPUT,
                            "%s: output.bigtiff = no, but the %dx%d output is %.1f GB uncompressed%s: a classic TIFF cannot "
                            "hold it safely; set output.bigtiff = auto or yes",
                            nst_config_origin(cfg, NST_K_output_bigtiff), W, H, raw / 1e9, o->pyramid ? " with its pyramid" : "");
    }
    if (o->want[NST_OUT_PNG] && ((double)W > 2147483647.0 || (double)H > 2147483647.0))
        return nst_fail(NST_EINPUT, "%s: a PNG cannot be %dx%d", nst_config_origin(cfg, NST_K_output_format), W, H);
    if (o->want[NST_OUT_JPEG] && (W > NST_JPEG_MAX_SIDE || H > NST_JPEG_MAX_SIDE))
        return nst_fail(NST_EINPUT, "%s: the output is %dx%d, but a JPEG side is at most %d px: write TIFF (output.format = tiff) "
                        "or a smaller output.size", nst_config_origin(cfg, NST_K_output_path), W, H, NST_JPEG_MAX_SIDE);
    return NST_OK;
}

void nst_output_describe(const nst_output_spec *o, char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = 0;
    for (int f = 0; f < NST_OUT_NFORMATS && n < cap; f++)
        if (o->want[f]) n += (size_t)snprintf(buf + n, cap - n, "%s%s", n ? ", " : "", o->path[f]);
}

#!/usr/bin/python3
"""tests/check_outputs.py: nstbatch's output files read back with readers we did not write.

  check_outputs.py formats STEM BITS TILE [COMPRESSION [PYRAMID]]
      STEM.tif (tifffile, and libvips for every level), STEM.h5 (h5py), STEM.png (Pillow), where
      present: the TIFF layout (tiles, compression, SubIFD levels with NewSubfileType = reduced),
      the HDF5 layout (chunks, shuffle + deflate, the HDF5 Image attributes as fixed-length
      strings, the config and version), every format holding the same pixels, and every reduced
      level equal to the 2 x 2 rounded means of the level above (computed here).
  check_outputs.py same STEM_A STEM_B [N]      every level (or the first N) of A's files equals B's
  check_outputs.py input INPUT STEM...         level 0 of each STEM equals the input image (0 iterations;
      the input decoded once)
  check_outputs.py psnr STEM_A STEM_B Q        A.tif's JPEG level 0 against B.tif: no worse than libvips' JPEG at Q
  check_outputs.py print STEM DPI              STEM.tif and STEM.png for print: the resolution (DPI, 0: none stored;
      each TIFF level in proportion), the TIFF's ICC profile read by LittleCMS (through Pillow) as sRGB,
      the PNG's sRGB chunk, libvips' reading of the resolution
  check_outputs.py jpeg STEM REF Q DPI        STEM.jpg: progressive, DPI, the sRGB profile, the config comment, PSNR
      against REF.png no worse than Pillow's libjpeg at quality Q, libvips reads it

Prints one "ok ..." or "FAIL ..." line per check; exits 1 if any failed.
"""
import os
import subprocess
import sys
import tempfile

import h5py
import numpy as np
import tifffile
from PIL import Image

failed = 0


def report(ok, what):
    global failed
    print(("  ok   " if ok else "  FAIL ") + what, flush=True)
    if not ok:
        failed += 1


def tiff_levels(path):
    """Every level's pixels, the first page and its SubIFD pages. tifffile decodes deflate and
    uncompressed tiles itself; for LZW, JPEG and zstd it needs imagecodecs, which Debian lacks:
    those levels are decoded by libvips instead."""
    with tifffile.TiffFile(path) as t:
        p = t.pages[0]
        subs = list(p.pages) if p.pages else []
        try:
            levels = [p.asarray()] + [s.asarray() for s in subs]
        except ValueError:
            levels = [vips_level(path, k, p.bitspersample) for k in range(1 + len(subs))]
        return levels, p, subs, t.is_bigtiff


def h5_levels(path):
    with h5py.File(path, "r") as f:
        n = int(f.attrs["levels"])
        return [f["level%d" % i][()] for i in range(n)]


def halve(a):
    """2 x 2 rounded means, fewer samples at an odd edge: (sum + n/2) // n in integers."""
    a = a.astype(np.int64)
    H, W, _ = a.shape
    pad = np.zeros((H + H % 2, W + W % 2, 3), np.int64)
    cnt = np.zeros((H + H % 2, W + W % 2, 1), np.int64)
    pad[:H, :W] = a
    cnt[:H, :W] = 1
    s = pad[0::2, 0::2] + pad[1::2, 0::2] + pad[0::2, 1::2] + pad[1::2, 1::2]
    n = cnt[0::2, 0::2] + cnt[1::2, 0::2] + cnt[0::2, 1::2] + cnt[1::2, 1::2]
    return (s + n // 2) // n


def vips_level(path, k, bits):
    """Level k of the TIFF as libvips decodes it (level 0 is the main image, k the (k-1)th SubIFD),
    handed over as an uncompressed TIFF (any bit depth, no codec needed to read it back)."""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "l.tif")
        src = path if k == 0 else "%s[subifd=%d]" % (path, k - 1)
        subprocess.run(["vips", "tiffsave", src, out, "--compression", "none"], check=True, capture_output=True)
        a = tifffile.imread(out)
        assert a.dtype == (np.uint16 if int(bits) == 16 else np.uint8), "libvips decoded %s as %s" % (src, a.dtype)
        return a


def cmd_formats(stem, bits, tile, compression="deflate", pyramid="1"):
    bits, tile, pyramid = int(bits), int(tile), int(pyramid)
    dtype = np.uint16 if bits == 16 else np.uint8
    have = {ext: os.path.exists(stem + ext) for ext in (".tif", ".h5", ".png")}
    ref = None
    if have[".tif"]:
        lv, p, subs, big = tiff_levels(stem + ".tif")
        ref = lv
        codes = {"deflate": 8, "lzw": 5, "jpeg": 7, "zstd": 50000, "none": 1}
        report(p.is_tiled and p.tilewidth == tile and p.tilelength == tile and all(s.tilewidth == tile for s in subs),
               "TIFF: %dx%d tiles on every level" % (tile, tile))
        report(int(p.compression) == codes[compression] and all(int(s.compression) == codes[compression] for s in subs),
               "TIFF: %s compression on every level" % compression)
        report(lv[0].dtype == dtype and lv[0].shape[2] == 3, "TIFF: RGB %d-bit" % bits)
        report(int(p.subfiletype) == 0 and all(int(s.subfiletype) == 1 for s in subs),
               "TIFF: %d reduced levels as SubIFDs with NewSubfileType = REDUCEDIMAGE" % len(subs))
        last = lv[-1]
        if pyramid:
            report(last.shape[0] <= tile and last.shape[1] <= tile and (len(lv) == 1 or max(lv[-2].shape[:2]) > tile),
                   "TIFF: the pyramid ends at the first level that fits one tile (%dx%d)" % (last.shape[1], last.shape[0]))
        else:
            report(len(lv) == 1, "TIFF: no reduced levels (output.pyramid = false)")
        desc = p.description or ""
        report("[output]" in desc and "nstbatch resolved configuration" in desc, "TIFF: ImageDescription holds the resolved config")
        exact = compression != "jpeg"
        for k in range(1, len(lv)):
            if exact:
                report(np.array_equal(halve(lv[k - 1]), lv[k]), "TIFF: level %d is the 2x2 rounded means of level %d" % (k, k - 1))
        vips_ok = all(np.array_equal(vips_level(stem + ".tif", k, bits), lv[k]) for k in range(len(lv)))
        report(vips_ok, "libvips decodes every level (%d) to the same pixels as tifffile" % len(lv))
    if have[".h5"]:
        hl = h5_levels(stem + ".h5")
        with h5py.File(stem + ".h5", "r") as f:
            d = f["level0"]
            attrs_ok = True
            for name, want in (("CLASS", b"IMAGE"), ("IMAGE_VERSION", b"1.2"), ("IMAGE_SUBCLASS", b"IMAGE_TRUECOLOR"),
                               ("INTERLACE_MODE", b"INTERLACE_PIXEL")):
                for k in range(len(hl)):
                    a = f["level%d" % k].attrs.get(name)
                    tid = f["level%d" % k].attrs.get_id(name).get_type()
                    fixed = isinstance(tid, h5py.h5t.TypeStringID) and not tid.is_variable_str()
                    attrs_ok &= a == want and fixed
            report(attrs_ok, "HDF5: every level has CLASS, IMAGE_VERSION, IMAGE_SUBCLASS, INTERLACE_MODE as fixed-length strings")
            rng = d.attrs.get("IMAGE_MINMAXRANGE")
            report(rng is not None and list(rng) == [0, 65535 if bits == 16 else 255], "HDF5: IMAGE_MINMAXRANGE")
            report(d.dtype == dtype and d.shape[2] == 3, "HDF5: H x W x 3 %s" % d.dtype)
            report(d.chunks == (min(tile, d.shape[0]), min(tile, d.shape[1]), 3), "HDF5: chunk = output tile %s" % (d.chunks,))
            report(d.compression == "gzip" and d.shuffle, "HDF5: shuffle + deflate")
            report("[output]" in f.attrs["nstbatch_config"].decode() and len(f.attrs["nstbatch_version"]) > 0,
                   "HDF5: the resolved config and the version as attributes")
        for k in range(1, len(hl)):
            if ref is None:
                report(np.array_equal(halve(hl[k - 1]), hl[k]), "HDF5: level %d is the 2x2 rounded means of level %d" % (k, k - 1))
        if ref is not None:
            report(len(hl) == len(ref) and all(np.array_equal(a, b) for a, b in zip(hl, ref)),
                   "HDF5 and TIFF hold the same pixels on all %d levels" % len(hl))
        ref = ref or hl
    if have[".png"]:
        png = np.array(Image.open(stem + ".png"))
        report(png.dtype == dtype and (ref is None or np.array_equal(png, ref[0])), "PNG holds the same pixels as level 0")
    if os.path.exists(stem + ".preview.png"):
        pv = Image.open(stem + ".preview.png")
        report(pv.mode == "RGB" and max(pv.size) <= 1024, "the preview is an RGB PNG of %dx%d" % pv.size)


def load_any(stem):
    for ext in (".tif", ".h5"):
        if os.path.exists(stem + ext):
            return tiff_levels(stem + ext)[0] if ext == ".tif" else h5_levels(stem + ext)
    return [np.array(Image.open(stem + ".png"))]


def cmd_same(a, b, levels="all"):
    la, lb = load_any(a), load_any(b)
    if levels != "all":
        la, lb = la[:int(levels)], lb[:int(levels)]
    report(len(la) == len(lb) and all(np.array_equal(x, y) for x, y in zip(la, lb)),
           "%s and %s: the same pixels on %s %d level%s" % (os.path.basename(a), os.path.basename(b), "all" if levels == "all" else "the first",
                                                        len(la), "" if len(la) == 1 else "s"))


def level0(path):
    """Level 0 alone (the reduced levels are cmd_formats'): a 100 MP pyramid's others took a fifth
    of the check."""
    if path.endswith(".h5"):
        with h5py.File(path, "r") as f:
            return f["level0"][()]
    with tifffile.TiffFile(path) as t:
        try:
            return t.pages[0].asarray()
        except ValueError:  # a codec tifffile lacks here (tiff_levels)
            return vips_level(path, 0, t.pages[0].bitspersample)


def cmd_input(inp, *stems):
    img = tifffile.imread(inp)
    for stem in stems:
        for ext in (".tif", ".h5"):
            if os.path.exists(stem + ext):
                out = level0(stem + ext)
                report(np.array_equal(out, img), "%s%s level 0 equals the %dx%d input" % (os.path.basename(stem), ext, img.shape[1], img.shape[0]))


def psnr(x, y):
    mse = np.mean((x.astype(np.float64) - y.astype(np.float64)) ** 2)
    return 10 * np.log10(255.0 ** 2 / mse) if mse > 0 else 99.0


def cmd_psnr(a, b, quality):
    """A's JPEG level 0 against B's lossless one, with libjpeg through Pillow as the yardstick: the
    same image at the same quality, YCbCr with full-resolution chroma (what nstbatch writes from
    quality 90 up): ours must be within 0.5 dB of it or better."""
    x = tiff_levels(a + ".tif")[0][0]
    y = tiff_levels(b + ".tif")[0][0]
    with tempfile.TemporaryDirectory() as d:
        j = os.path.join(d, "ref.jpg")
        Image.fromarray(y).save(j, quality=int(quality), subsampling=0 if int(quality) >= 90 else 2)
        ref = psnr(np.array(Image.open(j)), y)
    ours = psnr(x, y)
    report(ours >= ref - 0.5, "JPEG at quality %s: PSNR %.2f dB against the lossless render; libjpeg (Pillow) at the same quality: %.2f dB"
           % (quality, ours, ref))

def srgb_identity(icc):
    """Colours through the embedded profile into LittleCMS's own sRGB: max |difference| in 8 bits."""
    import io
    from PIL import ImageCms
    prof = ImageCms.ImageCmsProfile(io.BytesIO(icc))
    ramp = Image.new("RGB", (256, 3))
    ramp.putdata([(i, (7 * i) % 256, 255 - i) for i in range(256)] + [(i, i, i) for i in range(256)] + [(255 - i, i, (3 * i) % 256) for i in range(256)])
    t = ImageCms.buildTransform(prof, ImageCms.createProfile("sRGB"), "RGB", "RGB", renderingIntent=ImageCms.Intent.RELATIVE_COLORIMETRIC)
    out = ImageCms.applyTransform(ramp, t)
    return ImageCms.getProfileDescription(prof).strip(), int(np.abs(np.asarray(out, np.int64) - np.asarray(ramp, np.int64)).max())


def cmd_print(stem, dpi):
    dpi = float(dpi)
    with tifffile.TiffFile(stem + ".tif") as t:
        pages = [t.pages[0]] + list(t.pages[0].pages or [])
        for k, p in enumerate(pages):
            tags = p.tags
            if dpi > 0:
                x, y = tags["XResolution"].value, tags["YResolution"].value
                want = dpi * p.imagewidth / pages[0].imagewidth
                got = (x[0] / x[1], y[0] / y[1])
                report(abs(got[0] - want) < 1e-3 * want and abs(got[1] - want) < 1e-3 * want and tags["ResolutionUnit"].value == 2,
                       "TIFF level %d (%dx%d): %.4g x %.4g pixels per inch (wanted %.4g)" % (k, p.imagewidth, p.imagelength, got[0], got[1], want))
            else:
                report("XResolution" not in tags, "TIFF level %d: no resolution stored (output.dpi = 0)" % k)
            icc = tags["InterColorProfile"].value if "InterColorProfile" in tags else None
            if icc is None:
                report(False, "TIFF level %d: no ICC profile" % k)
                continue
            desc, err = srgb_identity(bytes(icc))
            report(desc.startswith("sRGB") and err <= 1, "TIFF level %d: ICC profile '%s' (%d bytes) maps to LittleCMS's sRGB within %d/255" % (k, desc, len(icc), err))
    vx = float(subprocess.run(["vipsheader", "-f", "xres", stem + ".tif"], capture_output=True, text=True, check=True).stdout)
    if dpi > 0:
        report(abs(vx * 25.4 - dpi) < 1e-2 * dpi, "libvips reads the TIFF's resolution: %.4f px/mm = %.2f dpi" % (vx, vx * 25.4))
    with Image.open(stem + ".png") as im:
        got = im.info.get("dpi")
        if dpi > 0:
            report(got is not None and abs(got[0] - dpi) < 0.01 * dpi and abs(got[1] - dpi) < 0.01 * dpi, "PNG pHYs: %s dpi (Pillow)" % (got,))
        else:
            report(got is None, "PNG: no pHYs (output.dpi = 0)")
        report("srgb" in im.info, "PNG: the sRGB chunk (Pillow's info: %s)" % sorted(k for k in im.info if k in ("srgb", "gamma", "chromaticity")))


def cmd_jpeg(stem, ref, quality, dpi):
    """STEM.jpg, read by Pillow (libjpeg) and libvips: progressive, the dpi, the sRGB profile, the
    config comment, and its PSNR against the lossless REF.png no worse than Pillow's own JPEG of
    REF at the same quality and chroma (0.5 dB)."""
    quality, dpi = int(quality), float(dpi)
    with Image.open(stem + ".jpg") as im:
        report(im.format == "JPEG" and im.mode == "RGB", "JPEG: %s %s %dx%d" % (im.format, im.mode, im.size[0], im.size[1]))
        report(bool(im.info.get("progressive")), "JPEG: progressive (Pillow's info: progressive=%s)" % im.info.get("progressive"))
        got = im.info.get("dpi")
        if dpi > 0:
            report(got is not None and abs(got[0] - dpi) < 0.5 and abs(got[1] - dpi) < 0.5, "JPEG: JFIF density %s dpi (wanted %g)" % (got, dpi))
        else:
            report(got is None, "JPEG: no resolution (output.dpi = 0): Pillow's dpi %s" % (got,))
        icc = im.info.get("icc_profile")
        desc, err = srgb_identity(icc) if icc else ("none", 255)
        report(desc.startswith("sRGB") and err <= 1, "JPEG: ICC profile '%s' maps to LittleCMS's sRGB within %d/255" % (desc, err))
        com = im.info.get("comment", b"")
        report(b"nstbatch resolved configuration" in com, "JPEG: the resolved config as a comment (%d bytes)" % len(com))
        x = np.asarray(im.convert("RGB"))
    y = np.asarray(Image.open(ref + ".png").convert("RGB"))
    with tempfile.TemporaryDirectory() as d:
        j = os.path.join(d, "ref.jpg")
        Image.fromarray(y).save(j, quality=quality, subsampling=0 if quality >= 90 else 2)
        refpsnr = psnr(np.array(Image.open(j)), y)
    ours = psnr(x, y)
    report(ours >= refpsnr - 0.5, "JPEG at quality %d: PSNR %.2f dB against the PNG of the same render; Pillow's libjpeg at the same quality: %.2f dB"
           % (quality, ours, refpsnr))
    w = subprocess.run(["vipsheader", "-f", "width", stem + ".jpg"], capture_output=True, text=True)
    report(w.returncode == 0 and int(w.stdout) == x.shape[1], "libvips reads the JPEG: width %s" % w.stdout.strip())


if __name__ == "__main__":
    cmds = {"formats": cmd_formats, "same": cmd_same, "input": cmd_input, "psnr": cmd_psnr, "print": cmd_print, "jpeg": cmd_jpeg}
    if len(sys.argv) < 2 or sys.argv[1] not in cmds:
        print(__doc__)
        sys.exit(2)
    try:
        cmds[sys.argv[1]](*sys.argv[2:])
    except Exception as e:  # a reader that cannot open the file is a failed check, not a crash of the suite
        report(False, "%s %s: %s: %s" % (sys.argv[1], " ".join(sys.argv[2:]), type(e).__name__, e))
    sys.exit(1 if failed else 0)

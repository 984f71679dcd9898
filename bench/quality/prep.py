#!/usr/bin/python3
"""bench/quality/prep.py: the benchmark's inputs at one size, written once and read by every tool.

    prep.py CONTENT STYLE WxH OUTDIR   -> OUTDIR/content.png (exactly WxH), OUTDIR/style.png (long side
                                          max(W, H), its aspect kept): 8-bit RGB, Lanczos

nstbatch (style.scale = 1) and crowsonkb's tool at its last scale and neural-style-pt
(-style_scale 1) all size the style image to the output's long side, so that none of them resamples
these files at the final size and every target is computed from the same pixels.
"""
import os
import sys

from PIL import Image


def main(content, style, size, outdir):
    w, h = map(int, size.split("x"))
    long_side = max(w, h)
    Image.open(content).convert("RGB").resize((w, h), Image.LANCZOS).save(os.path.join(outdir, "content.png"))
    s = Image.open(style).convert("RGB")
    sw, sh = s.size
    fit = (long_side, round(long_side * sh / sw)) if sw >= sh else (round(long_side * sw / sh), long_side)
    s.resize(fit, Image.LANCZOS).save(os.path.join(outdir, "style.png"))


if __name__ == "__main__":
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    main(*sys.argv[1:])

#!/usr/bin/python3
"""tests/viewer_pixels.py: how far a screenshot of the viewer page is from the image it shows.

    viewer_pixels.py SHOT IMAGE SX,SY IX,IY W,H FACTOR

Compares the W x H region of SHOT at (SX, SY) with IMAGE at (IX, IY), IMAGE first reduced FACTOR
times by means of FACTOR x FACTOR blocks (1: as is; 2: what a Deep Zoom level half the size holds)
and (IX, IY) counted in the reduced image. SHOT and IMAGE are PNG or JPEG files, or a level of a
Deep Zoom image (OUT_files/LEVEL: its tiles COL_ROW.jpg or .png, overlap 0, put together). Prints "mae M p99 P" over all RGB samples, in 1/255
units: the mean absolute difference and its 99th percentile. Exit 2 when the region leaves either
image. Needs numpy and Pillow (Debian's /usr/bin/python3 with python3-numpy, python3-pil).
"""
import os
import re
import sys

import numpy as np
from PIL import Image


def pair(text):
    a, b = text.split(",")
    return int(a), int(b)


def load(path):
    """An image file, or a Deep Zoom level's tiles put together, as float RGB."""
    if not os.path.isdir(path):
        return np.asarray(Image.open(path).convert("RGB"), dtype=np.float64)
    tiles = {}
    for name in os.listdir(path):
        m = re.fullmatch(r"(\d+)_(\d+)\.(jpe?g|png)", name)
        if m:
            tiles[int(m[1]), int(m[2])] = np.asarray(Image.open(os.path.join(path, name)).convert("RGB"), dtype=np.float64)
    cols, rows = max(c for c, _ in tiles) + 1, max(r for _, r in tiles) + 1
    tw, th = tiles[0, 0].shape[1], tiles[0, 0].shape[0]  # every tile but the last of a row or column
    out = np.zeros((th * (rows - 1) + tiles[0, rows - 1].shape[0], tw * (cols - 1) + tiles[cols - 1, 0].shape[1], 3))
    for (c, r), t in tiles.items():
        out[r * th:r * th + t.shape[0], c * tw:c * tw + t.shape[1]] = t
    return out


def main(argv):
    if len(argv) != 7:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    shot, image = load(argv[1]), load(argv[2])
    (sx, sy), (ix, iy), (w, h), f = pair(argv[3]), pair(argv[4]), pair(argv[5]), int(argv[6])
    if f > 1:
        hh, ww = image.shape[0] // f * f, image.shape[1] // f * f
        image = image[:hh, :ww].reshape(hh // f, f, ww // f, f, 3).mean(axis=(1, 3))
    a, b = shot[sy:sy + h, sx:sx + w], image[iy:iy + h, ix:ix + w]
    if min(sx, sy, ix, iy) < 0 or a.shape != (h, w, 3) or b.shape != (h, w, 3):
        print(f"region {w}x{h} at {sx},{sy} / {ix},{iy} leaves the images "
              f"({shot.shape[1]}x{shot.shape[0]}, {image.shape[1]}x{image.shape[0]})", file=sys.stderr)
        return 2
    d = np.abs(a - b)
    print(f"mae {d.mean():.2f} p99 {np.percentile(d, 99):.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

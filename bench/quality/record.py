"""bench/quality/record.py: the peers' snapshots, in the layout nstbatch's NSTBATCH_SNAPSHOTS hook
writes, so that one scorer reads every tool.

DIR/L<level>_<iteration, 6 digits>.npy: the image (uint16 H x W x 3, as a 16-bit output holds it);
DIR/index.tsv: level, iteration, wall clock when the snapshot began (epoch seconds), seconds all
earlier snapshots took; DIR/levels.tsv: level, width, height, iterations; DIR/final.npy and
DIR/snapshot_seconds (every snapshot's seconds, the final's included), written at the end. The
benchmark takes the snapshots' own seconds off each tool's time.
"""
import os
import time

import numpy as np


def as_uint16(x):
    """1 x 3 x H x W image in [0,1] (clamped here, as every tool clamps its output) -> H x W x 3 uint16."""
    a = x.detach()[0].float().clamp(0, 1).permute(1, 2, 0).cpu().numpy()
    return (a * 65535 + 0.5).astype(np.uint16)


class Recorder:
    def __init__(self, folder):
        self.dir, self.spent, self.levels = folder, 0.0, []
        open(os.path.join(folder, "index.tsv"), "w").close()

    def level(self, w, h, iterations):
        """A new level (scale) begins: its size and iteration count."""
        self.levels.append((w, h, iterations))
        with open(os.path.join(self.dir, "levels.tsv"), "a") as f:
            f.write("%d\t%d\t%d\t%d\n" % (len(self.levels), w, h, iterations))

    def snap(self, iteration, x, began=None):
        """The image after `iteration` iterations of the current level; began: when the tool started
        producing it for us (its own conversion), now if not given."""
        began = time.time() if began is None else began
        np.save(os.path.join(self.dir, "L%d_%06d.npy" % (len(self.levels), iteration)), as_uint16(x))
        with open(os.path.join(self.dir, "index.tsv"), "a") as f:
            f.write("%d\t%d\t%.6f\t%.6f\n" % (len(self.levels), iteration, began, self.spent))
        self.spent += time.time() - began

    def final(self, x, began=None):
        """The tool's output: scored at the process's end, less every snapshot's seconds."""
        began = time.time() if began is None else began
        np.save(os.path.join(self.dir, "final.npy"), as_uint16(x))
        self.spent += time.time() - began
        with open(os.path.join(self.dir, "snapshot_seconds"), "w") as f:
            f.write("%.6f\n" % self.spent)


def adapter_args():
    """The command line every peer adapter (kc.py, pt.py) takes from bench/quality.sh."""
    import argparse
    ap = argparse.ArgumentParser()
    for k in ("--peer", "--weights", "--content", "--style", "--out"):
        ap.add_argument(k, required=True)
    ap.add_argument("--variant", choices=["fair", "whole"], required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--quick", type=int, default=0)
    ap.add_argument("--check")
    return ap.parse_args()


def write_check(path, tool, total, terms, x):
    """An adapter's own objective on an image (1 x 3 x H x W in [0,1], saved beside PATH as .npy),
    as JSON at PATH, for score.py check."""
    import json
    image = path[:-5] + ".npy"
    np.save(image, x[0].permute(1, 2, 0).numpy())
    with open(path, "w") as f:
        json.dump({"tool": tool, "total": float(total), **terms, "image": os.path.basename(image)}, f)

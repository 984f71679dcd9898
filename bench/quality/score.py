#!/usr/bin/python3
"""bench/quality/score.py: the time-to-quality benchmark's one scorer: nstbatch's objective in float64 at
the final size (objective.py), on every snapshot and final output of every tool.

    score.py header
        the TSV's header line
    score.py run --tool NAME --size WxH --dir RUNDIR --launch T0 --end T1 --weights W.h5 --inputs DIR
                 --runs RUNS.tsv [--log LOG --final OUT.png]
        one TSV row per snapshot (kind snap), one for the output (final) and, given nstbatch's log,
        one for nstbatch's own printed final loss (logged) to stdout; a row to RUNS.tsv: size, tool,
        its levels (WxH xITERATIONS, ...), the process's seconds, the snapshots' seconds
    score.py check --weights W.h5 --inputs DIR FILE.json...
        an adapter's first objective (--check) against the scorer on the same image: one row each

Columns of run: size tool kind level iteration width height elapsed_s work total content style tv.
elapsed_s: the snapshot's wall clock (or the process's end, T1, for the output) less the launch (T0)
and less every earlier snapshot's own seconds; for the output, less every snapshot's, where
nstbatch's last snapshot, whose seconds its index cannot hold, counts as the mean of the others of
its level (of the others scaled by pixels if it is its level's only one). work: iterations done,
each weighted by its level's pixels over the final size's (final-size-equivalent iterations).
A snapshot smaller than the final size is scored upsampled (bicubic, align_corners=False, clamped).
"""
import argparse
import glob
import json
import os
import re
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import objective as ob  # noqa: E402

COLUMNS = "size tool kind level iteration width height elapsed_s work total content style tv".split()
ROW = re.compile(r"^\s*(\d+)\s+([0-9.eE+-]+)\s+([0-9.eE+-]+)\s+([0-9.eE+-]+)\s+([0-9.eE+-]+)\s")


def objective_for(weights, inputs, size=None):
    """The float64 objective with targets from the benchmark's inputs, at their size or (for an
    adapter's first objective at a coarser scale) resized as crowsonkb's tool does (PIL bicubic)."""
    from PIL import Image
    c, s = Image.open(os.path.join(inputs, "content.png")), Image.open(os.path.join(inputs, "style.png"))
    if size and size != c.size:
        long_side = max(size)
        c = c.resize(size, Image.BICUBIC)
        sw, sh = s.size
        s = s.resize((long_side, round(long_side * sh / sw)) if sw >= sh else (round(long_side * sw / sh), long_side), Image.BICUBIC)
    return ob.Objective(ob.Net(weights, torch.float64), ob.to_tensor(np.asarray(c)), ob.to_tensor(np.asarray(s)))


def levels_of(folder, log):
    """[(width, height, iterations done)] per level: the adapters' levels.tsv, or nstbatch's log (the
    sizes from its "level K/N: WxH" lines, or its content line for one level; the iterations done
    from each level's last progress row, its final loss, so that a level stopped early counts as run)."""
    if log is None:
        with open(os.path.join(folder, "levels.tsv")) as f:
            return [tuple(int(v) for v in line.split()[1:4]) for line in f if line.strip()]
    sizes, done, level = {}, {}, 1
    for line in open(log):
        m = re.match(r"^level (\d+)/\d+: (\d+)x(\d+), \d+ iterations$", line)
        c = re.match(r"^content: .* -> (\d+)x(\d+)$", line)
        r = ROW.match(line)
        if m:
            level = int(m.group(1))
            sizes[level] = (int(m.group(2)), int(m.group(3)))
        elif c:
            sizes.setdefault(1, (int(c.group(1)), int(c.group(2))))
        elif r:
            done[level] = int(r.group(1))
    return [sizes[k] + (done[k],) for k in sorted(sizes)]


def work(levels, level, iteration):
    """Final-size-equivalent iterations after `iteration` iterations of `level` (1-based)."""
    fw, fh, _ = levels[-1]
    done = sum(w * h * n for w, h, n in levels[:level - 1]) + levels[level - 1][0] * levels[level - 1][1] * iteration
    return done / (fw * fh)


def snapshots(folder):
    """[(level, iteration, began, seconds of earlier snapshots, path)] in the order written."""
    rows, index = [], os.path.join(folder, "index.tsv")
    if not os.path.exists(index):  # nstbatch writes none when no level reached 25 iterations
        return rows
    with open(index) as f:
        for line in f:
            lv, it, began, prior = line.split()[:4]
            path = glob.glob(os.path.join(folder, "L%s_%06d.*" % (lv, int(it))))[0]
            rows.append((int(lv), int(it), float(began), float(prior), path))
    return rows


def snapshot_seconds(folder, snaps, levels):
    """Every snapshot's seconds: the adapters write it; nstbatch's index holds all but its last one's."""
    path = os.path.join(folder, "snapshot_seconds")
    if os.path.exists(path):
        return float(open(path).read())
    return snaps[-1][3] + last_guess(snaps, levels) if snaps else 0.0


def last_guess(snaps, levels):
    """nstbatch's last snapshot's seconds: the mean of its level's others, else of all others scaled
    by pixels, else 0 (a lone snapshot)."""
    took = [(snaps[k][0], snaps[k + 1][3] - snaps[k][3]) for k in range(len(snaps) - 1)]
    last = snaps[-1][0]
    same = [d for lv, d in took if lv == last]
    if same:
        return sum(same) / len(same)
    px = [w * h for w, h, _ in levels]
    return sum(d * px[last - 1] / px[lv - 1] for lv, d in took) / len(took) if took else 0.0


def score(obj, path):
    x = ob.load_image(path)
    ch, cw = obj.size
    if x.shape[2:] != (ch, cw):
        x = F.interpolate(x, size=(ch, cw), mode="bicubic", align_corners=False).clamp(0, 1)
    with torch.no_grad():
        t = obj.terms(x)
    return [float(t[k]) for k in ("total", "content", "style", "tv")]


def logged(log):
    """nstbatch's last printed row: iteration, loss, content, style, tv."""
    rows = [m.groups() for m in map(ROW.match, open(log)) if m]
    return rows[-1]


def cmd_run(a):
    obj = objective_for(a.weights, a.inputs)
    levels, snaps = levels_of(a.dir, a.log), snapshots(a.dir)
    fw, fh, _ = levels[-1]
    out = []
    for lv, it, began, prior, path in snaps:
        w, h = levels[lv - 1][:2]
        out.append(["snap", lv, it, w, h, "%.3f" % (began - a.launch - prior), "%.2f" % work(levels, lv, it)] + score(obj, path))
    final = os.path.join(a.dir, "final.npy") if a.log is None else a.final
    snap_s = snapshot_seconds(a.dir, snaps, levels)
    elapsed = a.end - a.launch - snap_s
    out.append(["final", len(levels), levels[-1][2], fw, fh, "%.3f" % elapsed, "%.2f" % work(levels, len(levels), levels[-1][2])] + score(obj, final))
    if a.log:
        it, loss, c, s, t = logged(a.log)
        out.append(["logged", len(levels), it, fw, fh, "-", "-"] + [float(v) for v in (loss, c, s, t)])
    with open(a.runs, "a") as f:
        f.write("%s\t%s\t%s\t%.3f\t%.3f\n" % (a.size, a.tool, ", ".join("%dx%d x%d" % l for l in levels), a.end - a.launch, snap_s))
    for r in out:
        print("\t".join([a.size, a.tool] + [("%.9e" % v if isinstance(v, float) else str(v)) for v in r]))


def cmd_check(a):
    """tool, size, term, the adapter's float32 value, the scorer's float64 value, their difference
    relative to the scorer's term and to its total (a term near 0 is judged by the second)."""
    for path in a.files:
        c = json.load(open(path))
        x = torch.from_numpy(np.load(os.path.join(os.path.dirname(path), c["image"])).astype(np.float64)).permute(2, 0, 1).unsqueeze(0)
        obj = objective_for(a.weights, a.inputs, (x.shape[3], x.shape[2]))
        with torch.no_grad():
            t = obj.terms(x)
        for k in ("total", "content", "style", "tv"):
            ref, diff = float(t[k]), abs(c[k] - float(t[k]))
            print("%s\t%dx%d\t%s\t%.9e\t%.9e\t%.2e\t%.2e" % (c["tool"], x.shape[3], x.shape[2], k, c[k], ref,
                                                           diff / abs(ref) if ref else diff, diff / abs(float(t["total"]))))


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    for k in ("--tool", "--size", "--dir", "--weights", "--inputs"):
        r.add_argument(k, required=True)
    r.add_argument("--launch", type=float, required=True)
    r.add_argument("--end", type=float, required=True)
    r.add_argument("--runs", required=True)
    r.add_argument("--log", help="nstbatch's log: its levels and its own final loss")
    r.add_argument("--final", help="nstbatch's output image")
    c = sub.add_parser("check")
    c.add_argument("--weights", required=True)
    c.add_argument("--inputs", required=True)
    c.add_argument("files", nargs="+")
    sub.add_parser("header")
    a = ap.parse_args()
    if a.cmd == "header":
        return print("\t".join(COLUMNS))
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "2")))
    cmd_run(a) if a.cmd == "run" else cmd_check(a)


if __name__ == "__main__":
    main()

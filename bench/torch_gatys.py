#!/usr/bin/python3
"""bench/torch_gatys.py: the Gatys iteration of nstbatch in PyTorch on the CPU, for the benchmark.

    /usr/bin/python3 bench/torch_gatys.py --weights w.h5 --content c.png --style s.png \\
        --size 512x384 --style-size 512x512 --iters 10 --threads 2

Same network (the nstbatch-layout weights file, read with h5py), same layers (content relu4_2;
style relu1_1, relu2_1, relu3_1, relu4_1, relu5_1), same relative losses and TV, Adam on the pixels,
max pooling, fp32. Timing: per iteration (forward, losses, backward, Adam step), after two
warm-up iterations, median of the timed ones. Prints one JSON line.
"""
import argparse
import json
import statistics
import time

import h5py
import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image

LAYERS = ["conv1_1", "conv1_2", "pool1", "conv2_1", "conv2_2", "pool2", "conv3_1", "conv3_2", "conv3_3", "conv3_4",
          "pool3", "conv4_1", "conv4_2", "conv4_3", "conv4_4", "pool4", "conv5_1"]
STYLE = ["relu1_1", "relu2_1", "relu3_1", "relu4_1", "relu5_1"]
CONTENT = ["relu4_2"]


def load(path, size):
    img = Image.open(path).convert("RGB").resize(size, Image.LANCZOS)
    return torch.from_numpy(np.asarray(img, dtype=np.float32) / 255.0).permute(2, 0, 1).unsqueeze(0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--weights", required=True)
    ap.add_argument("--content", required=True)
    ap.add_argument("--style", required=True)
    ap.add_argument("--size", required=True)
    ap.add_argument("--style-size", required=True)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--channels-last", action="store_true")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    W, H = map(int, a.size.split("x"))
    SW, SH = map(int, a.style_size.split("x"))
    with h5py.File(a.weights, "r") as f:
        convs = {n: (torch.from_numpy(f[n]["weight"][()]), torch.from_numpy(f[n]["bias"][()])) for n in LAYERS if n in f}
        bgr = f.attrs["input_order"] in (b"BGR", "BGR")
        scale = float(f.attrs["input_scale"][0])
        mean = torch.tensor(f.attrs["input_mean"]).view(1, 3, 1, 1)
        std = torch.tensor(f.attrs["input_std"]).view(1, 3, 1, 1)
    fmt = torch.channels_last if a.channels_last else torch.contiguous_format

    def features(x):
        h = (x.flip(1) if bgr else x) * scale
        h = ((h - mean) / std).contiguous(memory_format=fmt)
        out = {}
        for name in LAYERS:
            if name.startswith("conv"):
                w, b = convs[name]
                h = F.relu(F.conv2d(h, w, b, padding=1))
                out["relu" + name[4:]] = h
            else:
                h = F.max_pool2d(h, 2, 2)
        return out

    def gram(f):
        c, m = f.shape[1], f.shape[2] * f.shape[3]
        fm = f.reshape(c, m)
        return fm @ fm.t() / m

    with torch.no_grad():
        fs = features(load(a.style, (SW, SH)))
        A = {l: gram(fs[l]) for l in STYLE}
        nA = {l: (A[l] ** 2).sum() for l in STYLE}
        fc = features(load(a.content, (W, H)))
        P = {l: fc[l] for l in CONTENT}
        nP = {l: (P[l] ** 2).sum() for l in CONTENT}
    x = load(a.content, (W, H)).requires_grad_(True)
    opt = torch.optim.Adam([x], lr=0.02)

    def step():
        opt.zero_grad()
        f = features(x)
        loss = sum(((f[l] - P[l]) ** 2).sum() / nP[l] for l in CONTENT)
        loss = loss + 1000 * sum(((gram(f[l]) - A[l]) ** 2).sum() / nA[l] for l in STYLE)
        loss = loss + 10 * (((x[:, :, :, 1:] - x[:, :, :, :-1]) ** 2).sum() + ((x[:, :, 1:, :] - x[:, :, :-1, :]) ** 2).sum()) / (3 * W * H)
        loss.backward()
        opt.step()
        with torch.no_grad():
            x.clamp_(0, 1)

    for _ in range(2):
        step()
    times = []
    for _ in range(a.iters):
        t = time.perf_counter()
        step()
        times.append(time.perf_counter() - t)
    print(json.dumps({"size": a.size, "threads": a.threads, "iters": a.iters, "channels_last": a.channels_last,
                      "s_per_iter_median": statistics.median(times), "s_per_iter_mean": statistics.mean(times),
                      "torch": torch.__version__}))


if __name__ == "__main__":
    main()

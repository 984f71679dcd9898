#!/usr/bin/python3
"""bench/quality/kc.py: crowsonkb/style-transfer-pytorch ("KC") at its own defaults, adapted at run time
(nothing of it is copied here) for the time-to-quality benchmark (bench/quality.sh).

    kc.py --peer DIR --weights W.h5 --content C.png --style S.png --out RUNDIR --variant fair|whole
          [--threads 2] [--quick N] [--check FILE.json]

Both variants: KC's StyleTransfer.stylize with its defaults (scales from 128 growing by sqrt(2) to
end_scale = the output's long side, 1000 iterations at the first and 500 at each later scale, Adam
lr 0.02 betas (0.9, 0.99) carried across scales, the EMA of the iterate (decay 0.99) as the output
and each next scale's start, init 'content'), its network swapped for the shared weights file with
that file's preprocessing. fair: its losses swapped for nstbatch's objective (ContentLossMSE,
StyleLossW2, TVLoss replaced; style weights 1000 per layer, content 1, TV 10). whole: KC's own
losses and weights (Wasserstein-2 style, MSE content, its TV) and its replicate padding of conv1_1.
Snapshots: the EMA (what KC outputs) every 25 iterations of every scale (record.py).
--quick N: N iterations at every scale (plumbing only: not KC's defaults).
--check FILE: the fair variant's second objective (its own total, the terms, the image) as JSON and .npy.
"""
import os
import sys
import time
import types

import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import objective as ob  # noqa: E402
import record  # noqa: E402
from record import Recorder  # noqa: E402

NAME_OF = {i: n for n, i in ob.TV_INDEX.items()}
# --check: the terms and image of the second evaluation (at the first the image is the content, so
# that the content term is 0 and checks nothing); n counts finished evaluations (TV is summed last)
PROBE = {"n": 0, "content": 0.0, "style": 0.0, "tv": 0.0, "x": None}
CHECKED_EVAL = 2


def import_kc(peer):
    """style_transfer/style_transfer.py without the package's __init__ (its web interface needs aiohttp)."""
    pkg = types.ModuleType("style_transfer")
    pkg.__path__ = [os.path.join(peer, "style_transfer")]
    sys.modules["style_transfer"] = pkg
    from style_transfer import style_transfer as kc
    return kc


def shared_vgg(weights, first_padding):
    """KC's VGGFeatures interface (layers by torchvision index, 'input' kept) over the shared network."""
    class SharedVGG(nn.Module):
        def __init__(self, layers, pooling="max"):
            super().__init__()
            if pooling != "max":
                raise ValueError("the shared network has max pooling only")
            self.layers = sorted(set(layers))
            self.net = ob.Net(weights, torch.float32, first_padding)
            self.devices = [torch.device("cpu")]

        def distribute_layers(self, devices):  # the CPU only: nothing to move
            self.devices = [torch.device(d) for d in devices.values()]

        def forward(self, input, layers=None):
            names = [NAME_OF[i] for i in (self.layers if layers is None else sorted(set(layers)))]
            f = self.net.features(input, names)
            return {"input": input, **{ob.TV_INDEX[n]: f[n] for n in names}}
    return SharedVGG


def probe(kind, value):
    if PROBE["n"] == CHECKED_EVAL - 1:
        PROBE[kind] += float(value)
    return value


class RelContent(nn.Module):
    """Replaces ContentLossMSE: nstbatch's ||F-P||^2 / ||P||^2."""

    def __init__(self, target):
        super().__init__()
        self.register_buffer("target", target)
        self.register_buffer("norm", (target ** 2).sum())

    def forward(self, input):
        return probe("content", ob.rel_content(input, self.target, self.norm))


def rel_gram(kc):
    class RelGram(nn.Module):
        """Replaces StyleLossW2: nstbatch's ||G-A||^2 / ||A||^2. KC's get_target stays: stylize blends its
        (mean, second raw moment) pairs, and that moment F F^T / (h w) is nstbatch's G."""
        get_target = staticmethod(kc.StyleLossW2.get_target)

        def __init__(self, target):
            super().__init__()
            self.register_buffer("target", target[1])
            self.register_buffer("norm", (target[1] ** 2).sum())

        def forward(self, input):
            return probe("style", ob.rel_style(self.get_target(input)[1], self.target, self.norm))
    return RelGram


class NstTV(nn.Module):
    """Replaces TVLoss: nstbatch's (sum dx^2 + sum dy^2) / (3 W H) on the [0,1] image."""

    def forward(self, input):
        if PROBE["n"] == CHECKED_EVAL - 1:
            PROBE["x"] = input.detach().clone()
        value = probe("tv", ob.tv(input))
        PROBE["n"] += 1
        return value


def write_check(path, total):
    """The checked objective as KC summed it, its terms with nstbatch's weights, and the image."""
    terms = {"content": ob.CONTENT_WEIGHT * PROBE["content"], "style": ob.STYLE_WEIGHT * PROBE["style"], "tv": ob.TV_WEIGHT * PROBE["tv"]}
    record.write_check(path, "kc", total, terms, PROBE["x"])


def main():
    a = record.adapter_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)  # as KC's command line does
    from PIL import Image
    kc = import_kc(a.peer)
    kc.VGGFeatures = shared_vgg(a.weights, "zeros" if a.variant == "fair" else "replicate")
    if a.variant == "fair":
        kc.ContentLossMSE, kc.StyleLossW2, kc.TVLoss = RelContent, rel_gram(kc), NstTV
    st = kc.StyleTransfer(devices=["cpu"])
    kw = {}
    if a.variant == "fair":
        # stylize wraps each style layer in Scale(..., self.style_weights[k]) and the content and TV
        # terms in Scale(..., content_weight / 1 layer) and Scale(..., tv_weight): nstbatch's weights
        st.style_weights = [ob.STYLE_WEIGHT] * len(st.style_layers)
        kw.update(content_weight=ob.CONTENT_WEIGHT, tv_weight=ob.TV_WEIGHT)
    if a.quick:
        kw.update(initial_iterations=a.quick, iterations=a.quick)
    content, style = Image.open(a.content).convert("RGB"), Image.open(a.style).convert("RGB")
    rec = Recorder(a.out)

    def callback(it):
        began = time.time()
        if it.i == 1:
            rec.level(it.w, it.h, it.i_max)
        if a.check and a.variant == "fair" and len(rec.levels) == 1 and it.i == CHECKED_EVAL:
            write_check(a.check, it.loss)  # Adam's step returns the loss its closure evaluated
        if it.i % 25 == 0:
            rec.snap(it.i, st.average.get(), began)
        else:
            rec.spent += time.time() - began

    st.stylize(content, [style], end_scale=max(content.size), callback=callback, **kw)
    rec.final(st.average.get())


if __name__ == "__main__":
    main()

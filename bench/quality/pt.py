#!/usr/bin/python3
"""bench/quality/pt.py: ProGamerGov/neural-style-pt ("PT") at its own defaults, adapted at run time
(nothing of it is copied here) for the time-to-quality benchmark (bench/quality.sh).

    pt.py --peer DIR --weights W.h5 --content C.png --style S.png --out RUNDIR --variant fair|whole
          [--threads 2] [--quick N] [--check FILE.json]

Both variants: neural_style.py's main() with its defaults (L-BFGS, 1000 iterations, history 100, no
line search, init random, Caffe-preprocessed space) at -image_size = the output's long side, on the
CPU, with -seed 0 (the same random init every run; PT leaves it unseeded). Its network
(loadCaffemodel) is swapped for the shared weights file behind a 1x1 convolution that maps PT's
input space (BGR, x255, minus the Caffe mean) to the file's exactly (zero padding then applies where
the file's network has it). fair: its ContentLoss, StyleLoss and TVLoss swapped for
nstbatch's terms and weights (the Gram over positions, TV on the [0,1] RGB image). whole: PT's own
losses and weights (content 5, style 100 over C*H*W Grams, L1 TV 1e-3). Snapshots: PT's own
save_iter set to 25; its deprocess (the clamped image) recorded instead of written (record.py).
--quick N: N iterations (plumbing only: not PT's default).
--check FILE: the fair variant's first objective (its own total, the terms, the image) as JSON and .npy.
"""
import os
import sys
import time

import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import objective as ob  # noqa: E402
import record  # noqa: E402
from record import Recorder  # noqa: E402

CAFFE_MEAN = [103.939, 116.779, 123.68]  # PT's preprocess: BGR order
LOSSES = []  # the fair loss modules, in PT's order, for --check


def input_map(bgr, scale, mean, std):
    """1x1 convolution from PT's input (BGR x255 - Caffe mean) to the file's (order, x scale, - mean, / std)."""
    conv = nn.Conv2d(3, 3, 1)
    w, b = torch.zeros(3, 3, 1, 1), torch.zeros(3)
    for k in range(3):
        j = k if bgr else 2 - k  # PT's channel holding the file's channel k
        w[k, j] = scale / (255.0 * std[k])
        b[k] = (CAFFE_MEAN[j] * scale / 255.0 - mean[k]) / std[k]
    with torch.no_grad():
        conv.weight.copy_(w)
        conv.bias.copy_(b)
    return conv


def shared_model(weights):
    """loadCaffemodel's (network, layerList) from the shared weights file, to relu5_1."""
    convs, bgr, scale, mean, std = ob.tg.file_net(weights)
    layers, names = [input_map(bgr, scale, mean.flatten().tolist(), std.flatten().tolist())], {"C": ["input_map"], "R": [], "P": []}
    for n in ob.tg.LAYERS:
        if n.startswith("conv"):
            w, b = convs[n]
            conv = nn.Conv2d(w.shape[1], w.shape[0], 3, padding=1)
            with torch.no_grad():
                conv.weight.copy_(w)
                conv.bias.copy_(b)
            layers += [conv, nn.ReLU(inplace=True)]  # as PT's buildSequential
            names["C"].append(n)
            names["R"].append("relu" + n[4:])
        else:
            layers.append(nn.MaxPool2d(kernel_size=2, stride=2))
            names["P"].append(n)
    return nn.Sequential(*layers), names


class Content(nn.Module):
    """Replaces PT's ContentLoss (modes None/capture/loss, .loss): nstbatch's content term."""

    def __init__(self, strength, normalize):
        super().__init__()
        self.mode, self.strength = "None", ob.CONTENT_WEIGHT
        LOSSES.append(self)

    def forward(self, input):
        if self.mode == "capture":
            self.target = input.detach()
            self.norm = (self.target ** 2).sum()
        elif self.mode == "loss":
            self.loss = ob.CONTENT_WEIGHT * ob.rel_content(input, self.target, self.norm)
        return input


class Style(nn.Module):
    """Replaces PT's StyleLoss: nstbatch's Gram (over positions) and style term; PT's blending kept."""

    def __init__(self, strength, normalize):
        super().__init__()
        self.target, self.norm, self.mode, self.blend_weight, self.strength = torch.Tensor(), None, "None", None, ob.STYLE_WEIGHT
        LOSSES.append(self)

    def forward(self, input):
        g = ob.gram(input)
        if self.mode == "capture":
            w = 1.0 if self.blend_weight is None else self.blend_weight
            self.target = g.detach() * w if self.target.nelement() == 0 else self.target + w * g.detach()
            self.norm = None
        elif self.mode == "loss":
            if self.norm is None:
                self.norm = (self.target ** 2).sum()
            self.loss = ob.STYLE_WEIGHT * ob.rel_style(g, self.target, self.norm)
        return input


class TV(nn.Module):
    """Replaces PT's TVLoss (on its input, first in the network): nstbatch's TV of the [0,1] RGB image,
    whose differences are PT's input differences over 255 (the mean cancels, the channel order does not matter)."""

    def __init__(self, strength):
        super().__init__()
        self.strength = ob.TV_WEIGHT
        LOSSES.append(self)

    def forward(self, input):
        self.x = input
        self.loss = ob.TV_WEIGHT * ob.tv(input / 255.0)
        return input


def rgb01(x):
    """PT's deprocess without the PIL image: 1 x 3 x H x W in [0,1] RGB (clamp: clamped=True)."""
    x = x.detach().reshape(3, x.shape[-2], x.shape[-1]).cpu() + torch.tensor(CAFFE_MEAN).view(3, 1, 1)
    return (x[[2, 1, 0]] / 255.0).unsqueeze(0)


def snapshotter(rec, params):
    """PT's deprocess: the image recorded with its iteration (from the file name PT saves it as)."""
    stem, ext = os.path.splitext(params.output_image)

    class Snapshot:
        def __init__(self, x):
            self.began, self.x = time.time(), rgb01(x).clamp(0, 1)

        def save(self, name):
            if name == params.output_image:
                rec.final(self.x, self.began)
            else:
                rec.snap(int(name[len(stem) + 1:-len(ext)]), self.x, self.began)
    return Snapshot


def checked_optimizer(ns, path):
    """setup_optimizer, its step's closure watched: the first objective and image to path."""
    setup = ns.setup_optimizer

    def wrapped(img):
        opt, loop = setup(img)
        step, done = opt.step, []

        def watched(closure):
            def first():
                if done:
                    return closure()
                x, loss = rgb01(img).clone(), closure()
                terms = {"content": 0.0, "style": 0.0, "tv": 0.0}
                for m in LOSSES:
                    terms[{Content: "content", Style: "style", TV: "tv"}[type(m)]] += float(m.loss)
                record.write_check(path, "pt", loss, terms, x)
                done.append(1)
                return loss
            return step(first)
        opt.step = watched
        return opt, loop
    return wrapped


def main():
    a = record.adapter_args()
    torch.set_num_threads(a.threads)
    from PIL import Image
    w, h = Image.open(a.content).size
    sys.argv = ["neural_style.py", "-content_image", a.content, "-style_image", a.style, "-image_size", str(max(w, h)),
                "-gpu", "c", "-output_image", os.path.join(a.out, "out.png"), "-save_iter", "25", "-seed", "0"]
    if a.quick:
        sys.argv += ["-num_iterations", str(a.quick)]
    sys.path.insert(0, a.peer)
    import neural_style as ns  # parses sys.argv into ns.params
    ns.loadCaffemodel = lambda *args: shared_model(a.weights)
    if a.variant == "fair":
        ns.ContentLoss, ns.StyleLoss, ns.TVLoss = Content, Style, TV
        if a.check:
            ns.setup_optimizer = checked_optimizer(ns, a.check)
    rec = Recorder(a.out)
    rec.level(w, h, ns.params.num_iterations)
    ns.deprocess = snapshotter(rec, ns.params)
    ns.main()


if __name__ == "__main__":
    main()

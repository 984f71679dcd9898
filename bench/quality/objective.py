"""bench/quality/objective.py: nstbatch's objective and network in PyTorch, shared by the scorer and the
peers' adapters of the time-to-quality benchmark (bench/quality.sh).

The network is the nstbatch-layout weights file read by bench/torch_gatys.py (file_net), with that
file's input preprocessing, 3x3 convolutions with zero padding (optionally replicate on conv1_1,
as crowsonkb's tool does to its own VGG), ReLU, 2x2 max pooling, to the deepest layer asked for.
The objective is nstbatch's default: content relu4_2, ||F-P||^2 / ||P||^2; style relu1_1..relu5_1,
1000 * sum ||G-A||^2 / ||A||^2 with G = F F^T / positions; TV 10 * (sum dx^2 + sum dy^2) / (3 W H)
on the [0,1] RGB image. Any dtype: the scorer runs it in float64, the adapters in float32.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import torch_gatys as tg  # noqa: E402  (the benchmark's one definition of the layers and the file)

CONTENT_WEIGHT, STYLE_WEIGHT, TV_WEIGHT = 1.0, 1000.0, 10.0
# torchvision's vgg19().features index of each layer's output (crowsonkb's tool names layers so)
TV_INDEX = {}
_i = 0
for _n in tg.LAYERS:
    if _n.startswith("conv"):
        TV_INDEX["conv" + _n[4:]], TV_INDEX["relu" + _n[4:]] = _i, _i + 1
        _i += 2
    else:
        TV_INDEX[_n], _i = _i, _i + 1


class Net:
    """The weights file's VGG-19 to conv5_1 on [0,1] RGB input, in dtype."""

    def __init__(self, weights, dtype=torch.float32, first_padding="zeros"):
        convs, self.bgr, self.scale, mean, std = tg.file_net(weights)
        self.convs = {n: (w.to(dtype), b.to(dtype)) for n, (w, b) in convs.items()}
        self.mean, self.std, self.dtype, self.first_padding = mean.to(dtype), std.to(dtype), dtype, first_padding

    def preprocess(self, x):
        h = (x.flip(1) if self.bgr else x) * self.scale
        return (h - self.mean) / self.std

    def features(self, x, layers):
        """{relu name: activation} for the layers asked for, stopping after the deepest."""
        last = max(tg.LAYERS.index("conv" + n[4:]) for n in layers)
        h, out = self.preprocess(x.to(self.dtype)), {}
        for name in tg.LAYERS[:last + 1]:
            if name.startswith("conv"):
                w, b = self.convs[name]
                if name == "conv1_1" and self.first_padding != "zeros":
                    h = F.conv2d(F.pad(h, (1, 1, 1, 1), mode=self.first_padding), w, b)
                else:
                    h = F.conv2d(h, w, b, padding=1)
                h = F.relu(h)
                if "relu" + name[4:] in layers:
                    out["relu" + name[4:]] = h
            else:
                h = F.max_pool2d(h, 2, 2)
        return out


def gram(f):
    """F F^T / positions: nstbatch's G (crowsonkb's second raw moment)."""
    m = f.reshape(f.shape[1], -1)
    return m @ m.t() / m.shape[1]


def rel_content(f, p, p_norm):
    return ((f - p) ** 2).sum() / p_norm


def rel_style(g, a, a_norm):
    return ((g - a) ** 2).sum() / a_norm


def tv(x):
    """TV of [0,1] RGB x (1, 3, H, W), unweighted."""
    h, w = x.shape[2], x.shape[3]
    return (((x[..., :, 1:] - x[..., :, :-1]) ** 2).sum() + ((x[..., 1:, :] - x[..., :-1, :]) ** 2).sum()) / (3 * w * h)


class Objective:
    """nstbatch's objective against targets from content and style ([0,1] RGB, 1 x 3 x H x W)."""

    def __init__(self, net, content, style):
        self.net, self.size = net, tuple(content.shape[2:])
        with torch.no_grad():
            self.P = net.features(content, tg.CONTENT)
            self.nP = {l: (p ** 2).sum() for l, p in self.P.items()}
            fs = net.features(style, tg.STYLE)
            self.A = {l: gram(fs[l]) for l in tg.STYLE}
            self.nA = {l: (a ** 2).sum() for l, a in self.A.items()}

    def terms(self, x):
        """{'content', 'style', 'tv', 'total'}: weighted terms of image x (0-d tensors)."""
        x = x.to(self.net.dtype)
        f = self.net.features(x, tg.CONTENT + tg.STYLE)
        c = CONTENT_WEIGHT * sum(rel_content(f[l], self.P[l], self.nP[l]) for l in tg.CONTENT)
        s = STYLE_WEIGHT * sum(rel_style(gram(f[l]), self.A[l], self.nA[l]) for l in tg.STYLE)
        t = TV_WEIGHT * tv(x)
        return {"content": c, "style": s, "tv": t, "total": c + s + t}


def to_tensor(a):
    """H x W x 3 uint8/uint16 array -> 1 x 3 x H x W float64 in [0,1]."""
    scale = 65535.0 if a.dtype == np.uint16 else 255.0
    return torch.from_numpy(a.astype(np.float64) / scale).permute(2, 0, 1).unsqueeze(0)


def read_png(path):
    """Any PNG, 16-bit ones whole: Pillow reads 16-bit RGB as 8-bit, so libvips (a test dependency,
    libvips-tools) hands it over as an uncompressed TIFF."""
    from PIL import Image
    with open(path, "rb") as f:
        bits = f.read(25)[24]
    if bits != 16:
        return np.asarray(Image.open(path).convert("RGB"))
    import tifffile
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "p.tif")
        subprocess.run(["vips", "tiffsave", path, out, "--compression", "none"], check=True, capture_output=True)
        return tifffile.imread(out)


def load_image(path):
    """A snapshot or input: .npy (uint16, the adapters') or PNG -> 1 x 3 x H x W float64 in [0,1]."""
    return to_tensor(np.load(path) if path.endswith(".npy") else read_png(path))

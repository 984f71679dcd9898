#!/usr/bin/python3
"""bench/torch_gatys.py: the Gatys iteration of nstbatch in PyTorch, the yardstick of the benchmarks.

    CPU (bench/cpu_iteration.sh): the nstbatch-layout weights file and the demo images
        /usr/bin/python3 bench/torch_gatys.py --weights w.h5 --content c.png --style s.png \\
            --size 512x384 --style-size 512x512 --iters 10 --threads 2
    GPU (bench/gpu_iteration.sh): no files, a seeded random full-width VGG-19 and random images
        python3 bench/torch_gatys.py --random --device cuda --bf16 --channels-last --cudnn-benchmark \\
            --size 2048x2048 --style-size 2048x2048 --iters 10
    The largest square image that fits (doubling, then bisection on out-of-memory, 64 px steps):
        python3 bench/torch_gatys.py --random --device cuda --bf16 --channels-last --find-max

Same network (the nstbatch-layout weights file, read with h5py, or random weights of the same
shapes; --width-divisor N, each layer 1/N as wide, as nstbatch's model.random_width_divisor, for
the benchmarks' plumbing on a CPU), same layers (content relu4_2; style relu1_1, relu2_1,
relu3_1, relu4_1, relu5_1), same relative losses and TV, Adam on the pixels, max pooling; fp32,
or bf16 autocast (--bf16: the convolutions and Gram matmuls in bf16 with fp32 accumulation, as
nstbatch's bf16 precision).
Timing: per iteration (forward, losses, backward, Adam step), after warm-up iterations (2 eager, 3
for the others: compile, then record), each ended by a device synchronize, median of the timed ones.
Prints one JSON line with the peak memory (peak_bytes: the device allocator's peak on CUDA, the
process's peak resident set on the CPU) and the warm-ups' seconds (warmup_s: compiling, capturing).

--variant (CUDA, except eager), the ways a PyTorch user makes this iteration fast:
    eager         as written: one launch per op, weights recast by autocast each forward
    graph         the whole iteration (forward, backward, Adam with capturable state, clamp) captured
                  once in a torch.cuda.CUDAGraph and replayed: no per-op launch cost
    compile       torch.compile(mode="reduce-overhead") of the objective: Inductor's fused element
                  kernels, forward and backward as CUDA graphs; fused Adam outside them
    compile-max   torch.compile(mode="max-autotune"): the same, with each matmul and convolution's
                  kernel chosen by timing among cuBLAS/cuDNN and Triton templates
"""
import argparse
import gc
import json
import resource
import statistics
import time

import torch
import torch.nn.functional as F

LAYERS = ["conv1_1", "conv1_2", "pool1", "conv2_1", "conv2_2", "pool2", "conv3_1", "conv3_2", "conv3_3", "conv3_4",
          "pool3", "conv4_1", "conv4_2", "conv4_3", "conv4_4", "pool4", "conv5_1"]
WIDTH = {"conv1": 64, "conv2": 128, "conv3": 256, "conv4": 512, "conv5": 512}
STYLE = ["relu1_1", "relu2_1", "relu3_1", "relu4_1", "relu5_1"]
CONTENT = ["relu4_2"]


def load(path, size):
    import numpy as np
    from PIL import Image
    img = Image.open(path).convert("RGB").resize(size, Image.LANCZOS)
    return torch.from_numpy(np.asarray(img, dtype=np.float32) / 255.0).permute(2, 0, 1).unsqueeze(0)


def random_net(seed, divisor=1):
    """VGG-19 to conv5_1 with He-initialised random weights, each layer's width over divisor (as
    nstbatch's model.random_width_divisor); Caffe-style preprocessing."""
    g = torch.Generator().manual_seed(seed)
    convs, cin = {}, 3
    for n in LAYERS:
        if n.startswith("conv"):
            cout = WIDTH[n[:5]] // divisor
            w = torch.randn(cout, cin, 3, 3, generator=g) * (2.0 / (9 * cin)) ** 0.5
            convs[n] = (w, torch.zeros(cout))
            cin = cout
    mean = torch.tensor([103.939, 116.779, 123.68]).view(1, 3, 1, 1)
    return convs, True, 255.0, mean, torch.ones(1, 3, 1, 1)


def file_net(path):
    import h5py
    with h5py.File(path, "r") as f:
        convs = {n: (torch.from_numpy(f[n]["weight"][()]), torch.from_numpy(f[n]["bias"][()])) for n in LAYERS if n in f}
        bgr = f.attrs["input_order"] in (b"BGR", "BGR")
        scale = float(f.attrs["input_scale"][0])
        mean = torch.tensor(f.attrs["input_mean"]).view(1, 3, 1, 1)
        std = torch.tensor(f.attrs["input_std"]).view(1, 3, 1, 1)
    return convs, bgr, scale, mean, std


class Gatys:
    def __init__(self, a, net, W, H, SW, SH):
        dev = torch.device(a.device)
        self.variant = a.variant
        convs, self.bgr, self.scale, mean, std = net
        self.convs = {n: (w.to(dev), b.to(dev)) for n, (w, b) in convs.items()}
        self.mean, self.std = mean.to(dev), std.to(dev)
        self.fmt = torch.channels_last if a.channels_last else torch.contiguous_format
        if a.channels_last:
            self.convs = {n: (w.contiguous(memory_format=torch.channels_last), b) for n, (w, b) in self.convs.items()}
        self.dev, self.bf16, self.W, self.H = dev, a.bf16, W, H
        g = torch.Generator().manual_seed(2)
        if a.random:
            style, content = torch.rand(1, 3, SH, SW, generator=g), torch.rand(1, 3, H, W, generator=g)
        else:
            style, content = load(a.style, (SW, SH)), load(a.content, (W, H))
        style, content = style.to(dev), content.to(dev)
        with torch.no_grad():
            fs = self.features(style)
            self.A = {l: self.gram(fs[l]) for l in STYLE}
            self.nA = {l: (self.A[l] ** 2).sum() for l in STYLE}
            del fs
            fc = self.features(content)
            self.P = {l: fc[l] for l in CONTENT}
            self.nP = {l: (self.P[l].float() ** 2).sum() for l in CONTENT}
            del fc
        self.x = content.clone().requires_grad_(True)
        # capturable: the step count lives on the device (a graph replays it); fused: one kernel
        extra = {"graph": dict(capturable=True), "compile": dict(fused=True), "compile-max": dict(fused=True)}
        self.opt = torch.optim.Adam([self.x], lr=0.02, **extra.get(a.variant, {}))
        self.objective = self.loss
        if a.variant.startswith("compile"):
            # weights and targets never change: static to the CUDA graphs, not copied in each replay
            for t in [*(w for wb in self.convs.values() for w in wb), *self.A.values(), *self.P.values(), self.mean, self.std]:
                torch._dynamo.mark_static_address(t)
            # static shapes: each size its own graphs, as a renderer with one tile shape would have
            self.objective = torch.compile(self.loss, mode="max-autotune" if a.variant == "compile-max" else "reduce-overhead",
                                           dynamic=False)

    def autocast(self):
        # a captured graph must not keep autocast's cast-weight cache across the capture's end
        return torch.autocast(self.dev.type, dtype=torch.bfloat16, enabled=self.bf16, cache_enabled=self.variant != "graph")

    def features(self, x):
        with self.autocast():
            h = (x.flip(1) if self.bgr else x) * self.scale
            h = ((h - self.mean) / self.std).contiguous(memory_format=self.fmt)
            out = {}
            for name in LAYERS:
                if name.startswith("conv"):
                    w, b = self.convs[name]
                    h = F.relu(F.conv2d(h, w, b, padding=1))
                    out["relu" + name[4:]] = h
                else:
                    h = F.max_pool2d(h, 2, 2)
            return out

    def gram(self, f):
        c, m = f.shape[1], f.shape[2] * f.shape[3]
        fm = f.reshape(c, m) if f.is_contiguous() else f.permute(0, 2, 3, 1).reshape(m, c).t()
        with self.autocast():
            return (fm @ fm.t()).float() / m

    def loss(self, x):
        W, H = self.W, self.H
        f = self.features(x)
        loss = sum(((f[l].float() - self.P[l].float()) ** 2).sum() / self.nP[l] for l in CONTENT)
        loss = loss + 1000 * sum(((self.gram(f[l]) - self.A[l]) ** 2).sum() / self.nA[l] for l in STYLE)
        return loss + 10 * (((x[:, :, :, 1:] - x[:, :, :, :-1]) ** 2).sum() + ((x[:, :, 1:, :] - x[:, :, :-1, :]) ** 2).sum()) / (3 * W * H)

    def iterate(self):
        """One iteration, eagerly (the objective compiled or not); the loss tensor."""
        if self.variant.startswith("compile"):
            torch.compiler.cudagraph_mark_step_begin()  # the previous replay's outputs may be overwritten
        self.opt.zero_grad(set_to_none=True)
        loss = self.objective(self.x)
        loss.backward()
        self.opt.step()
        with torch.no_grad():
            self.x.clamp_(0, 1)
        return loss.detach().clone()

    def capture(self):
        """graph: warm up on a side stream (the documented recipe), then capture one whole iteration."""
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                self.iterate()
        torch.cuda.current_stream().wait_stream(s)
        self.graph = torch.cuda.CUDAGraph()
        self.opt.zero_grad(set_to_none=True)
        with torch.cuda.graph(self.graph):
            self.static_loss = self.iterate()

    def step(self):
        if self.variant != "graph":
            return self.iterate()
        self.graph.replay()
        return self.static_loss

    def sync(self):
        if self.dev.type == "cuda":
            torch.cuda.synchronize()


def measure(a, net, W, H, SW, SH, iters):
    if a.device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    g = Gatys(a, net, W, H, SW, SH)
    t = time.perf_counter()
    if a.variant == "graph":
        g.capture()
    for _ in range(2 if a.variant == "eager" else 3):
        g.step()
    g.sync()
    warmup = time.perf_counter() - t
    times, last = [], None
    for _ in range(iters):
        t = time.perf_counter()
        last = g.step()
        g.sync()
        times.append(time.perf_counter() - t)
    # CUDA: the allocator's peak; CPU: the process's peak resident set (setup included, as nstbatch's)
    peak = torch.cuda.max_memory_allocated() if a.device == "cuda" else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    if getattr(a, "save", None):  # the image after the last step, 16-bit RGB TIFF
        import numpy as np
        import tifffile
        x = g.x.detach().float().clamp(0, 1)[0].permute(1, 2, 0).cpu().numpy()
        tifffile.imwrite(a.save, (x * 65535 + 0.5).astype(np.uint16))
    del g
    return times, peak, float(last) if last is not None else None, warmup


def fits(a, net, n):
    """One square n x n image (style n x n too) through 1 timed step without running out of memory."""
    try:
        measure(a, net, n, n, n, n, 1)
        return True
    except torch.cuda.OutOfMemoryError:
        return False
    finally:
        gc.collect()  # the failed try's tensors, before the next size
        if a.device == "cuda":
            torch.cuda.empty_cache()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--weights")
    ap.add_argument("--content")
    ap.add_argument("--style")
    ap.add_argument("--random", action="store_true", help="seeded random weights (full width unless --width-divisor) and random images: no files")
    ap.add_argument("--width-divisor", type=int, default=1, choices=[1, 2, 4, 8, 16, 32, 64],
                    help="with --random: every layer's width over this (nstbatch's model.random_width_divisor; a script's plumbing)")
    ap.add_argument("--size", default="512x512", help="WxH, or several: 512x384,1024x768 (one JSON line each)")
    ap.add_argument("--style-size")
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--threads", type=int, default=0, help="CPU threads (0: PyTorch's default)")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--bf16", action="store_true", help="bf16 autocast")
    ap.add_argument("--channels-last", action="store_true")
    ap.add_argument("--cudnn-benchmark", action="store_true")
    ap.add_argument("--variant", default="eager", choices=["eager", "graph", "compile", "compile-max"],
                    help="how PyTorch runs the iteration (see the top of this file)")
    ap.add_argument("--find-max", action="store_true", help="the largest square image that fits (CUDA)")
    ap.add_argument("--save", help="write the image after the last step here (16-bit TIFF)")
    a = ap.parse_args()
    if not a.random and not (a.weights and a.content and a.style):
        ap.error("give --weights, --content and --style, or --random")
    if a.width_divisor != 1 and not a.random:
        ap.error("--width-divisor needs --random (a weights file has its own widths)")
    if a.find_max and a.device != "cuda":
        ap.error("--find-max needs --device cuda")
    if a.variant != "eager" and a.device != "cuda":
        ap.error(f"--variant {a.variant} needs --device cuda (CUDA graphs)")
    if a.threads:
        torch.set_num_threads(a.threads)
    torch.backends.cudnn.benchmark = a.cudnn_benchmark
    net = random_net(1, a.width_divisor) if a.random else file_net(a.weights)
    info = {"variant": a.variant, "width_divisor": a.width_divisor, "device": a.device, "bf16": a.bf16, "channels_last": a.channels_last, "cudnn_benchmark": a.cudnn_benchmark,
            "torch": torch.__version__}
    if a.device == "cuda":
        info.update(gpu=torch.cuda.get_device_name(), cuda=torch.version.cuda, cudnn=torch.backends.cudnn.version())
    if a.find_max:
        lo, hi = 0, 1024
        while fits(a, net, hi):  # doubling
            lo, hi = hi, hi * 2
        while hi - lo > 64:  # bisection, 64 px steps
            mid = (lo + hi) // 2 // 64 * 64
            lo, hi = (mid, hi) if fits(a, net, mid) else (lo, mid)
        info.update(max_square=lo, max_megapixels=lo * lo / 1e6)
        print(json.dumps(info))
        return
    # one line a size: several sizes in one process pay PyTorch's start (seconds on a GPU node) once
    for size in a.size.split(","):
        W, H = map(int, size.split("x"))
        SW, SH = map(int, (a.style_size or size).split("x"))
        times, peak, loss, warmup = measure(a, net, W, H, SW, SH, a.iters)
        info.update(size=size, threads=torch.get_num_threads(), iters=a.iters, s_per_iter_median=statistics.median(times),
                    s_per_iter_mean=statistics.mean(times), s_per_iter_min=min(times), peak_bytes=peak, loss_last_step=loss,
                    warmup_s=round(warmup, 2))
        print(json.dumps(info), flush=True)
        gc.collect()
        if a.variant.startswith("compile"):
            torch._dynamo.reset()  # the next size compiles (or loads) its own static-shape graphs
        if a.device == "cuda":
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""tools/convert_torchvision_vgg19.py: convert a PyTorch VGG-19 state dict to nstbatch's weights layout.

    /usr/bin/python3 tools/convert_torchvision_vgg19.py vgg19-dcbb9e9d.pth vgg19-torchvision.h5
    /usr/bin/python3 tools/convert_torchvision_vgg19.py --caffe vgg19-d01eb7cb.pth vgg19-caffe.h5

Input: a state dict with torchvision's keys features.0.weight ... features.34.bias (classifier.*
is ignored), e.g. torchvision's vgg19-dcbb9e9d.pth, or the Caffe VGG-19 converted to PyTorch that
neural-style-pt uses (vgg19-d01eb7cb.pth; pass --caffe: its inputs are BGR in 0..255 minus the
Caffe mean). Output: HDF5 with attribute format = "nstbatch-vgg19", groups conv1_1 .. conv5_4
holding weight (OIHW, float32) and bias, and the preprocessing as attributes. Widths are taken
from the tensors, so narrower networks convert too. Needs PyTorch and h5py (Debian:
python3-torch python3-h5py, or scripts/install-deps.sh --dev); nstbatch itself needs neither.
"""
import argparse
import os
import sys

# torchvision's vgg19().features: the index of each conv in the Sequential
CONV_INDEX = [0, 2, 5, 7, 10, 12, 14, 16, 19, 21, 23, 25, 28, 30, 32, 34]
CONV_NAMES = ["conv1_1", "conv1_2", "conv2_1", "conv2_2", "conv3_1", "conv3_2", "conv3_3", "conv3_4",
              "conv4_1", "conv4_2", "conv4_3", "conv4_4", "conv5_1", "conv5_2", "conv5_3", "conv5_4"]


def fail(msg):
    print(f"convert_torchvision_vgg19: error: {msg}", file=sys.stderr)
    sys.exit(2)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("pth", help="PyTorch state dict (.pth)")
    ap.add_argument("out", help="output .h5 (nstbatch layout)")
    ap.add_argument("--caffe", action="store_true", help="weights expect Caffe preprocessing (BGR, 0..255, mean)")
    ap.add_argument("--force", action="store_true", help="replace the output if it exists")
    a = ap.parse_args()
    try:
        import h5py
        import numpy as np
        import torch
    except ImportError as e:
        fail(f"{e}: install python3-torch python3-h5py (scripts/install-deps.sh --dev)")
    if os.path.exists(a.out) and not a.force:
        fail(f"{a.out} exists; use --force to replace it")
    try:
        sd = torch.load(a.pth, map_location="cpu")
    except Exception as e:  # noqa: BLE001 - any unreadable file gets one clear line
        fail(f"{a.pth}: cannot load as a PyTorch state dict: {e}")
    if hasattr(sd, "state_dict"):
        sd = sd.state_dict()
    if "state_dict" in sd and isinstance(sd["state_dict"], dict):
        sd = sd["state_dict"]

    layers = []
    cin = 3
    for name, idx in zip(CONV_NAMES, CONV_INDEX):
        wk, bk = f"features.{idx}.weight", f"features.{idx}.bias"
        if wk not in sd:
            break
        if bk not in sd:
            fail(f"{a.pth}: {wk} present but {bk} missing")
        w = sd[wk].detach().float().cpu().numpy()
        b = sd[bk].detach().float().cpu().numpy()
        if w.ndim != 4 or w.shape[2:] != (3, 3) or w.shape[1] != cin or b.shape != (w.shape[0],):
            fail(f"{a.pth}: {wk} has shape {tuple(w.shape)} (bias {tuple(b.shape)}); expected ({w.shape[0]}, {cin}, 3, 3)")
        if not (np.isfinite(w).all() and np.isfinite(b).all()):
            fail(f"{a.pth}: {wk} or {bk} holds non-finite values")
        layers.append((name, w, b))
        cin = w.shape[0]
    if not layers:
        fail(f"{a.pth}: no features.0.weight: not a torchvision-style VGG-19 state dict")

    tmp = a.out + ".part"
    with h5py.File(tmp, "w") as f:
        f.attrs["format"] = np.bytes_("nstbatch-vgg19")
        f.attrs["format_version"] = np.int32(1)
        src = os.path.basename(a.pth)
        if a.caffe:
            f.attrs["description"] = np.bytes_(f"VGG-19 from {src} (caffe preprocessing)")
            f.attrs["input_order"] = np.bytes_("BGR")
            f.attrs["input_scale"] = np.array([255.0], dtype=np.float32)
            f.attrs["input_mean"] = np.array([103.939, 116.779, 123.68], dtype=np.float32)
            f.attrs["input_std"] = np.array([1.0, 1.0, 1.0], dtype=np.float32)
        else:
            f.attrs["description"] = np.bytes_(f"VGG-19 from {src} (torchvision preprocessing)")
            f.attrs["input_order"] = np.bytes_("RGB")
            f.attrs["input_scale"] = np.array([1.0], dtype=np.float32)
            f.attrs["input_mean"] = np.array([0.485, 0.456, 0.406], dtype=np.float32)
            f.attrs["input_std"] = np.array([0.229, 0.224, 0.225], dtype=np.float32)
        for name, w, b in layers:
            g = f.create_group(name)
            g.create_dataset("weight", data=w.astype(np.float32))
            g.create_dataset("bias", data=b.astype(np.float32))
    os.replace(tmp, a.out)
    print(f"wrote {a.out}: {len(layers)} conv layers, widths {[w.shape[0] for _, w, _ in layers]}")


if __name__ == "__main__":
    main()

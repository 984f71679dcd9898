#!/usr/bin/env bash
# bench/video.sh: the video mode's goals on a generated clip whose motion is known exactly
# (tools/make_test_clip: a textured disc moving, turning and growing over a panning background), in
# one run on this machine (make bench-video; results in bench/results/video.md).
#
# 1. Flicker at equal iterations: the clip rendered with the temporal term (video.temporal_weight
#    at its default) and as independent frames (video.temporal_weight = 0), every frame N iterations
#    either way, the flow read from the clip's exact .flo files. Reported: the mean temporal warping
#    error of each (Ruder's and Lai's normalisations) and their ratio (goal <= 0.25), and each frame's
#    style loss against the independent render's (goal: within 10 %).
# 2. Convergence: in the temporal render, the first iteration at which each frame after the first
#    reaches the first frame's final loss (content + style + tv, the temporal term left out), as a
#    share of N (goal <= 1/4).
# 3. Multi-pass: the same clip with video.passes = 3 (forward, backward, forward; N/2 iterations a
#    frame in the later passes): the warping error after the last pass and the last pass's style
#    losses, against the one-pass render.
# 4. Full HD: a 1920x1080 clip of F frames with OpenCV's DIS flow (medium): seconds per frame and per
#    iteration, and the flow's share of the time (goal < 10 %).
#
#   bench/video.sh [SIZE FRAMES ITERATIONS HD_FRAMES HD_ITERATIONS]   (default 256x192 8 100 3 10)
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
NST="$ROOT/nstbatch" CLIP="$ROOT/build/tools/make_test_clip" PY=/usr/bin/python3
SIZE=${1:-256x192} FRAMES=${2:-8} N=${3:-100} HDF=${4:-3} HDN=${5:-10}
B=$(mktemp -d /tmp/nstbatch-bench-video.XXXXXX)
trap 'rm -rf "$B"' EXIT
OUT="$ROOT/bench/results/video.md"
"$CLIP" "$B/clip" --size "$SIZE" --frames "$FRAMES" --motion all >/dev/null
cat >"$B/v.ini" <<INI
[content]
path = clip/frame_%05d.png
[style]
path = $ROOT/configs/demo/style.png
[optim]
method = adam
iterations = $N
[run]
print_every = 1
[video]
iterations = $N
flow = files
flow_forward = clip/fwd_%05d.flo
flow_backward = clip/bwd_%05d.flo
detect_cuts = false
INI
(cd "$B" && "$NST" v.ini --set output.path=temporal.mkv --set video.codec=ffv1 --set metrics.path=temporal.jsonl) >"$B/temporal.log" 2>&1
(cd "$B" && "$NST" v.ini --set output.path=independent.mkv --set video.codec=ffv1 --set metrics.path=independent.jsonl \
  --set video.temporal_weight=0) >"$B/independent.log" 2>&1

# the multi-pass mode: 3 passes (forward, backward, forward), the later ones at half the iterations
(cd "$B" && "$NST" v.ini --set output.path=passes.mkv --set video.codec=ffv1 --set metrics.path=passes.jsonl --set video.passes=3 \
  --set run.print_every=0) >"$B/passes.log" 2>&1

# Full HD, DIS flow
"$CLIP" "$B/hd" --size 1920x1080 --frames "$HDF" --motion all >/dev/null
(cd "$B" && "$NST" v.ini --set content.path=hd/frame_%05d.png --set video.flow=dis --set optim.iterations="$HDN" \
  --set video.iterations="$HDN" --set output.path=hd.mp4 --set metrics.path=hd.jsonl) >"$B/hd.log" 2>&1

"$PY" - "$B" "$N" "$SIZE" "$FRAMES" "$HDN" "$(grep -m1 '^nstbatch' "$B/temporal.log")" "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)" >"$OUT" <<'PY'
import json, sys, statistics
b, n, size, frames, hdn, banner, cpu = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5]), sys.argv[6], sys.argv[7].strip()
def events(name):
    return [json.loads(l) for l in open(f"{b}/{name}.jsonl")]
def frames_of(ev):
    """per frame: its frame event and its iteration rows (the rows come before the frame's event)"""
    out, rows = [], []
    for e in ev:
        if e.get("event") == "iteration": rows.append(e)
        elif e.get("event") == "frame": out.append((e, rows)); rows = []
    return out
T, I, H = frames_of(events("temporal")), frames_of(events("independent")), frames_of(events("hd"))
mean = lambda xs: sum(xs) / len(xs)
tw = [e["warping_error"] for e, _ in T if "warping_error" in e]; iw = [e["warping_error"] for e, _ in I if "warping_error" in e]
tl = [e["warping_error_lai"] for e, _ in T if "warping_error_lai" in e]; il = [e["warping_error_lai"] for e, _ in I if "warping_error_lai" in e]
floor = [e["input_warping_error"] for e, _ in T if "input_warping_error" in e]
ratio = mean(tw) / mean(iw)
print(f"# Video: temporal consistency, convergence, Full HD\n\n`make bench-video` (bench/video.sh) on {cpu}, 2 cores.\n\n{banner}\n")
print(f"Clip: tools/make_test_clip {size}, {frames} frames, motion all (a disc moving, turning and growing over a panning background); "
      f"exact flow from its .flo files; the demo style; the built-in random VGG-19; {n} iterations every frame.\n")
print("## Flicker at equal iterations\n")
print("| render | warping error (Ruder) | warping error (Lai) |\n|---|---|---|")
print(f"| input clip (the floor) | {mean(floor):.3e} | |")
print(f"| independent frames | {mean(iw):.3e} | {mean(il):.3e} |")
print(f"| temporal | {mean(tw):.3e} | {mean(tl):.3e} |")
print(f"\nRatio temporal / independent: **{ratio:.3f}** (Ruder), {mean(tl)/mean(il):.3f} (Lai); goal <= 0.25.\n")
print("| frame | style, temporal | style, independent | ratio |\n|---|---|---|---|")
sr = []
for (te, _), (ie, _) in zip(T, I):
    r = te["style"] / ie["style"]; sr.append(r)
    print(f"| {te['frame'] + 1} | {te['style']:.4e} | {ie['style']:.4e} | {r:.3f} |")
print(f"\nStyle loss at most 10 % above the independent render's on every frame: {'yes' if all(r <= 1.10 for r in sr) else 'no'} "
      f"(ratios {min(sr):.3f} to {max(sr):.3f}; below 1 the temporal frame is the better stylised, its start carrying earlier work).\n")
print("## Convergence\n")
first = T[0][0]; target = first["content"] + first["style"] + first["tv"]
print(f"First frame (cold): final content + style + tv {target:.4e} after {first['iterations']} iterations.\n")
print("| frame | first iteration at or below it | share of N |\n|---|---|---|")
shares = []
for e, rows in T[1:]:
    hit = next((r["iteration"] for r in rows if r["loss"]["content"] + r["loss"]["style"] + r["loss"]["tv"] <= target), None)
    s = hit / n if hit is not None else None
    if s is not None: shares.append(s)
    print(f"| {e['frame'] + 1} | {hit if hit is not None else 'not reached'} | {f'{s:.2f}' if s is not None else '-'} |")
print(f"\nMedian share: {statistics.median(shares):.2f} ({len(shares)} of {len(T) - 1} frames reached it); goal <= 0.25.\n" if shares else "\nNo frame reached it.\n")
print("## Multi-pass\n")
import re
plog = open(f"{b}/passes.log").read()
after = re.search(r"after (\d+) passes: mean warping error ([0-9.e+-]+)", plog)
last = {int(m.group(1)) - 1: float(m.group(2)) for m in re.finditer(r"^pass 3 \(forward\) frame (\d+)/\d+: .*\(style ([0-9.e+-]+),", plog, re.M)}
if after:
    print(f"video.passes = 3 (forward, backward, forward; {n // 2} iterations a frame after the first pass): warping error "
          f"**{float(after.group(2)):.3e}** after the last pass, against {mean(tw):.3e} for one pass and {mean(iw):.3e} for independent frames "
          f"({float(after.group(2)) / mean(iw):.3f}x).\n")
    if last:
        print("| frame | style, 3 passes | style, one pass | style, independent |\n|---|---|---|---|")
        for (te, _), (ie, _) in zip(T, I):
            if te["frame"] in last: print(f"| {te['frame'] + 1} | {last[te['frame']]:.4e} | {te['style']:.4e} | {ie['style']:.4e} |")
        print()
else:
    print("The multi-pass render failed: see its log.\n")
print("## Full HD\n")
warm = [e for e, _ in H if not e["cold"]]
print(f"1920x1080 clip of {len(H)} frames (same generator), DIS medium flow, {hdn} iterations a frame.\n")
print("| frame | seconds | iterations | flow seconds |\n|---|---|---|---|")
for e, _ in H: print(f"| {e['frame'] + 1}{' (cold)' if e['cold'] else ''} | {e['seconds']:.1f} | {e['iterations']} | {e['flow_seconds']:.2f} |")
fs = sum(e["flow_seconds"] for e in warm); rs = sum(e["seconds"] for e in warm)
rates = [r["megapixel_iterations_per_second"] for e, rows in H if not e["cold"] for r in rows[1:] if r.get("megapixel_iterations_per_second")]
spi = 1920 * 1080 / 1e6 / statistics.median(rates) if rates else float("nan")
setup = rs / len(warm) - hdn * spi
print(f"\nWarm frames: {rs / len(warm):.1f} s a frame at {hdn} iterations, {spi:.2f} s an iteration (median over the progress rows), so "
      f"{setup:.1f} s of each frame is its setup (network, tiles, targets). The flow (DIS both ways, on a thread while the frame "
      f"renders): {fs / len(warm):.2f} s a frame, **{100 * fs / rs:.1f} %** of the render time at {hdn} iterations; goal < 10 %. "
      f"Derived, not measured: at {n} iterations a warm frame would take about {setup + n * spi:.0f} s and the flow "
      f"{100 * (fs / len(warm)) / (setup + n * spi):.2f} % of it.")
PY
cat "$OUT"

#!/usr/bin/env bash
# bench/video_iterations.sh: how many iterations a warm video frame needs (video.iterations), on a
# generated clip whose motion is known exactly (tools/make_test_clip), in one run on this machine
# (make bench-video-iterations; results in bench/results/video_iterations.md).
#
# The clip is rendered at the defaults (optim.iterations 500 for a shot's cold first frame, the
# temporal term at video.temporal_weight's default, exact flow from the clip's .flo files) with
# video.iterations = K for each K in KS, the first (largest) the reference. Every render's cold frame
# is the same (the same config and seed: the same bits); the warm frames differ only in their
# iterations. Reported per K, against the reference's same frames:
#   (a) each warm frame's content + style + tv at its end (the worst ratio);
#   (b) the mean temporal warping error (flicker);
#   (c) each warm frame's style loss (the worst ratio);
#   and, for information, how many warm frames end at or below the cold frame's final content +
#   style + tv, each frame's SSIM against the reference's, and a warm frame's work against the
#   reference's (K over it: the iterations are the cost; seconds on a shared machine are not). The
#   rule: the smallest K whose (a), (b) and (c) are at most 1.10x, every larger K of the sweep's too.
#   (A first rule asked every warm frame to reach the cold frame's final loss instead of (a): no K
#   did, the default's included, as the temporal term holds each frame to its predecessor's style.)
#
# VIT_DIR=DIR renders into DIR and keeps it; a K whose clip and frame events are there already is
# not rendered again (a sweep stopped part way goes on; the tables come again from the renders).
# VIT_OUT=FILE writes the tables there instead of bench/results/video_iterations.md; VIT_SETS adds
# --set arguments to every render (tests/test_bench.sh: a narrow network, a short cold frame).
#   bench/video_iterations.sh [SIZE FRAMES "KS"]   (default 256x192 8 "250 100 50 25")
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
NST="$ROOT/nstbatch" CLIP="$ROOT/build/tools/make_test_clip" DIFF="$ROOT/build/tests/image_diff" PY=/usr/bin/python3
SIZE=${1:-256x192} FRAMES=${2:-8} KS=${3:-250 100 50 25}
command -v ffmpeg >/dev/null || { echo "bench/video_iterations.sh: needs ffmpeg (apt-get install ffmpeg) to read the rendered clips back" >&2; exit 2; }
if [ -n "${VIT_DIR:-}" ]; then mkdir -p "$VIT_DIR" && B=$(readlink -f "$VIT_DIR")
else B=$(mktemp -d /tmp/nstbatch-bench-vit.XXXXXX) && trap 'rm -rf "$B"' EXIT; fi
OUT=${VIT_OUT:-$ROOT/bench/results/video_iterations.md}
read -r -a SETS <<<"${VIT_SETS:-}"
[ -d "$B/clip" ] || "$CLIP" "$B/clip" --size "$SIZE" --frames "$FRAMES" --motion all >/dev/null
cat >"$B/v.ini" <<INI
[content]
path = clip/frame_%05d.png
[style]
path = $ROOT/configs/demo/style.png
[optim]
method = adam
[run]
print_every = 0
[video]
flow = files
flow_forward = clip/fwd_%05d.flo
flow_backward = clip/bwd_%05d.flo
detect_cuts = false
INI
ref=${KS%% *}
for K in $KS; do
  done_frames=$(grep -c '"event": "frame"' "$B/k$K.jsonl" 2>/dev/null || true)
  if [ -s "$B/k$K.mkv" ] && [ "${done_frames:-0}" -eq "$FRAMES" ]; then rm -rf "$B/f$K"; mkdir -p "$B/f$K"
    ffmpeg -loglevel error -i "$B/k$K.mkv" "$B/f$K/%03d.png"; continue; fi
  rm -f "$B/k$K.jsonl"
  (cd "$B" && "$NST" v.ini --set output.path="k$K.mkv" --set video.codec=ffv1 --set metrics.path="k$K.jsonl" \
     --set video.iterations="$K" "${SETS[@]}") >"$B/k$K.log" 2>&1
  mkdir -p "$B/f$K" && ffmpeg -loglevel error -i "$B/k$K.mkv" "$B/f$K/%03d.png"
done
for K in $KS; do # each frame's SSIM against the reference render's
  for f in "$B/f$K"/*.png; do
    printf '%s %s %s\n' "$K" "$(basename "$f" .png)" "$("$DIFF" --ssim "$f" "$B/f$ref/$(basename "$f")" | sed -n 's/.*ssim \([0-9.]*\).*/\1/p')"
  done
done >"$B/ssim.txt"

"$PY" - "$B" "$SIZE" "$FRAMES" "$KS" "$(grep -m1 '^nstbatch' "$B/k$ref.log")" "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)" >"$OUT" <<'PY'
import json, sys
b, size, frames, ks, banner, cpu = sys.argv[1], sys.argv[2], sys.argv[3], [int(k) for k in sys.argv[4].split()], sys.argv[5], sys.argv[6].strip()
ref = ks[0]
def frames_of(k):
    return [e for e in (json.loads(l) for l in open(f"{b}/k{k}.jsonl")) if e.get("event") == "frame"]
F = {k: frames_of(k) for k in ks}
ssim = {}
for line in open(f"{b}/ssim.txt"):
    k, f, v = line.split()
    if v: ssim[(int(k), int(f) - 1)] = float(v)
mean = lambda xs: sum(xs) / len(xs)
cold = F[ref][0]
bar = cold["content"] + cold["style"] + cold["tv"]
print(f"# Video: iterations of a warm frame\n\n`make bench-video-iterations` (bench/video_iterations.sh) on {cpu}, 2 cores.\n\n{banner}\n")
print(f"Clip: tools/make_test_clip {size}, {frames} frames, motion all; exact flow from its .flo files; the demo style; the built-in "
      f"random VGG-19; the defaults (a cold first frame of {cold['iterations']} iterations, video.temporal_weight's default), "
      f"video.iterations = K. The cold frame's final content + style + tv: {bar:.4e}.\n")
print(f"Rule: the smallest K whose warm frames, against K = {ref}'s same frames, end with (a) content + style + tv and (c) style "
      "loss at most 1.10x, and whose (b) mean warping error is at most 1.10x, every larger K meeting them too. (A first rule asked "
      "every warm frame to reach the cold frame's final loss instead of (a): no K did, the largest included, as the temporal term "
      "holds each frame to its predecessor's style; the column shows it.)\n")
print(f"| K | (a) worst content + style + tv ratio | (b) warping error (Ruder) | against K = {ref} | (c) worst style ratio | "
      f"mean style ratio | warm frames at or below the cold frame's loss | SSIM against K = {ref} (min, mean) | a warm frame's work | passes |")
print("|---|---|---|---|---|---|---|---|---|---|")
we_ref = mean([e["warping_error"] for e in F[ref] if "warping_error" in e])
tot = lambda e: e["content"] + e["style"] + e["tv"]
rwarm = [r for r in F[ref] if not r["cold"]]
best, held = None, True
for k in ks:
    warm = [e for e in F[k] if not e["cold"]]
    a = sum(1 for e in warm if tot(e) <= bar)
    tr = [tot(e) / tot(r) for e, r in zip(warm, rwarm)]
    we = mean([e["warping_error"] for e in F[k] if "warping_error" in e])
    sr = [e["style"] / r["style"] for e, r in zip(warm, rwarm)]
    ss = [ssim[(k, e["frame"])] for e in warm if (k, e["frame"]) in ssim]
    ok = max(tr) <= 1.10 and we <= 1.10 * we_ref and max(sr) <= 1.10
    held = held and ok
    if held: best = k
    print(f"| {k} | {max(tr):.3f} | {we:.3e} | {we / we_ref:.3f}x | {max(sr):.3f} | {mean(sr):.3f} | {a} of {len(warm)} | "
          f"{min(ss):.4f}, {mean(ss):.4f} | {k / ref:.2f}x | {'yes' if ok else 'no'} |")
print()
print("Per warm frame: content + style + tv at the end (the cold frame's: the bar), K by K.\n")
print("| frame | " + " | ".join(f"K = {k}" for k in ks) + " |\n|---|" + "---|" * len(ks))
for i in range(1, len(F[ref])):
    print(f"| {i + 1} | " + " | ".join(f"{F[k][i]['content'] + F[k][i]['style'] + F[k][i]['tv']:.4e}" for k in ks) + " |")
print()
print(f"The smallest K meeting the rule: **{best}** ({best / cold['iterations']:.2f} of optim.iterations)." if best else
      "No K met the rule.")
PY
cat "$OUT"

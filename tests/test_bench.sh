#!/usr/bin/env bash
# tests/test_bench.sh: the GPU benchmark's plumbing, on the CPU, so that a session with a GPU spends
# its time measuring and not debugging scripts. Nothing here is timed or compared with a speed.
#
#   tests/test_bench.sh NSTBATCH CONV_LAYERS GRAM_LAYERS
#
# - conv_layers on the CPU backend: one row per layer with positive TFLOP/s, a total row, a JSON
#   line per layer; refuses a bad flag with its usage (exit 2);
# - image_diff --fit (make print-figure's comparison): the demo's content enlarged twice by vips and
#   brought back to its size by nstbatch's resampler is nearly itself (SSIM >= 0.95);
# - gram_layers on the CPU backend, plain and masked: the five style layers at their resolutions
#   with positive GFLOP/s both ways, a total row, a JSON line per layer; its usage on a bad size;
# - bench/torch_gatys.py --random (no files) on the CPU in fp32 and bf16 autocast, channels_last:
#   one JSON line with a positive median (SKIP without PyTorch in /usr/bin/python3);
# - bench/gpu_iteration.sh with DEVICE=cpu at a 64 px tile and 1/8 width: its table has a row with
#   numbers from both sides (no MFU at that width) and the convolution table; with SWITCHES=1, the
#   runs a GPU lease makes of the CUDA switches (the own Gram sums, without graphs, VEC8=0,
#   OVERLAP=1, CONV1=own) with numbers on the line below the table, and the Gram ops per style
#   layer both ways (SKIP without PyTorch); with stand-ins of PyTorch that never answer (no
#   PyTorch needed), at full width, a variant cut at VARIANT_TIMEOUT and one cut at what is left of
#   BENCH_SECONDS, nothing of either left running; a conv_layers that fails, its table a line
#   saying so, the rest written;
# - bench/gpu_frame.sh with DEVICE=cpu at 1/8 width: its rows, SSIM 1 on exact tiles, a refused pooling named, a
#   MODEL_WIDTH that is no divisor refused;
# - bench/quality.sh at 96x64, nstbatch for 30 iterations: its snapshots scored, the float64 scorer
#   within 1e-4 of nstbatch's own final loss terms (the 16-bit output's quantisation); exit 2 and one
#   line without its peers (SKIP without PyTorch, which its scorer runs on); with them in PEERS
#   (else SKIP), each peer for 30 iterations a level (QUICK_ITERS), and each fair adapter's own
#   objective within 1e-5 of the scorer's total;
# - bench/video_iterations.sh at 64x48, 3 frames, K = 6 and 3: its table, and again from its kept
#   renders (VIT_DIR) without rendering.
. "$(dirname "$0")/lib.sh" test_bench
NST=$(readlink -f "$1") CONV=$(readlink -f "$2") GRAM=$(readlink -f "$3")

# bench/quality.sh at 96x64: nstbatch for 30 iterations (fp32: the scorer is held to its logged loss),
# and with the peers in PEERS each of them for 30 iterations a level
quality_plumbing() {
  local peers=${PEERS:-$ROOT/bench/peers} tools="" content=$ROOT/configs/demo/content.png style=$ROOT/configs/demo/style.png
  local q=$T/quality out status tsv diffs
  out=$(PEERS=$T/none TOOLS=kc "$ROOT/bench/quality.sh" "$q/none" 2>&1); status=$?
  if [ $status -eq 2 ] && [ "$(wc -l <<<"$out")" -eq 1 ] && grep -q 'git clone https://github.com/crowsonkb/style-transfer-pytorch' <<<"$out"; then
    ok "quality.sh without its peers: exit 2, one line saying how to get them"
  else
    bad "quality.sh without its peers" "exit $status" "$out"
  fi
  if [ -d "$peers/style-transfer-pytorch" ] && [ -d "$peers/neural-style-pt" ]; then
    tools="kc pt kc-whole pt-whole"
  else
    skip "quality.sh's peers (kc, pt, kc-whole, pt-whole)" "no style-transfer-pytorch and neural-style-pt in $peers (bench/quality.sh says how to get them)"
  fi
  if [ ! -f "$content" ]; then # without the demo's images (make demo-images), neural-style-pt's
    [ -n "$tools" ] || { skip "quality.sh" "neither the demo's images (make demo-images) nor the peers"; return 0; }
    content="" style=""
  fi
  out=$(SIZES=96x64 TOOLS="$tools" QUICK_ITERS=30 VARIANTS='q30:--set pyramid.levels=1 --set optim.iterations=30 --set run.precision=fp32' \
        PEERS="$peers" CONTENT="$content" STYLE="$style" WORK="$q/work" NST="$NST" "$IDLE" 300 "$ROOT/bench/quality.sh" "$q" 2>&1); status=$?
  tsv=$q/quality.tsv
  # nstbatch's own final loss against the scorer on its 16-bit output: each term within 1e-4
  diffs=$(awk -F'\t' '$2 == "nstbatch-q30" && ($3 == "final" || $3 == "logged") { for (k = 10; k <= 13; k++) v[$3, k] = $k }
          END { for (k = 10; k <= 13; k++) { d = v["final", k] - v["logged", k]; if (d < 0) d = -d
                printf "%.1e ", v["logged", k] ? d / v["logged", k] : d } }' "$tsv" 2>/dev/null)
  if [ $status -eq 0 ] && grep -q '^| nstbatch-q30 | ' "$q/quality.md" && grep -q "$(printf '^96x64\tnstbatch-q30\tsnap\t1\t25\t')" "$tsv" &&
     [ -n "$diffs" ] && awk -v d="$diffs" 'BEGIN { n = split(d, a, " "); for (i = 1; i <= n; i++) if (a[i] + 0 > 1e-4) exit 1; exit n != 4 }'; then
    ok "quality.sh, nstbatch at 96x64: snapshots scored, the scorer against nstbatch's final loss (total, content, style, tv): $diffs"
  else
    bad "quality.sh, nstbatch" "exit $status, scorer against nstbatch's final loss: ${diffs:-none}" "$out"
  fi
  [ -n "$tools" ] || return 0
  # every peer scored; each fair adapter's own objective within 1e-5 of the total the scorer finds
  local finals worst
  finals=$(awk -F'\t' '$3 == "final"' "$tsv" | cut -f2 | sort | tr '\n' ' ')
  worst=$(cut -f7 "$q/work/checks.tsv" 2>/dev/null | sort -g | tail -n 1)
  if [ $status -eq 0 ] && [ "$finals" = "kc kc-whole nstbatch-q30 pt pt-whole " ] && [ "$(wc -l <"$q/work/checks.tsv")" -eq 8 ] &&
     awk -v w="$worst" 'BEGIN { exit !(w != "" && w + 0 <= 1e-5) }' && grep -q "^| nstbatch run | within 0 %: s | work |" "$q/quality.md"; then
    ok "quality.sh, the peers at 96x64: every run scored, the fair adapters' objectives against the scorer within $worst of the total"
  else
    bad "quality.sh, the peers" "exit $status, finals: $finals, worst check: ${worst:-none}" "$out$(cat "$q/work/checks.tsv" 2>/dev/null)"
  fi
}

out=$("$CONV" --device cpu --tile 32 --reps 1 --layers 5 2>"$T/conv.json"); status=$?
rows=$(grep -cE '^\| conv[1-5]_[1-4] \| [0-9]+x[0-9]+ \| [0-9]+ -> [0-9]+ \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \|$' <<<"$out")
zero=$(grep -E '^\| conv' <<<"$out" | awk -F'|' '$7 + 0 <= 0 || $9 + 0 <= 0' | wc -l)
if [ $status -eq 0 ] && [ "$rows" -eq 5 ] && [ "$zero" -eq 0 ] && grep -q '^| \*\*all 5\*\*' <<<"$out" &&
   [ "$(grep -c '"backward_data_s"' "$T/conv.json")" -eq 5 ] && grep -q '| conv2_1 | 16x16 | 64 -> 128 |' <<<"$out"; then
  ok "conv_layers on the CPU: 5 layers at their resolutions, positive TFLOP/s both ways, total row, JSON lines"
else
  bad "conv_layers" "exit $status, $rows rows, $zero with no throughput" "$out"
fi
out=$("$CONV" --tile 30 2>&1); status=$?
if [ $status -eq 2 ] && grep -q '^usage: conv_layers' <<<"$out"; then ok "conv_layers refuses --tile 30 with its usage, exit 2"; else bad "conv_layers usage" "exit $status" "$out"; fi

for mask in "" --mask; do
  out=$("$GRAM" --device cpu --size 64x32 --reps 1 $mask 2>"$T/gram.json"); status=$?
  rows=$(grep -cE '^\| relu[1-5]_1 \| [0-9]+x[0-9]+ \| [0-9]+ \| [0-9.]+ \| [0-9.e+-]+ \| [0-9.]+ \| [0-9.e+-]+ \|$' <<<"$out")
  zero=$(grep -E '^\| relu' <<<"$out" | awk -F'|' '$6 + 0 <= 0 || $8 + 0 <= 0' | wc -l)
  if [ $status -eq 0 ] && [ "$rows" -eq 5 ] && [ "$zero" -eq 0 ] && grep -q '^| \*\*all 5\*\*' <<<"$out" &&
     [ "$(grep -c "\"mask\": $([ -n "$mask" ] && echo 1 || echo 0)" "$T/gram.json")" -eq 5 ] && grep -q '| relu3_1 | 16x8 | 256 |' <<<"$out"; then
    ok "gram_layers ${mask:-(plain)} on the CPU: 5 style layers at their resolutions, positive GFLOP/s both ways, total row, JSON lines"
  else
    bad "gram_layers $mask" "exit $status, $rows rows, $zero with no throughput" "$out"
  fi
done
out=$("$GRAM" --size 40x40 2>&1); status=$?
if [ $status -eq 2 ] && grep -q '^usage: gram_layers' <<<"$out"; then ok "gram_layers refuses --size 40x40 with its usage, exit 2"; else bad "gram_layers usage" "exit $status" "$out"; fi

# a budget (BENCH_SECONDS, as the first contact's bench step sets): a variant gets what is left of
# it at most (less 5 s), the variants that find too little left (LATE_VARIANTS here) and the
# profile say so, and the tables are written. It runs beside the cases below, as it mostly waits
# for its hanging variant (its stand-in sleeps 327 and 328 s, the hang case's below 317 and 318);
# nstbatch's 48x32 row takes a few seconds, so the variant is cut at about 15 s of the 24 (or, on
# a machine too slow for that, finds too little left as well), checked after the hang case
# hang_py FILE N: a stand-in python that answers the version probe (-c) and otherwise never
# answers, leaving a child behind, as a stuck compile leaves its workers: sleep N, sleep N+1
hang_py() { printf '#!/bin/sh\n[ "$1" = -c ] && { echo "stand-in"; exit 0; }\nsleep %d &\nexec sleep %d\n' "$2" $(($2 + 1)) >"$1" && chmod +x "$1"; }
hang_py "$T/hangpy2" 327
(DEVICE=cpu SIZES=48x32 ITERS=2 FIND_MAX=0 CONV_LAYERS=0 VARIANTS=eager LATE_VARIANTS=graph VARIANT_TIMEOUT=900 BENCH_SECONDS=24 \
   PY="$T/hangpy2" NST="$NST" "$IDLE" 300 "$ROOT/bench/gpu_iteration.sh" "$T/budget" >"$T/budget.out" 2>&1; echo $? >"$T/budget.status") &
budget_pid=$!
if ! /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  skip "torch_gatys.py, gpu_iteration.sh against eager PyTorch, its profile table, quality.sh" \
    "no PyTorch in /usr/bin/python3 (scripts/install-deps.sh --test installs it, as make test does)"
else
  # PyTorch's bf16 convolutions are oneDNN's too: none where oneDNN has no bf16 (AVX2), as nstbatch says
  nobf16=$(cd "$T" && "$NST" "$ROOT/configs/demo.ini" --set run.device=cpu --set run.precision=bf16 --set optim.iterations=0 \
           --set output.path="$T/probe.png" 2>&1 | grep -m1 'run.precision = bf16 on this CPU')
  # (the bf16 run at 1/8 of the width, as the first contact's plumbing runs it: the JSON says so)
  for flags in "" "--bf16 --channels-last --width-divisor 8"; do
    if [ -n "$flags" ] && [ -n "$nobf16" ]; then skip "torch_gatys.py --random $flags" "${nobf16#nstbatch: error: }"; continue; fi
    out=$(/usr/bin/python3 "$ROOT/bench/torch_gatys.py" --random --size 64x48 --iters 2 --threads 1 $flags 2>&1); status=$?
    med=$(sed -n 's/.*"s_per_iter_median": \([0-9.eE+-]*\).*/\1/p' <<<"$out")
    div=$(sed -n 's/.*"width_divisor": \([0-9]*\).*/\1/p' <<<"$out")
    if [ $status -eq 0 ] && [ -n "$med" ] && awk -v m="$med" 'BEGIN { exit !(m > 0) }' && [ "$div" = "$([ -n "$flags" ] && echo 8 || echo 1)" ]; then
      ok "torch_gatys.py --random ${flags:-(fp32)}: one JSON line, median $med s, width divisor $div"
    else
      bad "torch_gatys.py --random $flags" "exit $status" "$out"
    fi
  done
  # VARIANTS: graph needs CUDA, so on the CPU its cell must say why it has no time, and eager is the peer
  # SWITCHES=1: the runs of the CUDA backend's switches and the Gram ops per layer, which change
  # nothing on the CPU, run all the same: the plumbing a GPU lease would otherwise be first to run.
  # Both sides at 1/8 of VGG-19's width (MODEL_WIDTH), as the first contact's plumbing: 5.8 CPU
  # seconds, where the full width took 20; the budget and hang cases run the full width.
  out=$(MODEL_WIDTH=8 DEVICE=cpu SIZES=64 ITERS=2 FIND_MAX=0 CONV_TILE=32 VARIANTS="eager graph" SWITCHES=1 GRAM_SIZE=64x48 PY=/usr/bin/python3 \
        NST="$NST" CONV="$CONV" GRAM="$GRAM" "$IDLE" 600 "$ROOT/bench/gpu_iteration.sh" "$T/results" 2>"$T/stderr"); status=$?
  quiet=$(grep -oE '64x64: [0-9]+ of [0-9]+ replayed, [0-9]+ host waits, [0-9.]+ s/iter with the own Gram sums, [0-9.]+ without graphs, [0-9.]+ with the element passes one element a thread, [0-9.]+ with the Gram sums beside the next layers, [0-9.]+ with conv1_1 on our own kernels;' "$T/results/gpu_iteration.md" 2>/dev/null)
  grams=$(grep -cE '^# Gram ops, image 64x48, .*\(NSTBATCH_CUDA_GRAM=(cublas|own)\)$' "$T/results/gpu_iteration.md" 2>/dev/null)
  row=$(grep -E '^\| 64 x 64 \| [0-9.]+ \| [0-9.]+ \| - \| [0-9.]+ \(model [0-9.]+\) \| eager \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| \*\*[0-9.]+x\*\* \|$' "$T/results/gpu_iteration.md" 2>/dev/null)
  vrow=$(grep -E '^\| 64 x 64 \| [0-9.]+ \([0-9]+ s\) \| failed \(exit 2\): .*needs --device cuda.* \|$' "$T/results/gpu_iteration.md" 2>/dev/null)
  if [ $status -eq 0 ] && [ -n "$row" ] && [ -n "$vrow" ] && grep -q '^| \*\*all 13\*\*' "$T/results/gpu_iteration.md" && [ -s "$T/results/gpu_iteration.log" ] &&
     [ -n "$quiet" ] && [ "$grams" = 2 ] && grep -q '^## The Gram ops per style layer' "$T/results/gpu_iteration.md"; then
    ok "gpu_iteration.sh (DEVICE=cpu, 64 px, 1/8 width): $row; variants $vrow; the switches' line: $quiet; the Gram ops per layer both ways"
  else
    bad "gpu_iteration.sh" "exit $status" "$out$(tail -n 20 "$T/stderr")"
  fi
  # its profile: two runs' difference per op (its plumbing: at 64 px on a shared machine the
  # difference of two short runs can have either sign, so no value is judged)
  prow=$(grep -E '^\| conv_forward \| -?[0-9.]+ \| -?[0-9.]+ % \| - \|$' "$T/results/gpu_iteration.md" 2>/dev/null)
  if [ -n "$prow" ] && grep -q '^| conv_backward_data |' "$T/results/gpu_iteration.md" && grep -q '^| gram_backward |' "$T/results/gpu_iteration.md"; then
    ok "gpu_iteration.sh's profile table (4 and 4 + ITERS iterations): $prow"
  else
    bad "gpu_iteration.sh's profile table" "no conv_forward, conv_backward_data or gram_backward row" "$(grep -A12 'Where an iteration' "$T/results/gpu_iteration.md" 2>/dev/null)"
  fi
  quality_plumbing
fi
# bench/gpu_frame.sh's plumbing on the CPU, where tiles are exact: the tiled frame's SSIM against
# the one-tile frame is 1 with either pooling, and the four rows have their numbers; a pooling
# whose renders fail (one nstbatch refuses) is a row saying so, the others' table is still
# written, and the exit status is 1. VGG-19 at 1/8 of its width (MODEL_WIDTH): the plumbing's is
# the same, at an eighth of the CPU; a width that is no divisor is refused
out=$(DEVICE=cpu W=96 H=64 TILE=48 ITERATIONS=4 PRECISION=fp32 POOLINGS="max,avg,none" MODEL_WIDTH=8 NST="$NST" DIFF="$(dirname "$CONV")/../tests/image_diff" \
      "$IDLE" 300 "$ROOT/bench/gpu_frame.sh" "$T/frame" 2>&1); status=$?
rows=$(grep -cE '^\| (max|avg) \| exact mode, .* \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \|$' "$T/frame/gpu_frame.md" 2>/dev/null)
ssims=$(grep -cE '^SSIM of the tiled frame against the one-tile frame \(image_diff --ssim, luminance\), model.pooling = (max|avg): 1.000000\.$' "$T/frame/gpu_frame.md" 2>/dev/null)
wout=$(MODEL_WIDTH=3 "$ROOT/bench/gpu_frame.sh" "$T/frame3" 2>&1); wst=$?
if [ $status -eq 1 ] && [ "$rows" = 4 ] && [ "$ssims" = 2 ] && grep -q '^| none | a render failed' "$T/frame/gpu_frame.md" &&
   grep -q "model.pooling = 'none': expected one of max, avg" <<<"$out" && grep -q ', 1/8-width VGG-19 ' "$T/frame/gpu_frame.md" &&
   [ $wst -eq 2 ] && [ "$wout" = "gpu_frame: MODEL_WIDTH=3: give 1, 2, 4, 8, 16, 32 or 64 (the width divisor)" ]; then
  ok "gpu_frame.sh (DEVICE=cpu, 96x64 in 48 px tiles, max and avg pooling, 1/8 width): 4 rows, SSIM 1.000000 each (exact tiles); a refused pooling's row says so, exit 1; MODEL_WIDTH=3 refused in one line, exit 2"
else bad "gpu_frame.sh" "exit $status, $rows rows, $ssims SSIM lines of 1; MODEL_WIDTH=3: exit $wst" "$out$wout"; fi
# a variant that hangs (a stand-in python that never answers and leaves a child behind, as a stuck
# compile leaves its workers): its cell says so, and nothing of its session is left running; in the
# same run a conv_layers that fails (a stand-in, as a GPU's bf16 or timed runs might): a line with
# its exit status and error instead of its table, the other tables still written, exit 0
hang_py "$T/hangpy" 317
printf '#!/bin/sh\necho "| conv1_1 | half a table"\necho "conv_layers: planted failure (%s)" >&2\nexit 3\n' '$*' >"$T/failconv" && chmod +x "$T/failconv"
out=$(DEVICE=cpu SIZES=48x32 ITERS=2 FIND_MAX=0 PROFILE=0 VARIANTS=eager VARIANT_TIMEOUT=2 PY="$T/hangpy" NST="$NST" CONV="$T/failconv" \
      "$IDLE" 300 "$ROOT/bench/gpu_iteration.sh" "$T/hang" 2>&1); status=$?
cell=$(grep -E '^\| 48 x 32 \| not run: over VARIANT_TIMEOUT=2 s for all sizes \|$' "$T/hang/gpu_iteration.md" 2>/dev/null)
conv=$(grep -E '^conv_layers --precision fp32 --algorithms heuristic failed \(exit 3\): conv_layers: planted failure \(--device cpu .*\)$' "$T/hang/gpu_iteration.md" 2>/dev/null)
left=$(ours 'sleep 31[78]')
if [ $status -eq 0 ] && [ -n "$cell" ] && [ -z "$left" ]; then
  ok "gpu_iteration.sh: a variant over VARIANT_TIMEOUT is named in its cell, and its whole session is gone"
else
  bad "gpu_iteration.sh with a hanging variant" "exit $status; cell '$cell'; left running: ${left:-none}" "$out"
  [ -n "$left" ] && kill $left
fi
if [ $status -eq 0 ] && [ -n "$conv" ] && grep -q '^| 48 x 32 | [0-9.]* |' "$T/hang/gpu_iteration.md" && grep -q '### conv_layers --precision fp32 --algorithms heuristic FAILED (exit 3)' <<<"$out"; then
  ok "gpu_iteration.sh with a conv_layers that fails: its table a line with its exit and error, logged, the iteration's table written, exit 0"
else
  bad "gpu_iteration.sh with a failing conv_layers" "exit $status; line '$conv'" "$out"
fi
wait "$budget_pid"
status=$(cat "$T/budget.status" 2>/dev/null || echo none) out=$(cat "$T/budget.out" 2>/dev/null)
spent="not run: the bench's budget \(BENCH_SECONDS=24\) was spent"
cells=$(grep -E "^\| 48 x 32 \| not run: (over the [0-9]+ s left of the bench's budget \(BENCH_SECONDS=24\)|the bench's budget \(BENCH_SECONDS=24\) was spent) \| $spent \|\$" "$T/budget/gpu_iteration.md" 2>/dev/null)
left=$(ours 'sleep 32[78]')
if [ "$status" = 0 ] && [ -n "$cells" ] && grep -qE '^\| 48 x 32 \| [0-9.]+ \|' "$T/budget/gpu_iteration.md" &&
   grep -qE "^Where an iteration's time goes \(NSTBATCH_PROFILE=1\): $spent\.\$" "$T/budget/gpu_iteration.md" && [ -z "$left" ]; then
  ok "gpu_iteration.sh under BENCH_SECONDS=24: nstbatch's row, then $(cut -d'|' -f3 <<<"$cells" | sed 's/^ *//' | cut -c1-60)...; the late variant and the profile named as not run"
else
  bad "gpu_iteration.sh under a budget" "exit $status; cells '$cells'; left running: ${left:-none}" "$out"
  [ -n "$left" ] && kill $left
fi
# bench/video_iterations.sh's plumbing (make bench-video-iterations): a 64x48 clip of 3 frames on the
# narrow network, a 6-iteration cold frame, K = 6 and 3, into a folder kept (VIT_DIR): a row per K,
# the reference's at 1.000 on every ratio, a verdict; run again, it renders nothing (its logs
# untouched) and writes the same tables
if ! command -v ffmpeg >/dev/null || ! pkg-config --exists libavformat libavcodec 2>/dev/null; then
  skip "video_iterations.sh" "no ffmpeg or no FFmpeg libraries (scripts/install-deps.sh)"
else
  vit() { VIT_DIR="$T/vit" VIT_OUT="$T/vit.md" VIT_SETS="--set model.random_width_divisor=8 --set optim.iterations=6" \
            "$IDLE" 300 "$ROOT/bench/video_iterations.sh" 64x48 3 "6 3" >"$T/vit.log" 2>&1; }
  vit; st=$?
  cp "$T/vit.md" "$T/vit1.md" 2>/dev/null
  logs=$(stat -c %y "$T/vit/k6.log" "$T/vit/k3.log" 2>/dev/null)
  [ $st -eq 0 ] && { vit; st=$?; }
  if [ $st -eq 0 ] && grep -q '^| 6 | 1.000 | [0-9.e+-]* | 1.000x | 1.000 | 1.000 | ' "$T/vit.md" && grep -q '^| 3 | [0-9.]* | ' "$T/vit.md" &&
     grep -qE '^(The smallest K meeting the rule: \*\*[0-9]+\*\*|No K met the rule)' "$T/vit.md" && cmp -s "$T/vit.md" "$T/vit1.md" &&
     [ -n "$logs" ] && [ "$logs" = "$(stat -c %y "$T/vit/k6.log" "$T/vit/k3.log")" ]; then
    ok "video_iterations.sh at 64x48, K = 6 and 3: a row each, the reference's at 1.000, $(grep -oE '^(The smallest K meeting the rule: \*\*[0-9]+\*\*|No K met the rule)' "$T/vit.md"); again from VIT_DIR: nothing rendered, the same tables"
  else bad "video_iterations.sh" "exit $st" "$(cat "$T/vit.log")"; fi
fi
# image_diff --fit (make print-figure's comparison): b resized to a's size by nstbatch's resampler.
# The demo's content made twice as large by vips (Lanczos-3) and brought back is the content again,
# nearly (ringing at the edges, 8 bits); without --fit the sizes differ: exit 2
D="$(dirname "$CONV")/../tests/image_diff" C="$ROOT/configs/demo/content.png"
if command -v vips >/dev/null && [ -f "$C" ] && vips resize "$C" "$T/big.png" 2 --kernel lanczos3 2>/dev/null; then
  fit=$("$D" --fit --ssim "$C" "$T/big.png" 2>&1) plain=$("$D" --ssim "$C" "$T/big.png" 2>&1); prc=$?
  if awk -v s="${fit#ssim }" 'BEGIN { exit !(s >= 0.95 && s <= 1) }' && [ $prc -eq 2 ] && [ "$plain" = "image_diff: 384x256 vs 768x512" ]; then
    ok "image_diff --fit: the content enlarged twice by vips and brought back, $fit; without --fit, exit 2 naming both sizes"
  else bad "image_diff --fit" "with --fit: '$fit'; without: exit $prc, '$plain'"; fi
else skip "image_diff --fit" "no vips (libvips-tools) or no demo content (make demo-images)"; fi
finish

#!/usr/bin/env bash
# bench/gpu_frame.sh: one video-sized frame on one GPU, tiled and in one tile (make bench-gpu-frame;
# on a lent GPU node from the gpu-bundle, as bench/gpu_iteration.sh).
#
#   bench/gpu_frame.sh [OUT_DIR]          (default bench/results)
#
# Renders the demo's pictures at W x H (3840x2160), full-width VGG-19 with seeded random weights,
# run.precision = PRECISION (bf16), Adam, ITERATIONS (250: the work of a warm video frame,
# docs/VIDEO.md), once in TILE px tiles (1024) and once in one tile, one rank each, and writes
# OUT_DIR/gpu_frame.md: each command's wall seconds, its s/iter and MP-it/s (its closing line), its
# tiling line, and the SSIM of the tiled frame against the one-tile frame (image_diff --ssim: 1 where
# the tiles are exact, as on the CPU; on a GPU they agree within tolerances, and the iterations grow
# the roundings), for each model.pooling in POOLINGS (max: the default; "max avg" or max,avg adds average
# pooling, under which renders that round differently stay close: docs/PRECISION.md). Knobs: W, H,
# TILE, ITERATIONS, PRECISION, POOLINGS, DEVICE (cuda; cpu runs the plumbing at
# small sizes, as tests/test_bench.sh does), MODEL_WIDTH (1: full width; N divides every layer's
# width, for that plumbing), GRAPHS (gpu.graphs: true), CONV_ALGOS (gpu.conv_algorithms:
# timed; the choices kept in one gpu.conv_choices file for both renders, so a render's seconds include
# the timing of its tile shapes' algorithms once), NST (./nstbatch), DIFF (build/tests/image_diff).
set -euo pipefail
# numbers with a decimal point in any locale (awk, printf, sort -n): a user's LC_ALL becomes LANG
[ -z "${LC_ALL:-}" ] || { export LANG="$LC_ALL"; unset LC_ALL; }; export LC_NUMERIC=C
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=$(mkdir -p "${1:-$ROOT/bench/results}" && cd "${1:-$ROOT/bench/results}" && pwd)
NST=$(readlink -f "${NST:-$ROOT/nstbatch}")
DIFF=$(readlink -f "${DIFF:-$ROOT/build/tests/image_diff}")
W=${W:-3840} H=${H:-2160} TILE=${TILE:-1024} ITERATIONS=${ITERATIONS:-250}
DEVICE=${DEVICE:-cuda}
PRECISION=${PRECISION:-bf16}
GRAPHS=${GRAPHS:-true}
POOLINGS=${POOLINGS:-max}
CONV_ALGOS=${CONV_ALGOS:-timed}
MODEL_WIDTH=${MODEL_WIDTH:-1}
case $MODEL_WIDTH in 1 | 2 | 4 | 8 | 16 | 32 | 64) ;; *) echo "gpu_frame: MODEL_WIDTH=$MODEL_WIDTH: give 1, 2, 4, 8, 16, 32 or 64 (the width divisor)" >&2; exit 2 ;; esac
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

# frame NAME TILE_SIZE POOLING: one render into T/NAME.tif, its log T/NAME.log; prints "seconds s/iter MP-it/s"
frame() {
  local t0 t1
  t0=$(date +%s.%N)
  (cd "$ROOT/configs" && "$NST" demo.ini --set run.device="$DEVICE" --set run.precision="$PRECISION" --set model.pooling="$3" \
     --set output.width="$W" --set output.height="$H" --set tiling.tile_size="$2" --set model.random_width_divisor="$MODEL_WIDTH" \
     --set optim.method=adam --set optim.iterations="$ITERATIONS" --set run.print_every=50 --set output.preview=0 --set gpu.graphs="$GRAPHS" \
     --set gpu.conv_algorithms="$CONV_ALGOS" --set gpu.conv_choices="$T/conv_choices.txt" --set output.path="$T/$1.tif" --set output.overwrite=true) >"$T/$1.log" 2>&1 ||
    { echo "gpu_frame: the $1 render failed:" >&2; tail -n 5 "$T/$1.log" >&2; exit 1; }
  t1=$(date +%s.%N)
  # done: N iterations in S s (X s/iteration, Y megapixel-iterations/s); setup ...
  sed -n 's/^done: .* (\([0-9.]*\) s\/iteration, \([0-9.]*\) megapixel-iterations\/s).*/\1 \2/p' "$T/$1.log" |
    awk -v s="$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')" '{ print s, $1, $2 }'
}
# row POOLING NAME SECONDS S/ITER MP-IT/S: the table's row of T/NAME.log's render
row() { echo "| $1 | $(sed -n 's/^tiling: *//p' "$T/$2.log" | head -n 1) | $3 | $4 | $5 |"; }
# last_loss NAME: the total loss of T/NAME.log's last progress row
last_loss() { awk '$1 ~ /^[0-9]+$/ { l = $2 } END { print l }' "$T/$1.log"; }
rows=() lines=() failed=0
for P in ${POOLINGS//,/ }; do # (spaces or commas between them)
  # a pooling whose render failed is a row saying so (its log's last lines on stderr), and the
  # script exits 1 once the table of the others is written
  if ! tiled=$(frame "tiled_$P" "$TILE" "$P") || ! whole=$(frame "whole_$P" $((W > H ? W : H)) "$P"); then
    rows+=("| $P | a render failed (its last lines above the table) | - | - | - |")
    failed=1
    continue
  fi
  ssim=$("$DIFF" --ssim "$T/tiled_$P.tif" "$T/whole_$P.tif" | awk '{ print $2 }')
  rows+=("$(row "$P" "tiled_$P" $tiled)" "$(row "$P" "whole_$P" $whole)")
  lines+=("SSIM of the tiled frame against the one-tile frame (image_diff --ssim, luminance), model.pooling = $P: $ssim."
          "Final losses (total), model.pooling = $P, tiled / one tile: $(last_loss "tiled_$P") / $(last_loss "whole_$P")."
          "CUDA graphs, model.pooling = $P, tiled / one tile: $(grep -h '^CUDA graphs' "$T/tiled_$P.log" | head -n 1 || echo none) / $(grep -h '^CUDA graphs' "$T/whole_$P.log" | head -n 1 || echo none).")
done
{
  echo "# One frame on one GPU: tiled and in one tile"
  echo
  echo "Command: \`bench/gpu_frame.sh\`, $(date -u +%Y-%m-%d), W=$W H=$H TILE=$TILE ITERATIONS=$ITERATIONS PRECISION=$PRECISION POOLINGS=\"$POOLINGS\" DEVICE=$DEVICE GRAPHS=$GRAPHS CONV_ALGOS=$CONV_ALGOS$([ "$MODEL_WIDTH" = 1 ] || echo " MODEL_WIDTH=$MODEL_WIDTH")."
  echo
  echo '```'
  "$NST" --version 2>&1 | head -n 3
  echo '```'
  echo
  echo "The demo's pictures at ${W}x${H}, $([ "$MODEL_WIDTH" = 1 ] && echo full-width || echo "1/$MODEL_WIDTH-width") VGG-19 (seeded random weights), Adam, $ITERATIONS iterations, one rank."
  echo
  echo "| pooling | tiling | whole command s | s/iter | MP-it/s |"
  echo "|---|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
  echo
  printf '%s\n' "${lines[@]}"
} >"$OUT/gpu_frame.md"
cat "$OUT/gpu_frame.md"
exit $failed

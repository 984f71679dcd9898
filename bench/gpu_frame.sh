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
# the roundings). Knobs: W, H, TILE, ITERATIONS, PRECISION, DEVICE (cuda; cpu runs the plumbing at
# small sizes, as tests/test_bench.sh does), GRAPHS (gpu.graphs: true), CONV_ALGOS (gpu.conv_algorithms:
# timed; the choices kept in one gpu.conv_choices file for both renders, so a render's seconds include
# the timing of its tile shapes' algorithms once), NST (./nstbatch), DIFF (build/tests/image_diff).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=$(mkdir -p "${1:-$ROOT/bench/results}" && cd "${1:-$ROOT/bench/results}" && pwd)
NST=$(readlink -f "${NST:-$ROOT/nstbatch}")
DIFF=$(readlink -f "${DIFF:-$ROOT/build/tests/image_diff}")
W=${W:-3840} H=${H:-2160} TILE=${TILE:-1024} ITERATIONS=${ITERATIONS:-250}
DEVICE=${DEVICE:-cuda}
PRECISION=${PRECISION:-bf16}
GRAPHS=${GRAPHS:-true}
CONV_ALGOS=${CONV_ALGOS:-timed}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

# frame NAME TILE_SIZE: one render into T/NAME.tif, its log T/NAME.log; prints "seconds s/iter MP-it/s"
frame() {
  local t0 t1
  t0=$(date +%s.%N)
  (cd "$ROOT/configs" && "$NST" demo.ini --set run.device="$DEVICE" --set run.precision="$PRECISION" \
     --set output.width="$W" --set output.height="$H" --set tiling.tile_size="$2" --set model.random_width_divisor=1 \
     --set optim.method=adam --set optim.iterations="$ITERATIONS" --set run.print_every=50 --set output.preview=0 --set gpu.graphs="$GRAPHS" \
     --set gpu.conv_algorithms="$CONV_ALGOS" --set gpu.conv_choices="$T/conv_choices.txt" --set output.path="$T/$1.tif" --set output.overwrite=true) >"$T/$1.log" 2>&1 ||
    { echo "gpu_frame: the $1 render failed:" >&2; tail -n 5 "$T/$1.log" >&2; exit 1; }
  t1=$(date +%s.%N)
  # done: N iterations in S s (X s/iteration, Y megapixel-iterations/s); setup ...
  sed -n 's/^done: .* (\([0-9.]*\) s\/iteration, \([0-9.]*\) megapixel-iterations\/s).*/\1 \2/p' "$T/$1.log" |
    awk -v s="$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')" '{ print s, $1, $2 }'
}
# row NAME SECONDS S/ITER MP-IT/S: the table's row of T/NAME.log's render
row() { echo "| $(sed -n 's/^tiling: *//p' "$T/$1.log" | head -n 1) | $2 | $3 | $4 |"; }
# last_loss NAME: the total loss of T/NAME.log's last progress row
last_loss() { awk '$1 ~ /^[0-9]+$/ { l = $2 } END { print l }' "$T/$1.log"; }
tiled=$(frame tiled "$TILE")
whole=$(frame whole $((W > H ? W : H)))
ssim=$("$DIFF" --ssim "$T/tiled.tif" "$T/whole.tif" | awk '{ print $2 }')
{
  echo "# One frame on one GPU: tiled and in one tile"
  echo
  echo "Command: \`bench/gpu_frame.sh\`, $(date -u +%Y-%m-%d), W=$W H=$H TILE=$TILE ITERATIONS=$ITERATIONS PRECISION=$PRECISION DEVICE=$DEVICE GRAPHS=$GRAPHS CONV_ALGOS=$CONV_ALGOS."
  echo
  echo '```'
  "$NST" --version 2>&1 | head -n 3
  echo '```'
  echo
  echo "The demo's pictures at ${W}x${H}, full-width VGG-19 (seeded random weights), Adam, $ITERATIONS iterations, one rank."
  echo
  echo "| tiling | whole command s | s/iter | MP-it/s |"
  echo "|---|---|---|---|"
  row tiled $tiled
  row whole $whole
  echo
  echo "SSIM of the tiled frame against the one-tile frame (image_diff --ssim, luminance): $ssim."
  echo "Final losses (total), tiled / one tile: $(last_loss tiled) / $(last_loss whole)."
  echo "CUDA graphs, tiled / one tile: $(grep -h '^CUDA graphs' "$T/tiled.log" | head -n 1 || echo none) / $(grep -h '^CUDA graphs' "$T/whole.log" | head -n 1 || echo none)."
} >"$OUT/gpu_frame.md"
cat "$OUT/gpu_frame.md"

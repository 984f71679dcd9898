#!/usr/bin/env bash
# bench/cheap_mode.sh: what the cheap mode costs and saves against the exact mode (make bench-cheap).
#
# The demo at 384x256 (random VGG-19 at width 1/4, 200 iterations) rendered exactly (one tile, one
# rank) and on 2 ranks with tiles of 128 px: exact, exact with the lagged Gram, cheap (32 px halo,
# lagged Gram, exchange every 4), cheap with exchange every iteration. Reports s/iter, the final
# loss against the exact run's, and the pixel deviation (16-bit outputs; pixels of any two runs
# with different rounding drift apart over hundreds of Adam steps, so the loss is the fairer
# measure of quality). Writes bench/results/cheap_mode.md.
set -euo pipefail
# numbers with a decimal point in any locale (awk, printf, sort -n): a user's LC_ALL becomes LANG
[ -z "${LC_ALL:-}" ] || { export LANG="$LC_ALL"; unset LC_ALL; }; export LC_NUMERIC=C
cd "$(dirname "$0")/.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
make -s nstbatch demo-images build/tests/image_diff >/dev/null
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
iters=${ITERS:-200}
json() { sed -n "s/.*\"$2\": \"\{0,1\}\([^\",}]*\).*/\1/p" "$1" | head -n 1; }
last() { sed -n 's/.*"last": {"total": \([^,]*\).*/\1/p' "$1"; }
base=(configs/demo.ini --set model.random_width_divisor=4 --set optim.method=adam --set optim.iterations="$iters" --set output.bits=16
      --set output.width=384 --set output.height=256 --set run.print_every=0)
runs=("exact_1tile 1"
      "exact_tiles128 2 --set tiling.tile_size=128"
      "lagged_tiles128 2 --set tiling.tile_size=128 --set tiling.gram=lagged"
      "cheap_tiles128 2 --set tiling.mode=cheap --set tiling.tile_size=128"
      "cheap_tiles128_k1 2 --set tiling.mode=cheap --set tiling.tile_size=128 --set tiling.exchange_every=1")
rows=()
for r in "${runs[@]}"; do
  read -r name n args <<<"$r"
  mpirun --oversubscribe --bind-to none -np "$n" ./nstbatch "${base[@]}" --set output.path="$T/$name.tif" \
      --set run.record="$T/$name.json" $args -q 2>/dev/null
  [ "$name" = exact_1tile ] && ref_loss=$(last "$T/$name.json")
  d=$(build/tests/image_diff "$T/exact_1tile.tif" "$T/$name.tif")
  rows+=("| $name | $n | $(json "$T/$name.json" tiles) | $(json "$T/$name.json" halo) | $(json "$T/$name.json" gram) | $(json "$T/$name.json" exchange_every) | $(json "$T/$name.json" seconds_per_iteration) | $(last "$T/$name.json") | $(awk -v a="$(last "$T/$name.json")" -v b="$ref_loss" 'BEGIN { printf "%.3f", a / b }') | $d |")
  echo "$name done" >&2
done
{
  echo "# Cheap mode against exact"
  echo
  echo "Command: \`make bench-cheap\` (bench/cheap_mode.sh), $(date -u +%Y-%m-%d), $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores."
  echo "The demo at 384x256, random VGG-19 at width 1/4, $iters Adam iterations; 2-rank runs use tiles of 128 px."
  echo
  echo "| run | ranks | tiles | halo px | Gram | exchange every | s/iter | final loss | loss / exact | pixels vs exact (max, mean) |"
  echo "|---|---|---|---|---|---|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
} >bench/results/cheap_mode.md
cat bench/results/cheap_mode.md

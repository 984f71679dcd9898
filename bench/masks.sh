#!/usr/bin/env bash
# bench/masks.sh: what masks cost (make bench-masks). The masks demo (configs/masks.ini: the demo
# picture at 384x256, two styles) rendered with its two masks (one guided Gram per style and layer)
# and with the same two styles blended (one Gram per layer), on one rank with the machine's
# default precision, alternately REPS times each (the machine is shared: the ratio of medians is
# the figure), for the random VGG-19 at width 1/4 (the demo's) and at full width (where the
# convolutions weigh as they do with real weights). Reports the median s/iteration of each, their
# ratio and the peak backend memory. Writes bench/results/masks.md.
set -euo pipefail
# numbers with a decimal point in any locale (awk, printf, sort -n): a user's LC_ALL becomes LANG
[ -z "${LC_ALL:-}" ] || { export LANG="$LC_ALL"; unset LC_ALL; }; export LC_NUMERIC=C
cd "$(dirname "$0")/.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
make -s nstbatch demo-images >/dev/null
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
reps=${REPS:-5}
json() { sed -n "s/.*\"$2\": \"\{0,1\}\([^\",}]*\).*/\1/p" "$1" | head -n 1; }
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
rows=()
for width in 4 1; do
  iters=$([ "$width" = 4 ] && echo 60 || echo 15)
  for mode in blend masks; do : >"$T/$mode.$width"; done
  for ((r = 0; r < reps; r++)); do
    for mode in blend masks; do
      masks=$([ $mode = masks ] && echo configs/demo/sky.png,configs/demo/ground.png || true)
      ./nstbatch configs/masks.ini --set style.masks="$masks" --set model.random_width_divisor="$width" --set optim.method=adam --set optim.iterations="$iters" \
          --set output.path="$T/$mode.png" --set run.record="$T/$mode.json" -q
      json "$T/$mode.json" seconds_per_iteration >>"$T/$mode.$width"
      json "$T/$mode.json" peak_bytes_max >"$T/$mode.$width.mem"
    done
  done
  b=$(median <"$T/blend.$width") m=$(median <"$T/masks.$width")
  rows+=("| 1/$width | $iters | $b | $m | $(awk -v b="$b" -v m="$m" 'BEGIN { printf "%.2f", m / b }') | $(awk -v x="$(cat "$T/blend.$width.mem")" 'BEGIN { printf "%.1f", x / 1048576 }') | $(awk -v x="$(cat "$T/masks.$width.mem")" 'BEGIN { printf "%.1f", x / 1048576 }') |")
done
{
  echo "# Masks: their cost"
  echo
  echo "\`make bench-masks\` (bench/masks.sh), $(date -u +%Y-%m-%d), $(./nstbatch --version | head -n 1); $(nproc) cores."
  echo "configs/masks.ini (384x256, two styles, one rank): with its two masks against the same styles blended,"
  echo "$reps runs of each, alternately; the median s/iteration."
  echo
  echo "| VGG-19 width | iterations | blended s/iter | masked s/iter | masked / blended | blended peak MiB | masked peak MiB |"
  echo "|---|---|---|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
  echo
  echo "With masks each style has its own Gram at every style layer (twice the Gram sums, Gram"
  echo "differences and Gram backward for two styles), the backward weights the features' rows by the"
  echo "mask (a gathered copy), and every style layer holds each mask at its resolution."
} | tee bench/results/masks.md

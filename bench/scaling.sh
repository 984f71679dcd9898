#!/usr/bin/env bash
# bench/scaling.sh: strong and weak scaling of the tiled renderer over MPI ranks (make bench-scaling).
#
#   bench/scaling.sh [RANKS...]          default: 1 2 4 (counts above the cores run --oversubscribe)
#
# Strong scaling: one fixed image (STRONG=WxH, default 768x512) on 1..N ranks. Weak scaling: a
# fixed number of pixels per rank (WEAK=WxH per rank, default 384x384), the image growing with the
# ranks. Every run: the demo's images, the random VGG-19 (WIDTH_DIVISOR, default 2), ITERS timed
# iterations (default 6) after nstbatch's own start, exact mode, tile size auto unless TILE is set,
# cores divided evenly among the ranks of this node. Each row comes from nstbatch's run record
# (run.record), so the harness runs unchanged on GPU nodes.
#
# Columns: s/iter (wall time per iteration), MP-it/s (output megapixels x iterations per second),
# per rank, speedup and efficiency (strong: t1 / tN and t1 / (N tN); weak: t1 / tN), and the halo
# overhead three ways: the docs/PERFORMANCE.md formula for an interior tile ((Tw + 2H)(Th + 2H) / (Tw Th) - 1), the
# actual grid (sum of window areas over the image, minus 1), and measured (forward + backward
# core-seconds over all ranks against the same image on one rank, minus 1). Phase times: min /
# mean / max over ranks, milliseconds per iteration; a collective phase includes the wait for the
# slowest rank, so its max - min is the load imbalance.
set -euo pipefail
# numbers with a decimal point in any locale (awk, printf, sort -n): a user's LC_ALL becomes LANG
[ -z "${LC_ALL:-}" ] || { export LANG="$LC_ALL"; unset LC_ALL; }; export LC_NUMERIC=C
cd "$(dirname "$0")/.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
ranks=("${@:-1 2 4}")
[ $# -eq 0 ] && ranks=(1 2 4)
cores=$(nproc)
iters=${ITERS:-6}
div=${WIDTH_DIVISOR:-2}
strong=${STRONG:-768x512}
weak=${WEAK:-384x384}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
make -s nstbatch demo-images >/dev/null
out=bench/results/scaling.md
raw=bench/results/scaling.log
: >"$raw"

json() { sed -n "s/.*\"$2\": \"\{0,1\}\([^\",}]*\).*/\1/p" "$1" | head -n 1; }
phase() { sed -n "s/.*\"$2\": {\"min\": \([^,]*\), \"mean\": \([^,]*\), \"max\": \([^}]*\)}.*/\1 \2 \3/p" "$1"; }

# run NAME RANKS W H: one render; echoes the record path
run() {
  local name=$1 n=$2 w=$3 h=$4 threads over=""
  threads=$(( cores / n )); [ "$threads" -lt 1 ] && threads=1
  [ "$n" -gt "$cores" ] && over="--oversubscribe"
  local args=(configs/demo.ini --set output.width="$w" --set output.height="$h" --set optim.method=adam --set optim.iterations="$iters"
              --set model.random_width_divisor="$div" --set run.threads="$threads" --set run.print_every=0
              --set output.path="$T/$name.png" --set run.record="$T/$name.json")
  [ -n "${TILE:-}" ] && args+=(--set tiling.tile_size="$TILE")
  { echo "### $name: mpirun $over --bind-to none -np $n nstbatch ${args[*]}"
    mpirun $over --bind-to none -np "$n" ./nstbatch "${args[@]}" -q 2>&1
    cat "$T/$name.json"; } >>"$raw"
  echo "$T/$name.json"
}

# fb RECORD: forward + backward core-seconds per iteration over all ranks (mean x ranks x threads)
fb() {
  local n th f b
  n=$(json "$1" ranks) th=$(json "$1" threads)
  f=$(phase "$1" forward | awk '{print $2}')
  b=$(phase "$1" backward | awk '{print $2}')
  awk -v n="$n" -v th="$th" -v f="$f" -v b="$b" 'BEGIN { print n * th * (f + b) }'
}

row() { # KIND N REC T1 FB1
  local kind=$1 n=$2 rec=$3 t1=$4 fb1=$5
  local t mp tile halo over
  t=$(json "$rec" seconds_per_iteration)
  mp=$(awk -v w="$(json "$rec" width)" -v h="$(json "$rec" height)" 'BEGIN { print w * h / 1e6 }')
  tile=$(json "$rec" tile_w)x$(json "$rec" tile_h) halo=$(json "$rec" halo)
  over=$([ "$n" -gt "$cores" ] && echo " (oversubscribed)" || true)
  awk -v kind="$kind" -v n="$n" -v t="$t" -v mp="$mp" -v t1="$t1" -v fb="$(fb "$rec")" -v fb1="$fb1" \
      -v tiles="$(json "$rec" tiles)" -v tw="$(json "$rec" tile_w)" -v th="$(json "$rec" tile_h)" -v halo="$halo" \
      -v grid="$(json "$rec" halo_overhead)" -v over="$over" \
      -v w="$(json "$rec" width)" -v h="$(json "$rec" height)" 'BEGIN {
        speed = t1 / t; eff = kind == "strong" ? t1 / (n * t) : t1 / t
        formula = (tw + 2 * halo) * (th + 2 * halo) / (tw * th) - 1
        measured = kind == "strong" ? sprintf("%.0f%%", 100 * (fb / fb1 - 1)) : "-"
        formula_s = tiles > 1 ? sprintf("%.0f%%", 100 * formula) : "-"
        printf "| %s%s | %dx%d | %.3f | %d x %dx%d px | %.4f | %.3f | %.3f | %.2f | %.0f%% | %s | %.0f%% | %s |\n", n, over, w, h, mp,
               tiles, tw, th, t, mp / t, mp / t / n, speed, 100 * eff, formula_s, 100 * grid, measured }'
}

phases_row() { # N REC
  local p line=""
  for p in exchange forward gram_reduce backward reduce optimiser; do
    line="$line | $(phase "$2" "$p" | awk '{ printf "%.1f / %.1f / %.1f", 1e3 * $1, 1e3 * $2, 1e3 * $3 }')"
  done
  echo "| $1$line |"
}

{
  echo "# Scaling over MPI ranks"
  echo
  echo "Command: \`bench/scaling.sh ${ranks[*]}\` (make bench-scaling), $(date -u +%Y-%m-%d). Machine: $(lscpu | sed -n 's/^Model name: *//p'), $cores cores, CPU backend;"
  echo "random VGG-19 at width 1/$div, $iters iterations, exact mode, tile size ${TILE:-auto}, cores split evenly among ranks."
  echo "Rank counts above $cores share cores (oversubscribed): their timings measure correctness and overheads, not speed."
  echo
} >"$out"

for kind in strong weak; do
  t1="" fb1=""
  rows=() prows=()
  for n in "${ranks[@]}"; do
    if [ "$kind" = strong ]; then
      w=${strong%x*} h=${strong#*x}
    else # the image grows with the ranks: width doubles first, then height
      bw=${weak%x*} bh=${weak#*x} w=$bw h=$bh m=1
      while [ $((m * 2)) -le "$n" ]; do if [ $(( w / bw )) -le $(( h / bh )) ]; then w=$((w * 2)); else h=$((h * 2)); fi; m=$((m * 2)); done
    fi
    rec=$(run "${kind}_$n" "$n" "$w" "$h")
    if [ -z "$t1" ]; then t1=$(json "$rec" seconds_per_iteration); fb1=$(fb "$rec"); fi
    rows+=("$(row "$kind" "$n" "$rec" "$t1" "$fb1")")
    prows+=("$(phases_row "$n" "$rec")")
    echo "$kind $n ranks: $(json "$rec" seconds_per_iteration) s/iter" >&2
  done
  {
    echo "## ${kind^} scaling"
    echo
    echo "| ranks | image | MP | tiles | s/iter | MP-it/s | MP-it/s/rank | speedup | efficiency | halo (formula) | halo (grid) | halo (measured) |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
    printf '%s\n' "${rows[@]}"
    echo
    echo "Phase times, ms per iteration, min / mean / max over ranks:"
    echo
    echo "| ranks | halo exchange | forward | Gram allreduce | backward | loss reduce | optimiser |"
    echo "|---|---|---|---|---|---|---|"
    printf '%s\n' "${prows[@]}"
    echo
  } >>"$out"
done
echo "Raw output and run records: bench/results/scaling.log" >>"$out"
cat "$out"

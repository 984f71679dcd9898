#!/usr/bin/env bash
# bench/dryrun_accuracy.sh: how close --dry-run's time estimate comes to the real render (make
# bench-dryrun). For each case, the dry run and the real run one after the other, REPS times
# (the machine is shared: the median ratio is the figure): the demo (one level), a 2048 px
# two-level pyramid (random VGG-19 at width 1/4) and the demo on 2 ranks with 128 px tiles. The
# estimate is --dry-run's "estimate: about N s" line, the real time the run record's levels.
# Writes bench/results/dryrun.md. (tests/test_dryrun.sh only holds the estimate within a factor of
# 3, which no busy machine breaks; this is the measurement.)
set -euo pipefail
# numbers with a decimal point in any locale (awk, printf, sort -n): a user's LC_ALL becomes LANG
[ -z "${LC_ALL:-}" ] || { export LANG="$LC_ALL"; unset LC_ALL; }; export LC_NUMERIC=C
cd "$(dirname "$0")/.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
make -s nstbatch demo-images >/dev/null
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
reps=${REPS:-3}
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
levels_seconds() { /usr/bin/python3 -c 'import json,sys; print(sum(l["seconds"] for l in json.load(open(sys.argv[1]))["levels"]))' "$1"; }
cases=("demo|1|"
       "pyramid 2048 px, 2 levels|1|--set output.size=2048 --set pyramid.levels=2 --set pyramid.iterations=12,6"
       "demo, 2 ranks, 128 px tiles|2|--set tiling.tile_size=128")
rows=()
for c in "${cases[@]}"; do
  IFS='|' read -r name ranks args <<<"$c"
  : >"$T/ratios"
  for ((r = 0; r < reps; r++)); do
    # shellcheck disable=SC2086
    e=$(mpirun --oversubscribe --bind-to none -np "$ranks" ./nstbatch configs/demo.ini --set run.device=cpu --set output.path="$T/o.png" \
          $args --dry-run 2>&1 | sed -n 's/^estimate: about \([0-9.]*\) s for .*/\1/p')
    # shellcheck disable=SC2086
    mpirun --oversubscribe --bind-to none -np "$ranks" ./nstbatch configs/demo.ini --set run.device=cpu --set output.path="$T/o.png" \
      --set run.record="$T/r.json" $args -q
    real=$(levels_seconds "$T/r.json")
    echo "$e $real" >>"$T/pairs"
    awk -v e="$e" -v r="$real" 'BEGIN { printf "%.3f\n", e / r }' >>"$T/ratios"
  done
  rows+=("| $name | $ranks | $(tail -n "$reps" "$T/pairs" | awk '{ printf "%s%s / %.1f", (NR > 1 ? ", " : ""), $1, $2 }') | $(median <"$T/ratios") |")
done
{
  echo "# Dry run: the estimate against the render"
  echo
  echo "\`make bench-dryrun\` (bench/dryrun_accuracy.sh), $(date -u +%Y-%m-%d), $(./nstbatch --version | head -n 1);"
  echo "$(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores, best vector extension: $(for f in avx512_bf16 avx512f avx2; do grep -qw $f /proc/cpuinfo && { echo $f; break; }; done)."
  echo "Each case: \`--dry-run\`, then the render, $reps times; estimate / render seconds (the run record's levels)."
  echo
  echo "| case | ranks | estimate / real s, per round | median estimate / real |"
  echo "|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
} | tee bench/results/dryrun.md

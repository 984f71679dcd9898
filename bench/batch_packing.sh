#!/usr/bin/env bash
# bench/batch_packing.sh: what one batch saves against one run per image (make bench-batch).
#
# N small jobs (the demo's images at 256x192 with varied style weights, random VGG-19 at width
# 1/4, ITERS Adam iterations, 8-bit PNG) on 2 ranks of one thread, three ways:
#   loop    - a shell loop of `mpirun -np 2 nstbatch` per job (what users write today): every job
#             starts MPI, loads the network and tiles its image over both ranks;
#   batch   - one `mpirun -np 2` with batch.pack_megapixels = 0: every job on both ranks, in turn;
#   packed  - one `mpirun -np 2` with batch.group_ranks = 1: two groups of one rank, each rendering
#             whole jobs side by side (no halos, no per-iteration collectives between ranks).
# Writes bench/results/batch_packing.md.
set -euo pipefail
# numbers with a decimal point in any locale (awk, printf, sort -n): a user's LC_ALL becomes LANG
[ -z "${LC_ALL:-}" ] || { export LANG="$LC_ALL"; unset LC_ALL; }; export LC_NUMERIC=C
cd "$(dirname "$0")/.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
make -s nstbatch demo-images >/dev/null
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
N=${JOBS:-8} iters=${ITERS:-50}
cat >"$T/base.ini" <<INI
[content]
path = $PWD/configs/demo/content.png
[style]
path = $PWD/configs/demo/style.png
[output]
width = 256
height = 192
overwrite = true
preview = 0
[model]
random_width_divisor = 4
[optim]
iterations = $iters
[run]
threads = 1
print_every = 0
INI
cp "$T/base.ini" "$T/batch.ini"
for i in $(seq 1 "$N"); do printf '\n[job.j%d]\noutput.path = %s/b%d.png\nstyle.weight = %d\n' "$i" "$T" "$i" $((500 * i)) >>"$T/batch.ini"; done
now() { date +%s.%N; }
t0=$(now)
for i in $(seq 1 "$N"); do
  mpirun --bind-to none -np 2 ./nstbatch "$T/base.ini" --set output.path="$T/l$i.png" --set style.weight=$((500 * i)) -q 2>/dev/null
done
t1=$(now)
mpirun --bind-to none -np 2 ./nstbatch "$T/batch.ini" --set batch.pack_megapixels=0 >"$T/batch.log" 2>&1
t2=$(now)
mpirun --bind-to none -np 2 ./nstbatch "$T/batch.ini" --set batch.group_ranks=1 >"$T/packed.log" 2>&1
t3=$(now)
loop=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
batch=$(awk -v a="$t1" -v b="$t2" 'BEGIN { printf "%.2f", b - a }')
packed=$(awk -v a="$t2" -v b="$t3" 'BEGIN { printf "%.2f", b - a }')
grep -q "$N done, 0 failed" "$T/batch.log" && grep -q "$N done, 0 failed" "$T/packed.log"
{
  echo "# Batch packing"
  echo
  echo "Command: \`make bench-batch\` (bench/batch_packing.sh), $(date -u +%Y-%m-%d), $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores,"
  echo "$(./nstbatch --version | head -n 1), $(mpirun --version | head -n 1)."
  echo "$N jobs: the demo at 256x192, random VGG-19 at width 1/4, $iters Adam iterations, style.weight 500..$((500 * N)); 2 ranks of 1 thread."
  echo
  echo "| way | wall s | s per job | vs loop |"
  echo "|---|---|---|---|"
  for r in "loop $loop" "batch $batch" "packed $packed"; do
    read -r name s <<<"$r"
    echo "| $name | $s | $(awk -v s="$s" -v n="$N" 'BEGIN { printf "%.2f", s / n }') | $(awk -v s="$s" -v l="$loop" 'BEGIN { printf "%.2fx", l / s }') |"
  done
  echo
  echo "loop: one \`mpirun -np 2 nstbatch\` per job; batch: one run, every job on both ranks (\`batch.pack_megapixels = 0\`);"
  echo "packed: one run, two groups of one rank rendering whole jobs side by side (\`batch.group_ranks = 1\`)."
  echo
  echo "The packed run's summary:"
  echo
  echo '```'
  sed -n '/^batch:   [0-9]* jobs:/,$p' "$T/packed.log" | grep -v '^\['
  echo '```'
} >bench/results/batch_packing.md
cat bench/results/batch_packing.md

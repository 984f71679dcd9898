#!/usr/bin/env bash
# bench/cpu_iteration.sh: seconds per Gatys iteration of nstbatch's CPU backend against the same
# iteration in PyTorch on the CPU, on this machine, in the same run (make bench).
#
# Both sides: the full-width seeded random VGG-19 (nstbatch --make-weights random, seed 1), the
# demo's content and style images at the same sizes, content relu4_2, style relu1_1..relu5_1,
# relative losses, TV, Adam, max pooling, fp32, the same number of threads (all cores).
# Timing: per iteration, median after two warm-up iterations. Needs PyTorch, h5py and Pillow
# (scripts/install-deps.sh --dev). Writes bench/results/cpu_iteration.md and the raw log.
set -euo pipefail
cd "$(dirname "$0")/.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
threads=${THREADS:-$(nproc)}
iters=${ITERS:-12}
PY=/usr/bin/python3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
make -s nstbatch demo-images >/dev/null
./nstbatch --make-weights random "$T/w.h5" --seed 1 >/dev/null
raw=bench/results/cpu_iteration.log
: >"$raw"
rows=()
for size in 256x192 512x384; do
  W=${size%x*} H=${size#*x}
  log=$(OMP_NUM_THREADS=$threads ./nstbatch configs/demo.ini --set model.weights="$T/w.h5" \
        --set output.width="$W" --set output.height="$H" --set optim.iterations="$iters" \
        --set run.print_every=1 --set output.path="$T/out.png" --set run.threads="$threads" 2>&1)
  printf '### nstbatch %s\n%s\n' "$size" "$log" >>"$raw"
  style_size=$(sed -n 's/^style: .* -> \([0-9]*x[0-9]*\)$/\1/p' <<<"$log")
  # rows "iteration loss content style tv s/iter MPit/s ETA": the s/iter of rows 3.. (after two warm-ups)
  nst=$(awk '$1 ~ /^[0-9]+$/ && NF >= 6 && $1 >= 3 && $6 ~ /^[0-9.]+$/ { print $6 }' <<<"$log" | sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }')
  best=""
  for cl in "" --channels-last; do
    out=$($PY bench/torch_gatys.py --weights "$T/w.h5" --content configs/demo/content.png --style configs/demo/style.png \
          --size "$size" --style-size "$style_size" --iters "$iters" --threads "$threads" $cl)
    printf '### pytorch %s %s\n%s\n' "$size" "$cl" "$out" >>"$raw"
    s=$($PY -c "import json,sys; print('%.4f' % json.loads(sys.argv[1])['s_per_iter_median'])" "$out")
    if [ -z "$best" ] || awk -v a="$s" -v b="$best" 'BEGIN { exit !(a < b) }'; then best=$s; best_cl=${cl:-NCHW}; fi
  done
  ratio=$(awk -v t="$best" -v n="$nst" 'BEGIN { printf "%.2f", t / n }')
  mpi=$(awk -v n="$nst" -v w="$W" -v h="$H" 'BEGIN { printf "%.3f", w * h / 1e6 / n }')
  gflops=$(awk -v n="$nst" -v w="$W" -v h="$H" 'BEGIN { printf "%.0f", w * h * 1.514e6 / n / 1e9 }')
  rows+=("| $size (style $style_size) | $nst | $best (${best_cl#--}) | **${ratio}x** | $mpi | $gflops |")
  echo "$size: nstbatch $nst s/iter, PyTorch $best s/iter ($best_cl): PyTorch/nstbatch = $ratio"
done
{
  echo "# CPU iteration: nstbatch vs PyTorch"
  echo
  echo "Command: \`make bench\` (bench/cpu_iteration.sh), $(date -u +%Y-%m-%d), $iters timed iterations, median after 2 warm-ups."
  echo
  echo "Machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores ($threads threads used), $(free -g | awk '/Mem:/ {print $2}') GiB;"
  echo "nstbatch $(./nstbatch --version | head -n1 | cut -d' ' -f2) with oneDNN $(grep -h 'define DNNL_VERSION_\(MAJOR\|MINOR\|PATCH\)' /usr/include/oneapi/dnnl/dnnl_version.h | awk '{printf "%s%s", s, $3; s="."}');"
  echo "PyTorch $($PY -c 'import torch; print(torch.__version__)') (Debian python3-torch; its CPU convolutions are oneDNN too)."
  echo
  echo "Network: full-width random VGG-19 to relu5_1 (seed 1); content relu4_2, style relu1_1..relu5_1, TV; Adam; fp32."
  echo "PyTorch column: the faster of default (NCHW) and channels_last memory formats."
  echo
  echo "| output | nstbatch s/iter | PyTorch s/iter | PyTorch / nstbatch | megapixel-it/s | GFLOP/s (1.514 MFLOP/px) |"
  echo "|---|---|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
  echo
  echo "Raw output: bench/results/cpu_iteration.log"
} >bench/results/cpu_iteration.md
cat bench/results/cpu_iteration.md

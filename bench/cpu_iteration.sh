#!/usr/bin/env bash
# bench/cpu_iteration.sh: one Gatys iteration on the CPU, nstbatch in fp32 and bf16 against PyTorch in
# fp32, bf16 autocast and bf16 autocast + channels_last, on this machine, in the same run (make bench).
#
# Every side: the full-width seeded random VGG-19 (nstbatch --make-weights random, seed 1), the
# demo's content and style pictures at the same sizes, content relu4_2, style relu1_1..relu5_1,
# relative losses, TV, Adam, max pooling, the same number of threads (all cores). Timing: per
# iteration, the median after two warm-up iterations; the machine is shared, so every variant runs
# ROUNDS times, interleaved, and the median of the rounds is reported. Memory: the process's peak resident set
# (setup included, on both sides), and for nstbatch the peak of its backend buffers (its memory
# model). The limit an iteration can reach here: the same 13 convolutions alone, forward and
# backward-data, through nstbatch's own ops (build/bench/conv_layers). Where the time goes: one
# bf16 run with NSTBATCH_PROFILE=1 (per-op seconds).
#
#   SIZES="512x384 1024x768" ITERS=8 ROUNDS=3 THREADS=$(nproc) bench/cpu_iteration.sh
#
# Needs PyTorch, h5py and Pillow (scripts/install-deps.sh --dev). Writes bench/results/cpu_iteration.md
# and the raw log bench/results/cpu_iteration.log.
set -euo pipefail
cd "$(dirname "$0")/.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
threads=${THREADS:-$(nproc)}
iters=${ITERS:-8}
rounds=${ROUNDS:-3}
sizes=${SIZES:-"512x384 1024x768"}
PY=/usr/bin/python3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
make -s nstbatch demo-images build/bench/conv_layers >/dev/null
./nstbatch --make-weights random "$T/w.h5" --seed 1 >/dev/null
raw=bench/results/cpu_iteration.log
: >"$raw"
median() { sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
num() { sed -n "s/.*\"$1\": \([0-9.e+-]*\).*/\1/p" "$2" | head -n 1; }
gflops() { awk -v s="$1" -v px="$2" 'BEGIN { printf "%.0f", px * 1.514e6 / s / 1e9 }'; }
mib() { awk -v b="$1" 'BEGIN { printf "%.0f", b / 1048576 }'; }

declare -A S MEM RSS R # R[key,size]: the rounds' medians, space-separated
run_round() {
  local size=$1 W=${1%x*} H=${1#*x} p v log conv out args
  # ---- nstbatch -------------------------------------------------------------------------------
  for p in fp32 bf16; do
    log=$(OMP_NUM_THREADS=$threads ./nstbatch configs/demo.ini --set model.weights="$T/w.h5" --set output.width="$W" \
          --set output.height="$H" --set optim.iterations="$iters" --set run.print_every=1 --set output.path="$T/out.png" \
          --set run.threads="$threads" --set run.precision=$p --set run.record="$T/rec.json" 2>&1)
    printf '### nstbatch %s %s\n%s\n' "$p" "$size" "$log" >>"$raw"
    style_size=$(sed -n 's/^style: .* -> \([0-9]*x[0-9]*\)$/\1/p' <<<"$log")
    # rows "iteration loss content style tv s/iter MPit/s ETA": rows 3.. (after two warm-ups), not the last (no step)
    R[nst_$p,$size]+=" $(awk -v n="$iters" '$1 ~ /^[0-9]+$/ && NF >= 6 && $1 >= 3 && $1 < n && $6 ~ /^[0-9.]+$/ { print $6 }' <<<"$log" | median)"
    MEM[nst_$p,$size]=$(num peak_bytes_max "$T/rec.json")
    RSS[nst_$p,$size]=$(num rss_peak_bytes_max "$T/rec.json")
  done
  # ---- the limit: the convolutions alone ------------------------------------------------------
  conv=$(OMP_NUM_THREADS=$threads build/bench/conv_layers --device cpu --precision bf16 --size "$size" --reps 5 2>/dev/null)
  printf '### conv_layers bf16 %s\n%s\n' "$size" "$conv" >>"$raw"
  R[conv,$size]+=" $(awk -F'|' '/\*\*all 13\*\*/ { print ($6 + $8) / 1000 }' <<<"$conv")"
  # ---- PyTorch --------------------------------------------------------------------------------
  for v in fp32 bf16 bf16cl; do
    args=""
    [ "$v" != fp32 ] && args="--bf16"
    [ "$v" = bf16cl ] && args="--bf16 --channels-last"
    out=$($PY bench/torch_gatys.py --weights "$T/w.h5" --content configs/demo/content.png --style configs/demo/style.png \
          --size "$size" --style-size "$style_size" --iters "$iters" --threads "$threads" $args)
    printf '### pytorch %s %s\n%s\n' "$v" "$size" "$out" >>"$raw"
    R[pt_$v,$size]+=" $($PY -c "import json,sys; print('%.4f' % json.loads(sys.argv[1])['s_per_iter_median'])" "$out")"
    RSS[pt_$v,$size]=$($PY -c "import json,sys; print(json.loads(sys.argv[1])['peak_bytes'])" "$out")
  done
}
for r in $(seq "$rounds"); do
  for size in $sizes; do run_round "$size"; done
done
for size in $sizes; do
  for k in nst_fp32 nst_bf16 conv pt_fp32 pt_bf16 pt_bf16cl; do S[$k,$size]=$(tr ' ' '\n' <<<"${R[$k,$size]}" | grep . | median); done
  echo "$size: nstbatch fp32 ${S[nst_fp32,$size]}, bf16 ${S[nst_bf16,$size]}; PyTorch fp32 ${S[pt_fp32,$size]}, bf16 ${S[pt_bf16,$size]}, bf16+channels_last ${S[pt_bf16cl,$size]} s/iter; convolutions alone ${S[conv,$size]} s (rounds:${R[nst_bf16,$size]} /${R[pt_bf16cl,$size]})"
done

# ---- where the time goes: per-op seconds of one bf16 run at the first size ----------------------------
first=${sizes%% *}
prof=$(NSTBATCH_PROFILE=1 OMP_NUM_THREADS=$threads ./nstbatch configs/demo.ini --set model.weights="$T/w.h5" --set output.width="${first%x*}" \
       --set output.height="${first#*x}" --set optim.iterations="$iters" --set run.print_every=0 --set output.path="$T/out.png" \
       --set run.threads="$threads" --set run.precision=bf16 2>&1 | sed -n '/^profile:/,$p')
printf '### profile bf16 %s\n%s\n' "$first" "$prof" >>"$raw"
# group the rows: op name (first word) -> seconds
profile_table=$(awk 'NR > 2 { t[$1] += $(NF - 1); all += $(NF - 1) } END { for (k in t) printf "| %s | %.3f | %.1f %% |\n", k, t[k], 100 * t[k] / all }' <<<"$prof" | sort -t'|' -k3 -g -r)

row() { # VARIANT-KEY LABEL SIZE
  local k=$1 label=$2 size=$3 px=$((${3%x*} * ${3#*x}))
  local s=${S[$k,$size]} rss=${RSS[$k,$size]:-} mem=${MEM[$k,$size]:-}
  printf '| %s | %s | %.3f | %s | %s | %s |\n' "$label" "$s" "$(awk -v s="$s" -v p="$px" 'BEGIN { print p / 1e6 / s }')" "$(gflops "$s" "$px")" \
    "$(mib "$rss")" "${mem:+$(mib "$mem")}"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
{
  echo "# CPU iteration: nstbatch fp32 and bf16 against PyTorch"
  echo
  echo "Command: \`make bench\` (bench/cpu_iteration.sh), $(date -u +%Y-%m-%d), $iters iterations, median of those after 2 warm-ups;"
  echo "every variant $rounds times, interleaved, the median of the rounds (the machine is shared: the rounds are in the raw log)."
  echo
  echo "Machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores ($threads threads used), $(grep -o 'avx512_bf16' /proc/cpuinfo | head -n 1 || echo 'no avx512_bf16'), $(free -g | awk '/Mem:/ {print $2}') GiB;"
  echo "nstbatch $(./nstbatch --version | head -n1 | cut -d' ' -f2) with oneDNN $(grep -h 'define DNNL_VERSION_\(MAJOR\|MINOR\|PATCH\)' /usr/include/oneapi/dnnl/dnnl_version.h | awk '{printf "%s%s", s, $3; s="."}');"
  echo "PyTorch $($PY -c 'import torch; print(torch.__version__)') (Debian python3-torch; its CPU convolutions are the same oneDNN)."
  echo
  echo "Network: full-width random VGG-19 to relu5_1 (seed 1); content relu4_2, style relu1_1..relu5_1, TV; Adam."
  echo "nstbatch bf16: activations and their gradients in bf16, fp32 accumulation, the network input, Gram sums,"
  echo "losses and Adam in fp32/fp64. PyTorch bf16: autocast (convolutions and the Gram matmuls in bf16)."
  echo "GFLOP/s: 1.514 MFLOP per pixel per iteration (direct convolutions forward and backward-data, Gram forward and backward)."
  echo "Peak RSS: the process's peak resident set, setup included; backend: nstbatch's peak of backend buffers (its memory model)."
  for size in $sizes; do
    echo
    echo "### $size"
    echo
    echo "| variant | s/iter | megapixel-it/s | GFLOP/s | peak RSS MiB | backend MiB |"
    echo "|---|---|---|---|---|---|"
    row nst_fp32 "nstbatch fp32" "$size"
    row nst_bf16 "**nstbatch bf16**" "$size"
    row pt_fp32 "PyTorch fp32" "$size"
    row pt_bf16 "PyTorch bf16 autocast" "$size"
    row pt_bf16cl "PyTorch bf16 autocast + channels_last" "$size"
    echo
    echo "- nstbatch bf16 against PyTorch bf16 + channels_last: **$(ratio "${S[pt_bf16cl,$size]}" "${S[nst_bf16,$size]}")x**; against nstbatch fp32: **$(ratio "${S[nst_fp32,$size]}" "${S[nst_bf16,$size]}")x** (rounds, s/iter: nstbatch bf16${R[nst_bf16,$size]}; PyTorch bf16 + channels_last${R[pt_bf16cl,$size]})."
    echo "- The 13 convolutions alone (forward + backward-data, bf16, \`conv_layers --size $size\`): ${S[conv,$size]} s, $(gflops "${S[conv,$size]}" $((${size%x*} * ${size#*x}))) GFLOP/s on the iteration's FLOP count: the bf16 iteration spends $(awk -v c="${S[conv,$size]}" -v s="${S[nst_bf16,$size]}" 'BEGIN { printf "%.0f", 100 * c / s }') % of its time in them."
    echo "- Backend memory, bf16 / fp32: $(ratio "${MEM[nst_bf16,$size]}" "${MEM[nst_fp32,$size]}")x ($(awk -v b="${MEM[nst_bf16,$size]}" -v p=$((${size%x*} * ${size#*x})) 'BEGIN { printf "%.0f", b / 1048576 / (p / 1e6) }') MiB per megapixel against $(awk -v b="${MEM[nst_fp32,$size]}" -v p=$((${size%x*} * ${size#*x})) 'BEGIN { printf "%.0f", b / 1048576 / (p / 1e6) }'))."
  done
  set -- $sizes
  if [ $# -ge 2 ]; then
    a=$1 b=$2 dp=$(( ${2%x*} * ${2#*x} - ${1%x*} * ${1#*x} ))
    echo
    echo "Peak RSS per megapixel, the slope between $a and $b (fixed costs such as libraries and weights cancel):"
    echo
    echo "| variant | MiB per megapixel |"
    echo "|---|---|"
    for k in nst_fp32:nstbatch\ fp32 nst_bf16:nstbatch\ bf16 pt_fp32:PyTorch\ fp32 pt_bf16:PyTorch\ bf16 pt_bf16cl:PyTorch\ bf16\ +\ channels_last; do
      key=${k%%:*} label=${k#*:}
      echo "| $label | $(awk -v x="${RSS[$key,$a]}" -v y="${RSS[$key,$b]}" -v d="$dp" 'BEGIN { printf "%.0f", (y - x) / 1048576 / (d / 1e6) }') |"
    done
  fi
  echo
  echo "Where a bf16 iteration's time goes at $first (\`NSTBATCH_PROFILE=1\`, $iters iterations and the setup's forward passes; seconds by op):"
  echo
  echo "| op | seconds | share |"
  echo "|---|---|---|"
  echo "$profile_table"
  echo
  echo "Raw output: bench/results/cpu_iteration.log"
} >bench/results/cpu_iteration.md
cat bench/results/cpu_iteration.md

#!/usr/bin/env bash
# bench/cpu_iteration.sh: one Gatys iteration on the CPU, nstbatch against PyTorch on this machine,
# in the same run (make bench; make bench-avx2 caps both at AVX2).
#
# Every side: the full-width seeded random VGG-19 (nstbatch --make-weights random, seed 1), the
# demo's content and style pictures at the same sizes, content relu4_2, style relu1_1..relu5_1,
# relative losses, TV, Adam, max pooling, the same number of threads (all cores). Variants:
# nstbatch fp32; PyTorch fp32 in NCHW and channels_last (its better one is the yardstick); and
# where the instruction-set level has bf16 (AVX-512): nstbatch bf16, PyTorch bf16 autocast with and
# without channels_last. PyTorch runs on OpenBLAS's OpenMP build where it is installed
# (libopenblas0-openmp; the reference BLAS would make its Gram matmuls 50x slower), and the ceiling
# an fp32 iteration is measured against is OpenBLAS's sgemm on the same threads (torch.mm of two
# 4096 x 4096 matrices); a bf16 one against oneDNN's bf16 matmul the same way (on AMX, its AMX
# kernel: the share of AMX's bf16 peak an iteration reaches). ISA=AVX2 (or SSE41, AVX512_CORE)
# caps both programs: ONEDNN_MAX_CPU_ISA for oneDNN (which both use) and nstbatch's own kernels,
# ATEN_CPU_CAPABILITY for PyTorch's own kernels, OPENBLAS_CORETYPE=Haswell for OpenBLAS; a machine
# with AVX-512 then measures the AVX2 paths (its AVX2 cores are not a Zen 3's: the results name
# the CPU).
#
# Timing: per iteration, the median after two warm-up iterations; the machine is shared, so every
# variant runs ROUNDS times, interleaved, and the median of the rounds is reported. Memory: the
# process's peak resident set (setup included, on both sides), and for nstbatch the peak of its
# backend buffers (its memory model). The limit: the same 13 convolutions alone, forward and
# backward-data, through nstbatch's own ops (build/bench/conv_layers). Where the time goes: two
# runs of nstbatch's best precision with NSTBATCH_PROFILE=1 (per-op milliseconds an iteration, the
# difference of the runs), and the Gram ops alone per style layer (build/bench/gram_layers).
#
#   ISA=AVX2 SIZES="512x384 1024x768" ITERS=8 ROUNDS=3 THREADS=$(nproc) TAG=zen5 bench/cpu_iteration.sh
#
# Needs PyTorch, h5py and Pillow (scripts/install-deps.sh --dev). Writes
# bench/results/cpu_iteration.md (with ISA: cpu_iteration_avx2.md, ...; with TAG: ..._zen5.md, so
# that another CPU's results stand beside these) and the raw log beside it.
set -euo pipefail
# numbers with a decimal point in any locale (awk, printf, sort -n): a user's LC_ALL becomes LANG
[ -z "${LC_ALL:-}" ] || { export LANG="$LC_ALL"; unset LC_ALL; }; export LC_NUMERIC=C
cd "$(dirname "$0")/.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
threads=${THREADS:-$(nproc)}
iters=${ITERS:-8}
rounds=${ROUNDS:-3}
sizes=${SIZES:-"512x384 1024x768"}
isa=${ISA:-}
suffix=${isa:+_$(tr 'A-Z' 'a-z' <<<"$isa")}${TAG:+_$TAG}
out=bench/results/cpu_iteration$suffix.md raw=bench/results/cpu_iteration$suffix.log
PY=/usr/bin/python3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
if [ -n "$isa" ]; then
  export ONEDNN_MAX_CPU_ISA=$isa
  case $isa in SSE41 | AVX | AVX2) export ATEN_CPU_CAPABILITY=$([ "$isa" = AVX2 ] && echo avx2 || echo default) OPENBLAS_CORETYPE=Haswell ;; esac
fi
# PyTorch on OpenBLAS's OpenMP build where installed (Debian's alternatives may point at another)
blas_dir=/usr/lib/x86_64-linux-gnu/openblas-openmp
if [ -e "$blas_dir/libblas.so.3" ]; then PT_ENV=(env LD_LIBRARY_PATH="$blas_dir"); blas="OpenBLAS (OpenMP build)"
else PT_ENV=(env); blas="the system's libblas.so.3 ($(readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3))"; fi
make -s nstbatch demo-images build/bench/conv_layers build/bench/gram_layers >/dev/null
./nstbatch --make-weights random "$T/w.h5" --seed 1 >/dev/null
backend=$(./nstbatch configs/demo.ini --set optim.iterations=0 --set run.device=cpu --set run.precision=fp32 --set output.path="$T/p.png" 2>&1 | sed -n 's/.*backend: \(CPU, [^(]*(.*), [0-9]* threads\?\).*/\1/p' | head -n 1)
bf16=0
./nstbatch configs/demo.ini --set optim.iterations=0 --set run.device=cpu --set run.precision=bf16 --set output.path="$T/p.png" >/dev/null 2>&1 && bf16=1
: >"$raw"
median() { sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
num() { sed -n "s/.*\"$1\": \([0-9.e+-]*\).*/\1/p" "$2" | head -n 1; }
gflops() { awk -v s="$1" -v px="$2" 'BEGIN { printf "%.0f", px * 1.514e6 / s / 1e9 }'; }
mib() { awk -v b="$1" 'BEGIN { printf "%.0f", b / 1048576 }'; }
nst_precs=(fp32) pt_variants=(fp32 fp32cl)
[ $bf16 = 1 ] && nst_precs+=(bf16) pt_variants+=(bf16 bf16cl)

declare -A S MEM RSS R # R[key,size]: the rounds' medians, space-separated
sgemm=()
run_round() {
  local size=$1 W=${1%x*} H=${1#*x} p v log conv res args cp
  # ---- nstbatch -------------------------------------------------------------------------------
  for p in "${nst_precs[@]}"; do
    log=$(OMP_NUM_THREADS=$threads ./nstbatch configs/demo.ini --set model.weights="$T/w.h5" --set output.width="$W" \
          --set output.height="$H" --set optim.method=adam --set optim.iterations="$iters" --set run.print_every=1 --set output.path="$T/out.png" \
          --set run.threads="$threads" --set run.device=cpu --set run.precision=$p --set run.record="$T/rec.json" 2>&1)
    printf '### nstbatch %s %s\n%s\n' "$p" "$size" "$log" >>"$raw"
    style_size=$(sed -n 's/^style: .* -> \([0-9]*x[0-9]*\)$/\1/p' <<<"$log")
    # rows "iteration loss content style tv s/iter MPit/s ETA": rows 3.. (after two warm-ups), not the last (no step)
    R[nst_$p,$size]+=" $(awk -v n="$iters" '$1 ~ /^[0-9]+$/ && NF >= 6 && $1 >= 3 && $1 < n && $6 ~ /^[0-9.]+$/ { print $6 }' <<<"$log" | median)"
    MEM[nst_$p,$size]=$(num peak_bytes_max "$T/rec.json")
    RSS[nst_$p,$size]=$(num rss_peak_bytes_max "$T/rec.json")
  done
  # ---- the limit: the convolutions alone, in nstbatch's best precision ------------------------
  cp=${nst_precs[-1]}
  conv=$(OMP_NUM_THREADS=$threads build/bench/conv_layers --device cpu --precision "$cp" --size "$size" --reps 5 2>/dev/null)
  printf '### conv_layers %s %s\n%s\n' "$cp" "$size" "$conv" >>"$raw"
  R[conv,$size]+=" $(awk -F'|' '/\*\*all 13\*\*/ { print ($6 + $8) / 1000 }' <<<"$conv")"
  # ---- PyTorch --------------------------------------------------------------------------------
  for v in "${pt_variants[@]}"; do
    args=""
    case $v in bf16*) args="--bf16" ;; esac
    case $v in *cl) args="$args --channels-last" ;; esac
    res=$("${PT_ENV[@]}" $PY bench/torch_gatys.py --weights "$T/w.h5" --content configs/demo/content.png --style configs/demo/style.png \
          --size "$size" --style-size "$style_size" --iters "$iters" --threads "$threads" $args)
    printf '### pytorch %s %s\n%s\n' "$v" "$size" "$res" >>"$raw"
    R[pt_$v,$size]+=" $($PY -c "import json,sys; print('%.4f' % json.loads(sys.argv[1])['s_per_iter_median'])" "$res")"
    RSS[pt_$v,$size]=$($PY -c "import json,sys; print(json.loads(sys.argv[1])['peak_bytes'])" "$res")
  done
}
# GEMM GFLOP/s through torch.mm of two 4096 x 4096 matrices on the same threads: in fp32 OpenBLAS's
# sgemm (the fp32 ceiling), in bf16 oneDNN's matmul (PyTorch hands it bf16 products: on AMX its
# AMX kernel, the bf16 ceiling; which one ran is in the results)
gemm_round() { # fp32 | bf16
  "${PT_ENV[@]}" $PY -c '
import sys, time, torch
torch.set_num_threads(int(sys.argv[1]))
dt = torch.bfloat16 if sys.argv[2] == "bf16" else torch.float32
a, b = torch.randn(4096, 4096).to(dt), torch.randn(4096, 4096).to(dt)
for _ in range(2): a @ b
t = time.perf_counter()
for _ in range(5): a @ b
print("%.1f" % (5 * 2 * 4096 ** 3 / (time.perf_counter() - t) / 1e9))' "$threads" "$1"
}
bgemm=() bgemm_impl=
if [ $bf16 = 1 ]; then # the implementation oneDNN picks for the bf16 matmul (ONEDNN_VERBOSE's fifth field)
  bgemm_impl=$(ONEDNN_VERBOSE=1 "${PT_ENV[@]}" $PY -c '
import torch
torch.set_num_threads(int(__import__("sys").argv[1]))
a = torch.ones(256, 256, dtype=torch.bfloat16)
a @ a' "$threads" 2>&1 | awk -F, '$2 == "exec" && $4 == "matmul" { print $5; exit }')
fi
for r in $(seq "$rounds"); do
  sgemm+=("$(gemm_round fp32)")
  [ $bf16 = 1 ] && bgemm+=("$(gemm_round bf16)")
  for size in $sizes; do run_round "$size"; done
done
ceiling=$(printf '%s\n' "${sgemm[@]}" | median)
echo "sgemm ceiling: ${sgemm[*]} GFLOP/s (median $ceiling)" >>"$raw"
bceiling=
if [ $bf16 = 1 ]; then
  bceiling=$(printf '%s\n' "${bgemm[@]}" | median)
  echo "bf16 matmul ceiling (${bgemm_impl:-implementation not reported}): ${bgemm[*]} GFLOP/s (median $bceiling)" >>"$raw"
fi
for size in $sizes; do
  for k in nst_fp32 conv "${pt_variants[@]/#/pt_}" ${nst_precs[1]:+nst_bf16}; do S[$k,$size]=$(tr ' ' '\n' <<<"${R[$k,$size]}" | grep . | median); done
  echo "$size: $(for k in nst_fp32 ${nst_precs[1]:+nst_bf16} "${pt_variants[@]/#/pt_}"; do printf '%s %s  ' "$k" "${S[$k,$size]}"; done)s/iter; convolutions alone ${S[conv,$size]} s"
done

# ---- where the time goes: per-op seconds of an iteration at the first size ----------------------
# Two profiled runs, of 4 and 4 + ITERS iterations: their difference per iteration leaves out what
# runs once (the style targets, the first pass's bounds, first-touch zeroing of new buffers).
first=${sizes%% *} pp=${nst_precs[-1]}
profile_run() {
  NSTBATCH_PROFILE=1 OMP_NUM_THREADS=$threads ./nstbatch configs/demo.ini --set model.weights="$T/w.h5" --set output.width="${first%x*}" \
    --set output.height="${first#*x}" --set optim.method=adam --set optim.iterations="$1" --set run.print_every=0 --set output.path="$T/out.png" \
    --set run.threads="$threads" --set run.device=cpu --set run.precision="$pp" 2>&1 | sed -n '/^profile:/,$p'
}
prof_short=$(profile_run 4) prof=$(profile_run $((4 + iters)))
printf '### profile %s %s, 4 iterations\n%s\n### profile %s %s, %d iterations\n%s\n' "$pp" "$first" "$prof_short" "$pp" "$first" $((4 + iters)) "$prof" >>"$raw"
# the Gram ops alone at the first size, in the same precision (what an iteration does besides convolutions)
gram=$(OMP_NUM_THREADS=$threads build/bench/gram_layers --device cpu --precision "$pp" --size "$first" --reps 7 2>/dev/null)
printf '### gram_layers %s %s\n%s\n' "$pp" "$first" "$gram" >>"$raw"
printf '%s\n' "$prof_short" >"$T/prof_short.log"; printf '%s\n' "$prof" >"$T/prof_long.log"
profile_table=$(bench/profile_table.sh "$T/prof_short.log" "$T/prof_long.log" "$iters")

row() { # VARIANT-KEY LABEL SIZE
  local k=$1 label=$2 size=$3 px=$((${3%x*} * ${3#*x}))
  local s=${S[$k,$size]} rss=${RSS[$k,$size]:-} mem=${MEM[$k,$size]:-}
  printf '| %s | %s | %.3f | %s | %s | %s |\n' "$label" "$s" "$(awk -v s="$s" -v p="$px" 'BEGIN { print p / 1e6 / s }')" "$(gflops "$s" "$px")" \
    "$(mib "$rss")" "${mem:+$(mib "$mem")}"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
best() { awk -v a="$1" -v b="$2" 'BEGIN { print (a < b) ? a : b }'; }
{
  echo "# CPU iteration: nstbatch against PyTorch${isa:+, both capped at $isa}"
  echo
  echo "Command: \`${isa:+ISA=$isa }bench/cpu_iteration.sh\` (\`make bench${isa:+-$(tr 'A-Z' 'a-z' <<<"$isa")}\`), $(date -u +%Y-%m-%d), $iters iterations, median of those after 2 warm-ups;"
  echo "every variant $rounds times, interleaved, the median of the rounds (the machine is shared: the rounds are in the raw log)."
  echo
  echo "Machine: $(lscpu | sed -n 's/^Model name: *//p') (family $(sed -n 's/^cpu family\t*: //p' /proc/cpuinfo | head -n 1), model $(sed -n 's/^model\t*: //p' /proc/cpuinfo | head -n 1)), $(nproc) cores ($threads threads used), flags $(for f in avx512_bf16 avx512f avx2; do grep -qw $f /proc/cpuinfo && { echo "up to $f"; break; }; done), $(free -g | awk '/Mem:/ {print $2}') GiB${isa:+; ONEDNN_MAX_CPU_ISA=$isa (and ATEN_CPU_CAPABILITY, OPENBLAS_CORETYPE to match)};"
  echo "nstbatch $(./nstbatch --version | head -n1 | cut -d' ' -f2): $backend;"
  echo "PyTorch $($PY -c 'import torch; print(torch.__version__)') (Debian python3-torch; its CPU convolutions are the same oneDNN) on $blas."
  echo "Ceiling: OpenBLAS sgemm on $threads threads, **$ceiling GFLOP/s** (rounds: ${sgemm[*]})."
  [ $bf16 = 1 ] && echo "bf16 ceiling: oneDNN's bf16 matmul (\`${bgemm_impl:-not reported}\`) through torch.mm on $threads threads, **$bceiling GFLOP/s** (rounds: ${bgemm[*]})."
  echo
  echo "Network: full-width random VGG-19 to relu5_1 (seed 1); content relu4_2, style relu1_1..relu5_1, TV; Adam."
  [ $bf16 = 1 ] && echo "nstbatch bf16: activations and their gradients in bf16, fp32 accumulation, the network input, Gram sums," &&
    echo "losses and Adam in fp32/fp64. PyTorch bf16: autocast (convolutions and the Gram matmuls in bf16)."
  echo "GFLOP/s: 1.514 MFLOP per pixel per iteration (direct convolutions forward and backward-data, Gram forward and backward)."
  echo "Peak RSS: the process's peak resident set, setup included; backend: nstbatch's peak of backend buffers (its memory model)."
  for size in $sizes; do
    px=$((${size%x*} * ${size#*x}))
    ptf=$(best "${S[pt_fp32,$size]}" "${S[pt_fp32cl,$size]}")
    echo
    echo "### $size"
    echo
    echo "| variant | s/iter | megapixel-it/s | GFLOP/s | peak RSS MiB | backend MiB |"
    echo "|---|---|---|---|---|---|"
    row nst_fp32 "**nstbatch fp32**" "$size"
    [ $bf16 = 1 ] && row nst_bf16 "**nstbatch bf16**" "$size"
    row pt_fp32 "PyTorch fp32" "$size"
    row pt_fp32cl "PyTorch fp32 + channels_last" "$size"
    if [ $bf16 = 1 ]; then
      row pt_bf16 "PyTorch bf16 autocast" "$size"
      row pt_bf16cl "PyTorch bf16 autocast + channels_last" "$size"
    fi
    echo
    echo "- nstbatch fp32 against PyTorch fp32's better layout: **$(ratio "$ptf" "${S[nst_fp32,$size]}")x** (rounds, s/iter: nstbatch fp32${R[nst_fp32,$size]}; PyTorch fp32${R[pt_fp32,$size]}; + channels_last${R[pt_fp32cl,$size]})."
    echo "- Against the ceiling: nstbatch fp32 at $(gflops "${S[nst_fp32,$size]}" $px) GFLOP/s is $(awk -v g="$(gflops "${S[nst_fp32,$size]}" $px)" -v c="$ceiling" 'BEGIN { printf "%.0f", 100 * g / c }') % of OpenBLAS's sgemm; PyTorch fp32's better layout $(awk -v g="$(gflops "$ptf" $px)" -v c="$ceiling" 'BEGIN { printf "%.0f", 100 * g / c }') %."
    if [ $bf16 = 1 ]; then
      echo "- nstbatch bf16 against PyTorch bf16 + channels_last: **$(ratio "${S[pt_bf16cl,$size]}" "${S[nst_bf16,$size]}")x**; against nstbatch fp32: **$(ratio "${S[nst_fp32,$size]}" "${S[nst_bf16,$size]}")x** (rounds, s/iter: nstbatch bf16${R[nst_bf16,$size]}; PyTorch bf16 + channels_last${R[pt_bf16cl,$size]})."
      echo "- Against the bf16 ceiling: nstbatch bf16 at $(gflops "${S[nst_bf16,$size]}" $px) GFLOP/s is $(awk -v g="$(gflops "${S[nst_bf16,$size]}" $px)" -v c="$bceiling" 'BEGIN { printf "%.0f", 100 * g / c }') % of oneDNN's bf16 matmul; PyTorch bf16 + channels_last $(awk -v g="$(gflops "${S[pt_bf16cl,$size]}" $px)" -v c="$bceiling" 'BEGIN { printf "%.0f", 100 * g / c }') %."
      echo "- Backend memory, bf16 / fp32: $(ratio "${MEM[nst_bf16,$size]}" "${MEM[nst_fp32,$size]}")x ($(awk -v b="${MEM[nst_bf16,$size]}" -v p=$px 'BEGIN { printf "%.0f", b / 1048576 / (p / 1e6) }') MiB per megapixel against $(awk -v b="${MEM[nst_fp32,$size]}" -v p=$px 'BEGIN { printf "%.0f", b / 1048576 / (p / 1e6) }'))."
    fi
    echo "- The 13 convolutions alone (forward + backward-data, ${nst_precs[-1]}, \`conv_layers --size $size\`): ${S[conv,$size]} s, $(gflops "${S[conv,$size]}" $px) GFLOP/s on the iteration's FLOP count: the ${nst_precs[-1]} iteration spends $(awk -v c="${S[conv,$size]}" -v s="${S[nst_${nst_precs[-1]},$size]}" 'BEGIN { printf "%.0f", 100 * c / s }') % of its time in them."
  done
  set -- $sizes
  if [ $# -ge 2 ]; then
    a=$1 b=$2 dp=$(( ${2%x*} * ${2#*x} - ${1%x*} * ${1#*x} ))
    echo
    echo "Peak RSS per megapixel, the slope between $a and $b (fixed costs such as libraries and weights cancel):"
    echo
    echo "| variant | MiB per megapixel |"
    echo "|---|---|"
    pairs=("nst_fp32:nstbatch fp32" "pt_fp32:PyTorch fp32" "pt_fp32cl:PyTorch fp32 + channels_last")
    [ $bf16 = 1 ] && pairs+=("nst_bf16:nstbatch bf16" "pt_bf16:PyTorch bf16" "pt_bf16cl:PyTorch bf16 + channels_last")
    for k in "${pairs[@]}"; do
      key=${k%%:*} label=${k#*:}
      echo "| $label | $(awk -v x="${RSS[$key,$a]}" -v y="${RSS[$key,$b]}" -v d="$dp" 'BEGIN { printf "%.0f", (y - x) / 1048576 / (d / 1e6) }') |"
    done
  fi
  echo
  echo "Where a ${pp} iteration's time goes at $first (\`NSTBATCH_PROFILE=1\`: a run of $((4 + iters)) iterations less one of 4, per iteration; by op):"
  echo
  echo "| op | ms per iteration | share | GB/s |"
  echo "|---|---|---|---|"
  echo "$profile_table"
  echo
  echo "The Gram ops alone at $first (${pp}, \`gram_layers --size $first\`; the sums in fixed point, on fp64 multiply-adds rounded down; the backward in fp32 chains):"
  echo
  grep '^|' <<<"$gram"
  echo
  echo "Raw output: $raw"
} >"$out"
cat "$out"

#!/usr/bin/env bash
# bench/bf16_numerics.sh: what bf16 changes in a render, measured (make bench-bf16).
#
# 1. Every image pair (the demo's pictures; Tuebingen + The Starry Night and Golden Gate + The
#    Scream from IMAGES, a folder holding tubingen.jpg, starry_night.jpg, golden_gate.jpg and
#    the_scream.jpg, when given) at SIZE px (long side), random
#    VGG-19 at width 1/4, ITERS Adam iterations (300), in nstbatch fp32 and bf16:
#    the final loss of each and their ratio, and SSIM(bf16 image, fp32 image). For scale, the same
#    SSIM between two fp32 renders whose convolutions round differently (oneDNN's AVX2 kernels:
#    ONEDNN_MAX_CPU_ISA=AVX2), between PyTorch's bf16 autocast and PyTorch fp32 on the same pair,
#    and between nstbatch bf16 and fp32 with average pooling (no max-pooling ties).
# 2. One long bf16 render: LONG_ITERS (1000) iterations at LONG_SIZE px (1024) of the first real
#    pair, full-width random VGG-19: every loss row must be finite.
#
#   SIZE=384 ITERS=300 LONG_SIZE=1024 LONG_ITERS=1000 IMAGES=~/pictures bench/bf16_numerics.sh
#
# Needs PyTorch and tifffile (scripts/install-deps.sh --dev). Writes bench/results/bf16_numerics.md
# and the raw log bench/results/bf16_numerics.log.
set -euo pipefail
# numbers with a decimal point in any locale (awk, printf, sort -n): a user's LC_ALL becomes LANG
[ -z "${LC_ALL:-}" ] || { export LANG="$LC_ALL"; unset LC_ALL; }; export LC_NUMERIC=C
cd "$(dirname "$0")/.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
size=${SIZE:-384} iters=${ITERS:-300} long_size=${LONG_SIZE:-1024} long_iters=${LONG_ITERS:-1000}
images=${IMAGES:-}
PY=/usr/bin/python3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
make -s nstbatch demo-images build/tests/image_diff >/dev/null
./nstbatch --make-weights random "$T/w4.h5" --seed 1 --width-divisor 4 >/dev/null
raw=bench/results/bf16_numerics.log
: >"$raw"
pairs=("demo|configs/demo/content.png|configs/demo/style.png")
for p in "tubingen|tubingen.jpg|starry_night.jpg" "golden_gate|golden_gate.jpg|the_scream.jpg"; do
  IFS='|' read -r name c s <<<"$p"
  [ -f "$images/$c" ] && [ -f "$images/$s" ] && pairs+=("$name|$images/$c|$images/$s")
done

# render NAME CONTENT STYLE ARGS...: T/NAME.tif (16-bit) and its run record; prints the final loss
render() {
  local name=$1 c=$2 s=$3; shift 3
  local log
  log=$(./nstbatch configs/demo.ini --set content.path="$(readlink -f "$c")" --set style.path="$(readlink -f "$s")" \
        --set model.weights="$T/w4.h5" --set output.size="$size" --set optim.method=adam --set optim.iterations="$iters" --set output.bits=16 \
        --set run.print_every=50 --set output.path="$T/$name.tif" --set run.record="$T/$name.json" "$@" 2>&1)
  printf '### %s\n%s\n' "$name" "$log" >>"$raw"
  sed -n 's/.*"last": {"total": \([^,]*\).*/\1/p' "$T/$name.json"
}
ssim() { build/tests/image_diff --ssim "$T/$1.tif" "$T/$2.tif" | awk '{ print $2 }'; }

rows=()
for p in "${pairs[@]}"; do
  IFS='|' read -r name c s <<<"$p"
  l32=$(render "$name-fp32" "$c" "$s" --set run.precision=fp32)
  l16=$(render "$name-bf16" "$c" "$s" --set run.precision=bf16)
  lavx2=$(ONEDNN_MAX_CPU_ISA=AVX2 render "$name-fp32-avx2" "$c" "$s" --set run.precision=fp32)
  a32=$(render "$name-avg-fp32" "$c" "$s" --set run.precision=fp32 --set model.pooling=avg)
  a16=$(render "$name-avg-bf16" "$c" "$s" --set run.precision=bf16 --set model.pooling=avg)
  # PyTorch on the same pair, network and size (its own resize of the inputs)
  wh=$(sed -n 's/.*"width": \([0-9]*\),.*"height": \([0-9]*\),.*/\1x\2/p' "$T/$name-fp32.json" | head -n 1)
  ss=$(sed -n 's/^style: .* -> \([0-9]*x[0-9]*\)$/\1/p' "$raw" | tail -n 1)
  for v in fp32 bf16; do
    $PY bench/torch_gatys.py --weights "$T/w4.h5" --content "$c" --style "$s" --size "$wh" --style-size "$ss" --iters "$iters" \
        --threads "$(nproc)" --channels-last $([ $v = bf16 ] && echo --bf16) --save "$T/$name-pt-$v.tif" >>"$raw"
  done
  ratio=$(awk -v a="$l16" -v b="$l32" 'BEGIN { printf "%.4f", a / b }')
  rows+=("| $name ($wh) | $l32 | $l16 | $ratio | $(ssim "$name-bf16" "$name-fp32") | $(ssim "$name-fp32-avx2" "$name-fp32") | $(ssim "$name-pt-bf16" "$name-pt-fp32") | $(ssim "$name-avg-bf16" "$name-avg-fp32") |")
  echo "${rows[-1]}"
done

# ---- the long render ------------------------------------------------------------------------------
long_row="(no photograph pair: IMAGES not set or without the four pictures; skipped)"
if [ ${#pairs[@]} -gt 1 ]; then
  IFS='|' read -r name c s <<<"${pairs[1]}"
  ./nstbatch --make-weights random "$T/w1.h5" --seed 1 >/dev/null
  start=$(date +%s)
  log=$(./nstbatch configs/demo.ini --set content.path="$(readlink -f "$c")" --set style.path="$(readlink -f "$s")" \
        --set model.weights="$T/w1.h5" --set output.size="$long_size" --set optim.method=adam --set optim.iterations="$long_iters" --set run.print_every=1 \
        --set run.precision=bf16 --set output.path="$T/long.tif" --set run.record="$T/long.json" 2>&1)
  secs=$(( $(date +%s) - start ))
  printf '### long bf16 render\n%s\n' "$log" >>"$raw"
  n=$(awk '$1 ~ /^[0-9]+$/ && NF >= 5' <<<"$log" | wc -l)
  nonfinite=$(awk '$1 ~ /^[0-9]+$/ && NF >= 5 { for (i = 2; i <= 5; i++) if ($i !~ /^[0-9.e+-]+$/ || tolower($i) ~ /nan|inf/) { print; next } }' <<<"$log" | wc -l)
  long_row="$name at $(sed -n 's/.*"width": \([0-9]*\),.*"height": \([0-9]*\),.*/\1x\2/p' "$T/long.json" | head -n 1), full-width random VGG-19, bf16, $long_iters iterations in $secs s: $n loss rows, $nonfinite not finite; $(grep -o 'style loss: .*' <<<"$log")"
  echo "$long_row"
fi

{
  echo "# bf16 numerics: what bf16 changes in a render"
  echo
  echo "Command: \`make bench-bf16\` (bench/bf16_numerics.sh), $(date -u +%Y-%m-%d), $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores."
  echo "Renders: long side $size px, random VGG-19 at width 1/4 (seed 1), content relu4_2, style relu1_1..relu5_1, TV, Adam,"
  echo "$iters iterations, max pooling unless named. Loss: the final total loss (the run record's last.total)."
  echo "SSIM: mean structural similarity of the two images' luminance (tests/image_diff --ssim; 11x11 Gaussian, sigma 1.5)."
  echo
  echo "| pair | fp32 loss | bf16 loss | bf16 / fp32 | SSIM bf16, fp32 | SSIM fp32 AVX2, fp32 AVX-512 | SSIM PyTorch bf16, PyTorch fp32 | SSIM bf16, fp32 (avg pooling) |"
  echo "|---|---|---|---|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
  echo
  echo "Long render: $long_row."
  echo
  echo "Raw output: bench/results/bf16_numerics.log"
} >bench/results/bf16_numerics.md
cat bench/results/bf16_numerics.md

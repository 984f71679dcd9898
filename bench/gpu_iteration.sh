#!/usr/bin/env bash
# bench/gpu_iteration.sh: nstbatch on one GPU against PyTorch on the same GPU in the same run
# (make bench-gpu; on the lent GPU machine through the gpu-bundle, see bench/README.md).
#
#   bench/gpu_iteration.sh [OUT_DIR]          (default bench/results)
#
# Measures, and writes OUT_DIR/gpu_iteration.md with the raw log OUT_DIR/gpu_iteration.log:
#   1. per-layer convolution forward (bias + ReLU) and backward-data TFLOP/s on the VGG-19 shapes of
#      a 1024 px tile, bf16 (bias+ReLU fused into cuDNN's call, and not) and fp32
#      (build/bench/conv_layers: nstbatch's own cuDNN calls);
#   1b. on CUDA, the Gram ops per style layer of a GRAM_SIZE image (build/bench/gram_layers): the sums
#      on cuBLAS's FP64 GEMM and on our own kernel (NSTBATCH_CUDA_GRAM=own), and the backward;
#   2. the whole Gatys iteration, one tile of S x S for S in $SIZES (default 1024 2048 4096; an entry
#      WxH, e.g. 1024x768, is a W x H image): s/iter
#      (rows every ITERS iterations, as a render prints them: the iterations between rows read
#      nothing back and, on a GPU, replay one recorded CUDA graph; the mean of the ITERS before the
#      rows at 2 ITERS and 3 ITERS, their median, with gpu.graphs = true and, on CUDA, with the Gram
#      sums on our own kernel (NSTBATCH_CUDA_GRAM=own), with gpu.graphs = false, with the element
#      passes one element a thread, NSTBATCH_CUDA_VEC8=0, with the Gram sums on a second stream
#      beside the next layers, NSTBATCH_CUDA_OVERLAP=1, and with conv1_1 on our own kernels,
#      NSTBATCH_CUDA_CONV1=own; the run record's replays
#      and host waits), megapixel-
#      iterations/s, MFU (1.514 MFLOP per pixel per iteration over $PEAK_TFLOPS, default the bf16
#      dense peak of an H100/H200: 989.4), the backend's peak bytes per megapixel against the
#      layout's memory model for the same tile (run record: peak_bytes_max, model_peak_bytes_max);
#   3. the same iteration in PyTorch (bench/torch_gatys.py: bf16 autocast, channels_last,
#      cudnn.benchmark, same network shapes, same losses), in each of $VARIANTS (default on CUDA:
#      eager, graph = the whole iteration captured as a CUDA graph, compile = torch.compile
#      reduce-overhead, compile-max = torch.compile max-autotune), each its own process under
#      VARIANT_TIMEOUT seconds (900); the ratio is against the fastest variant that ran, and a
#      variant that did not run says why. A compiled variant first compiles all sizes side by side
#      (PRECOMPILE_S, 300 s at most), filling Inductor's cache (TORCHINDUCTOR_CACHE_DIR) so that its
#      timed run, alone on the GPU, loads its kernels instead of compiling them;
#   3b. where the largest size's iteration goes, op by op (two NSTBATCH_PROFILE=1 runs, 4 and 4 + ITERS
#      iterations, their difference: bench/profile_table.sh);
#   4. the largest single tile nstbatch renders (doubling from 4096, then bisection to 256 px; a
#      try that needed its tiles halved does not count) against the largest image PyTorch fits.
# Both sides use the full-width VGG-19 with seeded random weights (the FLOPs of the real one);
# MODEL_WIDTH=N (1) divides every layer's width on both sides, for the script's plumbing on a CPU
# (tests/test_bench.sh, scripts/gpu-first-contact.sh --cpu: 8): the MFU is then not given.
# BENCH_SECONDS (a budget, as a GPU lease's minutes): the parts run in the order of what they decide,
# each only where enough of the budget is left, and the tables are written whatever was skipped
# (a cell or line says "not run: the bench's budget"): nstbatch at every size (with graphs, then
# with GRAM=own), the PyTorch VARIANTS, nstbatch with CONV1=own and OVERLAP=1, without graphs and with VEC8=0 (what each is worth),
# the profile, the per-layer convolutions, the Gram ops,
# LATE_VARIANTS (PyTorch variants run last, e.g. compile-max's minutes of tuning), the largest tile.
# A PyTorch variant or precompile gets what is left at most. Without BENCH_SECONDS, no bound.
# Knobs: SIZES, ITERS (10), VARIANTS, LATE_VARIANTS, VARIANT_TIMEOUT, PRECOMPILE_S, CONV_LAYERS (1: part 1), GRAM_LAYERS (1: part 1b, on
# CUDA), GRAM_SIZE (2048x1536), GRAM (build/bench/gram_layers), SWITCHES (1 on CUDA), CONV_ALGOS
# (timed: gpu.conv_algorithms of the iteration runs; the choices timed once a shape, kept in one
# gpu.conv_choices file for every run, so the variants meet the same algorithms), PRECISION (bf16; fp32 on the CPU), DEVICE (cuda; cpu runs the script's plumbing on a
# machine without a GPU, as tests/test_bench.sh does), FIND_MAX (1), PROFILE (1), CONV_TILE (1024),
# NST (./nstbatch), CONV (build/bench/conv_layers), PY (python3 with torch), LAUNCH (""), PY_ENV (a command
# put before PY, e.g. "env -u LD_LIBRARY_PATH": PyTorch with its own libraries, not a bundle's),
# KEEP_RECORD (a path: the last size's run record, with the device diagnostics, is copied there).
set -euo pipefail
# numbers with a decimal point in any locale (awk, printf, sort -n): a user's LC_ALL becomes LANG
[ -z "${LC_ALL:-}" ] || { export LANG="$LC_ALL"; unset LC_ALL; }; export LC_NUMERIC=C
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=$(mkdir -p "${1:-$ROOT/bench/results}" && cd "${1:-$ROOT/bench/results}" && pwd)
NST=$(readlink -f "${NST:-$ROOT/nstbatch}")
CONV=$(readlink -f "${CONV:-$ROOT/build/bench/conv_layers}")
GRAM=$(readlink -f "${GRAM:-$ROOT/build/bench/gram_layers}")
PY=${PY:-python3}
PY_ENV=${PY_ENV:-}
LAUNCH=${LAUNCH:-} # e.g. "mpirun -np 1" where a singleton MPI start is not possible
SIZES=$(for S in ${SIZES:-1024 2048 4096}; do case $S in *x*) echo "$S" ;; *) echo "${S}x$S" ;; esac; done) # S: S x S
ITERS=${ITERS:-10}
DEVICE=${DEVICE:-cuda}
MODEL_WIDTH=${MODEL_WIDTH:-1}
case $MODEL_WIDTH in 1 | 2 | 4 | 8 | 16 | 32 | 64) ;; *) echo "gpu_iteration: MODEL_WIDTH=$MODEL_WIDTH: give 1, 2, 4, 8, 16, 32 or 64 (the width divisor)" >&2; exit 2 ;; esac
PRECISION=${PRECISION:-$([ "$DEVICE" = cpu ] && echo fp32 || echo bf16)}
FIND_MAX=${FIND_MAX:-1}
PROFILE=${PROFILE:-1}
CONV_TILE=${CONV_TILE:-1024}
CONV_LAYERS=${CONV_LAYERS:-1}
GRAM_LAYERS=${GRAM_LAYERS:-1}
# the CUDA backend's switches timed (NSTBATCH_CUDA_GRAM=own, CONV1=own, OVERLAP=1, gpu.graphs = false, VEC8=0, part 1b):
# on CUDA; SWITCHES=1 runs them on the CPU too, where they change nothing (tests/test_bench.sh: their
# plumbing, which only a GPU lease would otherwise run)
SWITCHES=${SWITCHES:-$([ "$DEVICE" = cuda ] && echo 1 || echo 0)}
GRAM_SIZE=${GRAM_SIZE:-2048x1536}
CONV_ALGOS=${CONV_ALGOS:-timed} # gpu.conv_algorithms of the whole-iteration runs: the fastest, as PyTorch's cudnn.benchmark
VARIANTS=${VARIANTS:-$([ "$DEVICE" = cpu ] && echo eager || echo eager graph compile compile-max)}
LATE_VARIANTS=${LATE_VARIANTS:-}
VARIANT_TIMEOUT=${VARIANT_TIMEOUT:-900}
PRECOMPILE_S=${PRECOMPILE_S:-300}
BENCH_SECONDS=${BENCH_SECONDS:-0}
BENCH_START=$(date +%s)
# left: seconds of BENCH_SECONDS left (a large number without one); room N: at least N left;
# within N: N, or what is left less 5 s where that is less (for a command's own cap)
left() { [ "$BENCH_SECONDS" -gt 0 ] && echo $((BENCH_START + BENCH_SECONDS - $(date +%s))) || echo 999999; }
room() { [ "$(left)" -ge "$1" ]; }
within() { local l=$(($(left) - 5)); echo $(($1 < l ? $1 : l)); }
# cut_short CAP WANTED: the budget cut CAP (from within WANTED) to nothing or to under 10 s, too
# short to be worth starting (a WANTED under 10 s, the caller's own choice, is kept)
cut_short() { [ "$1" -lt 1 ] || { [ "$1" -lt 10 ] && [ "$1" -lt "$2" ]; }; }
SPENT="not run: the bench's budget (BENCH_SECONDS=$BENCH_SECONDS) was spent"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
raw=$OUT/gpu_iteration.log
: >"$raw"
log() { printf '%s\n' "$*" | tee -a "$raw" >&2; }

gpu="(no GPU: DEVICE=$DEVICE)" driver="-"
if [ "$DEVICE" = cuda ]; then
  IFS=, read -r gpu driver mem < <(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | head -n 1)
  gpu="$gpu ($(echo $mem))" driver=$(echo $driver)
fi
if [ -z "${PEAK_TFLOPS:-}" ]; then
  case "$gpu" in *H100*|*H200*) PEAK_TFLOPS=989.4 ;; *) PEAK_TFLOPS=0 ;; esac
fi
versions=$("$NST" --version 2>&1)
log "### nstbatch --version"$'\n'"$versions"
log "### GPU: $gpu, driver $driver; peak for MFU: $PEAK_TFLOPS TFLOP/s"
torch_ver=$($PY_ENV "$PY" -c 'import torch; print(torch.__version__, "CUDA", torch.version.cuda, "cuDNN", torch.backends.cudnn.version())' 2>&1) ||
  torch_ver="not available in $PY: the PyTorch columns stay empty"
log "### PyTorch $torch_ver"

# ---- the whole iteration's set-up ---------------------------------------------------------------
cat >"$T/bench.ini" <<EOF
[content]
path = $ROOT/configs/demo/content.png
[style]
path = $ROOT/configs/demo/style.png
[output]
path = $T/out.tiff
overwrite = true
preview = 0
[model]
random_width_divisor = $MODEL_WIDTH
[run]
device = $DEVICE
precision = $PRECISION
print_every = 1
EOF
median() { sort -g | awk '{ a[NR] = $1 } END { if (NR) print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
# json_num KEY [FILE]: the number at KEY in FILE (or stdin), its first occurrence
json_num() { sed -n "s/.*\"$1\": \([0-9.eE+-]*\).*/\1/p" "${2:--}" | head -n 1; }
# mp_of WxH: its megapixels
mp_of() { awk -v s="$1" 'BEGIN { split(s, d, "x"); printf "%.4f", d[1] * d[2] / 1e6 }'; }
# nst_run S ITERATIONS [ARGS...]: one tile of S (WxH, or S x S); log in T/run.log, record in T/rec.json; exit status returned
nst_run() {
  local w=${1%x*} h=${1#*x} n=$2
  shift 2
  rm -f "$T/rec.json"
  $LAUNCH "$NST" "$T/bench.ini" --set output.width="$w" --set output.height="$h" --set tiling.tile_size="$((w > h ? w : h))" \
    --set optim.method=adam --set optim.iterations="$n" --set run.record="$T/rec.json" --set gpu.conv_algorithms="$CONV_ALGOS" \
    --set gpu.conv_choices="$T/conv_choices.txt" "$@" >"$T/run.log" 2>&1
}
# in_group SECONDS CMD...: CMD in a session of its own, and the whole session killed after SECONDS
# or when CMD ends: a timed-out compile leaves no Inductor worker behind to load the GPU (or hold the
# output open) while the next runs are timed; CMD's exit status, 124 when it ran over
in_group() {
  local s=$1 pid killer st
  shift
  setsid "$@" &
  pid=$!
  ( trap 'kill $sp; exit 0' TERM # (its sleep ends with it)
    sleep "$s" & sp=$!; wait $sp
    touch "$T/over.$pid"; kill -TERM -- -"$pid"
    sleep 10 & sp=$!; wait $sp
    kill -KILL -- -"$pid" ) >/dev/null 2>&1 &
  killer=$!
  st=0
  wait "$pid" || st=$?
  kill "$killer" 2>/dev/null || true
  wait "$killer" 2>/dev/null || true
  kill -KILL -- -"$pid" 2>/dev/null || true # whatever CMD left running in its session
  [ -e "$T/over.$pid" ] && st=124
  return $st
}
# PyTorch's side: bench/torch_gatys.py --variant V --size S1,S2,... --iters N, one JSON line a size
TORCH=($PY_ENV "$PY" "$ROOT/bench/torch_gatys.py" --random --width-divisor "$MODEL_WIDTH" --device "$DEVICE" $([ "$PRECISION" != bf16 ] || echo --bf16) --channels-last --cudnn-benchmark)
# why_not STATUS OUTPUT: a table cell saying why a variant has no time (its last error line, cut short)
why_not() {
  case $1 in
    124) echo "not run: over VARIANT_TIMEOUT=$VARIANT_TIMEOUT s for all sizes" ;;
    0) echo "no time: the run ended before this size" ;;
    *) echo "failed (exit $1): $(grep -E 'Error|error' <<<"$2" | tail -n 1 | tr '|' '/' | cut -c1-120)" ;;
  esac
}

# ---- 2. nstbatch, every size ----------------------------------------------------------------------
declare -A NSTS GBMP QUIET GRAMS REPLAYS
# switch_spi S LABEL GRAPHS [VAR=VALUE ...]: S's s/iter with a switch of the CUDA backend's set and
# gpu.graphs = GRAPHS (rows as below), its log under LABEL; "-" where it failed, SPENT where no room
switch_spi() {
  local S=$1 label=$2 graphs=$3
  shift 3
  room 15 || { echo "$SPENT"; return; }
  if ( [ $# -eq 0 ] || export "$@"; nst_run "$S" $((3 * ITERS + 1)) --set run.print_every="$ITERS" --set gpu.graphs="$graphs" ); then
    log "### nstbatch $S, $label"$'\n'"$(cat "$T/run.log")"
    rows_spi
  else echo "-"; fi
}
# quiet_line S OWN_GRAM NO_GRAPHS SCALAR OVERLAP OWN_CONV1: the line below the table for size S
quiet_line() { QUIET[$1]="${REPLAYS[$1]}, ${2:--} s/iter with the own Gram sums, ${3:--} without graphs, ${4:--} with the element passes one element a thread, ${5:--} with the Gram sums beside the next layers, ${6:--} with conv1_1 on our own kernels"; }
for S in $SIZES; do
  mp=$(mp_of "$S")
  NSTS[$S]="" GBMP[$S]="-" QUIET[$S]="$SPENT"
  room 15 || continue
  # rows every ITERS iterations, as a render prints them (run.print_every): the iterations between
  # two rows read nothing back (on a GPU they replay one recorded CUDA graph: gpu.graphs); the rows
  # at 2 ITERS and 3 ITERS each time ITERS iterations after the warm-ups (row 0's objective, the
  # recording), one of them a row's; their median
  # progress rows: iteration loss content style tv s/iter MPit/s ETA
  rows_spi() { awk -v a="$((2 * ITERS))" -v b="$((3 * ITERS))" '$1 ~ /^[0-9]+$/ && NF >= 6 && ($1 == a || $1 == b) && $6 ~ /^[0-9.]+$/ { print $6 }' "$T/run.log" | median; }
  if nst_run "$S" $((3 * ITERS + 1)) --set run.print_every="$ITERS" --set gpu.graphs=true; then
    log "### nstbatch $S"$'\n'"$(cat "$T/run.log")"
    NSTS[$S]=$(rows_spi)
    replays="$(json_num replayed "$T/rec.json") of $(json_num quiet_iterations "$T/rec.json") replayed, $(json_num waits_max "$T/rec.json") host waits"
    peak=$(json_num peak_bytes_max "$T/rec.json") model=$(json_num model_peak_bytes_max "$T/rec.json")
    GBMP[$S]=$(awk -v b="$peak" -v m="$mp" -v x="$model" 'BEGIN { printf "%.3f (model %.3f)", b / 1e9 / m, x / 1e9 / m }')
    [ -n "${KEEP_RECORD:-}" ] && cp "$T/rec.json" "$KEEP_RECORD" # the last size's record: its device diagnostics
  else
    log "### nstbatch $S FAILED"$'\n'"$(cat "$T/run.log")"
    QUIET[$S]="failed"
    continue
  fi
  # with the Gram sums on our own kernel (NSTBATCH_CUDA_GRAM=own: a default to flip where faster),
  # for the line below the table, beside the PyTorch peers in what decides; the other switches'
  # worth comes after the peers (2b)
  GRAMS[$S]="-" REPLAYS[$S]=$replays
  [ "$SWITCHES" = 1 ] && GRAMS[$S]=$(switch_spi "$S" NSTBATCH_CUDA_GRAM=own true NSTBATCH_CUDA_GRAM=own)
  quiet_line "$S" "${GRAMS[$S]}"
done

# ---- 3. PyTorch, every variant ------------------------------------------------------------------
# A compiled variant's kernels are first compiled side by side, one process a size, each capped at
# PRECOMPILE_S (or what is left of the budget); its timed run (one process, all sizes, nothing
# else on the GPU) then loads them from Inductor's cache instead of compiling them
export TORCHINDUCTOR_CACHE_DIR=${TORCHINDUCTOR_CACHE_DIR:-$T/inductor} TORCHINDUCTOR_FX_GRAPH_CACHE=1 TORCHINDUCTOR_AUTOGRAD_CACHE=1
declare -A CELL PT PTPEAK PTVAR
precompiled=""
csizes=$(echo $SIZES | tr ' ' ',')
# precompile V: V's kernels for every size, side by side, before its timed run
precompile() {
  local V=$1 cap t0 S
  cap=$(within "$PRECOMPILE_S")
  cut_short "$cap" "$PRECOMPILE_S" && return 0
  t0=$(date +%s)
  for S in $SIZES; do
    { st=0; in_group "$cap" "${TORCH[@]}" --variant "$V" --size "$S" --iters 1 >"$T/pre.$V.$S.log" 2>&1 || st=$?; echo "exit $st" >>"$T/pre.$V.$S.log"; } &
  done
  wait
  for S in $SIZES; do log "### precompile $V.$S"$'\n'"$(tail -n 3 "$T/pre.$V.$S.log")"; done
  precompiled+="$V was first compiled for every size side by side ($(( $(date +%s) - t0 )) s, each capped at $cap s; exit 124 in the log: not finished), filling Inductor's cache; its timed run, alone on the GPU, then loaded the kernels. "
}
# variant V: V's timed run, all sizes in one process, under VARIANT_TIMEOUT (or what is left); its cells
variant() {
  local V=$1 status=0 cap tj S line t
  case $V in compile*) [ "$PRECOMPILE_S" -gt 0 ] && precompile "$V" ;; esac
  cap=$(within "$VARIANT_TIMEOUT")
  if cut_short "$cap" "$VARIANT_TIMEOUT"; then
    for S in $SIZES; do CELL[$V.$S]=$SPENT; done
    return
  fi
  in_group "$cap" "${TORCH[@]}" --variant "$V" --size "$csizes" --iters "$ITERS" >"$T/torch.log" 2>&1 || status=$?
  tj=$(cat "$T/torch.log")
  log "### pytorch $V (exit $status)"$'\n'"$tj"
  for S in $SIZES; do
    line=$(grep -F "\"size\": \"$S\"" <<<"$tj" | tail -n 1 || true)
    t=$(json_num s_per_iter_median <<<"$line")
    if [ -n "$t" ]; then
      CELL[$V.$S]=$(awk -v t="$t" -v w="$(json_num warmup_s <<<"$line")" 'BEGIN { printf "%.4f (%.0f s)", t, w }')
      # the fastest variant that ran is the peer
      if [ -z "${PT[$S]:-}" ] || awk -v a="$t" -v b="${PT[$S]}" 'BEGIN { exit !(a < b) }'; then
        PT[$S]=$t PTPEAK[$S]=$(json_num peak_bytes <<<"$line") PTVAR[$S]=$V
      fi
    elif [ "$status" = 124 ] && [ "$cap" -lt "$VARIANT_TIMEOUT" ]; then
      CELL[$V.$S]="not run: over the $cap s left of the bench's budget (BENCH_SECONDS=$BENCH_SECONDS)"
    else
      CELL[$V.$S]=$(why_not "$status" "$tj")
    fi
  done
}
for V in $VARIANTS; do variant "$V"; done

# ---- 2b. what nstbatch's other switches are worth, every size that ran --------------------------------
# the defaults to flip where faster first: conv1_1 on our own kernels (NSTBATCH_CUDA_CONV1=own: the
# whole iteration, as a render runs them, from the image; the per-layer table times them from the
# network's input) and the Gram sums on a second stream beside the next layers
# (NSTBATCH_CUDA_OVERLAP=1); then without CUDA graphs (gpu.graphs' default) and with the element
# passes one element a thread (NSTBATCH_CUDA_VEC8=0); for the line below the table
for S in $SIZES; do
  [ -n "${NSTS[$S]}" ] && [ "$SWITCHES" = 1 ] || continue
  own1=$(switch_spi "$S" NSTBATCH_CUDA_CONV1=own true NSTBATCH_CUDA_CONV1=own)
  overlap=$(switch_spi "$S" NSTBATCH_CUDA_OVERLAP=1 true NSTBATCH_CUDA_OVERLAP=1)
  quiet_line "$S" "${GRAMS[$S]}" "$(switch_spi "$S" "gpu.graphs = false" false)" "$(switch_spi "$S" NSTBATCH_CUDA_VEC8=0 true NSTBATCH_CUDA_VEC8=0)" \
    "$overlap" "$own1"
done

# ---- 3b. where the largest size's iteration goes ----------------------------------------------------
# two profiled runs, 4 and 4 + ITERS iterations: their difference per iteration (bench/profile_table.sh)
proftable="" PS=""
if [ "$PROFILE" = 1 ] && ! room 30; then
  PS=$SPENT
elif [ "$PROFILE" = 1 ]; then
  PS=$(for S in $SIZES; do W=${S%x*} H=${S#*x}; echo "$((W * H)) $S"; done | sort -n | tail -n 1 | cut -d' ' -f2) # the largest
  if NSTBATCH_PROFILE=1 nst_run "$PS" 4 && cp "$T/run.log" "$T/prof_short.log" && NSTBATCH_PROFILE=1 nst_run "$PS" $((4 + ITERS)); then
    log "### nstbatch profile $PS, 4 and $((4 + ITERS)) iterations"$'\n'"$(sed -n '/^profile:/,$p' "$T/prof_short.log")"$'\n'"$(sed -n '/^profile:/,$p' "$T/run.log")"
    proftable=$("$ROOT/bench/profile_table.sh" "$T/prof_short.log" "$T/run.log" "$ITERS")
  else
    log "### nstbatch profile $PS FAILED"$'\n'"$(cat "$T/run.log")"
  fi
fi

# tool_table CAP LABEL CMD...: CMD's table (its stdout), under CAP seconds; its stderr goes to the raw
# log. Where it fails, one line naming LABEL, its exit status and its last error line instead, and
# that stderr logged (the raw log may not come back: the first contact sends what log writes)
tool_table() {
  local cap=$1 label=$2 t st=0; shift 2
  t=$(timeout "$cap" "$@" 2>"$T/tool.err") || st=$?
  cat "$T/tool.err" >>"$raw"
  if [ "$st" != 0 ]; then
    log "### $label FAILED (exit $st)"$'\n'"$(tail -n 15 "$T/tool.err")"
    t="$label failed (exit $st$([ "$st" = 124 ] && echo ": over its $cap s")): $(grep -v '^ *$' "$T/tool.err" | tail -n 1 | tr '|' '/' | cut -c1-160)"
  fi
  printf '%s\n' "$t"
}

# ---- 1. per-layer convolutions ----------------------------------------------------------------
# bf16 with bias+ReLU fused into cuDNN's call, and with them as a separate kernel
# (NSTBATCH_CUDA_FUSE=0), with the algorithms of cuDNN's heuristics and timed (gpu.conv_algorithms)
conv_tables=""
# and conv1_1 on our own kernels (NSTBATCH_CUDA_CONV1=own: its rows alone, --layers 1)
for run in $([ "$CONV_LAYERS" = 1 ] && echo bf16:1:heuristic bf16:1:timed bf16:0:heuristic bf16:own:heuristic fp32:1:heuristic fp32:1:timed); do
  p=${run%%:*} a=${run##*:} fuse=${run#*:}; fuse=${fuse%:*} conv1=cudnn layers=13
  [ "$fuse" = own ] && fuse=1 conv1=own layers=1
  [ "$DEVICE" = cpu ] && [ "$run" != fp32:1:heuristic ] && continue # the CPU backend computes in fp32 only, chosen by oneDNN
  room 20 || { conv_tables+="conv_layers --precision $p --algorithms $a --layers $layers (NSTBATCH_CUDA_FUSE=$fuse NSTBATCH_CUDA_CONV1=$conv1): $SPENT"$'\n\n'; continue; }
  t=$(NSTBATCH_CUDA_FUSE=$fuse NSTBATCH_CUDA_CONV1=$conv1 tool_table "$(within 120)" "conv_layers --precision $p --algorithms $a" \
      "$CONV" --device "$DEVICE" --precision "$p" --tile "$CONV_TILE" --reps "$ITERS" --algorithms "$a" --layers $layers)
  [ "$fuse" = 0 ] && t=$(sed '1s/$/, bias+ReLU as a separate kernel (NSTBATCH_CUDA_FUSE=0)/' <<<"$t")
  [ "$conv1" = own ] && t=$(sed '1s/$/, conv1_1 on our own kernels (NSTBATCH_CUDA_CONV1=own)/' <<<"$t")
  log "### conv_layers --precision $p --tile $CONV_TILE --algorithms $a --layers $layers (NSTBATCH_CUDA_FUSE=$fuse NSTBATCH_CUDA_CONV1=$conv1)"$'\n'"$t"
  conv_tables+="$t"$'\n\n'
done

# ---- 1b. the Gram ops per style layer ---------------------------------------------------------------
# the five style layers at their resolutions of a GRAM_SIZE image: the sums on cuBLAS's FP64 GEMM
# (the default) and on our own kernel (NSTBATCH_CUDA_GRAM=own), the backward beside them
gram_tables=""
for g in $([ "$GRAM_LAYERS" = 1 ] && [ "$SWITCHES" = 1 ] && echo cublas own); do
  room 15 || { gram_tables+="gram_layers --size $GRAM_SIZE (NSTBATCH_CUDA_GRAM=$g): $SPENT"$'\n\n'; continue; }
  t=$(NSTBATCH_CUDA_GRAM=$g tool_table "$(within 60)" "gram_layers --size $GRAM_SIZE" \
      "$GRAM" --device "$DEVICE" --precision "$PRECISION" --size "$GRAM_SIZE" --reps "$ITERS")
  t=$(sed "1s/\$/ (NSTBATCH_CUDA_GRAM=$g)/" <<<"$t")
  log "### gram_layers --precision $PRECISION --size $GRAM_SIZE (NSTBATCH_CUDA_GRAM=$g)"$'\n'"$t"
  gram_tables+="$t"$'\n\n'
done

# ---- 3c. the variants that go last (LATE_VARIANTS), then the tables' rows ----------------------------
for V in $LATE_VARIANTS; do variant "$V"; done
ALL_VARIANTS="$VARIANTS $LATE_VARIANTS"
rows=() vrows=()
f() { [ -n "$1" ] && awk "BEGIN { printf \"$2\", ($3) }" || echo "-"; }
for S in $SIZES; do
  W=${S%x*} H=${S#*x} nst=${NSTS[$S]} pt=${PT[$S]:-} ptpeak=${PTPEAK[$S]:-} mp=$(mp_of "$S")
  rows+=("| $W x $H | $(f "$nst" %.4f "$nst") | $(f "$nst" %.1f "$mp / ${nst:-1}") | $([ "$MODEL_WIDTH" = 1 ] && f "$nst" %.1f%% "$PEAK_TFLOPS > 0 ? 100 * $mp * 1.514 / ${nst:-1} / $PEAK_TFLOPS : 0" || echo "-") | ${GBMP[$S]} | ${PTVAR[$S]:--} | $(f "$pt" %.4f "$pt") | $(f "$pt" %.1f "$mp / ${pt:-1}") | $(f "$ptpeak" %.3f "${ptpeak:-0} / 1e9 / $mp") | $([ -n "$nst" ] && [ -n "$pt" ] && f 1 **%.2fx** "$pt / $nst" || echo "-") |")
  vrow="| $W x $H |"
  for V in $ALL_VARIANTS; do vrow+=" ${CELL[$V.$S]} |"; done
  vrows+=("$vrow")
done

# ---- 4. the largest tile --------------------------------------------------------------------------
maxrow="not measured (FIND_MAX=0)"
if [ "$FIND_MAX" = 1 ] && [ "$DEVICE" = cuda ] && ! room 60; then
  maxrow=$SPENT
elif [ "$FIND_MAX" = 1 ] && [ "$DEVICE" = cuda ]; then
  fits() { nst_run "$1" 1 && grep -q '"tile_halvings": 0' "$T/rec.json"; }
  lo=0 hi=4096
  while fits $hi; do lo=$hi hi=$((hi * 2)); log "### nstbatch fits $lo"; done
  while [ $((hi - lo)) -gt 256 ]; do
    mid=$(( (lo + hi) / 2 / 256 * 256 ))
    if fits $mid; then lo=$mid; log "### nstbatch fits $mid"; else hi=$mid; log "### nstbatch does not fit $mid: $(grep -m1 'error\|warning' "$T/run.log")"; fi
  done
  tj=$($PY_ENV "$PY" "$ROOT/bench/torch_gatys.py" --random --device cuda $([ "$PRECISION" = bf16 ] && echo --bf16) --channels-last --cudnn-benchmark --find-max 2>&1) || true
  log "### pytorch find-max"$'\n'"$tj"
  ptmax=$(sed -n 's/.*"max_square": \([0-9]*\).*/\1/p' <<<"$tj")
  maxrow="nstbatch $lo x $lo px ($(awk -v s=$lo 'BEGIN { printf "%.1f", s * s / 1e6 }') MP) in one tile; PyTorch ${ptmax:-?} x ${ptmax:-?} px ($(awk -v s=${ptmax:-0} 'BEGIN { printf "%.1f", s * s / 1e6 }') MP)"
fi

{
  echo "# One GPU: nstbatch against PyTorch"
  echo
  echo "Command: \`bench/gpu_iteration.sh\` (make bench-gpu), $(date -u +%Y-%m-%d), SIZES=\"$SIZES\" ITERS=$ITERS PRECISION=$PRECISION DEVICE=$DEVICE$([ "$MODEL_WIDTH" = 1 ] || echo " MODEL_WIDTH=$MODEL_WIDTH")$([ "$BENCH_SECONDS" -gt 0 ] && echo " BENCH_SECONDS=$BENCH_SECONDS (the budget: what did not fit says so)")."
  echo
  echo "GPU: $gpu, driver $driver. MFU against $PEAK_TFLOPS TFLOP/s (bf16 dense)."
  echo
  echo '```'
  echo "$versions"
  echo "PyTorch $torch_ver"
  echo '```'
  echo
  echo "Network: $([ "$MODEL_WIDTH" = 1 ] && echo full-width || echo "1/$MODEL_WIDTH-width") VGG-19 to relu5_1, seeded random weights, on both sides; content relu4_2, style relu1_1..relu5_1, TV, Adam."
  echo "nstbatch: one tile of S x S (no halo), run.precision = $PRECISION. PyTorch: $([ "$PRECISION" = bf16 ] && echo "bf16 autocast" || echo fp32), channels_last, cudnn.benchmark, the fastest of its variants that ran (table below)."
  echo "s/iter: nstbatch with rows every $ITERS iterations (run.print_every), the mean of the $ITERS iterations before the rows at $((2 * ITERS)) and at $((3 * ITERS)) (one in $ITERS reads its loss for its row), their median; PyTorch, the median of $ITERS iterations after 2 warm-ups. MFU: 1.514 MFLOP/px/iteration (docs/PERFORMANCE.md) x MP-it/s over the peak$([ "$MODEL_WIDTH" = 1 ] || echo ", the full network's: none at 1/$MODEL_WIDTH width (MODEL_WIDTH)")."
  echo "GB/MP: peak device bytes (nstbatch: its arena's peak use, run record, and in brackets the layout's memory model for the tile, docs/PERFORMANCE.md; PyTorch: max_memory_allocated) over the tile's megapixels."
  echo
  echo "| tile | nstbatch s/iter | MP-it/s | MFU | GB/MP | fastest PyTorch | s/iter | MP-it/s | GB/MP | PyTorch / nstbatch |"
  echo "|---|---|---|---|---|---|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
  echo
  echo "nstbatch ran with gpu.conv_algorithms = $CONV_ALGOS, the choices kept in one gpu.conv_choices file for all its runs (timed once a shape)."
  echo "nstbatch (gpu.graphs = true in the table)'s iterations between rows (run record: cuda_graphs, host_waits), and its s/iter with NSTBATCH_CUDA_GRAM=own, with gpu.graphs = false, with NSTBATCH_CUDA_VEC8=0, with NSTBATCH_CUDA_OVERLAP=1 and with NSTBATCH_CUDA_CONV1=own:$(for S in $SIZES; do printf ' %s: %s;' "$S" "${QUIET[$S]}"; done)"
  echo
  echo "PyTorch's variants (bench/torch_gatys.py --variant), s/iter (warm-up seconds):"
  echo
  echo "| tile |$(printf ' %s |' $ALL_VARIANTS)"
  echo "|---|$(printf -- '---|%.0s' $ALL_VARIANTS)"
  printf '%s\n' "${vrows[@]}"
  echo
  [ -n "$precompiled" ] && echo "${precompiled}The seconds in brackets are each timed size's warm-ups (compiling or loading, capturing)." && echo
  [ "$PS" = "$SPENT" ] && echo "Where an iteration's time goes (NSTBATCH_PROFILE=1): $SPENT." && echo
  if [ -n "$proftable" ]; then
    echo "Where an iteration's time goes at $PS (\`NSTBATCH_PROFILE=1\`, a synchronise after every op: a run of $((4 + ITERS)) iterations less one of 4, per iteration; by op):"
    echo
    echo "GB/s: the bytes an element pass must move at least (each input read once, each output written once) over its time, against the memory's bandwidth (an H200's HBM3e: 4800 GB/s); \"-\": an op bound by arithmetic (the convolutions, the Gram products)."
    echo
    echo "| op | ms per iteration | share | GB/s |"
    echo "|---|---|---|---|"
    echo "$proftable"
    echo
  fi
  echo "Largest image in one piece: $maxrow."
  echo
  if [ -n "$conv_tables" ]; then
    echo "## Convolutions (nstbatch's cuDNN calls, tile $CONV_TILE)"
    echo
    printf '%s' "$conv_tables"
  fi
  if [ -n "$gram_tables" ]; then
    echo "## The Gram ops per style layer (gram_layers; GFLOP/s: the upper triangle's, N c (c + 1), for the sums)"
    echo
    printf '%s' "$gram_tables"
  fi
  echo "Raw output: gpu_iteration.log"
} >"$OUT/gpu_iteration.md"
cat "$OUT/gpu_iteration.md"

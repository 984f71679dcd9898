#!/usr/bin/env bash
# tests/test_gpu_render.sh: whole renders on the GPU, judged where the judgement is stable.
#
#   tests/test_gpu_render.sh NSTBATCH IMAGE_DIFF
#   STAND_IN=AVX2 tests/test_gpu_render.sh NSTBATCH IMAGE_DIFF    (the same checks, the CPU as the "GPU")
#
# cuDNN promises the same bits for the same shape only: a window and the whole image may take two
# algorithms, and the GPU rounds otherwise than the CPU. So renders are judged by their first
# objective (run.first_gradient: the loss terms and the image gradient before any optimiser step)
# against the CPU in fp32, with kernels/check/tolerance.c's bounds for the precision and depth
# (image_diff --gradient), never by pixels after Adam steps, whose first moves follow the
# gradient's sign and so turn rounding into pixel differences. The input is noise (a smooth
# picture has max-pooling ties that rounding breaks either way).
#
# - The whole network (to relu5_1) on one tile in fp32, tf32, bf16, fp16, and bf16 with bias+ReLU
#   as a separate kernel, with conv1_1 on our own kernels and with the Gram sums on our own kernel
#   (NSTBATCH_CUDA_GRAM=own, also over 32 px tiles below), against the CPU in fp32.
# - The tiling at depth 5 (to relu3_1, 24 px halo) in fp32: one tile, 32 px tiles, 32 px tiles on
#   2 ranks sharing the GPU (the host-staged Gram sums), tiles halved under an allocation limit,
#   against the CPU's one tile; bf16 tiles against bf16 one tile.
# - gpu.share = false refusing two ranks on one GPU; a 20-iteration render whose loss falls; no
#   wait for the device between two rows (the run record's host_waits); CUDA graphs on == off bit
#   for bit; the Gram sums beside the next layers (NSTBATCH_CUDA_OVERLAP=1) == not, 1 and 2 ranks;
#   the halos packed in device memory (NSTBATCH_EXCHANGE=device) == through the host, 2 ranks; convolution algorithms chosen by timing (gpu.conv_algorithms = timed) against the CPU,
#   and a rerun from their file (gpu.conv_choices) bit for bit; compute-sanitizer where it exists:
#   memcheck, and memcheck and racecheck with our own kernels (the Gram sums, conv1_1), and
#   racecheck reporting two planted hazards (NSTBATCH_PLANT=race), so its kernel filter is proven.
#
# STAND_IN=LEVEL replaces the GPU by the CPU capped at that instruction-set level
# (ONEDNN_MAX_CPU_ISA, run.device = cpu): other rounding, the same promises, so every check must
# pass (tests/test_gpu_standin.sh). bf16 runs at the machine's own level where LEVEL has none; tf32,
# fp16, the unfused kernel, conv1_1's own kernels, the own Gram sums, gpu.share, timed algorithms and compute-sanitizer are the GPU's
# own and SKIP.
# PLANT=halo|allreduce plants that defect (util/plant.h) in the GPU side's renders: the checks that
# guard it must then FAIL. ONLY=tiling runs the tiling checks alone (the planted-defect runs need
# no more). GPU_RENDER_KEEP=DIR keeps the logs and the gradient files there.
#
# Without an NVIDIA device (and without STAND_IN) everything SKIPs with the reason; with one that
# this build cannot use, the suite FAILs with why.
NST=$(readlink -f "$1") DIFF=$(readlink -f "$2")
. "$(dirname "$0")/lib.sh" test_gpu_render
STAND_IN=${STAND_IN:-} PLANT=${PLANT:-} ONLY=${ONLY:-}
CHECKS=27

if [ -z "$STAND_IN" ]; then
  gpus=$("$NST" --version | sed -n 's/.*GPUs visible now: \([0-9]*\).*/\1/p')
  if [ "${gpus:-0}" -eq 0 ] || ! "$NST" --version | grep -q "CUDA backend"; then
    why=$("$NST" --version | sed -n 's/.*GPUs visible now: 0 - //p')
    # a GPU this build cannot use (kernels/cuda/cuda.h: "present but unusable") is a failure, not a skip
    case "$why" in *"NVIDIA GPU present but unusable"*)
      bad "every GPU render" "$why"
      finish; exit 1 ;;
    esac
    echo "    SKIP every GPU render: ${why:-this build has no CUDA backend}"
    echo "test_gpu_render: 0 passed, 0 failed, $CHECKS skipped"
    exit 0
  fi
fi
if [ -n "${GPU_RENDER_KEEP:-}" ]; then # kept: not removed at exit
  rm -rf "$T"; trap - EXIT; mkdir -p "$GPU_RENDER_KEEP" && T=$(readlink -f "$GPU_RENDER_KEEP")
fi
side="the GPU"; [ -n "$STAND_IN" ] && side="the CPU capped at $STAND_IN (stand-in)"
echo "    device side: $side${PLANT:+, planted defect: $PLANT}"

# Adam (not auto's L-BFGS): the checks judge the first objective, before any step, and the memory
# limits below are sized for Adam's state
cat >"$T/g.ini" <<EOF
[content]
path = $ROOT/configs/demo/content.png
[style]
path = $ROOT/configs/demo/style.png
[output]
width = 256
height = 192
bits = 16
overwrite = true
[model]
random_width_divisor = 8
[optim]
method = adam
iterations = 1
init = noise
[run]
threads = 2
print_every = 0
EOF
DEEP=()                                                                  # to relu5_1, the default layers
SHALLOW=(--set style.layers=relu1_1,relu2_1,relu3_1 --set content.layers=relu2_2)  # to relu3_1: a 24 px halo

# nst LOG RANKS ARGS...: nstbatch on T/g.ini, writing LOG.tif and LOG.grad; status in rc, output in T/LOG.log
nst() {
  local log=$1 ranks=$2; shift 2
  ranks "$ranks"
  (cd "$T" && "$IDLE" 300 "${RANKS[@]}" "$NST" g.ini \
     --set output.path="$log.tif" --set run.first_gradient="$log.grad" "$@") >"$T/$log.log" 2>&1
  rc=$?
}
# ref NAME ARGS...: the reference, the CPU in fp32 on one tile
ref() { local n=$1; shift; nst "$n" 1 --set run.device=cpu --set run.precision=fp32 --set tiling.tile_size=256 "$@"; }
# dev NAME RANKS PRECISION ARGS...: the device side, with the planted defect; rc 77 where the
# stand-in has no such precision (then why in T/NAME.skip)
dev() {
  local n=$1 ranks=$2 p=$3; shift 3
  if [ -z "$STAND_IN" ]; then
    NSTBATCH_PLANT=$PLANT nst "$n" "$ranks" --set run.device=cuda --set run.precision="$p" "$@"; return
  fi
  case "$p" in tf32|fp16) echo "$p is a GPU precision" >"$T/$n.skip"; rc=77; return ;; esac
  ONEDNN_MAX_CPU_ISA=$STAND_IN NSTBATCH_PLANT=$PLANT nst "$n" "$ranks" --set run.device=cpu --set run.precision="$p" "$@"
  if [ "$rc" -ne 0 ] && [ "$p" = bf16 ] && grep -q "no bf16 convolution" "$T/$n.log"; then
    NSTBATCH_PLANT=$PLANT nst "$n" "$ranks" --set run.device=cpu --set run.precision="$p" "$@" # the machine's own level
    if [ "$rc" -ne 0 ] && grep -q "no bf16 convolution" "$T/$n.log"; then echo "this CPU has no bf16" >"$T/$n.skip"; rc=77; fi
  fi
}
# switched WHY VAR=VALUE NAME RANKS PRECISION ARGS...: dev with one of the CUDA backend's switches
# set; with the stand-in, which has none, rc 77 and WHY in T/NAME.skip
switched() {
  local why=$1 var=$2
  shift 2
  if [ -n "$STAND_IN" ]; then rc=77; echo "$why" >"$T/$1.skip"; return; fi
  local -x "${var%%=*}=${var#*=}"
  dev "$@"
}
# judge WHAT REF DEV [--exact]: DEV's first objective against REF's
judge() {
  local what=$1 r=$2 d=$3 v
  if [ "$rc" -eq 77 ]; then skip "$what: $(cat "$T/$d.skip")"; return; fi
  if [ "$rc" -ne 0 ] || [ ! -f "$T/$d.grad" ]; then bad "$what" "the render failed (exit $rc)" "$(cat "$T/$d.log")"; return; fi
  v=$("$DIFF" --gradient ${4:-} "$T/$r.grad" "$T/$d.grad" 2>&1)
  case "$v" in *": ok") ok "$what: $v" ;; *) bad "$what" "$v" ;; esac
}

[ "$ONLY" = tiling ] || ref ref_deep "${DEEP[@]}" || true
ref ref_shallow "${SHALLOW[@]}" || true
SCALED=("${SHALLOW[@]}" --set style.scale=0.4) # a smaller style image: the render, not the style, needs the most memory
ref ref_scaled "${SCALED[@]}" || true
{ [ "$ONLY" = tiling ] || [ -f "$T/ref_deep.grad" ]; } && [ -f "$T/ref_shallow.grad" ] && [ -f "$T/ref_scaled.grad" ] || { bad "the CPU reference" "exit $rc" "$(cat "$T"/ref_*.log)"; finish; exit 1; }

# the precisions, the whole network on one tile
[ "$ONLY" = tiling ] || for p in fp32 tf32 bf16 fp16; do
  dev "deep_$p" 1 "$p" --set tiling.tile_size=256; judge "$p, to relu5_1, one tile, against the CPU in fp32" ref_deep "deep_$p"
done
if [ "$ONLY" != tiling ]; then
  switched "bias+ReLU fusion is cuDNN's" NSTBATCH_CUDA_FUSE=0 unfused 1 bf16 --set tiling.tile_size=256
  judge "bf16 with bias+ReLU as a separate kernel, against the CPU in fp32" ref_deep unfused
  switched "conv1_1's own kernels are CUDA's" NSTBATCH_CUDA_CONV1=own conv1 1 bf16 --set tiling.tile_size=256
  judge "bf16 with conv1_1 on our own kernels (NSTBATCH_CUDA_CONV1=own), against the CPU in fp32" ref_deep conv1
  switched "the own Gram sums run on CUDA's FP64 tensor cores" NSTBATCH_CUDA_GRAM=own gram 1 bf16 --set tiling.tile_size=256
  judge "bf16 with the Gram sums on our own kernel (NSTBATCH_CUDA_GRAM=own), against the CPU in fp32" ref_deep gram
fi

# the tiling, at depth 5 in fp32
dev one 1 fp32 "${SHALLOW[@]}" --set tiling.tile_size=256; judge "fp32, to relu3_1, one tile, against the CPU" ref_shallow one
dev tiles 1 fp32 "${SHALLOW[@]}" --set tiling.tile_size=32; judge "fp32, 48 tiles of 32 px, against the CPU's one tile" ref_shallow tiles
switched "the own Gram sums run on CUDA's FP64 tensor cores" NSTBATCH_CUDA_GRAM=own gram_tiles 1 fp32 "${SHALLOW[@]}" --set tiling.tile_size=32
judge "fp32, 48 tiles of 32 px with the Gram sums on our own kernel (regions of part rows), against the CPU's one tile" ref_shallow gram_tiles
share=(); [ -z "$STAND_IN" ] && share=(--set gpu.share=true)
dev ranks 2 fp32 "${SHALLOW[@]}" --set tiling.tile_size=32 "${share[@]}"
how=" sharing the GPU (Gram sums through host memory)"; [ -n "$STAND_IN" ] && how=""
judge "fp32, 32 px tiles on 2 ranks$how, against the CPU's one tile" ref_shallow ranks
dev bf16_one 1 bf16 "${SHALLOW[@]}" --set tiling.tile_size=256
dev bf16_tiles 1 bf16 "${SHALLOW[@]}" --set tiling.tile_size=32
judge "bf16, 32 px tiles against bf16 one tile" bf16_one bf16_tiles
# an allocation over the limit halves the tiles: the limit at what the backend held once opened
# (on a GPU, cuBLAS's workspaces: not the render's, and counted in its peak) and 80 % of what an
# unlimited run's render took on top of that
dev whole 1 fp32 "${SCALED[@]}" --set run.record=whole.json
peak=$(sed -n 's/.*"peak_bytes_max": \([0-9]*\).*/\1/p' "$T/whole.json" 2>/dev/null)
opened=$(grep -oE 'memory after the backend opened: (device free [0-9]+ MiB, )?backend buffers [0-9.]+ MiB' "$T/whole.json" 2>/dev/null |
        head -n 1 | grep -oE '[0-9.]+ MiB$' | cut -d' ' -f1)
lim=$(awk -v p="${peak:-0}" -v o="${opened:-0}" 'BEGIN { o *= 1048576; printf "%.3f", (o + (p - o) * 0.8) / 1048576 }')
NSTBATCH_MEMORY_LIMIT_MB=$lim dev halved 1 fp32 "${SCALED[@]}" --set run.record=halved.json
if [ "$rc" -eq 0 ] && ! grep -q '"tile_halvings": [1-9]' "$T/halved.json"; then
  bad "tiles halved under an allocation limit" "no halving at $lim MiB (${opened:-no} MiB at opening, and 80 % of the render's peak above it)" "$(cat "$T/halved.log")"
else
  judge "tiles halved under an allocation limit of $lim MiB, against the CPU's one tile" ref_scaled halved
fi

[ "$ONLY" = tiling ] && { finish; exit; }
# refusing two ranks on one GPU without gpu.share
if [ -n "$STAND_IN" ]; then skip "gpu.share = false refusing 2 ranks on 1 GPU: a GPU's"
else
  nst refuse 2 --set run.device=cuda
  if [ "$rc" -eq 2 ] && grep -q "gpu.share = false" "$T/refuse.log"; then ok "gpu.share = false refuses 2 ranks on 1 GPU (exit 2)"
  else bad "gpu.share = false" "exit $rc" "$(cat "$T/refuse.log")"; fi
fi
# the loop itself: 20 Adam steps in the default precision, every loss finite, the last below the first
dev loop 1 auto --set optim.iterations=20 --set run.print_every=1 --set run.record=loop.json
first=$(sed -n 's/.*"first": {"total": \([-0-9.e+]*\).*/\1/p' "$T/loop.json" 2>/dev/null)
last=$(sed -n 's/.*"last": {"total": \([-0-9.e+]*\).*/\1/p' "$T/loop.json" 2>/dev/null)
if [ "$rc" -eq 0 ] && awk -v a="$first" -v b="$last" 'BEGIN { exit !(a + 0 > 0 && b + 0 > 0 && b < a) }' &&
   ! grep -qiE 'nan|inf' <(grep -E '^ +[0-9]+ ' "$T/loop.log"); then
  ok "20 Adam steps: loss $first -> $last, every row finite"
else bad "20 Adam steps" "exit $rc, loss $first -> $last" "$(cat "$T/loop.log")"; fi
# between two rows the host waits for the device nowhere: the loss stays there (kernels/backend.h;
# the run record counts the waits of the iterations that report nothing)
dev quiet 1 auto --set optim.iterations=20 --set run.print_every=10 --set run.record=quiet.json
w=$(sed -n 's/.*"host_waits": {"quiet_iterations": \([0-9]*\), "waits_max": \([0-9]*\).*/\1 \2/p' "$T/quiet.json" 2>/dev/null)
if [ "$rc" -eq 0 ] && [ "${w% *}" -gt 0 ] 2>/dev/null && [ "${w#* }" -eq 0 ]; then
  ok "20 Adam steps, rows every 10: no host wait in the ${w% *} iterations between rows"
else bad "host waits between rows" "exit $rc; quiet iterations and waits: '$w'" "$(tail -n 5 "$T/quiet.log")"; fi

# CUDA graphs: Adam with rows every 10 iterations, the quiet ones recorded once a level (at its
# third iteration) and replayed, give the bits of the same render without graphs (the same kernels in
# the same order on the same buffers; Adam's step count on the device): in the default precision, to relu3_1
# on 32 px tiles, over 2 pyramid levels of 24 iterations, with a preview written every 7 (its
# transfer may grow a scratch buffer, which drops the graph: recorded again)
if [ -n "$STAND_IN" ]; then skip "CUDA graphs on == off: a GPU's"; skip "CUDA graphs on == off, 2 ranks: a GPU's"
  skip "the Gram sums beside the next layers == not: a GPU's"; skip "the Gram sums beside the next layers, 2 ranks: a GPU's"
  skip "the halos packed in device memory: a GPU's"
else
  g=("${SHALLOW[@]}" --set optim.iterations=24 --set run.print_every=10 --set pyramid.levels=2 --set pyramid.iterations=24,24
     --set tiling.tile_size=32 --set output.save_every=7 --set output.preview=64)
  dev graphs_on 1 auto "${g[@]}" --set gpu.graphs=true; rc_on=$rc
  dev graphs_off 1 auto "${g[@]}" --set gpu.graphs=false
  replayed=$(sed -n "s/^CUDA graphs: \([0-9]*\) of the level's 24 iterations replayed.*/\1/p" "$T/graphs_on.log" | tr '\n' ' ')
  v=$("$DIFF" "$T/graphs_on.tif" "$T/graphs_off.tif" 2>&1)
  if [ "$rc_on" -eq 0 ] && [ "$rc" -eq 0 ] && [ "$(wc -w <<<"$replayed")" -eq 2 ] && [ "$v" = "max 0 mean 0" ]; then
    ok "CUDA graphs: ${replayed% } of each level's 24 iterations replayed, the image equal to the render without graphs bit for bit"
  else bad "CUDA graphs on == off" "exit $rc_on / $rc, replayed per level '${replayed}', diff: $v" "$(grep -iE 'graph|error' "$T/graphs_on.log")"; fi
  # the same on 2 ranks sharing the GPU: each iteration replayed as segments, the halo exchange and
  # the Gram sums between ranks (through the host) run between them (nst/render/recorded.h)
  dev graphs_on2 2 auto "${g[@]}" --set gpu.graphs=true --set gpu.share=true; rc_on=$rc
  dev graphs_off2 2 auto "${g[@]}" --set gpu.graphs=false --set gpu.share=true
  replayed=$(sed -n "s/^CUDA graphs: \([0-9]*\) of the level's 24 iterations replayed as recorded segments.*/\1/p" "$T/graphs_on2.log" | tr '\n' ' ')
  v=$("$DIFF" "$T/graphs_on2.tif" "$T/graphs_off2.tif" 2>&1)
  if [ "$rc_on" -eq 0 ] && [ "$rc" -eq 0 ] && [ "$(wc -w <<<"$replayed")" -eq 2 ] && [ "$v" = "max 0 mean 0" ]; then
    ok "CUDA graphs on 2 ranks: ${replayed% } of each level's 24 iterations replayed as segments with the steps between ranks between them, equal to the render without graphs bit for bit"
  else bad "CUDA graphs on == off, 2 ranks" "exit $rc_on / $rc, replayed per level '${replayed}', diff: $v" "$(grep -iE 'graph|error' "$T/graphs_on2.log")"; fi
  # the Gram sums on a second stream beside the next layers (NSTBATCH_CUDA_OVERLAP=1), recorded and
  # replayed with the rest: the same kernels and GEMM settings, only ordered by events, so the bits
  # of the renders above, on 1 rank and on 2
  for r in 1 2; do
    n=$([ $r = 2 ] && echo 2)
    NSTBATCH_CUDA_OVERLAP=1 dev "overlap$n" $r auto "${g[@]}" --set gpu.graphs=true --set run.record="overlap$n.json" \
      $([ $r = 2 ] && echo --set gpu.share=true)
    replayed=$(sed -n "s/^CUDA graphs: \([0-9]*\) of the level's 24 iterations replayed.*/\1/p" "$T/overlap$n.log" | tr '\n' ' ')
    v=$("$DIFF" "$T/overlap$n.tif" "$T/graphs_on$n.tif" 2>&1)
    if [ "$rc" -eq 0 ] && [ "$(wc -w <<<"$replayed")" -eq 2 ] && [ "$v" = "max 0 mean 0" ] && grep -q 'second stream beside the next layers' "$T/overlap$n.json"; then # (the device's notes: it was on)
      ok "the Gram sums beside the next layers on $r rank(s): ${replayed% } iterations replayed a level, the image equal to the render without bit for bit"
    else bad "the Gram sums beside the next layers, $r rank(s)" "exit $rc, replayed per level '${replayed}', diff: $v" "$(grep -iE 'graph|error|overlap' "$T/overlap$n.log")"; fi
  done
  # the halo exchange's path in device memory (NCCL's between distinct GPUs; here, ranks sharing the
  # GPU, NSTBATCH_EXCHANGE=device stages its messages through the host): the pack and unpack
  # kernels in place of the transfers, the bits of the 2-rank render above
  NSTBATCH_EXCHANGE=device dev exdev2 2 auto "${g[@]}" --set gpu.graphs=true --set gpu.share=true
  v=$("$DIFF" "$T/exdev2.tif" "$T/graphs_on2.tif" 2>&1)
  if [ "$rc" -eq 0 ] && grep -q '^halo exchange: device to device' "$T/exdev2.log" && [ "$v" = "max 0 mean 0" ]; then
    ok "the halos packed in device memory on 2 ranks: the image equal to the render with them through the host, bit for bit"
  else bad "the halos packed in device memory" "exit $rc, diff: $v" "$(grep -iE 'halo|error' "$T/exdev2.log")"; fi
fi

# gpu.conv_algorithms = timed: the algorithms cuDNN's Find times fastest (deterministic ones without
# transforms, as the heuristics') meet the same tolerance against the CPU; the file they are kept in
# (gpu.conv_choices) makes a rerun take the same algorithms without timing: the same bits
if [ -n "$STAND_IN" ]; then skip "timed convolution algorithms: cuDNN's"; skip "a rerun from gpu.conv_choices: cuDNN's"
else
  timed=("${SHALLOW[@]}" --set gpu.conv_algorithms=timed --set gpu.conv_choices="$T/choices.txt")
  rm -f "$T/choices.txt"
  dev timed 1 bf16 "${timed[@]}"
  judge "bf16 with the convolution algorithms chosen by timing, against the CPU in fp32" ref_shallow timed
  n1=$(grep -c '^forward ' "$T/choices.txt" 2>/dev/null); b1=$(grep -c '^backward-data ' "$T/choices.txt" 2>/dev/null)
  cp "$T/choices.txt" "$T/choices.first" 2>/dev/null
  dev timed_again 1 bf16 "${timed[@]}"
  v=$("$DIFF" --gradient --exact "$T/timed.grad" "$T/timed_again.grad" 2>&1)
  # the rerun timed nothing: a choice it did not take would have been timed again and written
  if [ "$rc" -eq 0 ] && [ "${n1:-0}" -gt 0 ] && [ "${b1:-0}" -gt 0 ] && cmp -s "$T/choices.first" "$T/choices.txt"; then
    case "$v" in *": ok") ok "a rerun from gpu.conv_choices ($n1 forward and $b1 backward-data choices timed once, none again): $v" ;;
      *) bad "a rerun from gpu.conv_choices" "$v" ;; esac
  else bad "a rerun from gpu.conv_choices" "exit $rc, '$n1' forward and '$b1' backward-data choices; the file after the rerun $(cmp -s "$T/choices.first" "$T/choices.txt" && echo unchanged || echo changed)" "$(diff "$T/choices.first" "$T/choices.txt" 2>&1 | tail -n 20)"; fi
fi

CS=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
# cs_run WHAT "TOOL OPTIONS" [ENV=VALUE ...]: a 2-iteration render of 32 px tiles under
# compute-sanitizer, its output in $out and status in $st; 1 (and the check skipped) where it cannot run
cs_run() {
  local what=$1 tool=$2
  shift 2
  if [ -n "$STAND_IN" ]; then skip "compute-sanitizer $what: a GPU's"; return 1; fi
  if [ -z "$CS" ]; then skip "compute-sanitizer $what: not installed"; return 1; fi
  # CS_SECONDS (default 300) bounds it: a sanitizer that has not finished is not a defect. timeout
  # makes a process group of its own, which a TERM to this script's group (the first contact's
  # cap on its step) would not reach: the trap passes it on (timeout then ends the sanitizer and
  # its render), so no sanitized render outlives the step beside the next one on the GPU
  (cd "$T" && exec env "$@" timeout "${CS_SECONDS:-300}" "$CS" $tool "$NST" g.ini --set run.device=cuda --set optim.iterations=2 \
     --set output.width=64 --set output.height=48 "${SHALLOW[@]}" --set tiling.tile_size=32 --set output.path=cs.tif \
     --set output.overwrite=true) >"$T/cs.out" 2>&1 &
  cs_pid=$!
  trap 'kill -TERM "$cs_pid" 2>/dev/null; exit 143' TERM
  wait "$cs_pid"; st=$?
  trap - TERM
  out=$(cat "$T/cs.out")
  if [ $st -eq 124 ]; then skip "compute-sanitizer $what: not finished within CS_SECONDS=${CS_SECONDS:-300} s"; return 1; fi
}
# race_counts OUTPUT: racecheck's "hazards errors warnings" from its last line (racecheck ends with
# "RACECHECK SUMMARY: N hazard(s) displayed (E error(s), W warning(s))", not memcheck's "ERROR SUMMARY")
race_counts() { sed -n 's/.*RACECHECK SUMMARY: \([0-9]*\) hazards\{0,1\} displayed (\([0-9]*\) errors\{0,1\}, \([0-9]*\) warnings\{0,1\}).*/\1 \2 \3/p' <<<"$1" | tail -n 1; }
# sanitize WHAT "TOOL OPTIONS" [ENV=VALUE ...]: that render clean (racecheck: no hazard at all)
sanitize() {
  local what=$1 out st clean
  cs_run "$@" || return 0
  case "$2" in *racecheck*) [ "$(race_counts "$out")" = "0 0 0" ] && clean=1 ;; *) grep -q "ERROR SUMMARY: 0 errors" <<<"$out" && clean=1 ;; esac
  if [ -n "${clean:-}" ] && [ $st -eq 0 ]; then ok "compute-sanitizer $what clean"
  else bad "compute-sanitizer $what" "exit $st, errors" "$out"; fi
}
# (with the Gram sums on the side stream: its cuBLAS handle's GEMMs under memcheck; no tool checks
# the order between streams, which the bit-for-bit renders above guard)
sanitize memcheck "--tool memcheck --leak-check full" NSTBATCH_CUDA_OVERLAP=1
# our own kernels (the Gram sums, conv1_1): out-of-bounds accesses, and the shared-memory hazards
# between a block's threads (racecheck, of the kernels that share memory: ours, not the libraries'),
# which the CPU's stand-in of their barriers cannot prove absent
OWN=(NSTBATCH_CUDA_GRAM=own NSTBATCH_CUDA_CONV1=own NSTBATCH_CUDA_OVERLAP=1) # (and the Gram sums on the side stream)
sanitize "memcheck, our own kernels" "--tool memcheck" "${OWN[@]}"
RACE="--tool racecheck $(printf -- '--kernel-name kns=%s ' k_gram_sums k_conv1_ k_gram_diff k_sumsq k_mse k_tv k_dot k_finish)"
sanitize "racecheck, our own kernels" "$RACE" "${OWN[@]}"
# ... and that filter bites: with NSTBATCH_PLANT=race two kernels with a shared-memory hazard run
# once, named after its first and last names (kernels/cuda/reduce_cuda.cu), so racecheck must report
# hazards, and where its report names the kernels, both (a filter that took one name only would miss one)
if cs_run "racecheck, the planted hazards" "$RACE" "${OWN[@]}" NSTBATCH_PLANT=race; then
  named=$(grep -o 'k_gram_sums_planted_race\|k_finish_planted_race' <<<"$out" | sort -u | wc -l)
  read -r hz er wn <<<"$(race_counts "$out")"
  if [ $st -eq 0 ] && [ "${hz:-0}" -ge 1 ] && [ "$named" -ne 1 ]; then
    ok "compute-sanitizer racecheck reports the planted hazards ($hz hazards: $er errors, $wn warnings; $([ "$named" -eq 2 ] && echo "both planted kernels named" || echo "the report names no kernel")): its filter checks our kernels"
  else bad "compute-sanitizer racecheck, the planted hazards" "exit $st; '${hz:-no summary}' hazards, $named of the 2 planted kernels named: the filter misses our kernels" "$out"; fi
fi
finish

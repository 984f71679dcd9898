#!/usr/bin/env bash
# scripts/gpu-first-contact.sh: nstbatch's first contact with a GPU node, as one bounded command
# that builds nothing and leaves behind what a one-shot fix needs (docs/GPUS.md).
#
#   OUT=DIR scripts/gpu-first-contact.sh          on a GPU node, from the unpacked `make gpu-bundle`
#                                                 (or a checkout built there)
#   OUT=DIR scripts/gpu-first-contact.sh --cpu    every step on the CPU at small sizes, the bench's
#                                                 VGG-19 at 1/8 of its width (its plumbing, in
#                                                 make test: tests/test_first_contact.sh)
#
# Steps, in order, each under its own time cap and skipped when too little of the whole budget
# (FIRST_CONTACT_SECONDS, 450 s; --cpu 4500 s) is left; a step stopped at its cap while still
# working is CAPPED (slow or loaded), not failed, and its line says how to give it more time:
#   env      the driver, the GPU, the libraries nstbatch and PyTorch load     -> env.txt
#   selftest nstbatch --self-test on 1 rank, with --report                     -> selftest.txt
#   renders  tests/test_gpu_render.sh: the first objective in fp32, tf32, bf16, fp16, unfused, on
#            tiles, on 2 ranks sharing the GPU, tiles halved, 20 Adam steps, CUDA graphs
#            on == off on 1 rank and 2, the Gram sums beside the next layers
#            (NSTBATCH_CUDA_OVERLAP=1) == not on 1 rank and 2                     -> renders.txt
#            (--cpu: with the CPU capped one instruction-set level down as the "GPU")
#   ops      build/tests/test_backend_ops: every op against the CPU in fp32 (on a GPU, its GPU
#            tests alone)                                                       -> ops.txt
#   bench    issue 45's measurement, with what is left of the budget (about 6 minutes):
#            bench/gpu_frame.sh (a 3840x2160 frame, bf16, 250 Adam iterations, in 1024 px tiles
#            and in one tile, max and average pooling: seconds, SSIM), then bench/gpu_iteration.sh at 512x384, 1024x768,
#            2048x1536 and 4096x4096 against PyTorch on the same GPU (eager, one CUDA graph,
#            torch.compile reduce-overhead, and last, with what is left, max-autotune; bf16
#            autocast, channels_last, cudnn.benchmark): s/iter, MFU, GB per MP against the model,
#            with and without CUDA graphs, vector passes, our own Gram sums and the Gram sums on a second
#            stream (NSTBATCH_CUDA_OVERLAP=1), where the 4096 px iteration goes, the
#            convolutions per layer at 2048 px (heuristic and timed, fused, conv1_1 on our kernels), the
#            Gram ops per style layer (the sums on cuBLAS and on our own kernel);
#            under its own budget (BENCH_SECONDS), in that order, so its tables are written
#            whatever did not fit, which says so;
#            its raw log, the tables, the last run's record (with the device diagnostics)
#                                                                               -> bench.txt, bench.md,
#                                                                                  record.json
# and OUT/summary.txt: one line a step (name, status, seconds, what), then the verdict. At most 8
# files in OUT. Exit status 1 when a step failed or timed out, else 0 (skips are named, not failed).
# Knobs: STEPS (a subset, e.g. "renders bench", for a second try), FIRST_CONTACT_SECONDS, PY (the
# python3 that has PyTorch; --cpu: /usr/bin/python3).
set -u
# numbers with a decimal point in any locale (awk, printf, sort -n): a user's LC_ALL becomes LANG
[ -z "${LC_ALL:-}" ] || { export LANG="$LC_ALL"; unset LC_ALL; }; export LC_NUMERIC=C
ROOT=$(cd "$(dirname "$0")/.." && pwd)
MODE=gpu
case "${1:-}" in --cpu) MODE=cpu ;; "") ;; *) echo "usage: OUT=DIR $0 [--cpu]" >&2; exit 2 ;; esac
[ -n "${OUT:-}" ] || { echo "gpu-first-contact: set OUT to the folder for the results (OUT=DIR $0)" >&2; exit 2; }
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd) || { echo "gpu-first-contact: cannot make OUT=$OUT" >&2; exit 2; }
# a GPU lease's minutes; --cpu (the plumbing, on any machine, however loaded) 10 times as many
BUDGET=${FIRST_CONTACT_SECONDS:-$([ "$MODE" = cpu ] && echo 4500 || echo 450)}
STEPS=${STEPS:-env selftest renders ops bench}
START=$(date +%s.%N)
cd "$ROOT" || exit 2
# the bundle's environment: its Open MPI, its libraries, the node's CUDA libraries found
ORIG_LD=${NSTBATCH_ORIG_LD_LIBRARY_PATH-${LD_LIBRARY_PATH:-}} # (the node's own, where env.sh was sourced already)
[ -f "$ROOT/env.sh" ] && . "$ROOT/env.sh" >"$OUT/.env-search.txt" 2>&1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_plm_rsh_agent=${OMPI_MCA_plm_rsh_agent-}
NST=$ROOT/nstbatch
LEVEL=
if [ "$MODE" = cpu ]; then
  PY=${PY:-/usr/bin/python3}
  if grep -qw avx512f /proc/cpuinfo; then LEVEL=AVX2; else LEVEL=SSE41; fi
else
  PY=${PY:-python3}
fi
failed=0 capped=0
printf '%-9s %-7s %8s  %s\n' step status seconds what >"$OUT/summary.txt"

elapsed() { awk -v s="$START" -v n="$(date +%s.%N)" 'BEGIN { printf "%.0f", n - s }'; }
# step NAME CAP MIN WHAT COMMAND...: COMMAND's output to OUT/NAME.txt under min(CAP, what is left)
# seconds, CAP given for a 450 s budget and scaled with it; skipped when fewer than MIN
# seconds are left or NAME is not in STEPS. A step stopped at its cap while its output still grew
# (in the cap's last quarter, at least 3 s) is CAPPED, not failed: slow or loaded, not broken, and
# the line says which and how to give it more time; a silent one is a TIMEOUT, a failure. The test
# hook FC_PLANT=STEP:talk (prints a line a second) or STEP:hang (one line, then silence) replaces a
# step's command, and FC_PLANT=frame:hang the bench step's frame, which is then stopped at its share
# of the step (tests/test_first_contact.sh).
step() {
  local name=$1 cap=$(($2 * BUDGET / 450)) min=$3 what=$4; shift 4
  local left=$((BUDGET - $(elapsed))) t0 st status quiet
  case " $STEPS " in *" $name "*) ;; *) printf '%-9s %-7s %8s  %s\n' "$name" SKIP 0 "not in STEPS" >>"$OUT/summary.txt"; return ;; esac
  if [ "$left" -lt "$min" ]; then
    printf '%-9s %-7s %8s  %s\n' "$name" SKIP 0 "too little time left (${left} s of ${BUDGET} s; needs ${min} s)" >>"$OUT/summary.txt"
    return
  fi
  [ "$cap" -gt "$left" ] && cap=$left
  export STEP_END=$(($(date +%s) + cap)) # (a step with a budget of its own keeps within it: bench)
  case ${FC_PLANT:-} in
    "$name:talk") set -- bash -c 'while :; do echo working; sleep 1; done' ;;
    "$name:hang") set -- bash -c 'echo started; exec sleep 1000' ;;
  esac
  t0=$(date +%s.%N)
  timeout --kill-after=10 "$cap" bash -c '"$@"' step "$@" >"$OUT/$name.txt" 2>&1 # (the steps are exported functions)
  st=$?
  quiet=$(( $(date +%s) - $(stat -c %Y "$OUT/$name.txt") ))
  case $st in
    0) status=ok ;;
    124|137) if [ -s "$OUT/$name.txt" ] && [ "$quiet" -le $((cap / 4 > 3 ? cap / 4 : 3)) ]; then
               status=CAPPED capped=1
               what="$what: stopped at its ${cap} s cap while still working (output ${quiet} s before): a slow or loaded machine (load $(cut -d' ' -f1 /proc/loadavg) on $(nproc) cores), not a failure; for its verdict: STEPS=$name FIRST_CONTACT_SECONDS=$((BUDGET * 2))"
             else status=TIMEOUT; failed=1; what="$what: stopped at its ${cap} s cap, silent for its last ${quiet} s"; fi ;;
    *) status=FAIL; failed=1; what="$what: exit $st" ;;
  esac
  printf '%-9s %-7s %8.0f  %s\n' "$name" "$status" "$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')" "$what" >>"$OUT/summary.txt"
}

env_step() {
  echo "### date: $(date -u '+%Y-%m-%d %H:%M:%S UTC'), mode $MODE, host $(hostname), $(nproc) cores"
  echo "### CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)"
  echo "### CPU instruction sets (the CPU backend's levels; AMX for its bf16): $(grep -m1 -o -w -E 'avx2|avx512f|avx512_bf16|amx_tile|amx_bf16' /proc/cpuinfo | sort -u | tr '\n' ' ')"
  echo "### kernel: $(uname -r)"
  if [ "$MODE" = gpu ]; then
    echo "### nvidia-smi"; nvidia-smi || echo "(nvidia-smi failed: $?)"
    nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used,clocks.max.sm,power.limit --format=csv || true
  fi
  echo "### nstbatch --version"; "$NST" --version
  echo "### the bundle's search for the CUDA libraries (env.sh)"; cat "$OUT/.env-search.txt" 2>/dev/null || echo "(no env.sh: a checkout)"
  echo "### libraries nstbatch resolves"; ldd "$NST" | grep -E 'cud|nccl|mpi|dnnl|hdf5|tiff|stdc|gomp|not found' || true
  echo "### PyTorch ($PY)"
  env LD_LIBRARY_PATH="$ORIG_LD" "$PY" -c 'import torch; print(torch.__version__, "CUDA", torch.version.cuda, "cuDNN", torch.backends.cudnn.version(), "GPU", torch.cuda.is_available() and torch.cuda.get_device_name(0))' 2>&1 ||
    echo "(no PyTorch in $PY)"
  echo "### mpirun"; mpirun --version 2>&1 | head -n 1
  [ "$MODE" = cpu ] || "$NST" --version | grep -q 'GPUs visible now: [1-9]' # the step fails where no GPU is usable
}

selftest_step() {
  local dev=(); [ "$MODE" = cpu ] && dev=(--set run.device=cpu)
  "$NST" --self-test "${dev[@]}" --report "$OUT/.selftest-report.txt"
  local st=$?
  echo; echo "### the report"; cat "$OUT/.selftest-report.txt" 2>/dev/null
  return $st
}

renders_step() {
  if [ "$MODE" = cpu ]; then STAND_IN=$LEVEL tests/test_gpu_render.sh "$NST" build/tests/image_diff
  else CS_SECONDS=${CS_SECONDS:-40} tests/test_gpu_render.sh "$NST" build/tests/image_diff; fi # the sanitizer's 4 runs last, each bounded (4 x 40 s and the renders within the step's 240 s)
}

# the frame first (about 90 s on an H200: the 4K goal's numbers, with max pooling, the default, and
# with average pooling, under which renders that round differently stay close), then the iteration against
# PyTorch under what is left of the step's cap, less 15 s for its tables; both into bench.md
bench_step() {
  local sizes="512x384 1024x768 2048x1536 4096x4096" iters=10 dev=cuda conv=2048 prec=bf16 frame="W=3840 H=2160 TILE=1024 ITERATIONS=250 POOLINGS=max,avg"
  local variants="eager graph compile" late=compile-max width=1
  if [ "$MODE" = cpu ]; then # (the plumbing: VGG-19 at 1/8 of its width on both sides, an eighth of the CPU)
    sizes="96x64 128x96" iters=3 dev=cpu conv=64 prec=fp32 frame="W=96 H=64 TILE=48 ITERATIONS=4 MODEL_WIDTH=8" variants=eager late= width=8
  fi
  local st=0 budget fcap=$(((STEP_END - $(date +%s)) * 2 / 5)) # (the frame at most 2/5 of the step: the iteration's tables come after it)
  local framer=(env $frame DEVICE=$dev PRECISION=$prec bench/gpu_frame.sh "$OUT/.bench")
  [ "${FC_PLANT:-}" = frame:hang ] && framer=(sleep 1000) # (the test hook: a frame that never ends)
  mkdir -p "$OUT/.bench"
  timeout --kill-after=5 "$fcap" "${framer[@]}" || st=$?
  if [ "$st" = 124 ] || [ "$st" = 137 ]; then # (a failure of this step's, not its cap: exit 1)
    printf '# One frame on one GPU\n\nNot finished within %s s, its share of the bench step: its renders were stopped (bench/gpu_frame.sh alone gives their time).\n' "$fcap" >"$OUT/.bench/gpu_frame.md"
    st=1
  fi
  budget=$((STEP_END - $(date +%s) - 15))
  [ "$budget" -ge 1 ] || budget=1 # (0 would be no bound)
  SIZES=$sizes ITERS=$iters DEVICE=$dev FIND_MAX=0 CONV_TILE=$conv VARIANTS=$variants LATE_VARIANTS=$late MODEL_WIDTH=$width \
    PRECOMPILE_S=60 VARIANT_TIMEOUT=90 BENCH_SECONDS=$budget \
    PY=$PY PY_ENV="env LD_LIBRARY_PATH=$ORIG_LD" \
    KEEP_RECORD="$OUT/record.json" bench/gpu_iteration.sh "$OUT/.bench" || st=$?
  # (their raw logs are this step's output, bench.txt)
  cat "$OUT/.bench/gpu_iteration.md" "$OUT/.bench/gpu_frame.md" >"$OUT/bench.md" 2>/dev/null
  return $st
}

export -f env_step selftest_step renders_step bench_step
export MODE NST OUT PY LEVEL ORIG_LD ROOT
step env 60 10 "driver, GPU, libraries, PyTorch" env_step
step selftest 150 30 "nstbatch --self-test on 1 rank" selftest_step
step renders 240 60 "tests/test_gpu_render.sh$([ "$MODE" = cpu ] && echo " (STAND_IN=$LEVEL)")" renders_step
# on a GPU, the op harness's GPU tests alone (and the tolerances' own): its CPU tests, make test's,
# took about a minute on 2 cores, which the step's cap needs for its 13 GPU passes
ops_only=${NST_TEST_ONLY:-}
[ "$MODE" = gpu ] && [ -z "$ops_only" ] && ops_only=t_tolerances_follow_the_precision,t_cuda_against_cpu,t_cuda_vec8_bits
step ops 150 30 "build/tests/test_backend_ops${ops_only:+ (NST_TEST_ONLY=$ops_only)}" env NST_TEST_ONLY="$ops_only" build/tests/test_backend_ops
step bench 400 90 "bench/gpu_frame.sh, bench/gpu_iteration.sh against PyTorch" bench_step

rm -rf "$OUT/.bench" "$OUT/.env-search.txt" "$OUT/.selftest-report.txt"
{
  echo
  for f in selftest renders ops; do
    [ -f "$OUT/$f.txt" ] && grep -E '^(self-test (passed|FAILED)|test_[a-z_]+: [0-9]+ passed)' "$OUT/$f.txt" | tail -n 1 | sed "s/^/$f: /"
  done
  [ -f "$OUT/bench.md" ] && grep -E '^\| [0-9]+ x [0-9]+ \| [0-9.]+ \| [0-9.]+ \||^\| (max|avg) \| exact mode|^SSIM of the tiled' "$OUT/bench.md" | sed 's/^/bench: /'
  echo "total $(elapsed) s of a ${BUDGET} s budget, $MODE mode; $([ $failed = 0 ] && echo "no step failed" || echo "a step FAILED: send every file of $OUT")$([ $capped = 0 ] || echo "; a step CAPPED while working: its checks are unfinished")"
} >>"$OUT/summary.txt"
cat "$OUT/summary.txt"
exit $failed

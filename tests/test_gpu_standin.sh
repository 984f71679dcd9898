#!/usr/bin/env bash
# tests/test_gpu_standin.sh: proof that tests/test_gpu_render.sh's checks cannot false-FAIL and can
# fail. Its GPU side replaced by the CPU at another instruction-set level (STAND_IN: other
# rounding, the same promises as cuDNN's: the same function, not the same bits), every check must
# pass; with a defect planted on that side (PLANT, util/plant.h) the checks that guard it must fail:
#   - none:      every check passes;
#   - halo:      a halo one pixel short of the exact one: the fp32 renders on 32 px tiles fail;
#   - allreduce: Gram sums not added over the ranks: the render on 2 ranks fails, 1 rank's pass.
#
#   tests/test_gpu_standin.sh NSTBATCH IMAGE_DIFF
NST=$(readlink -f "$1") DIFF=$(readlink -f "$2")
. "$(dirname "$0")/lib.sh" test_gpu_standin
# a level below the machine's own, so the rounding differs from the reference's
flags=$(cpu_flags) # (less what a global ONEDNN_MAX_CPU_ISA hides: tests/lib.sh)
if grep -qw avx512f <<<"$flags"; then LEVEL=AVX2; elif grep -qw avx2 <<<"$flags"; then LEVEL=SSE41; else
  skip "the stand-in: this CPU has no level below its own that oneDNN can cap to"; finish; exit; fi

# standin LOG [PLANT]: the GPU render checks with the stand-in, output in T/LOG.log, status in rc
standin() {
  STAND_IN=$LEVEL PLANT=${2:-} ONLY=${2:+tiling} "$IDLE" 900 "$ROOT/tests/test_gpu_render.sh" "$NST" "$DIFF" >"$T/$1.log" 2>&1
  rc=$?
}
failed() { grep -E '^  FAIL ' "$T/$1.log" | cut -c8- | sed 's/:.*//'; } # the failed checks' names
summary() { grep -E '^test_gpu_render: ' "$T/$1.log"; }

standin clean
if [ $rc -eq 0 ] && summary clean | grep -q ' [1-9][0-9]* passed, 0 failed'; then ok "stand-in at $LEVEL, nothing planted: $(summary clean)"
else bad "stand-in at $LEVEL, nothing planted" "exit $rc" "$(cat "$T/clean.log")"; fi
sed 's/^/    | /' "$T/clean.log" # the measured errors, in the test log

standin halo halo
f=$(failed halo)
if [ $rc -ne 0 ] && grep -q '^fp32, 48 tiles of 32 px' <<<"$f" && grep -q '^fp32, 32 px tiles on 2 ranks' <<<"$f" &&
   ! grep -q 'one tile, against the CPU' <<<"$f"; then
  ok "a halo one pixel short fails: $(tr '\n' ';' <<<"$f")"
else bad "a halo one pixel short" "exit $rc, failed: $f" "$(cat "$T/halo.log")"; fi

standin allreduce allreduce
f=$(failed allreduce)
if [ $rc -ne 0 ] && grep -q '^fp32, 32 px tiles on 2 ranks' <<<"$f" && [ "$(wc -l <<<"$f")" -eq 1 ]; then
  ok "a missing Gram allreduce fails: $f"
else bad "a missing Gram allreduce" "exit $rc, failed: $f" "$(cat "$T/allreduce.log")"; fi
finish

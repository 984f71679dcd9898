#!/usr/bin/env bash
# tests/test_dryrun.sh: nstbatch --dry-run.
#
#   tests/test_dryrun.sh NSTBATCH
#
# - On the demo and on a 2048 px two-level pyramid (random VGG-19 at width 1/4): the plan of every
#   level and the outputs are printed, nothing is written, and the estimate is a positive time.
#   Its accuracy is a timing, judged by bench/dryrun_accuracy.sh (make bench-dryrun) against the
#   real render, not here: a test asserts no timing (a busy machine made a factor-of-3 check fail
#   while the estimate was right).
# - A gigapixel print on 2 ranks is planned (its time is printed, not judged); where it fits no
#   plan, each level says what it would need, no calibration runs (no estimate to give) and the run
#   exits 2 at start.
# - optim.method = auto plans a level with Adam where L-BFGS's state fits no tiling of the budget,
#   and says so; optim.method = lbfgs is refused there.
NST=$(readlink -f "$1")
. "$(dirname "$0")/lib.sh" test_dryrun
# the demo on the CPU on any host: the estimate is checked against a CPU run, and 2 ranks on a
# one-GPU host would be refused (gpu.share = false)
DEMO=("$ROOT/configs/demo.ini" --set run.device=cpu)

# est LOG: the estimate's seconds
est() { sed -n 's/^estimate: about \([0-9.]*\) s for .*/\1/p' "$T/$1.log"; }
# compare NAME ARGS...: a dry run of the demo config with ARGS
compare() {
  local name=$1; shift
  (cd "$T" && "$IDLE" 300 "$NST" "${DEMO[@]}" --set output.path="$T/$name.png" --dry-run "$@") >"$T/$name-dry.log" 2>&1
  local rc=$?
  if [ $rc -eq 0 ] && [ ! -e "$T/$name.png" ] && grep -q '^level 1/' "$T/$name-dry.log" && grep -q "PNG  $T/$name.png: " "$T/$name-dry.log"; then
    ok "$name: --dry-run prints the plan and the outputs, writes nothing ($(grep '^estimate:' "$T/$name-dry.log"))"
  else bad "$name: --dry-run" "exit $rc" "$(cat "$T/$name-dry.log")"; return; fi
  local e
  e=$(est "$name-dry")
  if [ -n "$e" ] && awk -v e="$e" 'BEGIN { exit !(e > 0 && e < 1e9) }'; then ok "$name: an estimate of $e s"
  else bad "$name: the estimate" "estimated ${e:-?} s" "$(grep -E '^(dry run|level|estimate)' "$T/$name-dry.log")"; fi
}
compare demo
compare pyramid --set output.size=2048 --set pyramid.levels=2 --set pyramid.iterations=12,6

# ---- a gigapixel plan on 2 ranks ----------------------------------------------------------------------
start=$(date +%s.%N)
(cd "$T" && "$IDLE" 600 mpirun --oversubscribe --bind-to none -np 2 "$NST" "${DEMO[@]}" --dry-run \
    --set output.path="$T/giga.tif" --set output.size=40000 --set model.random_width_divisor=1) >"$T/giga.log" 2>&1
rc=$?
secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
# (a plan that does not fit gets no calibration: no estimate is printed for it)
if { [ $rc -eq 0 ] || { [ $rc -eq 2 ] && grep -q 'does not fit: .* needs .* GiB on its busiest rank' "$T/giga.log" &&
                        grep -q '^dry run: .*no time estimate (and no calibration): a level fits no plan' "$T/giga.log"; }; } &&
   [ ! -e "$T/giga.tif" ]; then
  ok "a 40000x26667 print on 2 ranks planned in $secs s ($([ $rc -eq 0 ] && echo fits || grep -o -E 'needs [0-9.]+ GiB on its busiest rank|or [0-9]+ ranks with' "$T/giga.log" | sed 's/ with$//' | paste -sd, -))"
else bad "a gigapixel dry run" "exit $rc in $secs s" "$(grep -v '^ ' "$T/giga.log" | tail -n 6)"; fi

# ---- optim.method = auto where L-BFGS's state does not fit ------------------------------------------
# 4096x2731 on one rank in 3 GiB (a network of width 1/8): L-BFGS's history (288 B per owned pixel) fits no tiling, Adam's
# state (48 B) does, so auto plans the level with Adam and says so; lbfgs itself is refused
for m in auto lbfgs; do
  (cd "$T" && "$IDLE" 600 "$NST" "${DEMO[@]}" --dry-run --set output.path="$T/mem.tif" --set output.size=4096 \
      --set run.memory_gb=3 --set run.precision=fp32 --set optim.iterations=2 --set model.random_width_divisor=8 --set optim.method=$m) >"$T/mem_$m.log" 2>&1
  eval "rc_$m=$?"
done
if [ "$rc_auto" -eq 0 ] && grep -q "^level 1/1: 4096x2731, .*, with Adam (optim.method = auto: L-BFGS's state fits no tiling)" "$T/mem_auto.log" &&
   [ "$rc_lbfgs" -eq 2 ] && grep -q '^level 1/1: 4096x2731, 2 iterations: does not fit' "$T/mem_lbfgs.log"; then
  ok "optim.method = auto in 3 GiB at 4096x2731: Adam, as L-BFGS's state fits no tiling (lbfgs itself: exit 2, does not fit)"
else bad "auto where L-BFGS does not fit" "auto: exit $rc_auto, lbfgs: exit $rc_lbfgs" "$(grep -E '^(level|optim|nstbatch)' "$T/mem_auto.log" "$T/mem_lbfgs.log")"; fi

finish

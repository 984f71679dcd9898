#!/usr/bin/env bash
# tests/test_dryrun.sh: nstbatch --dry-run.
#
#   tests/test_dryrun.sh NSTBATCH
#
# - On the demo and on a 2048 px two-level pyramid (random VGG-19 at width 1/4): the plan of every
#   level and the outputs are printed, nothing is written, and the estimate is within a factor of 3
#   of the real run's render time (the run record's levels), measured right after on the same
#   machine: a margin only a broken estimate fails on a busy machine. How close it comes is
#   measured by bench/dryrun_accuracy.sh (make bench-dryrun).
# - A gigapixel print on 2 ranks is planned (its time is printed, not judged); where it fits no
#   plan, each level says what it would need and the run exits 2 at start.
NST=$(readlink -f "$1")
. "$(dirname "$0")/lib.sh" test_dryrun
# the demo on the CPU on any host: the estimate is checked against a CPU run, and 2 ranks on a
# one-GPU host would be refused (gpu.share = false)
DEMO=("$ROOT/configs/demo.ini" --set run.device=cpu)

# est LOG: the estimate's seconds; real RECORD: the levels' seconds in a run record
est() { sed -n 's/^estimate: about \([0-9.]*\) s for .*/\1/p' "$T/$1.log"; }
real() { /usr/bin/python3 -c 'import json,sys; print(sum(l["seconds"] for l in json.load(open(sys.argv[1]))["levels"]))' "$T/$1" 2>/dev/null ||
         sed -n 's/.*"seconds": \([0-9.]*\).*/\1/p' "$T/$1" | head -n 1; }
# compare NAME ARGS...: a dry run and the real run of the demo config with ARGS
compare() {
  local name=$1; shift
  (cd "$T" && timeout 300 "$NST" "${DEMO[@]}" --set output.path="$T/$name.png" --dry-run "$@") >"$T/$name-dry.log" 2>&1
  local rc=$?
  if [ $rc -eq 0 ] && [ ! -e "$T/$name.png" ] && grep -q '^level 1/' "$T/$name-dry.log" && grep -q "PNG  $T/$name.png: " "$T/$name-dry.log"; then
    ok "$name: --dry-run prints the plan and the outputs, writes nothing ($(grep '^estimate:' "$T/$name-dry.log"))"
  else bad "$name: --dry-run" "exit $rc" "$(cat "$T/$name-dry.log")"; return; fi
  (cd "$T" && timeout 600 "$NST" "${DEMO[@]}" --set output.path="$T/$name.png" --set run.record="$T/$name.json" "$@") >"$T/$name.log" 2>&1
  local e r
  e=$(est "$name-dry") r=$(real "$name.json")
  if [ -n "$e" ] && [ -n "$r" ] && awk -v e="$e" -v r="$r" 'BEGIN { exit !(e > 0 && r > 0 && e / r < 3 && r / e < 3) }'; then
    ok "$name: the estimate ($e s) is within a factor of 3 of the real render ($r s)"
  else bad "$name: the estimate" "estimated ${e:-?} s, rendered in ${r:-?} s" "$(grep -E '^(dry run|level|estimate)' "$T/$name-dry.log")"; fi
}
compare demo
compare pyramid --set output.size=2048 --set pyramid.levels=2 --set pyramid.iterations=12,6

# ---- a gigapixel plan on 2 ranks ----------------------------------------------------------------------
start=$(date +%s.%N)
(cd "$T" && timeout 600 mpirun --oversubscribe --bind-to none -np 2 "$NST" "${DEMO[@]}" --dry-run \
    --set output.path="$T/giga.tif" --set output.size=40000 --set model.random_width_divisor=1) >"$T/giga.log" 2>&1
rc=$?
secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
if { [ $rc -eq 0 ] || { [ $rc -eq 2 ] && grep -q 'does not fit: .* needs .* GiB on its busiest rank' "$T/giga.log"; }; } &&
   [ ! -e "$T/giga.tif" ]; then
  ok "a 40000x26667 print on 2 ranks planned in $secs s ($([ $rc -eq 0 ] && echo fits || sed -n 's/.*\(needs [0-9.]* GiB on its busiest rank\).*, or \([0-9]* ranks\) with.*/\1, or \2/p' "$T/giga.log" | head -n 1))"
else bad "a gigapixel dry run" "exit $rc in $secs s" "$(grep -v '^ ' "$T/giga.log" | tail -n 6)"; fi

finish

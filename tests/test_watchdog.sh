#!/usr/bin/env bash
# tests/test_watchdog.sh: the stall watchdog outside the render loops (mpi/watchdog.h: phases), on
# this machine, 3 ranks (the two-host cases, a cut link and a lost node, are in test_hosts.sh).
#
#   tests/test_watchdog.sh NSTBATCH IMAGE_DIFF
#
# A small render (96x64, the random VGG-19 at width 1/8, 4 tiles of 48 px so that every rank has
# work, fp32) with the watchdog's floor lowered to 3 s by the test hook NSTBATCH_STALL_FLOOR, and a
# rank frozen (SIGSTOP) by the hook NSTBATCH_FREEZE=RANK:PHASE as a phase begins:
# - in the set-up, after the self-test's start, and after the render loop (before the outputs):
#   one line from rank 0 naming the phase and the silent rank, exit 75, no image written;
# - rank 0 frozen in the set-up: the deputy (rank 1) says that rank 0 gave no answer, exit 75;
# - a rank computing 10 s in the set-up (over three times the limit, NSTBATCH_FREEZE=1:setup:10):
#   a phase's wait for one rank's work is no stall: the render ends normally, its image equal to
#   the same render's without the delay.
# Every run is bounded (timeout 120 s): before phases were watched, each frozen case waited until
# it was killed.
NST=$(readlink -f "$1") DIFF=$(readlink -f "$2")
. "$(dirname "$0")/lib.sh" test_watchdog
{ demo_pair; printf '[model]\nrandom_width_divisor = 8\n[optim]\niterations = 5\n[output]\nwidth = 96\nheight = 64\n'
  printf '[tiling]\ntile_size = 48\n[run]\nthreads = 1\nprecision = fp32\ndevice = cpu\n'; } >"$T/w.ini"

# three LOG FREEZE ARGS...: 3 ranks with that freeze (empty: none), T/LOG.log, status in rc, seconds in took
three() {
  local log=$1 freeze=$2 t0=$SECONDS; shift 2
  (cd "$T" && NSTBATCH_STALL_FLOOR=3 NSTBATCH_FREEZE=$freeze timeout 120 mpirun --oversubscribe --bind-to none -np 3 "$NST" w.ini "$@") \
    >"$T/$log.log" 2>&1
  rc=$? took=$((SECONDS - t0))
}
# stalled NAME LOG IMAGE PATTERN: exit 75, one error line holding PATTERN, IMAGE not written
stalled() {
  if one_error "$2" 75 "$4" && [ ! -e "$T/$3" ]; then ok "$1: exit 75 in $took s, no image"
  else bad "$1" "exit $rc after $took s" "$(grep -v '^ *[0-9]' "$T/$2.log" | grep -v '^ *$' | tail -n 8)"; fi
}

three setup 2:setup --set output.path=setup.png
stalled "rank 2 frozen in the set-up: rank 0 names the phase and the rank" setup setup.png \
  "stalled in the set-up (config, device, weights, inputs, style targets): a wait inside MPI passed 3 s (outside the iterations: 3 s before the first iteration ends, or run.stall_timeout where larger); no answer from rank 2 on $(hostname): stopped (a frozen process or host) or cut off by the network; no render had begun in this run"

three after 1:after --set output.path=after.png
stalled "rank 1 frozen after the render loop, before the outputs" after after.png \
  "stalled after level 1, iteration 5 (its outputs, or the set-up of what follows): a wait inside MPI passed 3 s (outside the iterations: 20x the slowest iteration so far, [0-9.]* s, at least 3 s, or run.stall_timeout where larger); no answer from rank 1 on "

three selftest 2:selftest --self-test
stalled "rank 2 frozen in the self-test" selftest none.png "stalled in the self-test: a wait inside MPI passed 3 s (.*); no answer from rank 2 on "

three rank0 0:setup --set output.path=rank0.png
stalled "rank 0 frozen in the set-up: the deputy speaks" rank0 rank0.png \
  "rank 1 ($(hostname)) in the set-up (.*): a wait inside MPI passed 3 s (.*), and rank 0 on $(hostname) gave no answer in 15 s more: it stopped, or the network"

three plain "" --set output.path=plain.png
three busy 1:setup:10 --set output.path=busy.png
if [ $rc -eq 0 ] && ! grep -q 'stalled\|error' "$T/busy.log" && [ "$took" -ge 10 ]; then
  same "rank 1 computing 10 s in the set-up (limit 3 s): no stall, the render ends in $took s, its image the plain render's" plain.png busy.png
else bad "a rank computing in the set-up" "exit $rc after $took s" "$(grep -v '^ *[0-9]' "$T/busy.log" | tail -n 8)"; fi
finish

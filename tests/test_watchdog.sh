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
# - rank 2 frozen while ranks 0 and 1 compute for 20 s (NSTBATCH_FREEZE=0:setup:20,...): no wait
#   inside MPI runs a clock, and rank 0's own round of questions (once per limit in a phase) names
#   rank 2 before the 20 s are over;
# - rank 0 frozen in the set-up: the deputy (rank 1) says that rank 0 gave no answer, exit 75, and
#   rank 2, which asked too, keeps quiet (exactly one line); with the deputy computing meanwhile,
#   rank 2 says it itself, 10 s after its grace;
# - a rank computing 10 s in the set-up (over three times the limit, NSTBATCH_FREEZE=1:setup:10):
#   a phase's wait for one rank's work is no stall: the render ends normally, its image equal to
#   the same render's without the delay.
# - in the render loop, rank 1 waiting as if inside MPI from iteration 10 on (NSTBATCH_SLOW=1:10:hang,
#   a network that stopped under the job while every lifeline answers): the others wait for it
#   inside MPI, and rank 0 says so after the limit, exit 75, no image;
# - the whole job suspended 15 s mid-render and resumed: no stall (the clocks start again).
# Every run is bounded ("$IDLE" 120 s): before phases were watched, each frozen case waited until
# it was killed.
NST=$(readlink -f "$1") DIFF=$(readlink -f "$2")
. "$(dirname "$0")/lib.sh" test_watchdog
{ demo_pair; printf '[model]\nrandom_width_divisor = 8\n[optim]\niterations = 5\n[output]\nwidth = 96\nheight = 64\n'
  printf '[tiling]\ntile_size = 48\n[run]\nthreads = 1\nprecision = fp32\ndevice = cpu\n'; } >"$T/w.ini"

# three LOG FREEZE ARGS...: 3 ranks with that freeze (empty: none), T/LOG.log, status in rc, seconds in took
three() {
  local log=$1 freeze=$2 t0=$SECONDS; shift 2
  (cd "$T" && NSTBATCH_STALL_FLOOR=3 NSTBATCH_FREEZE=$freeze "$IDLE" 120 mpirun --oversubscribe --bind-to none -np 3 "$NST" w.ini "$@") \
    >"$T/$log.log" 2>&1
  rc=$? took=$((SECONDS - t0))
}
# stalled NAME LOG IMAGE PATTERN: exit 75, one error line holding PATTERN, IMAGE not written
stalled() {
  if one_error "$2" 75 "$4" && [ ! -e "$T/$3" ]; then ok "$1: exit 75 in $took s, one line, no image"
  else bad "$1" "exit $rc after $took s" "$(grep -v '^ *[0-9]' "$T/$2.log" | grep -v '^ *$' | tail -n 8)"; fi
}

H=$(hostname)
three setup 2:setup --set output.path=setup.png
stalled "rank 2 frozen in the set-up: rank 0 names the phase and the rank" setup setup.png \
  "stalled in the set-up (config, device, weights, inputs, style targets): .* 3 s.*(outside the iterations: 3 s before the first iteration ends, or run.stall_timeout where larger); no answer from rank 2 on $H: stopped (a frozen process or host) or cut off by the network; no render had begun in this run"

three after 1:after --set output.path=after.png
stalled "rank 1 frozen after the render loop, before the outputs" after after.png \
  "stalled after level 1, iteration 5 (its outputs, or the set-up of what follows): .*; no answer from rank 1 on $H: stopped"

three selftest 2:selftest --self-test
stalled "rank 2 frozen in the self-test" selftest none.png \
  "stalled in the self-test: .*; no answer from rank 2 on $H: .*; the self-test writes nothing that a run again would resume"

# ranks 0 and 1 computing 20 s while rank 2 is stopped: no rank waits inside MPI, so only rank 0's
# own questions (one round per limit in a phase) can find it, before the 20 s are over
three asked 0:setup:20,1:setup:20,2:setup --set output.path=asked.png
stalled "rank 2 frozen while the others compute: rank 0's own questions find it" asked asked.png \
  "stalled in the set-up (.*): rank 0 asks every rank every 3 s (outside the iterations: .*); no answer from rank 2 on $H"
# (the order of two events, not a bound in seconds: the stall found, and the job ended, while rank
# 0 still computed its planted 20 s, which it says once they are over)
if grep -q "rank 0 computes" "$T/asked.log" && ! grep -q "rank 0 has computed" "$T/asked.log"; then
  ok "... before the others' 20 s of work were over (the job ended after $took s, rank 0 still computing)"
else bad "rank 0's own questions" "the job ended after $took s" "$(grep -v '^ *[0-9]' "$T/asked.log" | tail -n 8)"; fi

three rank0 0:setup --set output.path=rank0.png
stalled "rank 0 frozen in the set-up: the deputy speaks" rank0 rank0.png \
  "rank 1 ($H) in the set-up (.*): a wait inside MPI passed 3 s (.*), and rank 0 on $H gave no answer in 15 s more: it stopped, or the network"

# rank 0 stopped while the deputy (rank 1) computes for 60 s: the deputy has no clock running and
# says nothing, so rank 2, which asked rank 0 and heard nothing, says so itself 10 s after its grace
three deputy_busy 0:setup,1:setup:60 --set output.path=deputy_busy.png
stalled "rank 0 frozen while the deputy computes: the rank that asked speaks" deputy_busy deputy_busy.png \
  "rank 2 ($H) in the set-up (.*): a wait inside MPI passed 3 s (.*), and rank 0 on $H gave no answer in 15 s more"

three plain "" --set output.path=plain.png
three busy 1:setup:10 --set output.path=busy.png
if [ $rc -eq 0 ] && ! grep -q 'stalled\|error' "$T/busy.log" && [ "$took" -ge 10 ]; then
  same "rank 1 computing 10 s in the set-up (limit 3 s): no stall, the render ends in $took s, its image the plain render's" plain.png busy.png
else bad "a rank computing in the set-up" "exit $rc after $took s" "$(grep -v '^ *[0-9]' "$T/busy.log" | tail -n 8)"; fi
# every rank inside MPI in the loop (rank 1 waits there for ever): a stopped network, named
NSTBATCH_SLOW=1:10:hang three hang "" --set optim.iterations=30 --set output.path=hang.png
stalled "every rank waiting inside MPI at iteration 10 (rank 1 for ever): a stopped network" hang hang.png \
  "stalled at level 1, iteration 10: no iteration finished for [0-9]* s (.*); every rank answers, and each has waited inside MPI for [0-9.]* s or more: .*whose network has stopped"
# the whole job suspended for 15 s mid-render (SIGSTOP to every rank and mpirun, as a scheduler's
# suspend does) and resumed: every clock ran past its limit meanwhile, but no rank could run, so
# the watchdog starts its clocks again rather than ending the job
(cd "$T" && NSTBATCH_STALL_FLOOR=3 "$IDLE" 180 mpirun --oversubscribe --bind-to none -np 3 "$NST" w.ini --set optim.iterations=300 \
  --set run.print_every=10 --set output.path=susp.png) >"$T/susp.log" 2>&1 &
pid=$!
grown_wait 120 "$T/susp.log" grep -q '^ *50 ' "$T/susp.log" # (bounded by the log's growth)
# the job's processes: nstbatch and mpirun running in T (read from /proc: procps may be absent)
ours=$(for d in /proc/[0-9]*; do case $(cat "$d/comm" 2>/dev/null) in nstbatch | mpirun) [ "$(readlink "$d/cwd")" = "$T" ] && echo "${d#/proc/}" ;; esac; done)
kill -STOP $ours
sleep 15
kill -CONT $ours
wait $pid; rc=$?
if [ $rc -eq 0 ] && [ "$(echo $ours | wc -w)" -eq 4 ] && ! grep -q 'stalled' "$T/susp.log" && [ -e "$T/susp.png" ]; then
  ok "the job suspended 15 s at iteration 50 (limit 3 s) and resumed: no stall, the render ended"
else bad "a suspended job" "exit $rc, processes stopped: '$ours'" "$(grep -v '^ *[0-9]' "$T/susp.log" | tail -n 8)"; fi
finish

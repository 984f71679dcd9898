#!/usr/bin/env bash
# tests/test_slurm.sh: the launcher checks, the sbatch templates, and a real Slurm on localhost.
#
#   tests/test_slurm.sh NSTBATCH IMAGE_DIFF
#
# Without Slurm: the srun singleton trap and --expect-ranks are refused with one line (exit 2);
# every template parses (bash -n), refuses to run outside Slurm, marks its site lines # EDIT and
# opens with the napkin arithmetic; slurm/launch.sh requeues a job whose step a forwarded USR1
# ended (exit 138: the ranks had not yet taken the signal), through a stand-in scontrol.
# With Slurm (tests/slurm/start_local.sh starts munge, slurmctld and slurmd on localhost; SKIP with
# the reason when it cannot), each template runs with its GPU lines removed and 2 tasks of 1 CPU:
# - one-node-srun.sbatch (srun --mpi=pmix) and one-node-mpirun.sbatch, submitted and waited for,
#   run nstbatch --self-test first (slurm/launch.sh --self-test: passed, its report written) and
#   write the same image as mpirun -np 2 outside Slurm (a job that can never start on this node is
#   cancelled at once with its pending reason, not waited for);
# - a job with a 1-minute limit and --signal=B:USR1@55 is signalled, checkpoints, requeues itself
#   (slurm/launch.sh), resumes (its limit lifted at the first requeue after a checkpoint) and ends
#   bit-identical to the uninterrupted render;
# - array.sbatch splits a manifest over 2 elements, each a packed batch;
# - Ctrl-C to `srun -X` (2 tasks): checkpoint, 75, and the run resumed under srun gives the same image;
# - a job asking for more CPUs than the node has fails within a minute, with the reason.
. "$(dirname "$0")/lib.sh" test_slurm
NST=$(readlink -f "$1") DIFF=$(readlink -f "$2")
slurm_up=0
cleanup() {
  [ $slurm_up = 1 ] && { scancel -u root 2>/dev/null; "$ROOT/tests/slurm/start_local.sh" --stop "$T/slurm"; }
  "$ROOT/tests/slurm/start_local.sh" --stop "$T/slurm2" # (the side-by-side check's, where it was left up)
  rm -rf "$T"
}
trap cleanup EXIT
same() { # same NAME A B: image_diff says max 0
  local d; d=$("$DIFF" "$T/$2" "$T/$3" 2>&1)
  if [ "${d%% mean*}" = "max 0" ]; then ok "$1"; else bad "$1" "$d"; fi
}
mkdir -p "$T/out"
cat >"$T/job.ini" <<EOF
[content]
path = $ROOT/configs/demo/content.png
[style]
path = $ROOT/configs/demo/style.png
[output]
width = 192
height = 96
bits = 16
overwrite = true
preview = 0
[model]
random_width_divisor = 8
[optim]
method = adam
iterations = 50
[tiling]
tile_size = 96
[run]
device = cpu
threads = 1
print_every = 50
EOF
# (96 px tiles: 2, one on each rank, each window the whole image; 192x128, 4 tiles of the larger
# windows, took twice the CPU a render (2.1 s against 1.0 with mpirun) for the same checks)

# ---- launcher checks, without Slurm ----------------------------------------------------------------
out=$(cd "$T" && env SLURM_STEP_NUM_TASKS=4 SLURM_PROCID=0 "$NST" job.ini --set output.path=out/x.tif 2>&1); r=$?
[ $r -eq 2 ] && grep -q "srun started 4 tasks but MPI sees a world of 1 in each (singletons: no PMI connection); launch with srun --mpi=pmix" <<<"$out" \
  && [ "$(grep -c error <<<"$out")" = 1 ] && ok "the srun singleton trap: one line, exit 2" || bad "singleton trap" "exit $r" "$out"
out=$(cd "$T" && env SLURM_STEP_NUM_TASKS=4 SLURM_PROCID=3 "$NST" job.ini --set output.path=out/x.tif 2>&1); r=$?
[ $r -eq 2 ] && [ -z "$out" ] && ok "... and only the launcher's task 0 prints it" || bad "singleton trap, task 3" "exit $r" "$out"
out=$(cd "$T" && "$IDLE" 60 mpirun --oversubscribe --bind-to none -np 2 "$NST" --expect-ranks 3 job.ini --set output.path=out/x.tif 2>&1); r=$?
[ $r -eq 2 ] && [ "$(grep -c "expect-ranks 3: MPI started 2 ranks" <<<"$out")" = 1 ] && ok "--expect-ranks 3 on 2 ranks: one line, exit 2" || bad "--expect-ranks" "exit $r" "$out"
for t in "$ROOT"/slurm/*.sbatch; do
  n=$(basename "$t")
  bash -n "$t" || { bad "$n" "bash -n fails"; continue; }
  out=$(cd "$T" && env -u SLURM_JOB_ID bash "$t" job.ini 2>&1); r=$?
  if [ $r -eq 2 ] && grep -q "submit with sbatch" <<<"$out" && grep -q "# EDIT" "$t" && grep -q "^# Napkin arithmetic" "$t" && grep -q "^#SBATCH --signal=B:USR1@" "$t" \
    && grep -q "^#SBATCH --requeue" "$t"; then ok "$n: parses, refuses to run outside Slurm, # EDIT lines, napkin arithmetic, USR1 and --requeue"
  else bad "$n" "exit $r" "$out"; fi
done
out=$(env -u SLURM_JOB_ID "$ROOT/slurm/launch.sh" ck mpirun "$NST" 2>&1); r=$?
[ $r -eq 2 ] && grep -q "not inside a Slurm job" <<<"$out" && ok "slurm/launch.sh refuses to run outside Slurm" || bad "launch.sh outside Slurm" "exit $r" "$out"
# a USR1 that reaches the step before its ranks can take it ends the step (128 + 10): launch.sh
# requeues the job. The step: a process that takes USR1's default action; scontrol: a stand-in on
# PATH that records the requeue; then the test ends launch.sh's wait for Slurm, as Slurm would
mkdir -p "$T/fakebin"
printf '#!/bin/sh\necho "scontrol $*" >>"%s/requeued"\n' "$T" >"$T/fakebin/scontrol"
chmod +x "$T/fakebin/scontrol"
# in_job ID ARGS...: slurm/launch.sh ARGS in T, in place of this shell, as in Slurm job ID's first
# start, the stand-in scontrol first on PATH
in_job() { local id=$1; shift; cd "$T" && exec env PATH="$T/fakebin:$PATH" SLURM_JOB_ID="$id" SLURM_RESTART_COUNT=0 "$ROOT/slurm/launch.sh" "$@"; }
(in_job 77 ck-early sleep 30) >"$T/early.log" 2>&1 &
lp=$!
grown_wait 10 "$T/early.log" pgrep -P $lp -x sleep >/dev/null # the step has started (bounded by the log's growth)
kill -USR1 $lp
grown_wait 10 "$T/early.log" test -s "$T/requeued"
pkill -P $lp; kill $lp 2>/dev/null; wait $lp
if grep -q '^scontrol requeue 77$' "$T/requeued" 2>/dev/null && grep -q 'signalled as the ranks started, before they could checkpoint (exit 138)' "$T/early.log"; then
  ok "slurm/launch.sh: a USR1 that ends the step as its ranks start (exit 138) requeues the job"
else bad "a USR1 before the ranks' handler" "$(cat "$T/requeued" 2>/dev/null)" "$(cat "$T/early.log")"; fi
# a step the watchdog ended (its verdict, 75, in NSTBATCH_END_NOTE: here a stand-in writes it) is
# requeued, and once Slurm ends launch.sh (TERM), nothing is left in its TMPDIR (each requeue left
# the note there, on the node)
mkdir -p "$T/note-tmp" && rm -f "$T/requeued"
(TMPDIR="$T/note-tmp" in_job 78 ck-note \
   sh -c 'echo "75 stalled (a stand-in verdict)" >"$NSTBATCH_END_NOTE"; exit 1') >"$T/note.log" 2>&1 &
lp=$!
grown_wait 10 "$T/note.log" test -s "$T/requeued"
kill $lp 2>/dev/null; wait $lp
if grep -q '^scontrol requeue 78$' "$T/requeued" 2>/dev/null && [ -z "$(ls -A "$T/note-tmp")" ]; then
  ok "slurm/launch.sh: a step the watchdog ended (75) requeues the job, and leaves nothing in its TMPDIR once Slurm ends it"
else bad "a step the watchdog ended" "$(cat "$T/requeued" 2>/dev/null); left in its TMPDIR: $(ls -A "$T/note-tmp")" "$(cat "$T/note.log")"; fi

# a launcher that reports 0 having started no rank (srun does when its tasks fail to launch: "task
# launch failed", exit 0) leaves no mark of rank 0's end in CHECKPOINT_DIR (NSTBATCH_END_MARK): the
# job fails with one line, exit 1, instead of ending COMPLETED without an image; with the mark (a
# stand-in rank 0 writes it) the step's 0 stands, and the mark is gone when launch.sh ends
(in_job 79 ck-nomark true) >"$T/nomark.log" 2>&1
r=$?
(in_job 80 ck-mark \
   sh -c 'echo 0 >"$NSTBATCH_END_MARK"') >"$T/mark.log" 2>&1
r2=$?
if [ $r -eq 1 ] && [ "$(grep -c "the launcher reported 0 but nstbatch's rank 0 never reported its end: no rank ran" "$T/nomark.log")" = 1 ] &&
   [ $r2 -eq 0 ] && [ -d "$T/ck-mark" ] && [ -z "$(ls -A "$T/ck-mark")" ]; then
  ok "slurm/launch.sh: a launcher's 0 with no rank started (no mark from rank 0) fails the job, exit 1, one line; with the mark, 0, and no mark left"
else bad "a launcher's 0 without ranks" "exit $r, with the mark $r2; left in ck-mark: $(ls -A "$T/ck-mark" 2>/dev/null)" "$(cat "$T/nomark.log" "$T/mark.log")"; fi

# ---- a real Slurm ------------------------------------------------------------------------------------
if ! conf=$("$ROOT/tests/slurm/start_local.sh" "$T/slurm" 2>"$T/slurm.err"); then
  skip "real Slurm" "$(tail -n 1 "$T/slurm.err")"
  finish
  exit
fi
eval "$conf"
slurm_up=1
ok "Slurm on localhost: $(sinfo -h -o '%P %D node %c CPUs %t' | head -n 1)"
# another run's cluster beside this one (a second checkout's make test, a suite run by hand): its own
# ports and its own controller answering it (its state folder), not this one's; stopped at once
if conf2=$("$ROOT/tests/slurm/start_local.sh" "$T/slurm2" 2>"$T/slurm2.err"); then
  port() { sed -n 's/^SlurmctldPort=//p' "$1/slurm.conf"; }
  state=$(SLURM_CONF=$T/slurm2/slurm.conf scontrol show config 2>&1 | sed -n 's/^StateSaveLocation *= *//p')
  if [ "$(port "$T/slurm")" != "$(port "$T/slurm2")" ] && [ "$state" = "$T/slurm2/state" ]; then
    ok "a second cluster beside it: its own ports ($(port "$T/slurm") and $(port "$T/slurm2")), its own controller answering"
  else bad "a second cluster beside it" "ports $(port "$T/slurm") and $(port "$T/slurm2"); its controller's state folder: ${state:-none}" "$(tail -n 3 "$T/slurm2/log/slurmctld.log" 2>/dev/null)"; fi
else bad "a second cluster beside it" "it did not start: $(tail -n 1 "$T/slurm2.err")"; fi
"$ROOT/tests/slurm/start_local.sh" --stop "$T/slurm2"
# cpu TEMPLATE: the template for this 2-CPU node: no GPU lines, 2 tasks of 1 CPU
cpu() { sed -e '/--gpus-per-task\|--gpus-per-node\|--partition\|--output/d' -e 's/--ntasks-per-node=[48]$/--ntasks-per-node=2/' \
            -e 's/--ntasks-per-node=[48] /--ntasks-per-node=2 /' -e 's/--nodes=4/--nodes=1/' -e 's/--cpus-per-task=\(8\|16\)/--cpus-per-task=1/' \
            -e 's/ --gpu-bind=closest//' "$ROOT/slurm/$1" >"$T/$1"; }
for t in one-node-srun one-node-mpirun array multi-node cpu-cluster; do cpu $t.sbatch; done
export NSTBATCH_HOME=$ROOT
# the templates' self-test (slurm/launch.sh --self-test) with its time budget spent at once: it
# runs on every rank, passes and writes its report before the render as always, and leaves out
# its op harness, rows marked late (1.4 of its 1.5 CPU seconds a rank; the harness and the budget's
# rows are test_selftest's). Exported, as sbatch passes this environment to the jobs.
export NSTBATCH_SELFTEST_SECONDS=0.001
# run_job SBATCH_ARGS...: submit, wait until every task of the job has ended; r = 0 when all
# COMPLETED. A job that can never start here (its pending reason says the partition or node cannot
# hold it) is cancelled at once, with the reason in $why, instead of pending until a timeout.
run_job() {
  local j info states reason out="" a prev="" size=-1 s last=$SECONDS
  r=1 why=""
  for a in "$@"; do [ "$prev" = -o ] && out=$(sed 's/%[aAj]/*/g' <<<"$a"); prev=$a; done # its output files
  j=$(cd "$T" && sbatch --parsable "$@" 2>&1) || { why="sbatch refused it: $j"; return; }
  j=${j%%;*}
  # bounded by the job's output growing: 5 minutes without a byte (or without its end)
  while [ $((SECONDS - last)) -lt 300 ]; do
    s=$(bytes "$out"); [ "$s" != "$size" ] && size=$s last=$SECONDS
    reason=$(squeue -h -r -j "$j" -t PENDING -o %r 2>/dev/null | grep -m1 -E 'PartitionConfig|PartitionNodeLimit|BadConstraints|ReqNodeNotAvail|NodeDown|InvalidAccount|InvalidQOS')
    if [ -n "$reason" ]; then scancel "$j"; why="job $j can never start here: pending with reason $reason (see sinfo -N -l)"; return; fi
    [ -z "$(squeue -h -r -j "$j" -o %i 2>/dev/null)" ] && break
    sleep 0.5
  done
  info=$(scontrol show job "$j" 2>/dev/null)
  states=$(grep -o 'JobState=[A-Z_]*' <<<"$info" | sort -u | tr '\n' ' ')
  if [ "$states" = "JobState=COMPLETED " ]; then r=0; else why="job $j ended ${states:-unknown to scontrol}"; fi
}
(cd "$T" && "$IDLE" 300 mpirun --oversubscribe --bind-to none -np 2 "$NST" job.ini --set output.path=out/ref.tif) >"$T/ref.log" 2>&1 || bad "reference render" "mpirun failed" "$(cat "$T/ref.log")"
for t in one-node-srun one-node-mpirun cpu-cluster; do
  run_job -o "$T/$t.out" --export=ALL,CKPT="$T/ck-$t" "$T/$t.sbatch" job.ini --set output.path="$T/out/$t.tif"
  if [ $r -eq 0 ] && grep -q "2 ranks" "$T/$t.out" && grep -q '^self-test passed: .* on 2 ranks' "$T/$t.out" &&
     grep -q '^failing rows:' "$(grep -o '/[^ ]*/nstbatch-selftest-[0-9]*\.txt' "$T/$t.out" | head -n 1)"; then
    same "sbatch $t.sbatch (2 tasks): the self-test passed first (its report written), then the image of mpirun -np 2" out/$t.tif out/ref.tif
  else bad "sbatch $t.sbatch" "$why" "$(cat "$T/$t.out" 2>/dev/null)"; fi
done

# the time limit: signalled, checkpointed, requeued, resumed. The job is job.ini itself (its
# uninterrupted render is out/ref.tif), made long without computing: its first run's ranks wait
# before iteration 5's step until a signal comes (the test hook NSTBATCH_SLOW=*:5:signal, which a
# resumed run skips), so no run needs to be sized on this machine's speed to outlast its limit: a
# 1-minute limit with USR1 55 s before it, and Slurm signals the run whatever the machine's speed,
# by construction. Its warning USR1 comes when its periodic check runs (21 to 31 s into the run in
# 8 runs of make test); on this loaded one-node cluster it came twice after the run's end or not
# before the limit, and then the TERM Slurm sends at the limit is the signal: launch.sh forwards
# either, the ranks checkpoint and the job is requeued. The line says which came. (A run
# signalled before iteration 5, on a very slow start, stops at its next boundary just the same;
# one signalled before its ranks could take the signal is requeued without a checkpoint, and its
# next run is signalled in turn.)
J=$(cd "$T" && NSTBATCH_SLOW='*:5:signal' sbatch --parsable --time=1 --signal=B:USR1@55 -o "$T/limit.out" --export=ALL,CKPT="$T/ck-limit" \
    "$T/one-node-srun.sbatch" job.ini --set output.path="$T/out/limit.tif" --set checkpoint.every=40)
state="" restarts=0 waited=0 seen="" moved=$SECONDS lifted=""
# waits on progress, not a stopwatch: the test gives up only when neither the job's state, its
# restarts nor its checkpoint's iteration moved for 240 s (the first run waits up to its 1-minute
# limit for the signal; a requeue's begin time is about 2 minutes)
while [ $((SECONDS - moved)) -le 240 ]; do
  info=$(scontrol show job "$J" 2>/dev/null)
  state=$(grep -o 'JobState=[A-Z_]*' <<<"$info" | cut -d= -f2) restarts=$(grep -o 'Restarts=[0-9]*' <<<"$info" | cut -d= -f2)
  # an empty answer is scontrol's between a requeue's steps (seen once), not the job's end
  case "$state" in COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY) break ;; esac
  now="$state $restarts $(sed -n 's/^iteration = //p' "$T/ck-limit/manifest" 2>/dev/null)"
  [ "$now" = "$seen" ] || { seen=$now; moved=$SECONDS; }
  # a requeued job waits its begin time out (about 2 minutes, for the node to finish with its
  # previous run): the test does not, but waits for the node to be idle again (a job started on a
  # node still completing the previous run fails to launch). One signalled run that checkpointed is
  # the case, so the first requeue after a checkpoint also lifts the limit to 30 minutes: the
  # resumed run renders the rest in one go (it does within its minute too, but the limit is not the
  # resumed run's to test). A run signalled as its ranks started was requeued with no checkpoint
  # (slurm/launch.sh); its next run keeps the limit, to be signalled as it waits
  if [ "$state" = PENDING ] && [ "${restarts:-0}" -gt $waited ] && [ "$(sinfo -h -o %t | head -n 1)" = idle ]; then
    sleep 2
    [ -z "$lifted" ] && [ -s "$T/ck-limit/manifest" ] && scontrol update JobId="$J" TimeLimit=30 2>/dev/null && lifted=" (the limit then lifted)"
    scontrol update JobId="$J" StartTime=now 2>/dev/null && waited=$restarts
  fi
  sleep 0.5
done
usr1=$(grep -c "got SIGUSR1: forwarding it" "$T/limit.out") term=$(grep -c "got SIGTERM: forwarding it" "$T/limit.out")
if [ "$state" = COMPLETED ] && [ "${restarts:-0}" -ge 1 ] && [ $((usr1 + term)) -ge 1 ] && grep -q "requeueing job $J" "$T/limit.out" \
  && grep -q "resumed: level 1 at iteration" "$T/limit.out"; then
  ok "a 1-minute limit on a run that waits for its signal: signalled by Slurm (USR1 $usr1 times, TERM at the limit $term), checkpoint, requeue ($restarts$lifted), resume at iteration $(grep -o 'resumed: level 1 at iteration [0-9]*' "$T/limit.out" | tail -n 1 | awk '{print $NF}')"
  same "... and the requeued job's image == the uninterrupted render" out/limit.tif out/ref.tif
else bad "time limit and requeue" "state '$state', restarts '$restarts'" "$(grep -v '^ *[0-9]' "$T/limit.out" | tail -n 8; grep -E "JobId=$J |job $J|JobId=$J\b" "$T/slurm/log/slurmctld.log" | tail -n 12)"; fi

# a job array over a manifest: 2 elements, each a batch
# (the paths quoted, as a manifest allows: the checkout's may hold a space)
for i in 1 2 3 4; do echo "\"$ROOT/configs/demo/content.png\" \"$ROOT/configs/demo/style.png\" out/arr$i.tif optim.iterations=$((10 * i))"; done >"$T/jobs.txt"
run_job --array=0-1 -o "$T/array-%a.out" "$T/array.sbatch" job.ini jobs.txt --set output.width=96 --set output.height=64
n=$(ls "$T"/out/arr*.tif 2>/dev/null | wc -l)
if [ $r -eq 0 ] && [ "$n" = 4 ] && grep -q "2 jobs: 2 done" "$T/array-0.out" && grep -q "2 jobs: 2 done" "$T/array-1.out"; then
  ok "array.sbatch --array=0-1: 2 elements of 2 jobs each, 4 images"
else bad "array.sbatch" "${why:-$n images}" "$(tail -n 8 "$T"/array-*.out)"; fi

# Ctrl-C to an interactive `srun -X` (--disable-status), as its tasks compute before iteration 5
# until a signal comes (the test hook): srun passes the one SIGINT on to every task ($IDLE passes it
# to srun alone, as a terminal's would reach it), the ranks checkpoint and stop, 75, and the run
# resumed under srun ends with the uninterrupted render's image. (srun's default, a double Ctrl-C,
# kills the step before any checkpoint, measured by hand: why the docs say -X.)
(cd "$T" && NSTBATCH_SLOW='*:5:signal' exec "$IDLE" 300 srun -X --mpi=pmix -n 2 "$NST" job.ini --set output.path=out/srunx.tif \
    --set checkpoint.path=ck-srunx) >"$T/srunx.log" 2>&1 &
bg=$!
both_wait() { [ "$(grep -c "until a signal comes" "$T/srunx.log")" = 2 ] || ! kill -0 $bg 2>/dev/null; }
grown_wait 300 "$T/srunx.log" both_wait # (bounded by the log's growth: srun may queue for the node first)
kill -INT $bg; wait $bg; r=$?
(cd "$T" && "$IDLE" 300 srun --mpi=pmix -n 2 "$NST" job.ini --set output.path=out/srunx.tif --set checkpoint.path=ck-srunx) >"$T/srunx2.log" 2>&1
rc=$?
if [ $r -eq 75 ] && [ $rc -eq 0 ] && [ "$(grep -c "stopped by SIGINT (Ctrl-C) .*checkpoint written to ck-srunx" "$T/srunx.log")" = 1 ] &&
  grep -q "resumed: level 1 at iteration" "$T/srunx2.log"; then
  ok "Ctrl-C to srun -X: the tasks checkpoint and stop, srun exits 75, said once; resumed under srun"
  same "... and the resumed render's image == the uninterrupted render" out/srunx.tif out/ref.tif
else bad "Ctrl-C to srun -X" "exit $r, resumed: exit $rc" "$(tail -n 6 "$T/srunx.log" "$T/srunx2.log")"; fi

# a job this node can never run (more CPUs than it has) fails at once, with the reason
t0=$SECONDS
run_job -o "$T/huge.out" --ntasks=1 --cpus-per-task=$(( $(nproc --all) * 64 )) --wrap true
# (at once: refused by sbatch, or cancelled for its pending reason; not a wait that ran out, which a
# bound in seconds would only tell on a fast machine)
if [ $r -ne 0 ] && grep -qE '^(sbatch refused it|job [0-9]+ can never start here)' <<<"$why"; then
  ok "a job that can never start: refused or cancelled for its reason, after $((SECONDS - t0)) s ($why)"
else bad "a job that can never start" "r=$r after $((SECONDS - t0)) s: ${why:-no reason}"; fi

finish

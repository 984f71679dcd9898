#!/usr/bin/env bash
# slurm/launch.sh: run one nstbatch step inside a Slurm batch job, checkpoint at the time limit,
# requeue, resume. The sbatch templates in slurm/ call it; it refuses to run outside Slurm.
#
#   slurm/launch.sh CHECKPOINT_DIR [--self-test REPORT] LAUNCHER... nstbatch ARGS...
#   e.g. slurm/launch.sh ckpt/run1 --self-test st.txt srun --mpi=pmix ./nstbatch --expect-ranks "$SLURM_NTASKS" job.ini
#
# The template asks for `#SBATCH --signal=B:USR1@120` (USR1 to this batch shell 120 s before
# the limit; Slurm may send it up to 60 s early) and `#SBATCH --requeue`. This script:
#   1. traps USR1 and TERM and forwards them to the launcher (mpirun and srun forward them to
#      every rank), which makes nstbatch write a checkpoint at its next iteration boundary and exit
#      with status 75;
#   2. on exit status 75, or on any failure after it forwarded a signal while a manifest in
#      CHECKPOINT_DIR (or, for a batch, CHECKPOINT_DIR/JOB) says "running" (mpirun reports 1
#      when it was itself sent TERM), asks
#      `scontrol requeue` for the job: the batch script runs again from the top, and nstbatch
#      resumes from the checkpoint (a finished job is not rendered again);
#   3. when nstbatch's watchdog ended the job (a stall, a lost node: docs/CHECKPOINTS.md), its
#      ranks wrote "75 LINE" to NSTBATCH_END_NOTE (set here): the step counts as exit 75, whatever
#      srun or mpirun reported, and a step still running 60 s after the verdict (a launcher
#      waiting for a node it cannot reach) is ended;
#   4. otherwise exits with nstbatch's status. Rank 0 writes that status to NSTBATCH_END_MARK (set
#      here: a file in CHECKPOINT_DIR, which every node reaches); a launcher that reports 0 with no
#      mark started no rank (srun exits 0 when its tasks fail to launch) and the job fails, exit 1,
#      instead of ending COMPLETED with no image.
# With --self-test REPORT, the job's first start (not a requeued one, whose allocation was checked
# when it began) runs the same step with `--self-test --report REPORT` before the render, and
# stops with its status when it fails: a bad GPU, driver or NCCL is found in a minute, not an hour
# into the render. A signal during the self-test requeues the job at once (no render could finish),
# and so does a USR1 that ended the step itself (exit 138: it reached the ranks before they could
# take it, as they started).
# NSTBATCH_MAX_REQUEUES (default 20) bounds the requeues (SLURM_RESTART_COUNT).
set -u
if [ -z "${SLURM_JOB_ID:-}" ]; then
  echo "slurm/launch.sh: not inside a Slurm job (no SLURM_JOB_ID): submit the template with sbatch" >&2
  exit 2
fi
if [ $# -lt 2 ]; then
  echo "usage: slurm/launch.sh CHECKPOINT_DIR [--self-test REPORT] LAUNCHER... nstbatch ARGS..." >&2
  exit 2
fi
ckpt=$1; shift
report=""
if [ "$1" = "--self-test" ]; then report=${2:?slurm/launch.sh: --self-test needs a report file}; shift 2; fi
forwarded=""
child=""
forward() {
  forwarded=$1
  echo "slurm/launch.sh: $(date -Is) got SIG$1: forwarding it to the ranks (checkpoint, then exit 75)" >&2
  [ -n "$child" ] && kill -s "$1" "$child" 2>/dev/null
}
trap 'forward USR1' USR1
trap 'forward TERM' TERM
NSTBATCH_END_NOTE=$(mktemp "${TMPDIR:-/tmp}/nstbatch-end.XXXXXX") || exit 1
export NSTBATCH_END_NOTE
mkdir -p "$ckpt" || { echo "slurm/launch.sh: cannot make the checkpoint folder $ckpt: give a writable CHECKPOINT_DIR" >&2; exit 2; }
NSTBATCH_END_MARK=$(cd "$ckpt" && pwd)/.ranks-ended-$SLURM_JOB_ID
export NSTBATCH_END_MARK
trap 'rm -f "$NSTBATCH_END_NOTE" "$NSTBATCH_END_MARK"' EXIT
# step CMD...: run one step in the background, forwarding signals to it, until it is gone; rc
# (75 when the watchdog's verdict is in NSTBATCH_END_NOTE)
step() {
  local verdict=""
  rm -f "$NSTBATCH_END_NOTE" "$NSTBATCH_END_MARK" # the first rank to end the job makes the note; rank 0 the mark
  "$@" &
  child=$!
  while kill -0 "$child" 2>/dev/null; do
    [ -z "$verdict" ] && [ -s "$NSTBATCH_END_NOTE" ] && verdict=$SECONDS
    if [ -n "$verdict" ] && [ $((SECONDS - verdict)) -ge 60 ]; then
      echo "slurm/launch.sh: $(date -Is) the ranks ended the job (exit 75) 60 s ago and the step still runs: ending it" >&2
      kill -TERM "$child" 2>/dev/null # srun ends its step; mpirun would wait for TCP to give up
      for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$child" 2>/dev/null || break; sleep 1; done
      kill -KILL "$child" 2>/dev/null
      break
    fi
    sleep 1 & wait $! # a trapped signal (USR1, TERM) ends this wait at once
  done
  wait "$child"; rc=$?
  if [ -s "$NSTBATCH_END_NOTE" ]; then
    echo "slurm/launch.sh: $(date -Is) the step reported exit $rc; nstbatch's watchdog ended it: $(cut -d' ' -f2- "$NSTBATCH_END_NOTE" | head -c 300)" >&2
    rc=$(cut -d' ' -f1 "$NSTBATCH_END_NOTE")
  elif [ "$rc" -eq 0 ] && [ ! -s "$NSTBATCH_END_MARK" ]; then
    echo "slurm/launch.sh: $(date -Is) the launcher reported 0 but nstbatch's rank 0 never reported its end: no rank ran (srun exits 0 when its tasks fail to launch: see its lines above); the job fails (exit 1)" >&2
    rc=1
  fi
  child=""
}
# requeue WHY: ask Slurm to run the job again from the top (bounded by NSTBATCH_MAX_REQUEUES)
requeue() {
  if [ "${SLURM_RESTART_COUNT:-0}" -ge "${NSTBATCH_MAX_REQUEUES:-20}" ]; then
    echo "slurm/launch.sh: $1 but requeued ${SLURM_RESTART_COUNT} times already (NSTBATCH_MAX_REQUEUES): not again" >&2
    exit 75
  fi
  echo "slurm/launch.sh: $(date -Is) $1: requeueing job $SLURM_JOB_ID" >&2
  rm -f "$NSTBATCH_END_NOTE" "$NSTBATCH_END_MARK" # (read already; Slurm's TERM below ends this shell without its EXIT trap)
  trap - USR1 TERM
  local err restarts
  if ! err=$(scontrol requeue "$SLURM_JOB_ID" 2>&1); then
    # after a node failure Slurm requeues a --requeue job itself, and then refuses this
    restarts=$(scontrol show job "$SLURM_JOB_ID" 2>/dev/null | grep -o 'Restarts=[0-9]*' | cut -d= -f2)
    if [ "${restarts:-0}" -gt "${SLURM_RESTART_COUNT:-0}" ]; then
      echo "slurm/launch.sh: Slurm has requeued job $SLURM_JOB_ID itself (a node failed): it resumes from the checkpoint" >&2
    else
      echo "slurm/launch.sh: scontrol requeue failed (${err:-no reason given}): requeue by hand" >&2
    fi
    exit 75
  fi
  # Slurm now ends this run (TERM) and queues the job again; do not race it with an exit status
  sleep 120
  echo "slurm/launch.sh: the requeue did not end this run: exiting 75" >&2
  exit 75
}
if [ -n "$report" ] && [ "${SLURM_RESTART_COUNT:-0}" -eq 0 ]; then
  echo "slurm/launch.sh: $(date -Is) job $SLURM_JOB_ID: checking the allocation first: $* --self-test --report $report" >&2
  step "$@" --self-test --report "$report"
  [ -n "$forwarded" ] && requeue "signalled during the self-test, before the render"
  if [ "$rc" -ne 0 ]; then
    echo "slurm/launch.sh: nstbatch --self-test failed (exit $rc): no render started; send $report to the developers" >&2
    exit "$rc"
  fi
fi
echo "slurm/launch.sh: $(date -Is) job $SLURM_JOB_ID (restart ${SLURM_RESTART_COUNT:-0}): $*" >&2
step "$@"
# a checkpoint in force: the job's manifest, or a batch's per-job manifests, saying "running"
running=$(grep -l '^state = running' "$ckpt/manifest" "$ckpt"/*/manifest 2>/dev/null | head -n 1)
if [ "$rc" -eq 75 ] || { [ -n "$forwarded" ] && [ "$rc" -ne 0 ] && [ -n "$running" ]; }; then
  requeue "checkpointed in $ckpt (exit $rc)"
fi
# USR1 ended the step itself (128 + 10): it came as the ranks started, before they could take it
[ "$forwarded" = USR1 ] && [ "$rc" -eq 138 ] && requeue "signalled as the ranks started, before they could checkpoint (exit $rc)"

exit "$rc"

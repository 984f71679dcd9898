#!/usr/bin/env bash
# slurm/launch.sh: run one nstbatch step inside a Slurm batch job, checkpoint at the time limit,
# requeue, resume. The sbatch templates in slurm/ call it; it refuses to run outside Slurm.
#
#   slurm/launch.sh CHECKPOINT_DIR LAUNCHER... nstbatch ARGS...
#   e.g. slurm/launch.sh ckpt/run1 srun --mpi=pmix ./nstbatch --expect-ranks "$SLURM_NTASKS" job.ini
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
#   3. otherwise exits with nstbatch's status.
# NSTBATCH_MAX_REQUEUES (default 20) bounds the requeues (SLURM_RESTART_COUNT).
set -u
if [ -z "${SLURM_JOB_ID:-}" ]; then
  echo "slurm/launch.sh: not inside a Slurm job (no SLURM_JOB_ID): submit the template with sbatch" >&2
  exit 2
fi
if [ $# -lt 2 ]; then
  echo "usage: slurm/launch.sh CHECKPOINT_DIR LAUNCHER... nstbatch ARGS..." >&2
  exit 2
fi
ckpt=$1; shift
forwarded=""
child=""
forward() {
  forwarded=$1
  echo "slurm/launch.sh: $(date -Is) got SIG$1: forwarding it to the ranks (checkpoint, then exit 75)" >&2
  [ -n "$child" ] && kill -s "$1" "$child" 2>/dev/null
}
trap 'forward USR1' USR1
trap 'forward TERM' TERM
echo "slurm/launch.sh: $(date -Is) job $SLURM_JOB_ID (restart ${SLURM_RESTART_COUNT:-0}): $*" >&2
"$@" &
child=$!
# `wait` returns early when a trapped signal arrives: wait again until the step is gone
rc=0
while :; do
  wait "$child"; rc=$?
  kill -0 "$child" 2>/dev/null || break
done
# a checkpoint in force: the job's manifest, or a batch's per-job manifests, saying "running"
running=$(grep -l '^state = running' "$ckpt/manifest" "$ckpt"/*/manifest 2>/dev/null | head -n 1)
if [ "$rc" -eq 75 ] || { [ -n "$forwarded" ] && [ "$rc" -ne 0 ] && [ -n "$running" ]; }; then
  if [ "${SLURM_RESTART_COUNT:-0}" -ge "${NSTBATCH_MAX_REQUEUES:-20}" ]; then
    echo "slurm/launch.sh: checkpointed (exit $rc) but requeued ${SLURM_RESTART_COUNT} times already (NSTBATCH_MAX_REQUEUES): not again" >&2
    exit 75
  fi
  echo "slurm/launch.sh: $(date -Is) checkpointed in $ckpt (exit $rc): requeueing job $SLURM_JOB_ID" >&2
  trap - USR1 TERM
  scontrol requeue "$SLURM_JOB_ID" || { echo "slurm/launch.sh: scontrol requeue failed: requeue by hand" >&2; exit 75; }
  # Slurm now ends this run (TERM) and queues the job again; do not race it with an exit status
  sleep 120
  echo "slurm/launch.sh: the requeue did not end this run: exiting 75" >&2
  exit 75
fi
exit "$rc"

# tests/idle.sh, sourced by every shell suite (through tests/lib.sh, or after its ROOT is set): IDLE,
# the bound each suite puts on a command. `"$IDLE" N CMD...` (build/tests/idle_timeout) ends CMD
# only after N seconds in which it printed nothing, so every such bound is on progress, not on wall
# time: a render prints a row every run.print_every iterations, so a slow or loaded machine
# lengthens the run without ending it, and a hang still ends after N silent seconds (exit 124).
IDLE=${NST_IDLE:-$ROOT/build/tests/idle_timeout}
[ -x "$IDLE" ] || { echo "$0: $IDLE is missing: make test builds it (or set NST_IDLE)" >&2; exit 1; }
# mpirun's PMIx authenticates its ranks with munge wherever libmunge finds munge's socket; where
# munged is installed but not running (its socket left behind), libmunge retries each connect for
# 2.25 s, so every mpirun took 2.3 s to start instead of 0.06 s (measured: about 2 minutes of
# test_checkpoint's 5). The suites' ranks are the tester's own processes on this machine or its
# namespaced hosts: PMIx's native check (the socket peer's uid) is enough for them.
export PMIX_MCA_psec=${PMIX_MCA_psec:-native}
# OpenMP threads that wait sleep at once instead of spinning first (libgomp spins about 300000
# rounds by default): the suites run two or three renders at a time on the machine's cores, and a
# spinning thread takes the core its peer needs. Two 2-thread demo renders of 40 iterations side by
# side on 2 cores took 15 and 31 s spinning, 6.9 and 6.8 s passive (one alone: 3.7-4.4 s either
# way, AMD EPYC). The bits do not change.
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
# mpirun ends a job whose rank exited non-zero with SIGTERM, a wait, SIGKILL and a wait, each wait
# odls_base_sigkill_timeout (1 s): every refused config, bad flag or planted fault through mpirun
# took 2.1 s instead of 0.15 (test_cli: 64 s -> 46 s). Nothing is lost: nstbatch's ranks agree on
# their status before any exits, so they have all finished when one exits. The cases that need
# the grace set Open MPI's default again: Ctrl-C to mpirun (the ranks checkpoint on its SIGTERM,
# test_checkpoint) and a lost host (the survivors name it before mpirun's SIGKILL, test_hosts).
export OMPI_MCA_odls_base_sigkill_timeout=${OMPI_MCA_odls_base_sigkill_timeout:-0}
# bytes GLOB: the total size of the files matching GLOB (0 with none): a job's outputs, say
bytes() { local n=0 f; for f in $1; do [ -f "$f" ] && n=$((n + $(stat -c %s "$f"))); done; echo "$n"; }
# grown_wait N FILE CMD...: waits, 0.1 s at a time, until CMD succeeds (0), or until FILE (a
# render's log, say; a glob adds its files up) has not grown for N seconds (1): a wait bounded by
# the work's progress. CMD's complaints meanwhile are not shown: what it reads may not exist yet
# (a log its command has still to create)
grown_wait() {
  local n=$1 f=$2 size s last=$SECONDS
  shift 2
  size=$(bytes "$f")
  until "$@" 2>/dev/null; do
    s=$(bytes "$f")
    [ "$s" != "$size" ] && size=$s last=$SECONDS
    [ $((SECONDS - last)) -ge "$n" ] && return 1
    sleep 0.1
  done
}

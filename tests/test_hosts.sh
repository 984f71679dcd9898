#!/usr/bin/env bash
# tests/test_hosts.sh: two hosts for real, on this machine (tests/hosts/hosts.sh: network, UTS and
# mount namespaces joined by veth links to a bridge; Open MPI starts its daemons in them through
# tests/hosts/agent.sh and moves data between hosts over TCP, btl self,vader,tcp on 10.213.0.0/24).
#
#   tests/test_hosts.sh NSTBATCH IMAGE_DIFF BUILD
#
# One start of the hosts for every check (small renders: 256x64, the interrupted ones 192x128, the
# random VGG-19 at width 1/8, one thread per rank, fp32, 16-bit outputs); every wait polls with a
# generous bound:
# - mpirun starts ranks on both hosts, each with its own hostname and /tmp, and each sees the
#   checkout, the build and the test's folder at their own paths, also where they are under /tmp;
# - 2 hosts x 2 ranks: the tiled render's TIFF pyramid (every level) and HDF5 (h5diff), written by
#   ranks on both hosts to the shared folder, equal one rank's; a rank kept busy 20 s by
#   NSTBATCH_SLOW is a slow iteration, not a stall: the watchdog (auto, its floor at 3 s through
#   NSTBATCH_STALL_FLOOR; the delay 3 times its limit) says so and waits;
# - a batch packed into 2 groups that each span both hosts (mpirun --map-by node) and a clip whose
#   2 shots go to groups on different hosts: each image or frame equals one rank's;
# - a network MPI cannot use: Open MPI's TCP ports refused by both hosts (tests/hosts/hosts.sh
#   refuse: iptables) ends the job after the ranks' first exchange's bound with one line from rank 0
#   and exit 75; a rank that never answers that exchange (planted) is named with its host;
# - a two-node Slurm (tests/slurm/start_local.sh --hosts): slurm/multi-node.sbatch, unchanged
#   (its sizes given to sbatch), equals one rank; a rank frozen by SIGSTOP in a job of that template
#   is named by the watchdog, the job ends with 75, slurm/launch.sh requeues it, and it resumes to
#   the uninterrupted render's bits; srun's ranks wait in the barrier after MPI_Init for a rank of the
#   other node that enters it 3 s late (planted);
# - a lost node: every process of nsth-b SIGKILLed mid-render (tools/nstbatch-mpirun): the job ends,
#   names the ranks and the host, exits 75 and keeps the last complete checkpoint; rerun on nsth-a
#   alone, it resumes to the uninterrupted render's bits;
# - a cut network: nsth-b's link taken down in the middle of the Gram allreduce (run.stall_timeout
#   = 8): the watchdog names the ranks it cannot reach, mpirun is ended and the status is 75; with
#   the link back, nsth-b's daemon is gone, and the rerun on both hosts resumes to the same bits;
#   the link taken down in the set-up (a rank kept busy there by NSTBATCH_FREEZE meanwhile): the
#   same line for that phase, 75, no image, nothing left on nsth-b.
# SKIPs with the reason where the namespaces cannot be made (not root, no iproute2), the firewall
# where iptables cannot filter in them, and the Slurm part where Slurm cannot start.
NST=$(readlink -f "$1") DIFF=$(readlink -f "$2") B=$(readlink -f "${3:-build}")
. "$(dirname "$0")/lib.sh" test_hosts
# Open MPI's own grace between its SIGTERM and SIGKILL (1 s; tests/idle.sh sets 0 for the other
# suites): when a host is lost, mpirun ends the job at once, and the survivors' watchdog says which
# ranks were lost, and writes the note for exit 75, within that second
export OMPI_MCA_odls_base_sigkill_timeout=1
HOSTS=$ROOT/tests/hosts/hosts.sh HD=$T/hosts
slurm_up=0
teardown() {
  [ $slurm_up = 1 ] && "$ROOT/tests/slurm/start_local.sh" --stop "$T/slurm" >/dev/null 2>&1
  "$HOSTS" down "$HD"
  rm -rf "$T" ${V:+"$V"}
}
trap teardown EXIT
trap 'exit 143' TERM INT # the EXIT trap tears the hosts down on these too

# every host sees the test's folder, the checkout, the build and the programs at their own paths,
# wherever they are (under /tmp too, which each host replaces with its own); V stands for a
# checkout under /tmp whatever this one's folder (a folder of its own, not inside T, as a clone)
V=$(mktemp -d /tmp/nstbatch-checkout.XXXXXX) && mkdir -p "$V/tests/hosts" && cp "$ROOT"/tests/hosts/*.sh "$V/tests/hosts/"
"$HOSTS" up "$HD" 2 "$T" "$ROOT" "$B" "$(dirname "$NST")" "$(dirname "$DIFF")" "$V" 2>"$T/up.err"; st=$?
if [ $st -ne 0 ]; then
  # exit 3: this machine makes no namespaces (a container without the right); else a set-up fault
  if [ $st -eq 3 ]; then skip "two hosts: $(tail -n 1 "$T/up.err")"; else bad "two hosts" "hosts.sh up: exit $st" "$(cat "$T/up.err")"; fi
  finish
  exit
fi
# where namespaces can be made, a host whose set-up fails is a failure, not a skip: a shared folder
# that cannot be bound (one that does not exist) makes hosts.sh exit 1, not 3 (it skipped before)
"$HOSTS" up "$T/hosts-bad" 2 "$T" "/tmp/nstbatch-no-such-folder.$$" 2>"$T/bad-up.err"; st=$?
"$HOSTS" down "$T/hosts-bad" >/dev/null 2>&1
if [ $st -eq 1 ] && grep -q "keeper did not start (unshare works here)" "$T/bad-up.err"; then
  ok "a host whose shared folder cannot be bound: hosts.sh exit 1 (a failure of the set-up), not 3 (a machine without namespaces)"
else bad "a host's failed set-up" "hosts.sh up: exit $st, expected 1" "$(cat "$T/bad-up.err")"; fi
# the launcher agent from the checkout, or from V where the checkout's path has a space: Open MPI
# reads plm_rsh_agent as a command line and splits it there
AGENT=$ROOT/tests/hosts/agent.sh
case $ROOT in *[[:space:]]*) AGENT=$V/tests/hosts/agent.sh ;; esac
MPIENV=(NSTH_DIR="$HD" OMPI_MCA_plm_rsh_agent="$AGENT" OMPI_MCA_btl=self,vader,tcp
        OMPI_MCA_btl_tcp_if_include=10.213.0.0/24 OMPI_MCA_oob_tcp_if_include=10.213.0.0/24)
# on HOST CMD...: CMD on HOST, in T, with Open MPI told how to reach the hosts
on() { local h=$1; shift; (cd "$T" && exec "$HOSTS" exec "$HD" "$h" env "${MPIENV[@]}" "$@"); }
printf 'nsth-a slots=2\nnsth-b slots=2\n' >"$T/hostfile"
printf 'nsth-a slots=4\n' >"$T/hostfile-a"
# across LOG ARGS...: nstbatch on 2 hosts x 2 ranks, mpirun on nsth-a; T/LOG.log, status in rc
across() { local log=$1; shift; on nsth-a "$IDLE" 300 mpirun --hostfile "$T/hostfile" -np 4 --bind-to none "$@" >"$T/$log.log" 2>&1; rc=$?; }
# wait_iter LOG N: until T/LOG shows a row of iteration >= N (bounded by the log's growth: 3 minutes
# without a line)
reached() { awk -v n="$2" '$1 ~ /^[0-9]+$/ && $1 + 0 >= n { f = 1 } END { exit !f }' "$T/$1" 2>/dev/null; }
wait_iter() { grown_wait 180 "$T/$1" reached "$1" "$2"; }
mkdir -p "$T/out" "$T/ref"
{ demo_pair; cat <<EOF
[output]
width = 256
height = 64
bits = 16
overwrite = true
preview = 0
[model]
random_width_divisor = 8
[optim]
iterations = 40
[tiling]
tile_size = 64
[run]
device = cpu
threads = 1
print_every = 10
precision = fp32
EOF
} >"$T/job.ini"

# ---- the hosts ------------------------------------------------------------------------------------
mark=nsth-mark-$$
out=$(on nsth-a "$IDLE" 60 mpirun --hostfile "$T/hostfile" -np 4 sh -c "hostname; touch /tmp/$mark" 2>&1)
# ranks_per_host OUT: "2nsth-a 2nsth-b " where OUT's hostname lines are 2 of each; the hostnames'
# lines only: Open MPI's rsh launcher may also warn that its setpgid of a daemon came after the
# daemon's exec (a harmless race, seen with the whole suite on one core, at either mpirun here)
ranks_per_host() { grep -x 'nsth-[ab]' <<<"$1" | sort | uniq -c | awk '{ print $1 $2 }' | tr '\n' ' '; }
if [ "$(ranks_per_host "$out")" = "2nsth-a 2nsth-b " ] && [ -e "$HD/scratch-nsth-a/$mark" ] &&
   [ -e "$HD/scratch-nsth-b/$mark" ] && [ ! -e "/tmp/$mark" ]; then
  ok "mpirun on nsth-a starts 2 ranks on nsth-a and 2 on nsth-b (tests/hosts/agent.sh), each host with its own hostname and /tmp"
else bad "ranks on two hosts" "" "$out"; fi
seen=$(for h in nsth-a nsth-b; do on $h sh -c 'test -x "$1" && test -x "$2" && test -x "$3" && echo "$4"' sh "$ROOT/tests/hosts/agent.sh" "$NST" "$DIFF" $h; done 2>&1)
out=$(on nsth-a env OMPI_MCA_plm_rsh_agent="$V/tests/hosts/agent.sh" "$IDLE" 60 mpirun --hostfile "$T/hostfile" -np 4 hostname 2>&1)
if [ "$seen" = "$(printf 'nsth-a\nnsth-b')" ] && [ "$(ranks_per_host "$out")" = "2nsth-a 2nsth-b " ]; then
  ok "both hosts see the checkout ($ROOT) and the build at their own paths; with the launcher in a checkout under /tmp, ranks start on both"
else bad "the shared folders on the hosts" "" "$seen"$'\n'"$out"; fi

# ---- renders on 2 hosts x 2 ranks equal one rank --------------------------------------------------
# the reference at the path the render writes (HDF5 keeps the config, output.path included), then moved
run_nst job.ini ref --set output.path=out/p.tif --set output.format=tiff,hdf5 --set output.tile_size=32
mv "$T/out/p.tif" "$T/out/p.h5" "$T/ref/" || bad "the one-rank reference" "exit $rc" "$(tail -n 5 "$T/ref.log")"
# rank 1 computes twice the watchdog's limit at iteration 20 (x2: derived from the measured
# iterations, 20x the slowest so far, at least the floor of 3 s), however slow the machine is: the
# limit does not grow while no iteration ends, and rank 0 asks every 0.25 s, so the warning comes a
# whole limit before the rank is done (x3 waited a third limit for nothing: 25 s at 1/2.35 of
# this Zen 4's pace, on the run's longest suite)
NSTBATCH_STALL_FLOOR=3 NSTBATCH_SLOW=1:20:x2 across tiled "$NST" job.ini --set output.path=out/p.tif --set output.format=tiff,hdf5 --set output.tile_size=32
levels=$(/usr/bin/python3 -c '
import sys, numpy, tifffile
a, b = (tifffile.TiffFile(f).series[0].levels for f in sys.argv[1:3])
print(len(a) if len(a) == len(b) and all(numpy.array_equal(x.asarray(), y.asarray()) for x, y in zip(a, b)) else "differ")' \
  "$T/ref/p.tif" "$T/out/p.tif" 2>/dev/null) || levels=""
if [ $rc -eq 0 ] && grep -q '^ *hosts: 2: nsth-a (ranks 0-1), nsth-b (ranks 2-3)$' "$T/tiled.log" && h5diff -q "$T/ref/p.h5" "$T/out/p.h5"; then
  case $levels in
    [1-9]) ok "2 hosts x 2 ranks == 1 rank, bit for bit: the TIFF pyramid (all $levels levels) and the HDF5 image (h5diff), written by ranks on both hosts" ;;
    differ) bad "2 hosts x 2 ranks: the TIFF pyramid" "a level differs from one rank's" ;;
    *) same "2 hosts x 2 ranks == 1 rank: the HDF5 image (h5diff) and the TIFF's full level (tifffile missing: reduced levels unchecked)" out/p.tif ref/p.tif ;;
  esac
else bad "2 hosts x 2 ranks" "exit $rc" "$(grep -v '^ *[0-9]' "$T/tiled.log" | tail -n 12)"; fi
if [ $rc -eq 0 ] && grep -q 'warning: no iteration has finished for [0-9]* s, but still computing (not waiting inside MPI): rank 1 on nsth-a: a slow iteration, not a stall; waiting on' "$T/tiled.log"; then
  ok "a rank computing 2x the watchdog's limit in one iteration ($(grep -o 'computes [0-9.]* s' "$T/tiled.log" | head -n 1); auto, its floor at 3 s): named as slow, not a stall; the render goes on"
else bad "a slow but moving iteration" "exit $rc" "$(grep -i 'warning\|error' "$T/tiled.log" | tail -n 5)"; fi

# a batch whose 2 groups each span both hosts (ranks alternate between the hosts)
{ sed 's/^iterations = 40$/iterations = 30/' "$T/job.ini"; printf '[batch]\ngroup_ranks = 2\n'
  for n in a b; do printf '[job.%s]\noutput.path = out/b_%s.tif\nstyle.weight = %s\n' $n $n $([ $n = a ] && echo 500 || echo 4000); done; } >"$T/batch.ini"
run_nst batch.ini bref
for n in a b; do mv "$T/out/b_$n.tif" "$T/ref/b_$n.tif" 2>/dev/null; done
on nsth-a "$IDLE" 300 mpirun --hostfile "$T/hostfile" --map-by node -np 4 --bind-to none "$NST" batch.ini >"$T/batch.log" 2>&1; rc=$?
if [ $rc -eq 0 ] && grep -q 'hosts: 2: nsth-a (ranks 0, 2), nsth-b (ranks 1, 3)' "$T/batch.log" && grep -q 'packed into 2 groups of 2 ranks' "$T/batch.log"; then
  for n in a b; do same "a batch in 2 groups of 2 ranks, each group on both hosts: job $n == 1 rank" out/b_$n.tif ref/b_$n.tif; done
else bad "a batch across hosts" "exit $rc" "$(grep -v '^ *[0-9]' "$T/batch.log" | tail -n 10)"; fi

# a clip of 2 shots on 2 groups, one on each host
"$B/tools/make_test_clip" "$T/clip" --size 96x64 --frames 6 --motion all >/dev/null || bad "make_test_clip" "failed"
cat >"$T/clip.ini" <<EOF
[content]
path = clip/frame_%05d.png
[style]
path = $ROOT/configs/demo/style.png
[output]
bits = 16
[model]
random_width_divisor = 8
[optim]
iterations = 20
[run]
print_every = 0
threads = 1
precision = fp32
[video]
flow = files
flow_forward = clip/fwd_%05d.flo
flow_backward = clip/bwd_%05d.flo
iterations = 20
detect_cuts = false
cuts = 3
EOF
mkdir -p "$T/clip1" "$T/clip4"
run_nst clip.ini clipref --set output.path=clip1/%05d.png
across clip "$NST" clip.ini --set output.path=clip4/%05d.png --set video.group_ranks=2 --set tiling.tile_size=48
frames=0
for f in "$T"/clip1/*.png; do [ "$("$DIFF" "$f" "$T/clip4/$(basename "$f")" 2>&1)" = "max 0 mean 0" ] && frames=$((frames + 1)); done
if [ $rc -eq 0 ] && grep -q '2 shots in 2 units, on 2 groups of 2 ranks' "$T/clip.log" && grep -q 'hosts: 2: nsth-a (ranks 0-1), nsth-b (ranks 2-3)' "$T/clip.log" && [ $frames = 6 ]; then
  ok "a clip of 2 shots on 2 groups, ranks 0-1 on nsth-a and 2-3 on nsth-b: its 6 frames == 1 rank's"
else bad "a clip across hosts" "exit $rc, $frames of 6 frames equal" "$(grep -E '^(clip|shot)|error' "$T/clip.log" | tail -n 6)"; fi

# ---- a network MPI cannot use: the ranks' first exchange is bounded (mpi/first_contact.c) ---------
# Open MPI's TCP ports (fixed for these runs) refused by both hosts, as by a firewall: the job ends
# after the bound (the watchdog's floor, lowered here, but never under 20 s, nor under 20 times a
# rank's MPI_Init on a loaded machine) with one line and exit
# 75, nothing written
if "$HOSTS" refuse "$HD" nsth-a 30000:30049 2>"$T/refuse.err" && "$HOSTS" refuse "$HD" nsth-b 30000:30049 2>>"$T/refuse.err"; then
  t0=$SECONDS
  OMPI_MCA_btl_tcp_port_min_v4=30000 OMPI_MCA_btl_tcp_port_range_v4=50 NSTBATCH_STALL_FLOOR=5 across refused "$NST" job.ini --set output.path=out/refused.tif
  took=$((SECONDS - t0))
  "$HOSTS" accept "$HD" nsth-a; "$HOSTS" accept "$HD" nsth-b
  if one_error refused 75 "rank 0 (nsth-a): the ranks' first exchange over MPI has not completed in [0-9]* s (4 ranks" && [ ! -e "$T/out/refused.tif" ]; then
    ok "Open MPI's ports refused by both hosts (iptables): one line from rank 0 after $(sed -n 's/.*has not completed in \([0-9]*\) s.*/\1/p' "$T/refused.log" | head -n 1) s (the bound: 20 s at its least), exit 75 in $took s, no image"
  else bad "a network MPI cannot use" "exit $rc after $took s" "$(grep -v '^ *[0-9]' "$T/refused.log" | grep -v '^ *$' | tail -n 8)"; fi
else
  "$HOSTS" accept "$HD" nsth-a 2>/dev/null; "$HOSTS" accept "$HD" nsth-b 2>/dev/null # a rule made before the failure goes too
  skip "a firewall between the hosts: $(tail -n 1 "$T/refuse.err")"
fi
# the last rank takes no part in the first exchange (planted): rank 0 names it, by host
NSTBATCH_STALL_FLOOR=5 NSTBATCH_PLANT=unmet across unmet "$NST" job.ini --set output.path=out/unmet.tif
if one_error unmet 75 "rank 0 (nsth-a): no exchange over MPI with rank 3 on nsth-b in [0-9]* s, when every rank first meets the others" && [ ! -e "$T/out/unmet.tif" ]; then
  ok "a rank that never answers the first exchange (planted): rank 0 names it and its host, exit 75, no image"
else bad "a rank not met at the start" "exit $rc" "$(grep -v '^ *[0-9]' "$T/unmet.log" | grep -v '^ *$' | tail -n 8)"; fi

# the uninterrupted reference of the interrupted renders below (120 iterations, one rank), at
# 192x128 in 6 tiles: a node is lost, cut off or frozen once iteration 40 is seen, and the
# render's 80 more iterations (about 2 s on a 2-core Zen 4, 4 ranks on its cores) must outlast
# the action. The other renders take 256x64, 4 tiles (one a rank at 4), each window the whole
# image: half the CPU (1.0 s against 2.0 for one rank's 40 iterations).
sed 's/^iterations = 40$/iterations = 120/; s/^width = 256$/width = 192/; s/^height = 64$/height = 128/' "$T/job.ini" >"$T/long.ini"
run_nst long.ini longref --set output.path=ref/long.tif
[ $rc -eq 0 ] || bad "the long reference" "exit $rc" "$(tail -n 5 "$T/longref.log")"
LONG=(long.ini --set checkpoint.every=20)

# ---- a two-node Slurm ----------------------------------------------------------------------------
# job_state J: "STATE RESTARTS" of job J
job_state() { on nsth-a scontrol show job "$1" 2>/dev/null | grep -o 'JobState=[A-Z_]*\|Restarts=[0-9]*' | cut -d= -f2 | tr '\n' ' '; }
# wait_job J: until job J has ended (bounded by its output growing: 5 minutes without a byte); a job
# requeued after a stop is started again at once when both nodes are idle (Slurm would hold it about
# two minutes); state, restarts
wait_job() {
  local waited=0 out size=-1 s last=$SECONDS
  out=$(on nsth-a scontrol show job "$1" 2>/dev/null | sed -n 's/.*StdOut=\([^ ]*\).*/\1/p' | head -n 1)
  while [ $((SECONDS - last)) -lt 300 ]; do
    s=$(bytes "$out"); [ "$s" != "$size" ] && size=$s last=$SECONDS
    read -r state restarts <<<"$(job_state "$1")"
    case "$state" in COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY | "") return ;; esac
    if [ "$state" = PENDING ] && [ "${restarts:-0}" -gt $waited ] && [ "$(on nsth-a sinfo -h -N -o %t | sort -u)" = idle ]; then
      sleep 2 # slurmd revoked the job's credential when it was requeued, to the second: a start in that second is refused
      on nsth-a scontrol update JobId="$1" StartTime=now 2>/dev/null && waited=$restarts
    fi
    sleep 0.2
  done
}
if conf=$("$ROOT/tests/slurm/start_local.sh" "$T/slurm" --hosts "$HD" 2>"$T/slurm.err"); then
  eval "$conf"
  slurm_up=1
  # slurm/multi-node.sbatch as it is; its sizes for these nodes (2 CPUs each) on sbatch's command
  # line. Its self-test with the time budget spent at once: it runs on every rank and passes
  # before the render, its op harness left out, rows marked late (1.4 of its 1.5 CPU seconds a
  # rank; the harness is test_selftest's)
  sb() { NSTBATCH_HOME="$ROOT" NSTBATCH_SELFTEST_SECONDS=0.001 on nsth-a sbatch --parsable --nodes=2 --ntasks-per-node=2 --cpus-per-task=1 --partition=test "$@"; }
  # the job, its output in T/mn.out (the first exchange bounded at 30 s)
  # (the job's variables from sbatch's environment, not inlined in --export, whose values Slurm
  # splits at commas and reads quotes in: a checkout under /home/o'brien/ would not reach the job)
  J=$(CKPT="$T/ck-mn" NSTBATCH_STALL_FLOOR=30 sb -o "$T/mn.out" --export=ALL "$ROOT/slurm/multi-node.sbatch" job.ini \
        --set output.path=out/mn.tif)
  wait_job "$J"
  # (no second job: Open MPI's "failed to TCP connect to a peer" with a task's segmentation fault,
  # once in 8 full runs, was the race in MPI_Init that mpi/launch_fence.c closes; a run of it fails)
  if [ "$state" = COMPLETED ] && grep -q '^self-test passed: .* on 4 ranks' "$T/mn.out" && grep -q 'hosts: 2: nsth-a (ranks 0-1), nsth-b (ranks 2-3)' "$T/mn.out"; then
    same "sbatch slurm/multi-node.sbatch (unchanged) on 2 nodes x 2 tasks: the self-test passed, then the image of one rank" out/mn.tif ref/p.tif
  else bad "slurm/multi-node.sbatch on 2 nodes" "job $J: ${state:-unknown}" "$(grep -v '^ *[0-9]' "$T/mn.out" 2>/dev/null | tail -n 12)"; fi

  # the barrier after MPI_Init holds across the nodes (mpi/launch_fence.c): the last rank (on nsth-b)
  # enters it 3 s late (planted), and rank 0 on nsth-a must wait for it. A PMIx fence without data is
  # node-local under Slurm 22.05 (rank 0 went through at once), and Open MPI 4.1.4's own is such a
  # fence: ranks of one node then sent to ranks of the other still inside MPI_Init, which crashed
  on nsth-a "$IDLE" 120 srun --mpi=pmix --nodes=2 --ntasks-per-node=2 --cpus-per-task=1 --partition=test --export=ALL,NSTBATCH_PLANT=late \
    "$NST" job.ini --set output.path=out/late.tif >"$T/late.log" 2>&1; rc=$?
  waited=$(sed -n 's/^nstbatch: planted late: rank 0 waited \([0-9.]*\) s in the barrier after MPI_Init (made)$/\1/p' "$T/late.log")
  if [ $rc -eq 0 ] && [ -n "$waited" ] && awk -v w="$waited" 'BEGIN { exit !(w >= 2.5) }' && [ -s "$T/out/late.tif" ]; then
    ok "srun on 2 nodes, the last rank 3 s late into the barrier after MPI_Init: rank 0 on the other node waited $waited s for it; the render ended"
  else bad "the barrier after MPI_Init across nodes" "exit $rc, rank 0 waited '${waited:-?}' s" "$(grep -v '^ *[0-9]' "$T/late.log" | tail -n 8)"; fi

  # a rank frozen in the middle of the render: the watchdog (auto, floor 5 s) ends the step with 75,
  # slurm/launch.sh requeues the job, and it resumes to the uninterrupted image
  J=$(CKPT="$T/ck-frozen" NSTBATCH_STALL_FLOOR=5 sb -o "$T/frozen.out" --export=ALL "$ROOT/slurm/multi-node.sbatch" "${LONG[@]}" \
      --set output.path=out/frozen.tif)
  frozen=""
  if wait_iter frozen.out 40; then
    for p in $("$HOSTS" pids "$HD" nsth-b); do
      tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx 'PMIX_RANK=3' && [ "$(cat "/proc/$p/comm")" = nstbatch ] && frozen=$p
    done
  fi
  t0=$SECONDS
  [ -n "$frozen" ] && kill -STOP "$frozen"
  grown_wait 180 "$T/frozen.out" grep -q 'requeueing job' "$T/frozen.out" # (bounded by the job's output growing)
  took=$((SECONDS - t0))
  wait_job "$J"
  if [ -n "$frozen" ] && [ "$state" = COMPLETED ] && [ "${restarts:-0}" -ge 1 ] && grep -q 'no answer from rank 3 on nsth-b: stopped' "$T/frozen.out" &&
     grep -q "checkpointed in .* (exit 75): requeueing job $J" "$T/frozen.out" && grep -q 'resumed: level 1 at iteration' "$T/frozen.out"; then
    ok "rank 3 frozen (SIGSTOP) on nsth-b: named by the watchdog, the step ended with 75 and the job requeued in $took s (slurm/launch.sh)"
    same "... and the requeued job resumed to the uninterrupted render's image" out/frozen.tif ref/long.tif
  else bad "a frozen rank under Slurm" "pid '${frozen:-none}', job $J ${state:-unknown}, restarts ${restarts:-?}" \
      "$(grep -v '^ *[0-9]' "$T/frozen.out" 2>/dev/null | grep -v '^ *\(op\|conv\|relu\|pool\|gram\|preprocess\|GPU\|first\)' | tail -n 14)"; fi
  "$ROOT/tests/slurm/start_local.sh" --stop "$T/slurm" >/dev/null 2>&1
  slurm_up=0
else
  skip "a two-node Slurm: $(tail -n 1 "$T/slurm.err")"
fi

# ---- a lost node and a cut network, through tools/nstbatch-mpirun ---------------------------------
# faulty LOG ACTION ARGS...: a render on 2 hosts x 2 ranks, ACTION (a command) once it has done 40
# iterations; sets rc and took (seconds from the action to the end)
faulty() {
  local log=$1 action=$2 pid; shift 2
  on nsth-a "$IDLE" 300 "$ROOT/tools/nstbatch-mpirun" --hostfile "$T/hostfile" -np 4 --bind-to none "$NST" "$@" >"$T/$log.log" 2>&1 &
  pid=$!
  wait_iter "$log.log" 40 || bad "$log" "no iteration 40 seen" "$(tail -n 5 "$T/$log.log")"
  local t0=$SECONDS
  $action
  wait $pid; rc=$?
  took=$((SECONDS - t0))
}
lose_b() { "$HOSTS" kill "$HD" nsth-b >/dev/null; }
faulty lost lose_b "${LONG[@]}" --set output.path=out/lost.tif --set checkpoint.path=ck-lost
it=$(sed -n 's/^iteration = //p' "$T/ck-lost/manifest" 2>/dev/null)
gen=$(sed -n 's/^generation = //p' "$T/ck-lost/manifest" 2>/dev/null)
files=$(ls "$T/ck-lost" 2>/dev/null | grep -c "^g$(printf %08d "${gen:-0}")-r")
if [ $rc -eq 75 ] && grep -q "lost ranks 2, 3 on nsth-b at level 1, iteration [0-9]*: their processes ended without a word" "$T/lost.log" &&
   grep -q "the checkpoint of level 1, iteration $it in ck-lost is in force" "$T/lost.log" && [ "$files" = 4 ] && grep -q '^state = running' "$T/ck-lost/manifest"; then
  ok "every process of nsth-b killed mid-render: the job ended in $took s, exit 75 (mpirun said $(sed -n 's/^nstbatch-mpirun: mpirun reported exit \([0-9]*\).*/\1/p' "$T/lost.log")), naming ranks 2, 3 on nsth-b; the checkpoint of iteration $it (4 files) kept"
else bad "a lost node" "exit $rc after $took s, checkpoint iteration '$it', $files files" "$(grep -v '^ *[0-9]' "$T/lost.log" | grep -v '^\*\|^ *$' | tail -n 12)"; fi
on nsth-a "$IDLE" 300 mpirun --hostfile "$T/hostfile-a" -np 4 --bind-to none "$NST" "${LONG[@]}" --set output.path=out/lost.tif --set checkpoint.path=ck-lost >"$T/lost2.log" 2>&1; rc=$?
if [ $rc -eq 0 ] && grep -q "resumed: level 1 at iteration $it of 120" "$T/lost2.log"; then
  same "... rerun on nsth-a alone (4 ranks): resumed at iteration $it, the uninterrupted render's image" out/lost.tif ref/long.tif
else bad "the rerun after a lost node" "exit $rc" "$(grep -v '^ *[0-9]' "$T/lost2.log" | tail -n 8)"; fi

cut_b() { "$HOSTS" cut "$HD" nsth-b; }
faulty cut cut_b "${LONG[@]}" --set output.path=out/cut.tif --set checkpoint.path=ck-cut --set run.stall_timeout=8
"$HOSTS" mend "$HD" nsth-b
it=$(sed -n 's/^iteration = //p' "$T/ck-cut/manifest" 2>/dev/null)
if [ $rc -eq 75 ] && grep -q "stalled at level 1, iteration [0-9]*: no iteration finished for [0-9]* s (run.stall_timeout = 8); no answer from ranks 2, 3 on nsth-b" "$T/cut.log" &&
   grep -q "the checkpoint of level 1, iteration $it in ck-cut is in force" "$T/cut.log"; then
  ok "nsth-b cut off mid-render: the watchdog named ranks 2, 3 on nsth-b, $(grep -q 'still waits for a host it cannot reach' "$T/cut.log" && echo 'mpirun (waiting for the daemon) was ended, ')exit 75 after $took s; the checkpoint of iteration $it kept"
else bad "a cut network" "exit $rc after $took s" "$(grep -v '^ *[0-9]' "$T/cut.log" | grep -v '^\*\|^ *$' | tail -n 12)"; fi
# with the link back, what was left on nsth-b (its daemon, waiting for mpirun) ends by itself
left_on_b() {
  # (Open MPI's daemon ends itself once it sees the link: no progress to follow; 60 s, many times that)
  for ((i = 0; i < 600; i++)); do [ -z "$("$HOSTS" pids "$HD" nsth-b)" ] && break; sleep 0.1; done
  local left; left=$("$HOSTS" pids "$HD" nsth-b | xargs -r ps -o comm= -p | tr '\n' ' ')
  [ -z "$left" ] && ok "... with the link back, nothing of the job is left on nsth-b" || { bad "leftovers on nsth-b" "$left"; "$HOSTS" kill "$HD" nsth-b >/dev/null; }
}
left_on_b
across cut2 "$NST" "${LONG[@]}" --set output.path=out/cut.tif --set checkpoint.path=ck-cut
if [ $rc -eq 0 ] && grep -q "resumed: level 1 at iteration $it of 120" "$T/cut2.log"; then
  same "... rerun on both hosts: resumed at iteration $it, the uninterrupted render's image" out/cut.tif ref/long.tif
else bad "the rerun after a cut" "exit $rc" "$(grep -v '^ *[0-9]' "$T/cut2.log" | tail -n 8)"; fi

# the link cut outside the iterations: rank 2 (nsth-b) computes 15 s as the set-up begins (the hook
# NSTBATCH_FREEZE, forwarded by mpirun -x), the link is cut meanwhile, and the others wait inside
# the set-up's first collective; the phase's limit is auto's, 5 s through the floor hook
on nsth-a "$IDLE" 300 "$ROOT/tools/nstbatch-mpirun" --hostfile "$T/hostfile" -np 4 --bind-to none -x NSTBATCH_FREEZE=2:setup:15 \
  -x NSTBATCH_STALL_FLOOR=5 "$NST" job.ini --set output.path=out/cutsetup.tif >"$T/cutsetup.log" 2>&1 &
pid=$!
grown_wait 180 "$T/cutsetup.log" grep -q 'NSTBATCH_FREEZE: rank 2 computes' "$T/cutsetup.log"
t0=$SECONDS
cut_b
wait $pid; rc=$? took=$((SECONDS - t0))
"$HOSTS" mend "$HD" nsth-b
if [ $rc -eq 75 ] && grep -q "stalled in the set-up (config, device, weights, inputs, style targets): .*; no answer from ranks 2, 3 on nsth-b" "$T/cutsetup.log" &&
   [ ! -e "$T/out/cutsetup.tif" ]; then
  ok "nsth-b cut off in the set-up: the watchdog named ranks 2, 3 on nsth-b, exit 75 after $took s, no image"
else bad "a cut network in the set-up" "exit $rc after $took s" "$(grep -v '^ *[0-9]' "$T/cutsetup.log" | grep -v '^\*\|^ *$' | tail -n 12)"; fi
left_on_b
finish

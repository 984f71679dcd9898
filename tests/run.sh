#!/usr/bin/env bash
# tests/run.sh: the test suite (make test builds everything, then runs this). Each suite prints
# "NAME: N passed, N failed, N skipped"; this adds them up, prints one closing summary line, and
# exits non-zero if anything failed or a suite died without its summary.
#
#   tests/run.sh [BUILD_DIR]   (FUZZ_SECONDS=N shortens or lengthens the fuzzing;
#                               TEST_LANES=N workers, 1: the suites one after another)
#
# Lanes: the suites below run on TEST_LANES workers (default 2), each taking the next suite of the
# list as it finishes one, their output printed in the list's order as each suite ends; and beside
# them, from the start, `beside`'s chains, each one suite after another, then a lane. The list
# begins with the longest suites (by their times in docs/TESTS.md), so that none starts last and leaves one lane
# alone with it at the end. On 2 cores one worker leaves a core half idle:
# the suites wait on mpirun's start, on signals, on sleeps bounded for a loaded machine, so one lane
# used 1.05 cores on average (its CPU seconds over its wall seconds, Zen 5). Every suite has its own
# temporary folder (tests/lib.sh) and ports; none writes where another reads. The suites beside are
# the ones that mostly wait (daemons starting, jobs queued and requeued, namespaced hosts coming
# up, stopped ranks waited out), with their own Slurm ports and network namespaces. Every wait in
# every suite is bounded generously, not timed to the machine's load.
set -u
# numbers with a decimal point in any locale (awk, printf, sort -n): a user's LC_ALL becomes LANG
[ -z "${LC_ALL:-}" ] || { export LANG="$LC_ALL"; unset LC_ALL; }; export LC_NUMERIC=C
B=${1:-build}
cd "$(dirname "$0")/.."
# each suite's bound is on its silence, not its length (tests/idle.sh); the suites find it here too
export NST_IDLE=${NST_IDLE:-$(readlink -f "$B/tests/idle_timeout")}
[ -x "$NST_IDLE" ] || { echo "tests/run.sh: $B/tests/idle_timeout is missing: make test builds it"; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# PMIx without munge for the suites' own ranks (why: tests/idle.sh), test_device's too
export PMIX_MCA_psec=${PMIX_MCA_psec:-native}
# MPI's point-to-point layer chosen, not probed: Debian's Open MPI otherwise opens its cm layer's
# transports at every MPI_Init, and libpsm2 (Omni-Path) then sleeps about 0.2 s looking for its
# hardware (measured: a 1-rank render 0.32 s to 0.10 s, 2 ranks under mpirun 0.44 s to 0.21 s).
# ob1 is the layer the suites use anyway: shared memory on one machine, TCP between the test hosts.
export OMPI_MCA_pml=${OMPI_MCA_pml:-ob1}
# OpenMP's waiting threads sleep instead of spinning: the lanes share the cores (why: tests/idle.sh)
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
# a rank waiting inside MPI yields its core instead of spinning: the suites run more ranks than
# the machine has cores, and in two lanes (measured: a bf16 suite beside test_slurm took 10 times
# its time alone with spinning ranks, 2 to 3 times with yielding ones). The results do not change.
export OMPI_MCA_mpi_yield_when_idle=${OMPI_MCA_mpi_yield_when_idle:-1}
total_p=0 total_f=0 total_s=0 broken=()
R=$(mktemp -d "${TMPDIR:-/tmp}/nstbatch-run.XXXXXX") || exit 1
trap 'rm -rf "$R"' EXIT
suites=(
  "test_idle|tests/test_idle.sh"
  "test_isa|tests/test_isa.sh ./nstbatch $B"
  "test_bigio|tests/test_bigio.sh ./nstbatch $B/tools/make_test_tiff $B/tests/rss_run"
  "test_checkpoint|tests/test_checkpoint.sh ./nstbatch $B/tests/image_diff"
  "test_cli_asan|tests/test_cli.sh $B/asan/nstbatch test_cli_asan"
  "test_optim_cli|tests/test_optim.sh ./nstbatch $B/tests/image_diff"
  "test_first_contact|tests/test_first_contact.sh"
  "test_cli|tests/test_cli.sh ./nstbatch test_cli"
  "test_outputs|tests/test_outputs.sh ./nstbatch $B/tools/make_test_tiff"
  "test_batch|tests/test_batch.sh ./nstbatch $B/tests/image_diff"
  "test_bf16_cli|tests/test_bf16.sh ./nstbatch $B/tests/image_diff"
  "test_tiles|tests/test_tiles.sh ./nstbatch $B/tests/image_diff"
  "test_fuzz|tests/test_fuzz.sh $B"
  "test_masks|tests/test_masks.sh ./nstbatch $B"
  "test_bench|tests/test_bench.sh ./nstbatch $B/bench/conv_layers $B/bench/gram_layers"
  "test_gpu_standin|tests/test_gpu_standin.sh ./nstbatch $B/tests/image_diff"
  "test_metrics|tests/test_metrics.sh ./nstbatch $B/tests/fake-nvml"
  "test_video_clip|tests/test_video.sh ./nstbatch $B"
  "test_memory|tests/test_memory.sh ./nstbatch $B/tests/image_diff"
  "test_demo|tests/test_demo.sh ./nstbatch $B/tests/png_probe"
  "test_tiff_corpus|tests/test_tiff_corpus.sh $B/asan/nstbatch $B/fuzz/fuzz_tiff"
  "test_dzi|tests/test_dzi.sh ./nstbatch ./nstbatch-dzi $B/tools/make_test_tiff"
  "test_selftest|tests/test_selftest.sh ./nstbatch $B/asan/nstbatch"
  "test_gpu_bundle|tests/test_gpu_bundle.sh $B/gpu-bundle"
  "test_prometheus|tests/test_prometheus.sh ./nstbatch $B/tests/fake-nvml"
  "test_viewer|tests/test_viewer.sh ./nstbatch $B"
  "test_preview|tests/test_preview.sh ./nstbatch $B/tests/image_diff $B/tests/png_probe"
  "test_backend_ops|$B/tests/test_backend_ops"
  "test_dryrun|tests/test_dryrun.sh ./nstbatch"
  "test_runner|tests/test_runner.sh"
  "test_cuda_emu|$B/tests/test_cuda_emu"
  "test_layout|tests/test_layout.sh"
  "test_gram_fixed|$B/tests/test_gram_fixed"
  "test_video_io|$B/tests/test_video_io"
  "test_ops|$B/tests/test_ops"
  "test_install|tests/test_install.sh $B"
  "test_flow|tests/test_flow.sh $B"
  "test_tiler|$B/tests/test_tiler"
  "test_device|mpirun --oversubscribe --bind-to none -np 3 $B/tests/test_device"
  "test_bf16|$B/tests/test_bf16"
  "test_loss_grad|$B/tests/test_loss_grad"
  "test_docs|tests/test_docs.sh ./nstbatch"
  "test_geometry|$B/tests/test_geometry"
  "test_gpu_render|tests/test_gpu_render.sh ./nstbatch $B/tests/image_diff"
  "test_weights|$B/tests/test_weights"
  "test_reference|$B/tests/test_reference tests/fixtures"
  "test_images|$B/tests/test_images"
  "test_video|$B/tests/test_video"
  "test_color|$B/tests/test_color"
  "test_optim|$B/tests/test_optim"
  "test_flo|$B/tests/test_flo"
  "test_conv_choices|$B/tests/test_conv_choices"
  "test_config|$B/tests/test_config"
  "test_cuda_none|env LD_LIBRARY_PATH=$B/tests/fake-nvml $B/tests/test_cuda_none"
)
# (the beside suites in chains, each one suite after another; "--" starts the next chain)
beside=(
  "test_hosts|tests/test_hosts.sh ./nstbatch $B/tests/image_diff $B"
  "--"
  "test_slurm|tests/test_slurm.sh ./nstbatch $B/tests/image_diff"
  "--"
  "test_watchdog|tests/test_watchdog.sh ./nstbatch $B/tests/image_diff"
)
# run_suite NAME CMD: the suite's output in R/NAME.out, its status and times in R/NAME.end (written
# whole, then renamed: its name is the sign that the suite has ended, which the other lanes read).
# Each suite's mpiruns keep their sessions under a base of the suite's own (OMPI_MCA_orte_tmpdir_base,
# unless set): Open MPI 4 removes the shared one (TMPDIR/ompi.HOST.UID) under another mpirun
# starting beside it, whose start then fails ("orte_session_dir failed": once in 7 runs of the
# suite, at 76b65be). Not for the Slurm suites, whose jobs take the default: test_slurm's on this
# machine, test_hosts' in the hosts, each with a /tmp of its own
run_suite() {
  local start cpu0 status me=$BASHPID base="" # this lane's shell: its finished children's CPU time in its stat
  case $1 in test_slurm | test_hosts) ;; *) [ -n "${OMPI_MCA_orte_tmpdir_base:-}" ] || { base=$R/ompi.$1; mkdir -p "$base"; } ;; esac
  start=$(date +%s.%N) cpu0=$(awk '{ print $16 + $17 }' "/proc/$me/stat")
  env ${base:+OMPI_MCA_orte_tmpdir_base="$base"} "$NST_IDLE" 1200 $2 >"$R/$1.out" 2>&1; status=$? # 20 minutes without a line: a hung suite
  awk -v st="$status" -v a="$start" -v b="$(date +%s.%N)" -v hz="$(getconf CLK_TCK)" \
    -v c="$(($(awk '{ print $16 + $17 }' "/proc/$me/stat") - cpu0))" \
    'BEGIN { printf "%d %.1f s, cpu %.1f s\n", st, b - a, c / hz }' >"$R/$1.end.part" && mv "$R/$1.end.part" "$R/$1.end"
}
# report NAME: the suite's output, added to the totals
report() {
  local name=$1 status secs line p f s
  if ! { read -r status secs <"$R/$name.end"; } 2>/dev/null; then
    broken+=("$name (did not end)")
    total_f=$((total_f + 1))
    return
  fi
  cat "$R/$name.out"
  line=$(grep -E "^$name: [0-9]+ passed, [0-9]+ failed, [0-9]+ skipped" "$R/$name.out" | tail -n 1)
  if [ -z "$line" ]; then
    broken+=("$name (exit status $status, no summary)")
    total_f=$((total_f + 1))
    return
  fi
  read -r p f s < <(sed -E 's/.*: ([0-9]+) passed, ([0-9]+) failed, ([0-9]+) skipped/\1 \2 \3/' <<<"$line")
  total_p=$((total_p + p)) total_f=$((total_f + f)) total_s=$((total_s + s))
  [ "$status" -ne 0 ] && [ "$f" -eq 0 ] && { broken+=("$name (exit status $status)"); total_f=$((total_f + 1)); }
  echo "   ($secs)"
}
lanes=${TEST_LANES:-2}
case $lanes in '' | *[!0-9]* | 0) echo "tests/run.sh: TEST_LANES=$lanes: give a number of lanes, 1 or more" >&2; exit 2 ;; esac
if [ "$lanes" = 1 ]; then
  for entry in "${beside[@]}"; do [ "$entry" = -- ] || suites+=("$entry"); done
  beside=()
fi
# worker: take the next suite's number from R/next (under a lock) until none is left. The lanes
# run 5 nice levels below the beside chains, which wait on daemons, jobs and hosts with little
# CPU, but each of whose waits ends only when their processes get the CPU: the longest of them
# (test_hosts) is the run's length where the cores are short (docs/TESTS.md, "The Skylake-SP's
# pace"). The lanes' suites fill the CPU the chains leave.
worker() {
  local i
  renice -n $(($(nice) + 5)) -p $BASHPID >/dev/null 2>&1
  while :; do
    i=$(flock "$R/next" sh -c 'read -r i <"$0"; echo $((i + 1)) >"$0"; echo "$i"' "$R/next")
    [ "$i" -lt ${#suites[@]} ] || return 0
    run_suite "${suites[i]%%|*}" "${suites[i]#*|}"
  done
}
echo 0 >"$R/next"
# the beside chains, each suite in its own: test_hosts, the longest (its Slurm in the hosts' network
# namespaces), test_slurm (its Slurm on ports no other run holds, tests/slurm/start_local.sh) and
# test_watchdog, which only waits out its stopped ranks. One after the other, test_slurm and
# test_hosts were the run's length at the Skylake-SP's pace, 1/2.35 of this Zen 4's (docs/TESTS.md,
# "The Skylake-SP's pace"): 1165 of its 1378 s. A chain that has
# ended works on as a lane: the list's tail is short suites that wait on mpirun's start and on
# their renders' ends, which the cores can overlap (the last 5 minutes of a run at 765d183 left
# the cores 10 to 45 % idle with two lanes)
chain=()
for entry in "${beside[@]}" --; do
  if [ "$entry" != -- ]; then chain+=("$entry"); continue; fi
  [ ${#chain[@]} -gt 0 ] && (for e in "${chain[@]}"; do run_suite "${e%%|*}" "${e#*|}"; done; worker) &
  chain=()
done
for ((w = 0; w < lanes; w++)); do worker & done
for entry in "${suites[@]}"; do
  echo "== ${entry%%|*}"
  # a suite's .end is written once its output is complete; with no lane running, none will come
  while [ ! -e "$R/${entry%%|*}.end" ] && [ -n "$(jobs -rp)" ]; do sleep 0.2; done
  report "${entry%%|*}"
done
wait # (the lanes)
for entry in "${beside[@]}"; do
  [ "$entry" = -- ] && continue
  echo "== ${entry%%|*} (beside the others)"
  report "${entry%%|*}"
done
echo
for b in "${broken[@]}"; do echo "broken: $b"; done
echo "$total_p passed, $total_f failed, $total_s skipped"
[ "$total_f" -eq 0 ]

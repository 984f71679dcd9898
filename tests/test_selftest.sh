#!/usr/bin/env bash
# tests/test_selftest.sh: nstbatch --self-test, as a user runs it first on a new machine.
#
#   tests/test_selftest.sh NSTBATCH ASAN_NSTBATCH
#
# - One rank: the table (the op harness in each precision the device has, the first objective on
#   tiles against one tile and against the CPU in fp32) and "self-test passed", exit 0; on a GPU
#   host this is the GPU's own check. A halo planted one pixel short (NSTBATCH_PLANT=halo) fails
#   the tiles' row. CUDA graphs' row (a short render replayed against it run as it is) passes
#   through the graph stand-in, and fails with Adam's step planted on the host. Rows past the
#   table's room (planted: room for 8) fail the self-test in a row saying so, on 1 rank and 2.
# - A GPU this build cannot use (the stand-in NVML of tests/fake_nvml.c counts one): the GPU row
#   fails and so does the self-test, unless run.device = cpu says the CPU is meant.
# - A time budget too small for the op harness: its passes are left out, named "late", and the
#   closing line says so.
# - Two ranks: the Gram allreduce against the exact sum, every rank's device listed, and the
#   --report file (versions, command, devices, table, "failing rows: none"); three ranks with
#   NSTBATCH_EXCHANGE=device: the halo exchange in backend memory, a ring checked value by value.
# - A rank that fails (rank 1 given a 2 MiB allocation limit): exit 1, "self-test FAILED", and
#   the report's failing rows name rank 1; rank 0's checks still pass.
# - CONFIG and --set choose the device as for a render (run.precision = fp32 renders in fp32).
# - Bad flags exit 2 with one error before any check runs; the self-test is clean under ASan.
# The multi-rank cases pin run.device = cpu: a one-GPU host refuses two ranks on its GPU.
NST=$(readlink -f "$1") ASAN=$(readlink -f "$2")
. "$(dirname "$0")/lib.sh" test_selftest
MPI=(mpirun --oversubscribe --bind-to none)

# st LOG ARGS...: the self-test with ARGS (a command before --, e.g. mpirun), output in T/LOG.log
st() {
  local log=$1; shift
  (cd "$T" && "$IDLE" 300 "$@") >"$T/$log.log" 2>&1
  rc=$?
}
row() { grep -E "^  $2 " "$T/$1.log"; } # row LOG OP: the table's row for OP
# The checks of one row below (the render's, the graphs', the GPU's) run before the op harness,
# which one, two and fp32 run whole: there, the harness's passes are left out by a spent time
# budget (LEAN), about 1.2 CPU seconds a run
LEAN=0.001

st one "$NST" --self-test
rows=$(grep -cE '  (ok|FAIL|n/a) ' "$T/one.log")
if [ $rc -eq 0 ] && grep -q '^self-test passed: ' "$T/one.log" && row one "first objective on tiles" | grep -q ' ok ' &&
   row one "gram allreduce" | grep -q 'n/a.*mpirun'; then
  ok "one rank: exit 0, $rows rows, $(grep '^self-test' "$T/one.log")"
  sed 's/^/    | /' "$T/one.log" # the table, in the test log (and CI's)
else bad "one rank" "exit $rc" "$(cat "$T/one.log")"; fi
# where the device has a second precision (a GPU, or a CPU with bf16), every op was compared
if grep -qE '^  rank 0 on .*(CUDA|bf16)' "$T/one.log"; then
  ops=$(grep -cE '^  (conv_|gram_|pool_|relu_|mse |tv |adam|dot|axpby|copy_rect|preprocess)' "$T/one.log")
  if [ "$ops" -ge 25 ] && ! grep -q ' FAIL ' "$T/one.log"; then ok "every op compared in the device's other precision ($ops rows)"
  else bad "the op harness rows" "$ops rows" "$(cat "$T/one.log")"; fi
else
  skip "the op harness: this CPU has no bf16 ($(row one 'op harness'))"
fi

st two "${MPI[@]}" -np 2 "$NST" --self-test --set run.device=cpu --report "$T/two.txt"
if [ $rc -eq 0 ] && row two "gram allreduce \(MPI\)" | grep -q ' ok .*over 2 ranks, against the exact sum' &&
   row two "halo exchange \(device\)" | grep -q 'n/a .*through host memory' && [ "$(grep -c '^  rank [01] on ' "$T/two.log")" -eq 2 ]; then
  ok "two ranks: the Gram allreduce against the exact sum (max error $(row two 'gram allreduce \(MPI\)' | awk '{print $6}')), the halo row n/a"
else bad "two ranks" "exit $rc" "$(cat "$T/two.log")"; fi
# NSTBATCH_EXCHANGE=device: the halo exchange in backend memory, NCCL's path between GPUs, which the
# CPU runs through MPI from its buffers: a ring over 3 ranks (each receives from the rank before,
# not the one it sends to) checked value by value; on rank 1 alone, agreed n/a on every rank
NSTBATCH_EXCHANGE=device st ring "${MPI[@]}" -np 3 "$NST" --self-test --set run.device=cpu --set run.threads=1
if [ $rc -eq 0 ] && row ring "halo exchange \(device\)" | grep -q ' ok .*from rank 2 of 3, 0 wrong'; then
  ok "three ranks: the halo exchange in backend memory, a ring value by value ($(row ring 'halo exchange \(device\)' | sed 's/.* ok *//'))"
else bad "three ranks: the halo ring" "exit $rc" "$(cat "$T/ring.log")"; fi
if [ -f "$T/two.txt" ] && grep -q '^nstbatch [0-9]' "$T/two.txt" && grep -q '^command: .*--self-test' "$T/two.txt" &&
   grep -q '^  rank 1 on ' "$T/two.txt" && grep -A1 '^failing rows:' "$T/two.txt" | grep -q '^  none' &&
   [ "$(tail -n 1 "$T/two.txt")" = "$(grep '^self-test' "$T/two.log")" ]; then
  ok "--report: versions, command, devices, table and closing line ($(wc -l <"$T/two.txt") lines)"
else bad "--report" "content" "$(cat "$T/two.txt" 2>&1)"; fi

# rank 1 cannot allocate: its rows fail, the report names it, the exit status says so
st failing "${MPI[@]}" -np 1 "$NST" --self-test --set run.device=cpu --report "$T/failing.txt" : \
  -np 1 env NSTBATCH_MEMORY_LIMIT_MB=2 "$NST" --self-test --set run.device=cpu --report "$T/failing.txt"
if [ $rc -eq 1 ] && grep -q '^self-test FAILED: .*send the report' "$T/failing.log" &&
   grep -A3 '^failing rows:' "$T/failing.txt" | grep -q 'worst on rank 1 ' && ! grep -q 'worst on rank 0 ' "$T/failing.txt"; then
  ok "a failing rank: exit 1, $(grep '^self-test' "$T/failing.log" | cut -c1-60)..., the report names rank 1"
else bad "a failing rank" "exit $rc" "$(cat "$T/failing.log" "$T/failing.txt" 2>&1)"; fi

printf '[run]\nprecision = fp32\nthreads = 1\n' >"$T/fp32.ini"
st fp32 "$NST" --self-test fp32.ini
if [ $rc -eq 0 ] && row fp32 "first objective on tiles" | grep -q ' fp32 .* ok ' && grep -q '^  rank 0 on .*fp32.*1 thread' "$T/fp32.log"; then
  ok "CONFIG chooses the device: run.precision = fp32 renders in fp32 on 1 thread"
else bad "CONFIG for the self-test" "exit $rc" "$(cat "$T/fp32.log")"; fi

# a planted defect: the halo one pixel short of the exact one (util/plant.h)
NSTBATCH_SELFTEST_SECONDS=$LEAN NSTBATCH_PLANT=halo st halo "$NST" --self-test --set run.threads=1
if [ $rc -eq 1 ] && row halo "first objective on tiles" | grep -q ' FAIL ' && grep -q '^self-test FAILED' "$T/halo.log"; then
  ok "a halo one pixel short fails the tiles' row: exit 1, $(row halo 'first objective on tiles' | grep -o 'max [^ ]* rms apart')"
else bad "a planted halo defect" "exit $rc" "$(cat "$T/halo.log")"; fi

# rows past the table's room (a GPU's run makes about 270 rows, the room is 412; planted: 8) fail
# the self-test in a row of their own, on one rank and merged from two, never dropped unsaid
NSTBATCH_PLANT=tablefull st full "$NST" --self-test --set run.threads=1
NSTBATCH_PLANT=tablefull st full2 mpirun --oversubscribe --bind-to none -np 2 "$NST" --self-test --set run.threads=1 --set run.device=cpu
if [ $rc -eq 1 ] && row full "self-test table" | grep -qE ' FAIL +[1-9][0-9]* rows past its room of 8 lost' && grep -q '^self-test FAILED' "$T/full.log" &&
   row full2 "self-test table" | grep -q ' FAIL ' && grep -q '^self-test FAILED' "$T/full2.log"; then
  ok "rows past the self-test table's room (planted: 8) fail it on 1 rank and 2: $(row full 'self-test table' | grep -oE '[0-9]+ rows past')"
else bad "rows past the self-test table's room" "exit $rc" "$(cat "$T/full.log" "$T/full2.log")"; fi

# CUDA graphs' row, run on the CPU through the graph stand-in (kernels/graph_standin.h): the
# replayed render equals the one run as it is; with Adam's step from the host (planted: a replay
# repeats its recording's step) the row fails, and so does the self-test
NSTBATCH_SELFTEST_SECONDS=$LEAN NSTBATCH_GRAPH_STANDIN=1 st graphs "$NST" --self-test --set run.threads=1
if [ $rc -eq 0 ] && row graphs "CUDA graphs: replay == run" | grep -q ' ok .* 6 of 8 iterations replayed; 0 of [0-9]* values apart'; then
  ok "CUDA graphs' row (graph stand-in): $(row graphs 'CUDA graphs: replay == run' | grep -o '6 of 8 .*')"
else bad "CUDA graphs' row" "exit $rc" "$(cat "$T/graphs.log")"; fi
NSTBATCH_SELFTEST_SECONDS=$LEAN NSTBATCH_PLANT=adamhost NSTBATCH_GRAPH_STANDIN=1 st graphs_bad "$NST" --self-test --set run.threads=1
if [ $rc -eq 1 ] && row graphs_bad "CUDA graphs: replay == run" | grep -q ' FAIL .*replayed; [1-9][0-9]* of [0-9]* values apart' &&
   grep -q '^self-test FAILED' "$T/graphs_bad.log"; then
  ok "replays that repeat one Adam step (planted) fail the graphs' row: exit 1, $(row graphs_bad 'CUDA graphs: replay == run' | grep -o '[0-9]* of [0-9]* values apart')"
else bad "a planted host-side Adam step" "exit $rc" "$(cat "$T/graphs_bad.log")"; fi

# a GPU that this build cannot use (a stand-in NVML counts one): a failure, unless the CPU is chosen
FAKE=$(dirname "$(dirname "$ASAN")")/tests/fake-nvml # BUILD/asan/nstbatch -> BUILD/tests/fake-nvml
NSTBATCH_SELFTEST_SECONDS=$LEAN LD_LIBRARY_PATH=$FAKE st unusable "$NST" --self-test --set run.threads=1
if [ $rc -eq 1 ] && row unusable GPU | grep -q 'FAIL.*present but unusable'; then ok "an unusable GPU fails the GPU row: exit 1"
else bad "an unusable GPU" "exit $rc" "$(cat "$T/unusable.log")"; fi
NSTBATCH_SELFTEST_SECONDS=$LEAN LD_LIBRARY_PATH=$FAKE st chosen "$NST" --self-test --set run.threads=1 --set run.device=cpu
if [ $rc -eq 0 ] && row chosen GPU | grep -q 'n/a *run.device = cpu'; then ok "run.device = cpu on a node with an unusable GPU passes"
else bad "run.device = cpu beside an unusable GPU" "exit $rc" "$(cat "$T/chosen.log")"; fi

# the time budget: the harness's passes left out and named, the closing line says so
NSTBATCH_SELFTEST_SECONDS=0.001 st late "$NST" --self-test --set run.threads=1
if [ $rc -eq 0 ] && [ "$(grep -c ' late .*budget was spent' "$T/late.log")" -ge 1 ] && grep -q '^self-test passed: .*left out by the time budget' "$T/late.log" &&
   row late "first objective on tiles" | grep -q ' ok '; then
  ok "a spent time budget: $(grep -c ' late ' "$T/late.log") harness passes left out, named in the table and the closing line"
else bad "the time budget" "exit $rc" "$(cat "$T/late.log")"; fi

# bad input: exit 2, one error, no table
bad_input() { # NAME FRAGMENT ARGS...
  local name=$1 frag=$2; shift 2
  st "$name" "$@"
  if one_error "$name" 2 "$frag" && ! grep -q '^  op ' "$T/$name.log"; then ok "$name: exit 2, $(grep '^nstbatch: error:' "$T/$name.log" | cut -c1-100)"
  else bad "$name" "exit $rc" "$(cat "$T/$name.log")"; fi
}
bad_input "--report without --self-test" "FILE belongs to --self-test" "$NST" --report x.txt
bad_input "--self-test with --dry-run" "renders nothing: it takes no --dry-run" "$NST" --self-test --dry-run
bad_input "a report that cannot be written" "no/such/dir" "$NST" --self-test --report "$T/no/such/dir/r.txt"
bad_input "a bad run.device" "run.device" "$NST" --self-test --set run.device=gpu

# (leaks are not checked: Open MPI's own allocations at exit would drown ours, as in test_cli)
ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 st asan "$ASAN" --self-test --set run.threads=1
if [ $rc -eq 0 ] && ! grep -q 'ERROR: AddressSanitizer\|runtime error' "$T/asan.log"; then ok "clean under ASan ($(grep '^self-test' "$T/asan.log"))"
else bad "ASan" "exit $rc" "$(cat "$T/asan.log")"; fi
finish

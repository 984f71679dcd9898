#!/usr/bin/env bash
# tests/test_first_contact.sh: scripts/gpu-first-contact.sh's plumbing, in its CPU mode, so that a
# lent GPU's minutes go to measuring and not to debugging the script. Nothing here is timed.
#
#   tests/test_first_contact.sh
#
# - --cpu: the steps run and pass (env, selftest, ops, bench; the renders with the CPU stand-in
#   are test_gpu_standin's), summary.txt has a line per step (name, status, seconds) and the
#   verdict, at most 8 files; bench.md holds the iteration's tables, run under a budget taken from
#   the step's cap (BENCH_SECONDS), and the frame's (SSIM 1: the CPU's tiles are exact), both with
#   VGG-19 at 1/8 of its width (MODEL_WIDTH=8);
# - a budget too small for any step: each is skipped, named, and nothing fails;
# - a step stopped at its cap while still printing is CAPPED (not a failure, the cause named), one
#   silent at its cap a TIMEOUT (a failure);
# - the renders step, with a Gram allreduce planted missing (the tiling checks alone): exit 1, FAIL in
#   the summary;
# - the bench step's frame that never ends (planted) is stopped at its share of the step, and the
#   iteration's tables still come; exit 1;
# - STEPS picks steps (a second try runs only what failed); no OUT: exit 2 with how to call it;
# - the ops step's list of test_backend_ops' tests on a GPU names tests it has.
. "$(dirname "$0")/lib.sh" test_first_contact
FC=$ROOT/scripts/gpu-first-contact.sh
run_fc() { local out=$1; shift; env "$@" OUT="$T/$out" "$FC" --cpu >"$T/$out.log" 2>&1; rc=$?; } # run_fc OUT [VAR=VALUE ...]
line() { grep -E "^$2 " "$T/$1/summary.txt"; } # line OUT STEP

# every step but the renders (test_gpu_standin runs those checks with the stand-in; the planted
# run below runs this script's renders step), with the renders' file name kept in the count; the
# ops step's binary runs its CPU contracts alone (NST_TEST_ONLY, tests/test.h): the rest of it,
# bf16 against fp32 above all, is test_backend_ops' own, and here only the step's plumbing is tested
run_fc all STEPS="env selftest ops bench" NST_TEST_ONLY=t_cpu_fp32_contracts
files=$(ls "$T/all" | wc -l)
steps=$(grep -cE '^(env|selftest|ops|bench) +ok +[0-9]+ ' "$T/all/summary.txt" 2>/dev/null)
if [ $rc -eq 0 ] && [ "$steps" -eq 4 ] && [ "$((files + 1))" -le 8 ] && grep -q '^total .* no step failed' "$T/all/summary.txt" &&
   grep -q '^| 128 x 96 | [0-9.]* |' "$T/all/bench.md" && grep -q '"device_diagnostics"' "$T/all/record.json" &&
   grep -q ' DEVICE=cpu MODEL_WIDTH=8 BENCH_SECONDS=[0-9]* (the budget' "$T/all/bench.md" && grep -q ', 1/8-width VGG-19 ' "$T/all/bench.md" &&
   grep -q '^SSIM of the tiled frame against the one-tile frame (image_diff --ssim, luminance), model.pooling = max: 1.000000\.$' "$T/all/bench.md" &&
   grep -q '^bench: SSIM of the tiled frame' "$T/all/summary.txt" && grep -q '^bench: | max | exact mode, ' "$T/all/summary.txt"; then
  ok "--cpu: env, selftest, ops, bench ok (VGG-19 at 1/8 width; the iteration under the step's budget, the frame's SSIM 1 on exact tiles), $files files (and renders.txt: at most 8), $(tail -n 1 "$T/all/summary.txt")"
else bad "--cpu" "exit $rc, $steps steps ok, $files files" "$(cat "$T/all.log")"; fi
sed 's/^/    | /' "$T/all/summary.txt"

# the bench step's frame that never ends (planted) is stopped at its share of the step (2/5), and
# the iteration's tables still come (a lease's minutes are not all the frame's); beside the cases
# below, as it mostly waits
( run_fc framehang STEPS=bench FIRST_CONTACT_SECONDS=110 FC_PLANT=frame:hang; echo $rc >"$T/framehang.rc" ) &
fh_pid=$!

run_fc late FIRST_CONTACT_SECONDS=1
if [ $rc -eq 0 ] && [ "$(grep -c 'SKIP .*too little time left' "$T/late/summary.txt")" -eq 5 ]; then ok "a 1 s budget: every step skipped and named, exit 0"
else bad "a 1 s budget" "exit $rc" "$(cat "$T/late.log")"; fi

# a step at its cap (the env step's, 6 s of a 45 s budget): still printing, it is CAPPED, no failure,
# and the line says why and what to set; silent after its first line, it is a TIMEOUT, a failure
run_fc talk STEPS=env FIRST_CONTACT_SECONDS=45 FC_PLANT=env:talk
if [ $rc -eq 0 ] && line talk env | grep -q 'CAPPED .*stopped at its 6 s cap while still working .*a slow or loaded machine (load [0-9.]* on [0-9]* cores), not a failure; for its verdict: STEPS=env FIRST_CONTACT_SECONDS=90' &&
   grep -q 'no step failed; a step CAPPED while working' "$T/talk/summary.txt"; then
  ok "a step still printing at its cap: CAPPED, exit 0, $(line talk env | cut -c1-90)..."
else bad "a step working at its cap" "exit $rc" "$(cat "$T/talk.log")"; fi
run_fc hang STEPS=env FIRST_CONTACT_SECONDS=45 FC_PLANT=env:hang
if [ $rc -eq 1 ] && line hang env | grep -q 'TIMEOUT .*stopped at its 6 s cap, silent for its last [0-9]* s' && grep -q 'a step FAILED' "$T/hang/summary.txt"; then
  ok "a step silent at its cap: TIMEOUT, exit 1, $(line hang env | cut -c1-80)"
else bad "a step silent at its cap" "exit $rc" "$(cat "$T/hang.log")"; fi

run_fc planted STEPS=renders PLANT=allreduce ONLY=tiling
if [ $rc -eq 1 ] && line planted renders | grep -q 'FAIL' && line planted env | grep -q 'SKIP .*not in STEPS' && grep -q 'STAND_IN=' "$T/planted/summary.txt" &&
   grep -q 'a step FAILED' "$T/planted/summary.txt" && grep -q 'FAIL fp32, 32 px tiles on 2 ranks' "$T/planted/renders.txt"; then
  ok "a failing step (the Gram allreduce planted missing): exit 1, $(line planted renders | cut -c1-60)"
else bad "a failing step" "exit $rc" "$(cat "$T/planted.log")"; fi

wait $fh_pid
rc=$(cat "$T/framehang.rc" 2>/dev/null)
if [ "$rc" = 1 ] && line framehang bench | grep -q 'FAIL .*exit 1' && grep -q '^Not finished within [0-9]* s, its share of the bench step' "$T/framehang/bench.md" &&
   grep -q '^| 128 x 96 | [0-9.]* |' "$T/framehang/bench.md" && [ -z "$(ours '^sleep 1000$')" ]; then
  ok "a frame that never ends: stopped at its share of the bench step, the iteration's tables still written, exit 1, $(line framehang bench | cut -c1-40)"
else bad "a frame that never ends" "exit $rc" "$(cat "$T/framehang.log")"; fi

out=$("$FC" --cpu 2>&1); st=$?
if [ $st -eq 2 ] && grep -q 'set OUT' <<<"$out"; then ok "no OUT: exit 2, $out"; else bad "no OUT" "exit $st" "$out"; fi

# the ops step's list of tests on a GPU names tests test_backend_ops has (tests/test.h fails a name
# it does not know, but only on the GPU would this list run)
only=$(sed -n 's/.*ops_only=\(t_[a-z0-9_,]*\).*/\1/p' "$FC" | head -n 1)
out=$(NST_TEST_ONLY=$only "$ROOT/build/tests/test_backend_ops" 2>&1); st=$?
if [ -n "$only" ] && [ $st -eq 0 ] && ! grep -q 'NST_TEST_ONLY names' <<<"$out" && grep -q '^  ok   t_tolerances_follow_the_precision' <<<"$out"; then
  ok "the ops step's GPU list ($only): every name a test of test_backend_ops"
else bad "the ops step's GPU list" "'$only', exit $st" "$out"; fi
finish

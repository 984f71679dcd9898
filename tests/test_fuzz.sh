#!/usr/bin/env bash
# tests/test_fuzz.sh: run the libFuzzer targets (the config parser, the whole-image readers, the
# TIFF region reader, the .flo reader, the video reader) for a short fixed time each (FUZZ_SECONDS, default 12) from the committed
# seed corpora, two at a time. A crash, sanitizer report, leak or time-out fails
# the test and leaves the crashing input under build/fuzz/artifacts/ (make it a regression seed).
# The video reader's target is built only with FFmpeg's libraries; without them it SKIPs.
#
#   tests/test_fuzz.sh BUILD_DIR
set -u
B=$(readlink -f "${1:-build}")
ROOT=$(cd "$(dirname "$0")/.." && pwd)
secs=${FUZZ_SECONDS:-12}
pass=0 fail=0 skip=0
mkdir -p "$B/fuzz/artifacts"
L=$(mktemp -d)
trap 'rm -rf "$L"' EXIT
# one target: its log and exit status into $L (libFuzzer is one thread: two run side by side on two
# cores, each with a core of its own, so the suite takes half the time for the same fuzzing)
fuzz_one() {
  local target=$1 bin="$B/fuzz/fuzz_$1" work seeds
  work=$(mktemp -d)   # new inputs go here; the committed seeds stay as they are
  seeds=("$ROOT/tests/fuzz/corpus_$target")
  [ -d "$ROOT/tests/fuzz/corpus_${target}_bad" ] && seeds+=("$ROOT/tests/fuzz/corpus_${target}_bad") # the malformed corpus seeds too
  "$bin" "$work" "${seeds[@]}" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=20 \
    -max_len=65536 -artifact_prefix="$B/fuzz/artifacts/$target-" -print_final_stats=1 >"$L/$target.log" 2>&1
  echo $? >"$L/$target.status"
  rm -rf "$work"
}
jobs_at_once=$(nproc 2>/dev/null || echo 1)
[ "$jobs_at_once" -gt 2 ] && jobs_at_once=2
run=()
for target in config image tiff flo video; do
  bin="$B/fuzz/fuzz_$target"
  if [ "$target" = video ] && [ ! -x "$bin" ] && ! pkg-config --exists libavformat libavcodec libswscale libavutil 2>/dev/null; then
    echo "  SKIP fuzz_video: built without FFmpeg's libraries (scripts/install-deps.sh)"; skip=$((skip + 1)); continue
  fi
  if [ ! -x "$bin" ]; then echo "  FAIL fuzz_$target: not built ($bin)"; fail=$((fail + 1)); continue; fi
  while [ "$(jobs -rp | wc -l)" -ge "$jobs_at_once" ]; do wait -n; done
  fuzz_one "$target" &
  run+=("$target")
done
wait
for target in "${run[@]}"; do
  status=$(cat "$L/$target.status" 2>/dev/null || echo 1) log=$(cat "$L/$target.log")
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' <<<"$log")
  if [ "$status" -eq 0 ]; then
    pass=$((pass + 1)); echo "  ok   fuzz_$target: ${runs:-?} inputs in ${secs} s, no crash"
  else
    fail=$((fail + 1)); echo "  FAIL fuzz_$target (status $status)"; grep -E 'ERROR|SUMMARY|==[0-9]+==' <<<"$log" | head -n 20
  fi
done
echo "test_fuzz: $pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]

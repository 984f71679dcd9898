#!/usr/bin/env bash
# tests/test_flow.sh: the video mode's groundwork on clips with exact motion. tools/make_test_clip
# makes a 320x240 clip for each motion (translate, rotate, zoom, all); tests/test_flow.c checks
# the warp and the consistency weights on each, and OpenCV's DIS flow against the exact one;
# nstbatch-flicker measures each clip's warping error (the floor a stylised clip is compared
# with), from the exact flow and from DIS's, and refuses bad input with one line.
#
#   tests/test_flow.sh BUILD_DIR
B=$(readlink -f "${1:-build}")
export NST_IDLE=${NST_IDLE:-$B/tests/idle_timeout} # (lib.sh's; this suite's build may be another than the checkout's)
. "$(dirname "$0")/lib.sh" test_flow
FLICKER="$B/tools/nstbatch-flicker"

for m in translate rotate zoom all; do
  if ! out=$("$B/tools/make_test_clip" "$T/$m" --size 320x240 --frames 4 --motion "$m" 2>&1); then bad "make_test_clip --motion $m" "failed" "$out"; continue; fi
  out=$("$B/tests/test_flow" "$T/$m" 2>&1)
  if grep -q '^test_flow: [0-9]* passed, 0 failed, 0 skipped' <<<"$out"; then ok "$m: $(grep -o 'mean [0-9.]*, [0-9]* pixels.*' <<<"$out")"
  else bad "$m: the warp and the weights" "" "$out"; fi
  out=$("$FLICKER" "$T/$m/frame_%05d.png" "$T/$m/fwd_%05d.flo" "$T/$m/bwd_%05d.flo" 2>&1)
  lai=$(sed -n 's/^mean over 3 pairs: ruder [0-9.e+-]*  lai \([0-9.e+-]*\)$/\1/p' <<<"$out")
  if [ -n "$lai" ] && awk -v l="$lai" 'BEGIN { exit !(l > 0 && l < 1e-4) }'; then ok "$m: nstbatch-flicker, the clip's own warping error: $(tail -n 1 <<<"$out")"
  else bad "$m: nstbatch-flicker" "expected a floor below 1e-4 over 3 pairs" "$out"; fi
done

# estimated flow (OpenCV's DIS) instead of the exact: a higher floor, still far below a flicker
out=$("$FLICKER" "$T/all/frame_%05d.png" --dis medium 2>&1); r=$?
if grep -q "needs OpenCV" <<<"$out"; then skip "nstbatch-flicker --dis" "$out"
else
  lai=$(sed -n 's/^mean over 3 pairs: ruder [0-9.e+-]*  lai \([0-9.e+-]*\)$/\1/p' <<<"$out")
  [ $r -eq 0 ] && [ -n "$lai" ] && awk -v l="$lai" 'BEGIN { exit !(l > 0 && l < 1e-3) }' && ok "--dis medium (flow estimated both ways): $(tail -n 1 <<<"$out")" \
    || bad "nstbatch-flicker --dis medium" "exit $r, expected a floor below 1e-3" "$out"
fi

# bad input: one line, exit 2
one() { # one NAME FRAGMENT ARGS...
  local name=$1 frag=$2; shift 2
  local out; out=$("$FLICKER" "$@" 2>&1); local r=$?
  if [ $r -eq 2 ] && [ "$(wc -l <<<"$out")" -eq 1 ] && grep -q -F -- "$frag" <<<"$out"; then ok "nstbatch-flicker, $name: $out"
  else bad "nstbatch-flicker, $name" "exit $r" "$out"; fi
}
A=$T/all
one "no patterns" "give FRAMES, FWD and BWD" "$A/frame_%05d.png"
one "a pattern without a number" "needs a %d" "$A/frame.png" "$A/fwd_%05d.flo" "$A/bwd_%05d.flo"
one "a DIS preset that does not exist" "valid: ultrafast, fast, medium" "$A/frame_%05d.png" --dis slow
one "a missing first frame" "frame_00007.png" "$A/frame_%05d.png" "$A/fwd_%05d.flo" "$A/bwd_%05d.flo" --first 7 --count 2
cp "$B/../tests/fuzz/corpus_flo/small.flo" "$T/small.flo" 2>/dev/null || cp "$(dirname "$0")/fuzz/corpus_flo/small.flo" "$T/small.flo"
mkdir -p "$T/mis" && cp "$A"/frame_0000[01].png "$T/mis/" && cp "$T/small.flo" "$T/mis/fwd_00000.flo" && cp "$A/bwd_00000.flo" "$T/mis/"
one "flow of another size" "4x3 flow for 320x240 frames" "$T/mis/frame_%05d.png" "$T/mis/fwd_%05d.flo" "$T/mis/bwd_%05d.flo"
finish

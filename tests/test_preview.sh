#!/usr/bin/env bash
# tests/test_preview.sh: output.save_every, the preview of the image being rendered.
#
#   tests/test_preview.sh NSTBATCH IMAGE_DIFF PNG_PROBE
#
# On the demo at 192x128 (random VGG-19 at width 1/4), without checkpoints:
# - a render stopped at iteration 15 (an injected fault) keeps the preview of iteration 10, and at
#   the image's own size it equals the output of a 10-iteration render, on 1 rank and on 2 ranks
#   with 2 tiles;
# - at 48 px (a 4x4 box per preview pixel) it is 48x32, the 2-rank preview equals the 1-rank one
#   to within one 8-bit step, and it looks like the 10-iteration render's own preview;
# - save_every changes nothing in the output, the run record counts the previews (5, 10 and 15 of
#   20: the end's is the outputs' own), and the metrics log has a "preview" event for each;
# - output.save_every with output.preview = 0, or below 0, is one clear error, exit 2.
NST=$(readlink -f "$1") DIFF=$(readlink -f "$2") PROBE=$(readlink -f "$3")
. "$(dirname "$0")/lib.sh" test_preview

cp "$ROOT/configs/demo.ini" "$T/p.ini"
cp -r "$ROOT/configs/demo" "$T/demo"
# run NAME RANKS ARGS...: the demo at 192x128 into NAME.*, log NAME.log, status in rc
run() {
  local name=$1 np=$2; shift 2
  (cd "$T" && "$IDLE" 300 mpirun --oversubscribe --bind-to none -np "$np" "$NST" p.ini --set run.device=cpu --set output.size=192 \
      --set output.path="$name.png" --set run.print_every=0 "$@") >"$T/$name.log" 2>&1
  rc=$?
}
same() { [ "$("$DIFF" "$T/$1" "$T/$2")" = "max 0 mean 0" ]; }

# ---- stopped at 15: the preview of iteration 10, at full size ----------------------------------
run ref 1 --set optim.iterations=10
for np in 1 2; do
  tiles=$([ "$np" -eq 2 ] && echo "--set tiling.tile_size=96" || true)
  NSTBATCH_FAULT=0:15 run stop$np "$np" --set optim.iterations=20 --set output.save_every=10 $tiles
  if [ $rc -ne 0 ] && [ ! -e "$T/stop$np.png" ] && [ -f "$T/stop$np.preview.png" ] && same ref.png stop$np.preview.png &&
     ! ls -a "$T" | grep -q '\.tmp$'; then
    ok "$np rank(s): a render stopped at iteration 15 keeps the preview of iteration 10, equal to a 10-iteration render's output"
  else bad "$np rank(s): the preview of a stopped render" "exit $rc, $("$DIFF" "$T/ref.png" "$T/stop$np.preview.png" 2>&1)" "$(tail -n 5 "$T/stop$np.log")"; fi
done

# ---- reduced: box means on any tiling -----------------------------------------------------------
run small_ref 1 --set optim.iterations=10 --set output.preview=48
for np in 1 2; do
  tiles=$([ "$np" -eq 2 ] && echo "--set tiling.tile_size=96" || true)
  NSTBATCH_FAULT=0:15 run small$np "$np" --set optim.iterations=20 --set output.save_every=10 --set output.preview=48 $tiles
done
d12=$("$DIFF" "$T/small1.preview.png" "$T/small2.preview.png" 2>&1)
dref=$("$DIFF" "$T/small1.preview.png" "$T/small_ref.preview.png" 2>&1)
if [ "$("$PROBE" "$T/small1.preview.png")" = "48x32 8" ] &&
   awk -v a="$(cut -d' ' -f2 <<<"$d12")" -v m="$(cut -d' ' -f4 <<<"$dref")" 'BEGIN { exit !(a != "" && a <= 1.0001 / 255 && m != "" && m < 0.03) }'; then
  ok "48 px: 48x32; 2 ranks against 1: $d12; against the 10-iteration render's own preview: $dref"
else bad "the reduced preview" "size $("$PROBE" "$T/small1.preview.png" 2>&1); 1 against 2 ranks: $d12; against the render's preview: $dref"; fi

# ---- the output untouched, the previews counted -------------------------------------------------
run plain 1 --set optim.iterations=20 --set output.path=plain.tif --set output.bits=16
run saved 1 --set optim.iterations=20 --set output.path=saved.tif --set output.bits=16 --set output.save_every=5 \
    --set run.record=saved.json --set metrics.path=saved.jsonl
previews=$(sed -n 's/.*"previews": \([0-9]*\).*/\1/p' "$T/saved.json")
events=$(grep -c '"event": "preview"' "$T/saved.jsonl" 2>/dev/null)
if [ $rc -eq 0 ] && same plain.tif saved.tif && [ "$previews" = 3 ] && [ "$events" = 3 ]; then
  ok "save_every = 5 of 20: the output is the same bits, 3 previews in the run record and 3 events in the metrics"
else bad "previews while rendering" "exit $rc, $("$DIFF" "$T/plain.tif" "$T/saved.tif" 2>&1), previews '$previews', events '$events'" "$(tail -n 5 "$T/saved.log")"; fi

# ---- bad values ---------------------------------------------------------------------------------
run off 1 --set optim.iterations=20 --set output.save_every=5 --set output.preview=0
if [ $rc -eq 2 ] && grep -q 'output.save_every = 5 writes the preview, but output.preview = 0 turns it off' "$T/off.log" && [ ! -e "$T/off.png" ]; then
  ok "output.save_every with output.preview = 0: exit 2, naming both keys"
else bad "save_every without a preview" "exit $rc" "$(cat "$T/off.log")"; fi
run neg 1 --set output.save_every=-1
if [ $rc -eq 2 ] && grep -q 'output.save_every' "$T/neg.log"; then ok "output.save_every = -1: exit 2 ($(grep -o 'output.save_every.*' "$T/neg.log" | head -n 1))"
else bad "save_every = -1" "exit $rc" "$(cat "$T/neg.log")"; fi

finish

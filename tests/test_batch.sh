#!/usr/bin/env bash
# tests/test_batch.sh: the batch renderer end to end: pyramid, batches, styles, colour, L-BFGS.
#
#   tests/test_batch.sh NSTBATCH IMAGE_DIFF
#
# Small renders of the demo images with the random VGG-19 at width 1/8, one thread per rank, 16-bit
# TIFF outputs compared with image_diff (max |difference| over samples in [0,1]):
# - a 3-level pyramid on 2 ranks reports each level's size and loss (log and run record), and the
#   coarse levels run on fewer ranks;
# - a batch of 6 jobs on 4 ranks in 2 groups of 2 gives outputs bit-identical to each job run
#   alone on 2 ranks; with every job large (batch.pack_megapixels = 0) identical to 4 ranks alone;
# - a job with an unreadable input is reported and every other job completes (exit 2, summary);
#   batch.on_error = stop renders nothing after it; a manifest runs its lines; bad job sections and
#   manifest lines are refused with file:line before anything renders;
# - style targets: a second run with batch.style_cache loads them ("from the cache") and renders
#   the same image; targets computed over tiles (a small run.memory_gb) render the same image as
#   whole-image targets;
# - color.mode = luminance keeps the content's chroma (YIQ I, Q) within a bound;
# - L-BFGS reaches Adam's 100-iteration loss in fewer iterations, and 1 and 4 ranks agree;
# - the style cache keeps the targets of weights that differ only in their input preprocessing apart.
NST=$(readlink -f "$1") DIFF=$(readlink -f "$2")
. "$(dirname "$0")/lib.sh" test_batch
mkdir -p "$T/out"

cat >"$T/base.ini" <<EOF
[content]
path = $ROOT/configs/demo/content.png
[style]
path = $ROOT/configs/demo/style.png
[output]
width = 96
height = 64
bits = 16
overwrite = true
preview = 0
[model]
random_width_divisor = 8
[optim]
iterations = 30
[run]
device = cpu
threads = 1
print_every = 10
precision = fp32
EOF

# nst LOG RANKS ARGS...: run nstbatch in T, output to T/LOG.log, exit status in $rc
nst() {
  local log=$1 ranks=$2; shift 2
  ranks "$ranks"
  (cd "$T" && "$IDLE" 300 "${RANKS[@]}" "$NST" "$@") >"$T/$log.log" 2>&1
  rc=$?
}

# ---- the pyramid ----------------------------------------------------------------------------------
nst pyr 2 base.ini --set output.path=out/pyr.tif --set output.width=192 --set output.height=128 --set pyramid.levels=3 \
  --set tiling.tile_size=64 --set run.record=out/pyr.json
sizes=$(grep -o 'level [0-9]/3 done: [0-9]*x[0-9]*' "$T/pyr.log" | awk '{print $4}' | tr '\n' ' ')
if [ $rc -eq 0 ] && [ "$sizes" = "48x32 96x64 192x128 " ]; then ok "3-level pyramid on 2 ranks: levels $sizes"; else bad "3-level pyramid" "exit $rc, sizes '$sizes'" "$(cat "$T/pyr.log")"; fi
losses=$(grep -o 'level [0-9]/3 done: .*loss [0-9.e+-]* -> [0-9.e+-]*' "$T/pyr.log" | sed 's/.*loss //')
if [ "$(awk '{ if ($3 < $1) n++ } END { print n }' <<<"$losses")" = 3 ]; then ok "each level lowers its loss: $(tr '\n' ';' <<<"$losses")"; else bad "pyramid losses" "$losses"; fi
if grep -q 'level 1/3 done.*on fewer ranks' "$T/pyr.log"; then ok "the one-tile coarse level runs on fewer ranks"; else bad "coarse level on fewer ranks" "no note" "$(grep level "$T/pyr.log")"; fi
nlev=$(grep -o '"loss_last": [0-9.e+-]*' "$T/out/pyr.json" | wc -l)
[ "$nlev" = 3 ] && ok "the run record lists 3 levels with their losses" || bad "run record levels" "$nlev" "$(cat "$T/out/pyr.json")"
nst pyrc 2 base.ini --set output.path=out/pyrc.tif --set output.width=192 --set output.height=128 --set pyramid.levels=3 \
  --set tiling.tile_size=64 --set pyramid.state=carry --set optim.method=adam
[ $rc -eq 0 ] && grep -q "Adam state at a level change: carry" "$T/pyrc.log" && ok "pyramid.state = carry renders (Adam's moments upsampled)" \
  || bad "pyramid.state = carry" "exit $rc" "$(cat "$T/pyrc.log")"

# ---- a batch of 6 jobs in 2 groups == each job alone -------------------------------------------------
# NAME|KEY=VALUE;KEY=VALUE... (';' apart: the checkout's path, in d's values, may hold a space)
jobs=(
  "a|"
  "b|optim.iterations=20;style.weight=1e4"
  "c|output.width=128;output.height=96;pyramid.levels=2"
  "d|style.path=$ROOT/configs/demo/style.png,$ROOT/configs/demo/content.png;style.blend_weights=3,1"
  "e|color.mode=luminance"
  "f|color.mode=match;optim.method=lbfgs"
)
# settings JOB: the job's KEY=VALUE pairs into the array kvs
settings() { IFS=';' read -ra kvs <<<"${1#*|}"; }
{ cat "$T/base.ini"; echo "[batch]"; echo "group_ranks = 2"; echo "summary = out/summary.json"
  for j in "${jobs[@]}"; do
    n=${j%%|*}; echo; echo "[job.$n]"; echo "output.path = out/$n.tif"
    settings "$j"; for kv in "${kvs[@]}"; do echo "${kv%%=*} = ${kv#*=}"; done
  done; } >"$T/batch.ini"
nst batch 4 batch.ini
if [ $rc -eq 0 ] && grep -q "6 jobs: 6 done, 0 failed" "$T/batch.log" && grep -q "2 groups of 2" "$T/batch.log"; then
  ok "a batch of 6 jobs on 4 ranks in 2 groups of 2"
else bad "batch of 6" "exit $rc" "$(cat "$T/batch.log")"; fi
for j in "${jobs[@]}"; do
  n=${j%%|*} sets=()
  settings "$j"; for kv in "${kvs[@]}"; do sets+=(--set "$kv"); done
  nst alone_$n 2 base.ini --set output.path=out/alone_$n.tif "${sets[@]}"
  same "job $n: batch output == the job alone on 2 ranks" out/$n.tif out/alone_$n.tif
done
grep -q '"status": "done"' "$T/out/summary.json" && [ "$(grep -c '"status": "done"' "$T/out/summary.json")" = 6 ] \
  && ok "batch.summary lists 6 done jobs" || bad "batch.summary" "" "$(cat "$T/out/summary.json")"
nst large 4 batch.ini --set batch.pack_megapixels=0 --set batch.summary=out/summary_large.json
nst alone4_c 4 base.ini --set output.path=out/alone4_c.tif --set output.width=128 --set output.height=96 --set pyramid.levels=2
if [ $rc -eq 0 ] && grep -q "6 large on all 4 ranks" "$T/large.log"; then ok "batch.pack_megapixels = 0: every job on all 4 ranks"; else bad "large jobs" "" "$(head -5 "$T/large.log")"; fi
same "a large job == the job alone on 4 ranks" out/c.tif out/alone4_c.tif

# colour: luminance-only transfer keeps the content's chroma (the content at the output size is the
# render with no iterations); 16-bit quantisation and clamping at 0 and 1 bound it, not the method
nst content0 2 base.ini --set output.path=out/content0.tif --set optim.iterations=0
# (measured: mean 1.3e-5, max 0.04 where a channel clamps; 0.069 and 0.33 without color.mode)
d=$("$DIFF" --chroma "$T/out/e.tif" "$T/out/content0.tif" 2>&1); dmax=${d#max }; dmax=${dmax%% *}; dmean=${d##* }
if [ -n "$dmax" ] && awk -v m="$dmax" -v a="$dmean" 'BEGIN { exit !(a + 0 <= 1e-4 && m + 0 <= 0.1) }'; then
  ok "color.mode = luminance keeps the content's chroma: $d (bounds: mean 1e-4, max 0.1 where channels clamp)"
else bad "luminance keeps chroma" "$d"; fi
d2=$("$DIFF" --chroma "$T/out/a.tif" "$T/out/content0.tif" 2>&1)
printf '       (for scale: without color.mode the chroma moves by %s)\n' "$d2"

# ---- failures ----------------------------------------------------------------------------------------
head -c 300 "$ROOT/configs/demo/content.png" >"$T/broken.png"
{ cat "$T/base.ini"; printf '[batch]\nsummary = out/fail.json\n'
  printf '[job.one]\noutput.path = out/one.tif\n[job.broken]\noutput.path = out/broken.tif\ncontent.path = broken.png\n'
  printf '[job.two]\noutput.path = out/two.tif\n[job.nostyle]\noutput.path = out/nostyle.tif\nstyle.path = missing.png\n'; } >"$T/fail.ini"
rm -f "$T"/out/one.tif "$T"/out/two.tif
nst fail 2 fail.ini
if [ $rc -eq 2 ] && [ -f "$T/out/one.tif" ] && [ -f "$T/out/two.tif" ] && grep -q "2 done, 2 failed" "$T/fail.log" \
   && grep -q "^  broken .*failed.*broken.png" "$T/fail.log" && grep -q "^  nostyle .*failed.*missing.png" "$T/fail.log" \
   && [ ! -e "$T/out/broken.tif" ]; then
  ok "unreadable inputs: the other jobs complete, the failed ones are reported, exit 2"
else bad "a batch with unreadable inputs" "exit $rc" "$(cat "$T/fail.log")"; fi
{ cat "$T/base.ini"; printf '[job.one]\noutput.path = out/f1.tif\n[job.two]\noutput.path = out/f2.tif\n'; } >"$T/fault.ini"
out=$(cd "$T" && NSTBATCH_FAULT=0:1 "$IDLE" 300 mpirun --oversubscribe --bind-to none -np 2 "$NST" fault.ini --set optim.iterations=2 2>&1)
if grep -q "^nstbatch: warning: job 'one' failed: rank 0: injected fault" <<<"$out" && ! grep -q '^\[[a-z]*\] nstbatch: warning' <<<"$out"; then
  ok "a job failing while rendering: one warning naming it, not prefixed twice"
else bad "a job's failure line" "" "$(grep -n 'warning\|error' <<<"$out")"; fi
grep -q '"name": "broken".*"status": "failed", "exit_code": 2' "$T/out/fail.json" && ok "the summary file records the failure" || bad "summary of failure" "" "$(cat "$T/out/fail.json")"
rm -f "$T"/out/one.tif "$T"/out/two.tif
nst quietb 2 fail.ini --set batch.on_error=stop --quiet
[ $rc -eq 2 ] && grep -q "0 done, 1 failed, 3 not run" "$T/quietb.log" && grep -q "^  job  *status" "$T/quietb.log" && ! grep -q "^ *iteration" "$T/quietb.log" \
  && ok "--quiet: no progress, but the batch's table of jobs" || bad "--quiet batch table" "exit $rc" "$(cat "$T/quietb.log")"
rm -f "$T"/out/one.tif "$T"/out/two.tif
nst stop 2 fail.ini --set batch.on_error=stop
if [ $rc -eq 2 ] && [ ! -f "$T/out/one.tif" ] && grep -q "0 done, 1 failed, 3 not run" "$T/stop.log"; then ok "batch.on_error = stop: nothing renders after a failure"; else bad "on_error = stop" "exit $rc" "$(cat "$T/stop.log")"; fi
# bad job sections and manifest lines: the whole batch is refused with file:line
printf '[job.x]\noutput.path = out/x.tif\noptim.iteratons = 3\n' >"$T/e1.ini"; cat "$T/base.ini" "$T/e1.ini" >"$T/e1full.ini"
nst e1 1 e1full.ini
[ $rc -eq 2 ] && grep -q "e1full.ini:$(($(wc -l <"$T/base.ini") + 3)): unknown key 'iteratons' in \[optim\] (did you mean 'optim.iterations'?)" "$T/e1.log" && ok "a job's unknown key names its line" || bad "job unknown key" "exit $rc" "$(cat "$T/e1.log")"
printf '[job.x]\nmodel.weights = w.h5\n' | cat "$T/base.ini" - >"$T/e2.ini"; nst e2 1 e2.ini
[ $rc -eq 2 ] && grep -q "e2.ini:$(($(wc -l <"$T/base.ini") + 2)): job 'x': model.weights is shared by every job" "$T/e2.log" && ok "a job may not change the network" || bad "job model key" "exit $rc" "$(cat "$T/e2.log")"
printf '[job.x]\noutput.path = out/same.tif\n[job.y]\noutput.path = out/same.tif\n' | cat "$T/base.ini" - >"$T/e3.ini"; nst e3 1 e3.ini
[ $rc -eq 2 ] && grep -q "jobs 'x' and 'y'.*both write output.path" "$T/e3.log" && ok "two jobs writing one file are refused" || bad "duplicate outputs" "exit $rc" "$(cat "$T/e3.log")"

# ---- a manifest --------------------------------------------------------------------------------------
mkdir -p "$T/m/res"
cp "$ROOT/configs/demo/content.png" "$T/m/c 1.png"; cp "$ROOT/configs/demo/style.png" "$T/m/s.png"
printf '# content style output\n"c 1.png"  s.png  res/m1.tif\n\ns.png  "c 1.png"  res/m2.tif  optim.iterations=5  output.width=64 output.height=48 # a comment\n' >"$T/m/list.txt"
nst man 2 base.ini --set batch.manifest=m/list.txt
if [ $rc -eq 0 ] && [ -f "$T/m/res/m1.tif" ] && [ -f "$T/m/res/m2.tif" ] && grep -q "^  m2 .*done .*64x48" "$T/man.log"; then ok "a manifest's lines render (paths from the manifest's folder, overrides, quotes)"; else bad "manifest" "exit $rc" "$(cat "$T/man.log")"; fi
printf 's.png c.png\n' >"$T/m/bad.txt"; nst manbad 1 base.ini --set batch.manifest=m/bad.txt
[ $rc -eq 2 ] && grep -q "m/bad.txt:1: expected CONTENT STYLE OUTPUT" "$T/manbad.log" && ok "a short manifest line names its line" || bad "bad manifest" "exit $rc" "$(cat "$T/manbad.log")"

# ---- style targets: cache, tiles --------------------------------------------------------------------
mkdir -p "$T/cache"
nst cache1 2 base.ini --set output.path=out/cache1.tif --set batch.style_cache=cache --set pyramid.levels=2
nst cache2 2 base.ini --set output.path=out/cache2.tif --set batch.style_cache=cache --set pyramid.levels=2
nfiles=$(ls "$T/cache" | grep -c '^style-.*\.h5$')
if [ "$(grep -c 'style targets.*: computed' "$T/cache1.log")" = 2 ] && [ "$(grep -c 'style targets.*from the cache' "$T/cache2.log")" = 2 ] && [ "$nfiles" = 2 ]; then
  ok "style targets: computed and kept ($nfiles files), then loaded from the cache"
else bad "style cache" "files $nfiles" "$(grep -h 'style targets' "$T/cache1.log" "$T/cache2.log")"; fi
same "cached style targets render what fresh ones do" out/cache1.tif out/cache2.tif
# two weight files with the same kernels, one with torchvision's input preprocessing (the random
# network's) and one with Caffe's (the Keras file's), keep their own targets
"$NST" --make-weights random "$T/wk.h5" --seed 3 --width-divisor 8 >/dev/null
if /usr/bin/python3 -c 'import h5py' 2>/dev/null; then
  cp "$T/wk.h5" "$T/wt.h5"
  /usr/bin/python3 - "$T/wt.h5" <<'PY'
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "r+") as f:
    f.attrs["input_order"] = np.bytes_("BGR")
    f.attrs["input_scale"] = np.array([255.0], np.float32)
    f.attrs["input_mean"] = np.array([103.939, 116.779, 123.68], np.float32)
    f.attrs["input_std"] = np.array([1.0, 1.0, 1.0], np.float32)
PY
  mkdir -p "$T/cachep"
  nst prek 1 base.ini --set output.path=out/prek.tif --set batch.style_cache=cachep --set model.weights=wk.h5
  nst pret 1 base.ini --set output.path=out/pret.tif --set batch.style_cache=cachep --set model.weights=wt.h5
  nst pret0 1 base.ini --set output.path=out/pret0.tif --set model.weights=wt.h5
  if grep -q 'style targets.*: computed' "$T/prek.log" && grep -q 'style targets.*: computed' "$T/pret.log" &&
     [ "$(ls "$T/cachep" | grep -c '^style-.*\.h5$')" = 2 ]; then
    ok "style cache: weights that differ only in preprocessing get their own targets (2 files)"
  else bad "style cache and preprocessing" "" "$(grep -h 'style targets' "$T/prek.log" "$T/pret.log"; ls "$T/cachep")"; fi
  same "with the other preprocessing, cached targets render what fresh ones do" out/pret.tif out/pret0.tif
else
  skip "style cache and preprocessing: /usr/bin/python3 has no h5py to write the second weight file"
fi
nst stw 2 base.ini --set output.path=out/stw.tif --set output.width=192 --set output.height=128 --set style.scale=2 --set tiling.tile_size=64 --set optim.iterations=10
# 0.032 GiB: the 384x384 style image fits this budget in tiles only (whole at 0.04, while its
# smallest tiles need 0.023 beside the content's windows; the CPU's host scratch counts too)
nst stt 2 base.ini --set output.path=out/stt.tif --set output.width=192 --set output.height=128 --set style.scale=2 --set tiling.tile_size=64 --set optim.iterations=10 --set run.memory_gb=0.032
if grep -q "style targets.*computed over tiles" "$T/stt.log" && grep -q "style targets.*: computed (" "$T/stw.log"; then ok "a small memory budget computes the style targets over tiles"; else bad "tiled style targets" "" "$(cat "$T/stt.log")"; fi
same "style targets over tiles render what whole-image targets do" out/stw.tif out/stt.tif

# ---- L-BFGS ------------------------------------------------------------------------------------------
# (128x96 in 48 px tiles: 6 tiles, uneven on 4 ranks, every window the whole image; at 192x128 in
# 64 px twice the CPU. The 1-rank render in one tile: exact tiling, so the same image for a quarter
# of the CPU, 0.66 s against 2.6. L-BFGS reached Adam's 100-iteration loss at 50 at SSE41, AVX2 and
# a Zen 4's own level.)
nst adam 1 base.ini --set output.path=out/adam.tif --set output.width=128 --set output.height=96 --set optim.iterations=100 --set run.print_every=5 --set optim.method=adam
nst lb1 1 base.ini --set output.path=out/lb1.tif --set output.width=128 --set output.height=96 --set optim.iterations=100 --set run.print_every=5 --set optim.method=lbfgs
nst lb4 4 base.ini --set output.path=out/lb4.tif --set output.width=128 --set output.height=96 --set optim.iterations=100 --set run.print_every=5 --set optim.method=lbfgs --set tiling.tile_size=48
target=$(awk '$1 == 100 { print $2 }' "$T/adam.log" | tail -n 1)
reach=$(awk -v t="$target" '$1 ~ /^[0-9]+$/ && NF >= 5 && $2 + 0 <= t + 0 { print $1; exit }' "$T/lb1.log")
if [ -n "$target" ] && [ -n "$reach" ] && [ "$reach" -lt 100 ]; then ok "L-BFGS reaches Adam's 100-iteration loss $target by iteration $reach"; else bad "L-BFGS vs Adam" "target '$target', reached at '$reach'" "$(grep -E '^ +[0-9]+ ' "$T/lb1.log" | tail -5)"; fi
same "L-BFGS: 1 rank in one tile and 4 ranks in 6 tiles give the same image" out/lb1.tif out/lb4.tif

finish

#!/usr/bin/env bash
# tests/test_optim.sh: the optimisers end to end.
#
#   tests/test_optim.sh NSTBATCH IMAGE_DIFF
#
# On the demo at 128x96 (random VGG-19 at width 1/8, fp32 on every CPU, 16-bit PNG):
# - the picture reported is the picture written: for Adam and L-BFGS, each with optim.clamp on and
#   off, and with optim.average, the written image scored again (a render of it with one iteration:
#   its first objective) equals the level's last logged loss to within what the output's 16-bit
#   quantisation explains (the gradient's L1 norm there times half a step, twice over);
# - optim.method = auto is L-BFGS in exact mode and Adam in cheap mode;
# - L-BFGS (its dot products exact), the stopping rule and the average keep the tiling exact: 2
#   ranks on 48 px tiles equal one tile on one rank bit for bit, log the same losses to the last
#   bit (17 digits), and stop at the same iteration; in a 2-level pyramid the rule ends the first
#   level early, the run record says so (iterations, iterations_planned, stopped), and the second
#   level runs in full;
# - pyramid.levels = auto: a print starts from its preview (a 256x192 render's second level equals
#   the 128x96 render bit for bit), and where the output's height is rounded from a 3:2 content
#   (256x171, 512x341) the preview's levels are the print's first;
# - an iteration between two rows makes the host wait for the backend nowhere (Adam, 1 and 2
#   ranks), a check that fails with the loss read every iteration (planted) and counts L-BFGS's dots;
# - CUDA graphs' recording and replay, run on the CPU through the graph stand-in: replays equal the
#   render without graphs; a planted host-side Adam step makes them differ; a wait fails the
#   recording, named, and the level runs as before; on 2 ranks the replays are segments with the
#   steps between ranks between them, equal to no graphs (a planted skipped step makes them
#   differ), and a recording failed on one rank alone is given up by every rank; the Gram sums on
#   a side stream (NSTBATCH_CUDA_OVERLAP=1) equal the render without, and differ without their join
#   or with it after the next tile's forward; conv1_1 straight from the image (NSTBATCH_CUDA_CONV1=own
#   on the stand-in) equals the render with the input pass;
# - the halo exchange device to device (NSTBATCH_EXCHANGE=device: the rects packed in backend
#   memory, as with NCCL between GPUs) equals the exchange through host memory on 2 ranks with
#   graphs, and 1 rank on 3; a rect unpacked a pixel off (planted) differs; with the path on one
#   rank alone both ranks agree on the host's;
# - bad values of the new keys are one clear error each.
NST=$(readlink -f "$1") DIFF=$(readlink -f "$2")
. "$(dirname "$0")/lib.sh" test_optim_cli

{ demo_pair; printf '[output]\nwidth = 128\nheight = 96\nbits = 16\noverwrite = true\npreview = 0\n'
  printf '[model]\nrandom_width_divisor = 8\n[optim]\nmethod = adam\niterations = 40\n[pyramid]\nlevels = 1\n'
  printf '[run]\ndevice = cpu\nprecision = fp32\nthreads = 1\nprint_every = 0\nprogress = lines\n'; } >"$T/o.ini"

# nst NAME RANKS ARGS...: the demo into NAME.png with a run record NAME.json; log NAME.log, status rc
nst() {
  local name=$1 np=$2; shift 2
  ranks "$np"
  (cd "$T" && "$IDLE" 300 "${RANKS[@]}" "$NST" o.ini --set output.path="$name.png" \
      --set run.record="$name.json" "$@") >"$T/$name.log" 2>&1
  rc=$?
}
# last_loss NAME: the last level's loss_last from NAME.json
last_loss() { sed -n 's/.*"loss_last": \([^}]*\)}.*/\1/p' "$T/$1.json" | tail -n 1; }

# ---- the picture reported is the picture written ---------------------------------------------------
reported_is_written() {
  local name=$1; shift
  nst "$name" 1 "$@"
  [ $rc -eq 0 ] || { bad "$name: render" "exit $rc" "$(tail -n 5 "$T/$name.log")"; return; }
  nst "${name}_re" 1 "$@" --set optim.init=image --set optim.init_path="$name.png" --set optim.iterations=1 \
      --set run.first_gradient="${name}_re.grad"
  [ $rc -eq 0 ] || { bad "$name: scoring the output again" "exit $rc" "$(tail -n 5 "$T/${name}_re.log")"; return; }
  local logged re; logged=$(last_loss "$name"); re=$("$DIFF" --l1 "$T/${name}_re.grad")
  # |L(x) - L(written)| <= ||grad||_1 * (half a 16-bit step), to first order; twice that, and the
  # loss's own fp32 rounding (1e-6 of it), for the rest
  if awk -v a="$logged" -v b="$(cut -d' ' -f2 <<<"$re")" -v g="$(cut -d' ' -f4 <<<"$re")" \
       'BEGIN { d = a - b; if (d < 0) d = -d; bound = 2 * g * 0.5 / 65535 + 1e-6 * a; printf "%.3g (bound %.3g)", d, bound; exit !(a != "" && d <= bound) }' \
       >"$T/$name.verdict"; then
    ok "$name: the written image scores $(cut -d' ' -f2 <<<"$re"), the log said $logged: differ by $(cat "$T/$name.verdict")"
  else bad "$name: the written image is not the reported one" "logged $logged, written ${re}: $(cat "$T/$name.verdict")"; fi
}
reported_is_written adam
reported_is_written adam_free --set optim.clamp=false
reported_is_written lbfgs --set optim.method=lbfgs
reported_is_written lbfgs_free --set optim.method=lbfgs --set optim.clamp=false
reported_is_written adam_average --set optim.average=0.9
reported_is_written lbfgs_average --set optim.method=lbfgs --set optim.average=0.9

# ---- auto ----------------------------------------------------------------------------------------
nst auto 1 --set optim.method=auto --set optim.iterations=1
nst auto_cheap 1 --set optim.method=auto --set optim.iterations=1 --set tiling.mode=cheap
if grep -q '^optim: *lbfgs (auto)' "$T/auto.log" && grep -q '^optim: *adam (auto)' "$T/auto_cheap.log"; then
  ok "optim.method = auto: L-BFGS in exact mode, Adam in cheap mode"
else bad "optim.method = auto" "$(grep '^optim:' "$T/auto.log" "$T/auto_cheap.log")"; fi

# ---- exact on tiles: L-BFGS, the stopping rule and the average ------------------------------------
stopped_at() { sed -n 's/.*stopped after \([0-9]*\) of.*/\1/p' "$T/$1.log" | head -n 1; }
losses() { grep -o '"loss_first": [^,]*, "loss_last": [^}]*' "$T/$1.json"; }
# same_losses NAME A B: the two renders' records hold the same losses, all 17 digits
same_losses() {
  if [ -n "$(losses "$2")" ] && [ "$(losses "$2")" = "$(losses "$3")" ]; then ok "$1: the same losses to the last bit ($(losses "$2"))"
  else bad "$1: the losses differ" "$(losses "$2") against $(losses "$3")"; fi
}
nst lb1 1 --set optim.method=lbfgs --set optim.iterations=60
nst lb2 2 --set optim.method=lbfgs --set optim.iterations=60 --set tiling.tile_size=48
same "L-BFGS, 60 iterations: 2 ranks on 48 px tiles == one tile" lb1.png lb2.png
same_losses "L-BFGS on tiles" lb1 lb2
# tolerance 6 % over windows of 5 after 40 iterations: it fires late in 160 here (at 121, Zen 3),
# and at 30 the second level of the pyramid below is too short for it
rule=(--set optim.average=0.9 --set optim.stop_tolerance=0.06 --set optim.stop_window=5 --set optim.stop_min=40 --set optim.iterations=160)
nst rule1 1 "${rule[@]}"
nst rule2 2 "${rule[@]}" --set tiling.tile_size=48
a1=$(stopped_at rule1) a2=$(stopped_at rule2)
if [ -n "$a1" ] && [ "$a1" -gt 40 ] && [ "$a1" -lt 160 ] && [ "$a1" = "$a2" ]; then
  same "averaged, stopped at $a1 of 160 on both: 2 ranks on 48 px tiles == one tile" rule1.png rule2.png
  same_losses "the stopping rule on tiles" rule1 rule2
else bad "the stopping rule on tiles" "stopped at '$a1' (1 rank) and '$a2' (2 ranks)" "$(tail -n 4 "$T/rule1.log"; tail -n 4 "$T/rule2.log")"; fi

nst levels 2 "${rule[@]}" --set pyramid.levels=2 --set pyramid.iterations=120,30 --set tiling.tile_size=48
first=$(grep -o '"iterations": [0-9]*, "iterations_planned": [0-9]*, "stopped": [a-z]*' "$T/levels.json" | head -n 1)
second=$(grep -o '"iterations": [0-9]*, "iterations_planned": [0-9]*, "stopped": [a-z]*' "$T/levels.json" | sed -n 2p)
if [ $rc -eq 0 ] && [[ "$first" =~ \"iterations\":\ ([0-9]+),\ \"iterations_planned\":\ 120,\ \"stopped\":\ true ]] && [ "${BASH_REMATCH[1]}" -lt 120 ] &&
   [ "$second" = '"iterations": 30, "iterations_planned": 30, "stopped": false' ]; then
  ok "2 levels: the rule ends level 1 early and the record says so ($first), level 2 runs its 30"
else bad "the stopping rule in a pyramid" "exit $rc; level 1: '$first'; level 2: '$second'" "$(tail -n 6 "$T/levels.log")"; fi

# ---- a print starts from its preview --------------------------------------------------------------
# pyramid.levels = auto puts the coarse levels at fixed sizes (here 64 and 128 px long): the 128x96
# render is, bit for bit, the second level of the 256x192 one (NSTBATCH_SNAPSHOTS keeps each level's
# result), which then only refines it
fixed=(--set optim.method=auto --set pyramid.levels=auto --set pyramid.min_size=64 --set optim.iterations=30)
mkdir -p "$T/snaps"
nst preview 1 "${fixed[@]}"
NSTBATCH_SNAPSHOTS="$T/snaps" nst print 1 "${fixed[@]}" --set output.width=256 --set output.height=192
if [ $rc -eq 0 ] && grep -q 'pyramid: 3 levels, factor 2: 64x48 (30), 128x96 (30), 256x192 (30)' "$T/print.log" && [ -f "$T/snaps/L2_end.png" ]; then
  same "pyramid.levels = auto: a 256x192 render's second level is the 128x96 render, bit for bit" preview.png snaps/L2_end.png
else bad "fixed-size levels" "exit $rc" "$(grep -E 'pyramid:|error' "$T/print.log")"; fi
# the same sizes where the output's height is rounded from the content's 3:2: a 256 px preview
# (256x171) and a 512 px print (512x341); sized from the rounded outputs, their 128 px levels were
# 128x86 and 128x85 (as 1024x683 and 4096x2731 gave 512x342 and 512x341)
levels_of() { sed -n 's/^level [0-9]*\/[0-9]*: \([0-9]*x[0-9]*\),.*/\1/p' "$T/$1.log" | tr '\n' ' '; }
nst dry_preview 1 "${fixed[@]}" --set output.width=256 --set output.height=0 --dry-run
nst dry_print 1 "${fixed[@]}" --set output.width=512 --set output.height=0 --dry-run
lp=$(levels_of dry_preview) lq=$(levels_of dry_print)
if [ "$lp" = "64x43 128x85 256x171 " ] && [ "$lq" = "${lp}512x341 " ]; then
  ok "pyramid.levels = auto on a 3:2 picture: the 256 px preview's levels (${lp% }) are the 512 px print's first"
else bad "fixed-size levels of a 3:2 picture" "preview: '$lp'; print: '$lq'" "$(cat "$T/dry_print.log")"; fi

# ---- the loss stays on the device between rows ------------------------------------------------------
# An iteration that reports nothing makes the host wait for the backend nowhere (kernels/backend.h:
# the CPU counts the calls that would wait on a GPU; the run record's host_waits): Adam on 1 rank
# and on 2 (their halo exchange and Gram sums go through the host between ranks: counted apart,
# and the exchange's rects are queued, so it waits once an iteration however many it moves);
# with the old behaviour planted back (NSTBATCH_PLANT=readback: the loss read every iteration) the
# count is not 0, so the check can fail; L-BFGS reads its dot products every iteration (counted).
waits() { sed -n 's/.*"host_waits": {"quiet_iterations": \([0-9]*\), "waits_max": \([0-9]*\), "staged_max": \([0-9]*\)}.*/\1 \2 \3/p' "$T/$1.json"; }
quiet_case() { # NAME RANKS WANT(zero|some) STAGED(zero|some|eachN: N an iteration) ARGS...
  local name=$1 np=$2 want=$3 staged=$4; shift 4
  nst "$name" "$np" --set optim.iterations=12 --set run.print_every=5 "$@"
  local w; w=$(waits "$name"); read -r qi qw qs <<<"$w"
  is() { [ "$1" = zero ] && [ "$2" -eq 0 ] || { [ "$1" = some ] && [ "$2" -gt 0 ]; } || { [ "${1#each}" != "$1" ] && [ "$2" -eq $((${1#each} * 9)) ]; }; }
  # rows at iterations 0, 5 and 10: 9 iterations between them
  if [ $rc -eq 0 ] && [ "${qi:-0}" -eq 9 ] && is "$want" "${qw:--1}" && is "$staged" "${qs:--1}"; then
    ok "$name: $qw host waits in the $qi iterations between rows ($want), $qs staged between ranks ($staged)"
  else bad "$name: host waits between rows" "exit $rc; quiet iterations, waits, staged: '${w}'; wanted 9, $want, $staged" "$(tail -n 5 "$T/$name.log")"; fi
}
quiet_case quiet_adam 1 zero zero
quiet_case quiet_adam_2 2 zero each1 --set tiling.tile_size=48
NSTBATCH_PLANT=readback quiet_case quiet_planted 1 some zero
quiet_case quiet_lbfgs 1 some zero --set optim.method=lbfgs
# The CUDA backend, which cannot run here, counts the same calls by construction: its sources
# wait for the stream only in cuda_wait, which counts (teardown aside)
waits_cu=$(grep -n 'Synchronize\|cudaMemcpy(\|cudaMemset(' "$ROOT"/kernels/cuda/*.cu | grep -v 'the counted wait\|not a counted wait')
if [ -z "$waits_cu" ] && [ "$(grep -c 'the counted wait' "$ROOT/kernels/cuda/backend_cuda.cu")" -eq 1 ]; then
  ok "kernels/cuda/ waits for its stream only through cuda_wait, which counts"
else bad "kernels/cuda/ waits outside cuda_wait" "$waits_cu"; fi

# ---- CUDA graphs' logic, on the CPU ----------------------------------------------------------------
# NSTBATCH_GRAPH_STANDIN=1 gives the CPU backend a GPU stream's semantics under capture
# (kernels/graph_standin.h: recorded ops run only when the graph is launched), so that the render's
# recording and replay (gpu.graphs) run here: 24 Adam steps on 48 px tiles with rows at 0, 10 and 20
# replay 20 iterations and equal the render without graphs bit for bit; with Adam's step count from
# the host (NSTBATCH_PLANT=adamhost) the replays repeat one step and the image differs (the check can
# fail); with a wait in every iteration (NSTBATCH_PLANT=readback) the recording fails, the log says
# why, and the level runs as before.
gr=(--set optim.iterations=24 --set run.print_every=10 --set tiling.tile_size=48)
NSTBATCH_GRAPH_STANDIN=1 nst graphs_off 1 "${gr[@]}" --set gpu.graphs=false
NSTBATCH_GRAPH_STANDIN=1 nst graphs_on 1 "${gr[@]}" --set gpu.graphs=true
if [ $rc -eq 0 ] && grep -q "^CUDA graphs: 20 of the level's 24 iterations replayed" "$T/graphs_on.log"; then
  same "graph stand-in: 20 of 24 iterations replayed, the image equal to the render without graphs" graphs_on.png graphs_off.png
else bad "graph stand-in: replays" "exit $rc" "$(grep -E 'CUDA graphs|error' "$T/graphs_on.log")"; fi
NSTBATCH_PLANT=adamhost NSTBATCH_GRAPH_STANDIN=1 nst graphs_adam 1 "${gr[@]}" --set gpu.graphs=true
d=$("$DIFF" "$T/graphs_adam.png" "$T/graphs_off.png" 2>&1)
if [ $rc -eq 0 ] && [ "${d%% mean*}" != "max 0" ] && [ -n "$d" ]; then ok "graph stand-in: replays with Adam's step from the host differ ($d): the check fails"
else bad "graph stand-in: a planted host step" "exit $rc; diff '$d' (the replays must differ)" "$(tail -n 3 "$T/graphs_adam.log")"; fi
NSTBATCH_PLANT=readback NSTBATCH_GRAPH_STANDIN=1 nst graphs_wait 1 "${gr[@]}" --set gpu.graphs=true
if [ $rc -eq 0 ] && grep -q "^CUDA graphs: not used in this level: read waits for the device while an iteration is recorded" "$T/graphs_wait.log"; then
  same "graph stand-in: a wait inside the iteration fails the recording, named, and the level runs as before" graphs_wait.png graphs_off.png
else bad "graph stand-in: a failed recording" "exit $rc" "$(grep -E 'CUDA graphs|error' "$T/graphs_wait.log")"; fi
# The Gram sums beside the next layers (NSTBATCH_CUDA_OVERLAP=1: a GPU's side stream, kernels/backend.h
# side and join): the stand-in runs the side's sums at the latest, at the join, so a read of the
# sums or a write of the features before it changes the image. With graphs (recorded and replayed
# with the rest) the render equals the one without the side stream; with the join left out
# (NSTBATCH_PLANT=sidejoin) the sums are read before they exist and the image differs. To relu3_1
# (a 24 px halo: windows smaller than the image) with tiling.gram = two_pass, whose first pass
# forwards every tile into one set of activations, the same holds, and with the join after every
# tile's forward instead of each one's (NSTBATCH_PLANT=sidelate) the next tile's forward overwrites
# the features the sums read, and the image differs.
NSTBATCH_CUDA_OVERLAP=1 NSTBATCH_GRAPH_STANDIN=1 nst side_on 1 "${gr[@]}" --set gpu.graphs=true
if [ $rc -eq 0 ] && grep -q "^CUDA graphs: 20 of the level's 24 iterations replayed" "$T/side_on.log"; then
  same "graph stand-in: the Gram sums on the side stream, 20 of 24 iterations replayed, the image equal to the render without" side_on.png graphs_off.png
else bad "graph stand-in: the side stream" "exit $rc" "$(grep -E 'CUDA graphs|error' "$T/side_on.log")"; fi
NSTBATCH_PLANT=sidejoin NSTBATCH_CUDA_OVERLAP=1 NSTBATCH_GRAPH_STANDIN=1 nst side_nojoin 1 "${gr[@]}" --set gpu.graphs=true
d=$("$DIFF" "$T/side_nojoin.png" "$T/graphs_off.png" 2>&1)
if [ $rc -eq 0 ] && [ "${d%% mean*}" != "max 0" ] && [ -n "$d" ]; then ok "graph stand-in: the side stream without its join differs ($d): the check fails"
else bad "graph stand-in: a planted missing join" "exit $rc; diff '$d' (must differ)" "$(tail -n 3 "$T/side_nojoin.log")"; fi
tp=("${gr[@]}" --set style.layers=relu1_1,relu2_1,relu3_1 --set content.layers=relu2_2 --set tiling.gram=two_pass --set gpu.graphs=true)
NSTBATCH_GRAPH_STANDIN=1 nst side_tp_off 1 "${tp[@]}"
NSTBATCH_CUDA_OVERLAP=1 NSTBATCH_GRAPH_STANDIN=1 nst side_tp 1 "${tp[@]}"
if [ $rc -eq 0 ] && grep -q "^CUDA graphs: 20 of the level's 24 iterations replayed" "$T/side_tp.log"; then
  same "graph stand-in, two passes over shared activations: the Gram sums on the side stream, the image equal to the render without" side_tp.png side_tp_off.png
else bad "graph stand-in: the side stream, two passes" "exit $rc" "$(grep -E 'CUDA graphs|error' "$T/side_tp.log")"; fi
NSTBATCH_PLANT=sidelate NSTBATCH_CUDA_OVERLAP=1 NSTBATCH_GRAPH_STANDIN=1 nst side_late 1 "${tp[@]}"
d=$("$DIFF" "$T/side_late.png" "$T/side_tp_off.png" 2>&1)
if [ $rc -eq 0 ] && [ "${d%% mean*}" != "max 0" ] && [ -n "$d" ]; then ok "graph stand-in, two passes: the side stream joined after the next tile's forward differs ($d): the check fails"
else bad "graph stand-in: a planted late join" "exit $rc; diff '$d' (must differ)" "$(tail -n 3 "$T/side_late.log")"; fi
# conv1_1 straight from the image (kernels/backend.h: conv_forward_image; the CUDA backend's with
# NSTBATCH_CUDA_CONV1=own, the stand-in's as the CPU's two ops in turn): the render's path without
# the input pass, recorded and replayed, beside the side stream, equals the render without either
NSTBATCH_CUDA_CONV1=own NSTBATCH_CUDA_OVERLAP=1 NSTBATCH_GRAPH_STANDIN=1 nst conv_image 1 "${tp[@]}"
if [ $rc -eq 0 ] && grep -q "^CUDA graphs: 20 of the level's 24 iterations replayed" "$T/conv_image.log"; then
  same "graph stand-in: conv1_1 from the image and the Gram sums on the side stream, the image equal to the render without" conv_image.png side_tp_off.png
else bad "graph stand-in: conv1_1 from the image" "exit $rc" "$(grep -E 'CUDA graphs|error' "$T/conv_image.log")"; fi

# On 2 ranks (their halo exchange and Gram sums go through the host, which a graph cannot hold):
# each quiet iteration replays as 2 segments with those steps between them (nst/render/recorded.h),
# equal to the 2-rank render without graphs bit for bit, with no host wait but the steps' own; with
# the Gram sums' step skipped in the replays (NSTBATCH_PLANT=graphstep) the image differs (the check
# can fail); a recording that fails on one rank alone (graphwait on the last, through mpirun's
# MPMD form) makes every rank give graphs up together, with that rank's reason, and the level runs
# as before (a rank left recording or replaying alone would hang in the steps between ranks).
NSTBATCH_GRAPH_STANDIN=1 nst graphs_off2 2 "${gr[@]}" --set gpu.graphs=false
NSTBATCH_GRAPH_STANDIN=1 nst graphs_on2 2 "${gr[@]}" --set gpu.graphs=true
read -r qi qw qs <<<"$(waits graphs_on2)"
if [ $rc -eq 0 ] && grep -q "^CUDA graphs: 20 of the level's 24 iterations replayed as recorded segments" "$T/graphs_on2.log" &&
   grep -q '"cuda_graphs": {"recorded": 1, "replayed": 20, "segments": 2}' "$T/graphs_on2.json" && [ "${qw:--1}" -eq 0 ] && [ "${qs:-0}" -eq $((3 * qi)) ]; then
  same "graph stand-in, 2 ranks: 20 of 24 iterations replayed as 2 segments, $qw host waits between rows besides the steps between ranks' 3 an iteration (the exchange's one, the Gram sums' read and write), the image equal to the render without graphs" graphs_on2.png graphs_off2.png
else bad "graph stand-in, 2 ranks: replays" "exit $rc; waits '$qi $qw $qs'; $(grep -o '"cuda_graphs": {[^}]*}' "$T/graphs_on2.json")" "$(grep -E 'CUDA graphs|error' "$T/graphs_on2.log")"; fi
NSTBATCH_PLANT=graphstep NSTBATCH_GRAPH_STANDIN=1 nst graphs_step2 2 "${gr[@]}" --set gpu.graphs=true
d=$("$DIFF" "$T/graphs_step2.png" "$T/graphs_off2.png" 2>&1)
if [ $rc -eq 0 ] && [ "${d%% mean*}" != "max 0" ] && [ -n "$d" ]; then ok "graph stand-in, 2 ranks: replays that skip the Gram sums' step differ ($d): the check fails"
else bad "graph stand-in, 2 ranks: a planted missing step" "exit $rc; diff '$d' (the replays must differ)" "$(tail -n 3 "$T/graphs_step2.log")"; fi
# the halo exchange device to device (coll.exchange: NCCL between GPUs; NSTBATCH_EXCHANGE=device
# has the CPU pack the rects into buffers in backend memory and send from there, nst/render/exchange.c):
# on 2 ranks on the stand-in, graphs replayed, equal to the exchange through host memory; on 3
# ranks equal to 1 rank bit for bit (exact tiling); the log says which way the halos went
NSTBATCH_EXCHANGE=device NSTBATCH_GRAPH_STANDIN=1 nst exdev2 2 "${gr[@]}" --set gpu.graphs=true
if [ $rc -eq 0 ] && grep -q "^halo exchange: device to device" "$T/exdev2.log" &&
   grep -q "^CUDA graphs: 20 of the level's 24 iterations replayed as recorded segments" "$T/exdev2.log"; then
  same "graph stand-in, 2 ranks: the halos device to device, 20 of 24 iterations replayed, equal to the halos through host memory" exdev2.png graphs_on2.png
else bad "the halos device to device, 2 ranks" "exit $rc" "$(grep -E 'halo|CUDA graphs|error' "$T/exdev2.log")"; fi
nst exone 1 "${gr[@]}"
NSTBATCH_EXCHANGE=device nst exdev3 3 "${gr[@]}"
if [ $rc -eq 0 ] && grep -q "^halo exchange: device to device" "$T/exdev3.log"; then
  same "3 ranks, the halos device to device: equal to 1 rank bit for bit" exdev3.png exone.png
else bad "the halos device to device, 3 ranks" "exit $rc" "$(grep -E 'halo|error' "$T/exdev3.log")"; fi
NSTBATCH_PLANT=exchangeoffset NSTBATCH_EXCHANGE=device nst exoff3 3 "${gr[@]}"
d=$("$DIFF" "$T/exoff3.png" "$T/exone.png" 2>&1)
if [ $rc -eq 0 ] && [ "${d%% mean*}" != "max 0" ] && [ -n "$d" ]; then ok "3 ranks, the halos device to device, each peer's rects but its first unpacked a pixel off (planted): differs ($d), the check fails"
else bad "the halos device to device: a planted offset" "exit $rc; diff '$d' (must differ)" "$(tail -n 3 "$T/exoff3.log")"; fi
# the path on rank 1 alone (mpirun's MPMD form), as where one rank has no room for its buffers:
# every rank goes through host memory, the log says nothing of device to device, the same image
(cd "$T" && "$IDLE" 300 mpirun --oversubscribe --bind-to none -np 1 "$NST" o.ini --set output.path=exone2.png "${gr[@]}" : \
   -np 1 -x NSTBATCH_EXCHANGE=device "$NST" o.ini --set output.path=exone2.png "${gr[@]}") >"$T/exone2.log" 2>&1
rc=$?
if [ $rc -eq 0 ] && ! grep -q "device to device" "$T/exone2.log"; then
  same "2 ranks, the halos device to device possible on rank 1 alone: agreed through host memory on both, equal to 1 rank" exone2.png exone.png
else bad "the halos device to device on one rank alone" "exit $rc" "$(grep -E 'halo|error' "$T/exone2.log")"; fi
# the halo exchange's rects are queued and waited for once (kernels/backend.h: download_rect_queued);
# the stand-in holds a queued download back until a wait, as a GPU's stream does, so with that
# wait left out (NSTBATCH_PLANT=exchangewait) the peers receive stale halos and the image differs
NSTBATCH_PLANT=exchangewait NSTBATCH_GRAPH_STANDIN=1 nst exchange_nowait2 2 "${gr[@]}" --set gpu.graphs=false
d=$("$DIFF" "$T/exchange_nowait2.png" "$T/graphs_off2.png" 2>&1)
if [ $rc -eq 0 ] && [ "${d%% mean*}" != "max 0" ] && [ -n "$d" ]; then ok "graph stand-in, 2 ranks: the exchange without its one wait sends stale halos ($d): the check fails"
else bad "graph stand-in, 2 ranks: a planted missing wait in the exchange" "exit $rc; diff '$d' (must differ)" "$(tail -n 3 "$T/exchange_nowait2.log")"; fi
# rank1_env NAME VAR=VALUE: the graphs render on the stand-in, 2 ranks, VAR set on rank 1 alone
# (mpirun's MPMD form); log NAME.log, record NAME.json, status rc
rank1_env() {
  local name=$1 env=$2 one=(o.ini --set output.path="$1.png" --set run.record="$1.json" "${gr[@]}" --set gpu.graphs=true)
  (cd "$T" && NSTBATCH_GRAPH_STANDIN=1 "$IDLE" 300 mpirun --oversubscribe --bind-to none -np 1 "$NST" "${one[@]}" : \
     -np 1 -x "$env" "$NST" "${one[@]}") >"$T/$name.log" 2>&1
  rc=$?
}
rank1_env graphs_wait2 NSTBATCH_PLANT=graphwait
if [ $rc -eq 0 ] && grep -q "^CUDA graphs: not used in this level: synchronize waits for the device while an iteration is recorded" "$T/graphs_wait2.log" &&
   grep -q '"cuda_graphs": {"recorded": 0, "replayed": 0' "$T/graphs_wait2.json"; then
  same "graph stand-in, 2 ranks: a recording failed on rank 1 alone, every rank gave graphs up, rank 1's reason logged, the level run as before" graphs_wait2.png graphs_off2.png
else bad "graph stand-in, 2 ranks: a recording failed on one rank" "exit $rc" "$(grep -E 'CUDA graphs|error' "$T/graphs_wait2.log" | head -n 5)"; fi
# graphs on one rank only (NSTBATCH_PROFILE there: it times op by op, so no graphs): none on any
rank1_env graphs_one2 NSTBATCH_PROFILE=1
if [ $rc -eq 0 ] && grep -q '"cuda_graphs": {"recorded": 0, "replayed": 0' "$T/graphs_one2.json"; then
  same "graph stand-in, 2 ranks: graphs possible on rank 0 alone (rank 1 profiles): agreed off on both, the level run as before" graphs_one2.png graphs_off2.png
else bad "graph stand-in, 2 ranks: graphs on one rank only" "exit $rc (124: a hang)" "$(grep -E 'CUDA graphs|error' "$T/graphs_one2.log" | head -n 5)"; fi

# ---- bad values ----------------------------------------------------------------------------------
for kv in optim.average=1 optim.stop_tolerance=-0.1 optim.stop_window=0 optim.stop_min=-1; do
  nst bad 1 --set "$kv"
  if one_error bad 2 "${kv%%=*}"; then ok "$kv: exit 2, one line naming the key"
  else bad "$kv" "exit $rc" "$(cat "$T/bad.log")"; fi
done

finish

#!/usr/bin/env bash
# tests/test_tiles.sh: tiled rendering over ranks, end to end.
#
#   tests/test_tiles.sh NSTBATCH IMAGE_DIFF
#
# One small render (the demo's images at 192x144, the random VGG-19 at width 1/8, 6 steps of
# the default optimiser, L-BFGS, with a history of 3 pairs: the contract holds from the first step,
# and its history, sharded by tile, wraps as a long run's does (10 steps with the
# default 10 pairs never wrapped it and cost 1.5x);
# 16-bit TIFF output, one thread per rank so every run does the same arithmetic) as one tile on
# one rank, many tiles on one rank (resident and two-pass Gram), and many tiles on 2 and 4 ranks
# (mpirun --oversubscribe), in fp32 and in bf16 (SKIP where the CPU has no bf16): in exact mode
# the outputs equal the one-tile render of their precision bit for bit, and so does one tile on 2
# threads. (At this size every tile's window, its 150 px halo included, is the whole image, so a
# tiled render costs its tiles times the one-tile render: 4 and 9 tiles here, where 320x240's 12
# and 20 took 3 times the CPU for the same checks.) The cheap mode's deviation is measured and
# printed. Two runs on the same ranks give identical files. The run
# record's memory model bounds the measured peak of every rank. A rank that fails stops every
# rank within seconds with one message, and so does a device fault in an op between collectives
# (NSTBATCH_DEVICE_FAULT on rank 1), leaving no output. Over an allocation limit the tiles are halved and the
# level tried again, with the same image.
. "$(dirname "$0")/lib.sh" test_tiles
NST=$(readlink -f "$1") DIFF=$(readlink -f "$2")

cat >"$T/tiles.ini" <<EOF
[content]
path = $ROOT/configs/demo/content.png
[style]
path = $ROOT/configs/demo/style.png
[output]
width = 192
height = 144
bits = 16
overwrite = true
[model]
random_width_divisor = 8
[optim]
iterations = 6
lbfgs_history = 3
[run]
device = cpu
threads = 1
print_every = 0
precision = fp32
EOF

# run NAME RANKS [--set ...]: renders T/NAME.tif with a run record T/NAME.json
run() {
  local name=$1 ranks=$2; shift 2
  render_ranks tiles.ini "$name.tif" "$ranks" --set run.record="$name.json" "$@" || return 1
  [ -f "$T/$name.tif" ] || { bad "$name renders" "exit status 0, no $name.tif" "$(cat "$T/$name.log")"; return 1; }
}
json() { sed -n "s/.*\"$2\": \"\{0,1\}\([^\",}]*\).*/\1/p" "$T/$1.json" | head -n 1; }

run ref 1 --set tiling.tile_size=192 || exit 1
grep -q '"tiles": 1,' "$T/ref.json" && ok "reference: one tile on one rank" || bad "reference: one tile" "$(cat "$T/ref.json")"

# ---- exact mode: tiles and ranks reproduce the one-tile render, in each precision --------------
declare -A cases=(
  [tiles96_1rank]="1 --set tiling.tile_size=96"
  [tiles64_1rank_two_pass]="1 --set tiling.tile_size=64 --set tiling.gram=two_pass"
  [tiles96_2ranks]="2 --set tiling.tile_size=96"
  [tiles64_4ranks]="4 --set tiling.tile_size=64"
)
for prec in fp32 bf16; do
  refname=ref
  if [ "$prec" = bf16 ]; then
    refname=ref_bf16
    # a CPU without bf16 convolutions in oneDNN refuses bf16 at start: skip, saying so
    why=$(cd "$T" && "$IDLE" 60 "$NST" tiles.ini --set run.precision=bf16 --set optim.iterations=0 --set output.path=probe.tif 2>&1 |
          grep -m1 'run.precision = bf16 on this CPU')
    if [ -n "$why" ]; then skip "bf16 tiles: $why"; continue; fi
    run ref_bf16 1 --set tiling.tile_size=192 --set run.precision=bf16 || continue
    grep -q '"precision": "bf16"' "$T/ref_bf16.json" && ok "bf16 reference: the record names the precision" ||
      bad "bf16 reference" "$(grep precision "$T/ref_bf16.json")"
    if [ "$("$DIFF" "$T/ref.tif" "$T/ref_bf16.tif")" = "max 0 mean 0" ]; then bad "bf16 differs from fp32" "identical files"; fi
  fi
  for case in tiles96_1rank tiles64_1rank_two_pass tiles96_2ranks tiles64_4ranks; do
    read -r ranks args <<<"${cases[$case]}"
    name=${case}_$prec
    run "$name" "$ranks" $args --set run.precision=$prec || continue
    d=$("$DIFF" "$T/$refname.tif" "$T/$name.tif")
    tiles=$(json "$name" tiles) gram=$(json "$name" gram)
    if [ "$d" = "max 0 mean 0" ]; then
      ok "$name ($tiles tiles, Gram $gram): equals the one-tile $prec render bit for bit"
    else
      bad "$name ($tiles tiles)" "differs from the one-tile render: $d"
    fi
    # the memory model bounds the measured peak on every rank, and accounts for nearly all of it
    hi=$(json "$name" peak_over_model_max) lo=$(json "$name" peak_over_model_min)
    if awk -v h="$hi" -v l="$lo" 'BEGIN { exit !(h <= 1.0 && l >= 0.9) }'; then
      ok "$name: measured peak / memory model in [$lo, $hi]"
    else
      bad "$name: memory model" "peak/model in [$lo, $hi], expected within [0.9, 1]"
    fi
  done
done

# ---- threads: the convolutions split outputs, never a sum, over threads, and every own kernel and
# reduction is thread-count independent: 2 threads give the 1-thread bits
if run threads2 1 --set tiling.tile_size=192 --set run.threads=2; then
  d=$("$DIFF" "$T/ref.tif" "$T/threads2.tif")
  [ "$d" = "max 0 mean 0" ] && ok "one tile on 2 threads equals it on 1 thread bit for bit" || bad "2 threads against 1" "$d"
fi

# ---- reproducibility: the same rank count twice --------------------------------------------------
# (the file embeds the resolved config, paths included: both runs use the same names)
if run twice 2 --set tiling.tile_size=96 && mv "$T/twice.tif" "$T/first.tif" && run twice 2 --set tiling.tile_size=96 &&
   cmp -s "$T/first.tif" "$T/twice.tif"; then
  ok "two runs on 2 ranks write bit-identical files"
else
  bad "reproducibility" "two runs on 2 ranks differ"
fi

# ---- the cheap mode: its deviation from the exact result, measured -------------------------------
# (against the exact mode with Adam, the cheap mode's own optimiser: optim.method = auto is L-BFGS above)
run ref_adam 1 --set tiling.tile_size=192 --set optim.method=adam || true
for spec in "cheap_2ranks 2 --set tiling.mode=cheap --set tiling.tile_size=96" \
            "cheap_halo64_k2 2 --set tiling.mode=cheap --set tiling.tile_size=96 --set tiling.halo=64 --set tiling.exchange_every=2"; do
  read -r name ranks args <<<"$spec"
  run "$name" "$ranks" $args || continue
  d=$("$DIFF" "$T/ref_adam.tif" "$T/$name.tif")
  # pixels drift apart as any two runs with different rounding do (the optimisation is chaotic);
  # the final loss says how much worse the cheap result is
  ratio=$(awk -v c="$(sed -n 's/.*"last": {"total": \([^,]*\).*/\1/p' "$T/$name.json")" \
              -v e="$(sed -n 's/.*"last": {"total": \([^,]*\).*/\1/p' "$T/ref_adam.json")" 'BEGIN { printf "%.3f", c / e }')
  ok "$name (halo $(json "$name" halo) px, Gram $(json "$name" gram), exchange every $(json "$name" exchange_every)): pixels vs exact: $d; final loss ${ratio}x the exact run's"
done

# ---- a failing rank stops every rank, with one message ------------------------------------------
start=$(date +%s)
out=$(cd "$T" && NSTBATCH_FAULT=1:5 "$IDLE" 120 mpirun --oversubscribe -np 2 "$NST" tiles.ini --set tiling.tile_size=96 \
      --set output.path=failed.tif 2>&1); status=$?
secs=$(( $(date +%s) - start ))
errors=$(grep -c '^nstbatch: error:' <<<"$out")
if [ $status -ne 0 ] && [ $status -ne 124 ] && [ "$errors" -eq 1 ] && grep -q 'rank 1: injected fault' <<<"$out" && [ ! -e "$T/failed.tif" ]; then
  ok "a fault on rank 1 stops both ranks in ${secs} s with one message, no output"
else
  bad "a failing rank" "exit status $status (124 = hang), $errors error lines" "$out"
fi

# ---- a device fault between collectives stops every rank, with one message ---------------------
# NSTBATCH_DEVICE_FAULT=OP:N (the CPU backend's test hook) fails the N-th call of OP on rank 1 as a
# sticky CUDA error would, where the other rank is on its way to the next collective: L-BFGS's dot
# products (before their sum over ranks), the Gram difference (after the Gram allreduce), the halo
# exchange's upload (after the messages). A device fault aborts every rank; returned as an error,
# it left the other rank waiting in a collective until the timeout. mpirun's MPMD form sets the
# variable on rank 1 only (a 2 s render on a Zen 4; 60 s without a line of output = a hang, exit
# 124). Each call number falls mid-render (rank 1 makes 28 or 29 upload_rect calls in all here, at
# every ISA level measured: 16 is inside).
fault_run() { # fault_run NAME FAULT ARGS...: 2 ranks, FAULT on rank 1; output in $out, status in $status, seconds in $secs
  local name=$1 fault=$2 start; shift 2
  start=$(date +%s)
  out=$(cd "$T" && "$IDLE" 60 mpirun --oversubscribe -np 1 "$NST" tiles.ini --set tiling.tile_size=96 --set output.path="$name.tif" "$@" : \
        -np 1 env NSTBATCH_DEVICE_FAULT="$fault" "$NST" tiles.ini --set tiling.tile_size=96 --set output.path="$name.tif" "$@" 2>&1); status=$?
  secs=$(( $(date +%s) - start ))
}
for spec in "dot:5 --set optim.method=lbfgs" "gram_diff:30" "upload_rect:16"; do
  read -r fault args <<<"$spec"
  op=${fault%%:*}
  fault_run "fault_$op" "$fault" $args
  errors=$(grep -c '^nstbatch: error:' <<<"$out")
  if [ $status -ne 0 ] && [ $status -ne 124 ] && [ "$errors" -eq 1 ] && [ ! -e "$T/fault_$op.tif" ] && [ ! -e "$T/fault_$op.preview.png" ] &&
     grep -q "^nstbatch: error: rank 1 (.*): device fault: CPU $op: injected device fault at call ${fault#*:} .*; aborting every rank$" <<<"$out"; then
    ok "a device fault in rank 1's $op (call ${fault#*:}): both ranks stop in ${secs} s, exit $status, one message naming rank 1 and $op, no output"
  else
    bad "a device fault in rank 1's $op" "exit status $status (124 = hang) after ${secs} s, $errors error lines" "$out"
  fi
done
# the hook armed past the last call changes nothing: the one-tile image, bit for bit
fault_run armed gram_diff:1000000000
d=$("$DIFF" "$T/ref.tif" "$T/armed.tif" 2>&1)
if [ $status -eq 0 ] && [ "$d" = "max 0 mean 0" ]; then ok "the fault hook armed but never due: the same image as the one-tile render"
else bad "the fault hook armed, not due" "exit status $status, $d" "$out"; fi

# ---- a tile whose buffers do not fit is halved and the level tried again -------------------------
# NSTBATCH_MEMORY_LIMIT_MB caps each rank's backend allocations, as a GPU's arena does. Shallow
# layers (a 12 px halo) so that smaller tiles need less, at 320x240: 160 px tiles with the
# resident Gram model 11.3 MiB on the busier rank, 80 px two-pass tiles 5.8 MiB (with Adam's state: L-BFGS's is larger).
shallow=(--set output.width=320 --set output.height=240 --set optim.method=adam --set content.layers=relu2_2 --set style.layers=relu1_1,relu2_1 --set style.scale=0.4)
if run shallow_ref 1 --set tiling.tile_size=320 "${shallow[@]}"; then
  export NSTBATCH_MEMORY_LIMIT_MB=7
  if run halved 2 --set tiling.tile_size=160 "${shallow[@]}"; then
    d=$("$DIFF" "$T/shallow_ref.tif" "$T/halved.tif")
    warned=$(grep -c 'warning: level 1: tiles of 160x160 px did not fit (out of backend memory.*trying again with 80x80 px' "$T/halved.log")
    if [ "$(json halved tile_w)" = 80 ] && [ "$(json halved tile_halvings)" = 1 ] && [ "$warned" -eq 1 ] && [ "${d%% mean*}" = "max 0" ]; then
      ok "over the limit at 160 px: one warning, tried again at 80 px (Gram $(json halved gram)), recorded, same image ($d)"
    else
      bad "halved tiles" "tile_w $(json halved tile_w), halvings $(json halved tile_halvings), $warned warnings, $d" "$(cat "$T/halved.log")"
    fi
  fi
  export NSTBATCH_MEMORY_LIMIT_MB=4
  out=$(cd "$T" && "$IDLE" 300 mpirun --oversubscribe -np 2 "$NST" tiles.ini --set output.path=nofit.tif --set tiling.tile_size=160 \
        "${shallow[@]}" 2>&1); status=$?
  unset NSTBATCH_MEMORY_LIMIT_MB
  if [ $status -eq 1 ] && [ "$(grep -c '^nstbatch: error:' <<<"$out")" -eq 1 ] && [ ! -e "$T/nofit.tif" ] &&
     grep -q 'error: out of backend memory.*tiles of 80x80 px after halving, and halving them again does not model less memory' <<<"$out"; then
    ok "nothing fits: exit 1 after one halving, one error line, no output"
  else
    bad "nothing fits" "exit status $status" "$out"
  fi
fi

# ---- the tiled Gram equals the whole-image Gram ------------------------------------------------------
for ranks in 1 2; do
  out=$("$IDLE" 300 mpirun --oversubscribe -np "$ranks" "$(dirname "$DIFF")/test_gram_tiled" 2>&1); status=$?
  line=$(grep -E '^gram' <<<"$out" | paste -sd '|' | sed 's/|/; /')
  if [ $status -eq 0 ] && [ "$(grep -cE '^gram(:| \(guided)' <<<"$out")" = 2 ]; then ok "$ranks rank(s): $line"
  else bad "tiled Gram on $ranks rank(s)" "status $status" "$out"; fi
done

finish

#!/usr/bin/env bash
# tests/test_checkpoint.sh: checkpoint and restart with mpirun (the Slurm side: test_slurm.sh).
#
#   tests/test_checkpoint.sh NSTBATCH IMAGE_DIFF
#
# 2-rank CPU renders of the demo images (random VGG-19 width 1/8, one thread per rank, 16-bit TIFF;
# Adam unless a case says otherwise; 60 iterations (a batch's jobs 30), the checkpoints every 10.
# A render to be signalled waits before iteration 20's step until the signal comes (the test hook
# NSTBATCH_SLOW=*:20:signal, on that run only), so the signal comes mid-render by construction,
# however fast or loaded the machine, and no render is longer than its check needs):
# - resume equality: a render stopped by SIGTERM (sent to the ranks, as Slurm's preemption does) at
#   a few points, one of them while a checkpoint is being written, and one killed with SIGKILL in
#   the middle of a checkpoint, resumed each time, ends bit-identical (image_diff max 0) to an
#   uninterrupted render; the same for a 2-level pyramid with Adam's state carried, cheap mode (the
#   lagged Gram), L-BFGS (its history) with the moving average and the stopping rule (the rule's
#   history: the resumed render stops where the uninterrupted one did);
# - a killed write leaves the previous generation in force (its manifest and files), never a
#   partial checkpoint;
# - SIGUSR1 to mpirun: exit status 75; SIGINT (Ctrl-C) to mpirun: the ranks checkpoint, mpirun exits
#   1 (Open MPI's own status); to tools/nstbatch-mpirun: exit 75, and the run resumes to the same
#   image, and two SIGHUPs a second apart are one stop (75); SIGTERM without checkpoint.path: exit 1,
#   "nothing saved";
# - Ctrl-C to a run without mpirun and to 2 ranks (srun -X): checkpoint, 75, said once; a second
#   a second later stops at once; SIGHUP with the output's reader gone: checkpoint, 75; an ignored
#   SIGINT or SIGHUP (a background job, nohup) stays ignored;
# - a changed config (naming the key), a changed input file, another rank count and a corrupt
#   rank file are refused with exit 2; --restart starts over;
# - a finished job is not rendered again ("already rendered"), but with a changed key it is, without
#   --restart (the artist's loop); an unfinished checkpoint of another config is refused, naming the
#   key and both ways on; a batch stopped by a signal resumes its stopped jobs and skips its finished
#   ones, with the same images; --restart=JOB starts over one job of a batch;
# - a level whose tiles were halved (over NSTBATCH_MEMORY_LIMIT_MB) resumes with the checkpoint's
#   tiles in less memory (two-pass Gram), with the same image.
. "$(dirname "$0")/lib.sh" test_checkpoint
NST=$(readlink -f "$1") DIFF=$(readlink -f "$2")
trap 'pkill -KILL -f "$T/" 2>/dev/null; rm -rf "$T"' EXIT
mkdir -p "$T/out"
cp "$ROOT/configs/demo/content.png" "$T/content.png"

cat >"$T/ck.ini" <<EOF
[content]
path = content.png
[style]
path = $ROOT/configs/demo/style.png
[output]
width = 128
height = 64
bits = 16
overwrite = true
preview = 0
[model]
random_width_divisor = 8
[optim]
method = adam
iterations = 60
[tiling]
tile_size = 64
[run]
device = cpu
threads = 1
print_every = 20
EOF
# (64 px tiles: 2, one on each rank, each writing a file of its own in every generation; at this
# size every tile's window, its 150 px halo included, is the whole image, so a render costs its
# tiles times the one-tile render: 128x96 in 4 tiles took twice the CPU, 1.35 s a render against
# 0.63, mpirun included, for the same checks. The pyramid and batch cases keep ranks with several
# tiles.)

# nst LOG ARGS...: nstbatch on 2 ranks in T (SINGLE=1: one, without mpirun; WRAP=1: through
# tools/nstbatch-mpirun), log in T/LOG.log, exit status in $rc
launcher() {
  launch=(mpirun --oversubscribe --bind-to none -np 2)
  [ -n "${WRAP:-}" ] && launch=("$ROOT/tools/nstbatch-mpirun" "${launch[@]:1}")
  [ -n "${SINGLE:-}" ] && launch=()
}
nst() {
  local log=$1; shift
  launcher
  (cd "$T" && "$IDLE" 300 "${launch[@]}" "$NST" "$@") >"$T/$log.log" 2>&1
  rc=$?
}
# nst_bg LOG ARGS...: the same in the background; its pid ($IDLE's, which passes signals on) in $bg
nst_bg() {
  local log=$1; shift
  launcher
  (cd "$T" && exec "$IDLE" 300 "${launch[@]}" "$NST" "$@") >"$T/$log.log" 2>&1 &
  bg=$!
}
same() { # same NAME A B: image_diff says max 0
  local d; d=$("$DIFF" "$T/$2" "$T/$3" 2>&1)
  if [ "${d%% mean*}" = "max 0" ]; then ok "$1"; else bad "$1" "$d"; fi
}
# ranks SIG: send SIG to this test's nstbatch ranks (not mpirun), as Slurm does on preemption
ranks() { pkill "-$1" -f "^$NST .*ck.ini" 2>/dev/null; }
# wait_for FILE_GLOB LOG: until a file matching the glob exists (bounded by LOG's growth)
exists() { compgen -G "$1" >/dev/null; }
wait_for() {
  grown_wait 120 "$2" exists "$1"
}
# paused LOG: until the render of LOG waits for its signal (NSTBATCH_SLOW=*:N:signal, render.c)
paused() { grown_wait 120 "$T/$1.log" grep -q "until a signal comes" "$T/$1.log"; } # (bounded by the log's growth)

# ---- resume equality -----------------------------------------------------------------------------
# interrupted NAME SETS...: stop a render 3 times (SIGTERM at iteration STOP_AT, 20 unless set;
# SIGTERM while a checkpoint is being written; SIGKILL while one is being written), resume it each
# time, and compare its image with NAME's uninterrupted reference. Checkpoints every EVERY (10).
interrupted() {
  local name=$1; shift
  local ck="ck_$name" sets=("$@" --set output.path=out/$name.tif --set checkpoint.path=ck_$name --set checkpoint.every=${EVERY:-10})
  nst ref_$name ck.ini "$@" --set output.path=out/ref_$name.tif
  [ $rc -eq 0 ] || { bad "$name: reference render" "exit $rc" "$(cat "$T/ref_$name.log")"; return; }
  # 1. SIGTERM to the ranks as they wait before iteration STOP_AT's step
  NSTBATCH_SLOW="*:${STOP_AT:-20}:signal" nst_bg ${name}_1 ck.ini "${sets[@]}"
  paused ${name}_1; ranks TERM; wait $bg; local r1=$?
  local it1; it1=$(sed -n 's/^iteration = //p' "$T/$ck/manifest")
  if [ $r1 -ne 0 ] && grep -q "stopped by SIGTERM" "$T/${name}_1.log" && [ -n "$it1" ]; then ok "$name: SIGTERM to the ranks: checkpoint at iteration $it1, stopped"
  else bad "$name: SIGTERM stop" "exit $r1, manifest iteration '$it1'" "$(tail -n 5 "$T/${name}_1.log")"; fi
  # 2. SIGTERM while a checkpoint is being written (the write is held 1 s): it completes, then the stop
  NSTBATCH_CKPT_PAUSE=1 nst_bg ${name}_2 ck.ini "${sets[@]}"
  wait_for "$T/$ck/*.tmp-*" "$T/${name}_2.log"; ranks TERM; wait $bg; local r2=$?
  if [ $r2 -ne 0 ] && grep -q "resumed: level" "$T/${name}_2.log" && grep -q "stopped by SIGTERM" "$T/${name}_2.log" && ! compgen -G "$T/$ck/*.tmp-*" >/dev/null; then
    ok "$name: SIGTERM during a checkpoint write: the write completes, the run stops at the next boundary ($(sed -n 's/^iteration = //p' "$T/$ck/manifest"))"
  else bad "$name: SIGTERM during a write" "exit $r2" "$(tail -n 6 "$T/${name}_2.log")"; fi
  # 3. SIGKILL while a checkpoint is being written: the previous generation stays in force
  local gen; gen=$(sed -n 's/^generation = //p' "$T/$ck/manifest")
  NSTBATCH_CKPT_PAUSE=2 nst_bg ${name}_3 ck.ini "${sets[@]}"
  wait_for "$T/$ck/*.tmp-*" "$T/${name}_3.log"; sleep 0.2; ranks KILL; wait $bg
  local gen2 files; gen2=$(sed -n 's/^generation = //p' "$T/$ck/manifest")
  files=$(ls "$T/$ck" | grep -c "^g$(printf %08d "$gen2")-r")
  if [ "$gen2" = "$gen" ] && [ "$files" = 2 ]; then ok "$name: SIGKILL in a checkpoint write: generation $gen2 and its 2 files stay in force"
  else bad "$name: SIGKILL in a write" "generation $gen -> $gen2, $files files" "$(ls -la "$T/$ck")"; fi
  # 4. to the end
  nst ${name}_4 ck.ini "${sets[@]}"
  if [ $rc -eq 0 ] && grep -q "resumed: level" "$T/${name}_4.log"; then same "$name: stopped 3 times and resumed == uninterrupted" out/$name.tif out/ref_$name.tif
  else bad "$name: the final resume" "exit $rc" "$(tail -n 8 "$T/${name}_4.log")"; fi
  if grep -q "^state = done" "$T/$ck/manifest" && ! compgen -G "$T/$ck/g*" >/dev/null; then ok "$name: a finished job leaves a done manifest and no rank files"
  else bad "$name: after the end" "manifest/files" "$(ls "$T/$ck"; head -5 "$T/$ck/manifest")"; fi
}
interrupted adam
# (at 256x64 in 64 px tiles: 4 tiles, two on each rank, and the coarse level, 128x32, a tile on each
# rank, so each rank has a file in every generation, as the SIGKILL case counts; 192x128, 6 tiles
# of the larger windows, took twice the CPU)
interrupted carry --set pyramid.levels=2 --set pyramid.state=carry --set pyramid.iterations=40,60 \
  --set output.width=256 --set output.height=64 --set tiling.tile_size=64
interrupted cheap --set tiling.mode=cheap
# L-BFGS (its history) with the average and the stopping rule (the rule's history): windows of 40,
# so that a resume that lost the last 80 losses could not stop where the uninterrupted render does:
# stopped at 40 with checkpoints every 20, the last resume starts near iteration 60, so without its
# history the rule could fire at 140 at the earliest, and the reference's windows' drop falls
# through 0.4 at iteration 120 to 122 (128x96 on a Zen 4 at its own level and capped at AVX512_CORE,
# AVX2 and SSE41: 120, 120, 122, 122), 18 iterations before; fp32 on every CPU, so that bf16's auto
# precision does not move that curve
STOP_AT=40 EVERY=20 interrupted lbfgs --set output.height=96 --set optim.iterations=160 --set run.precision=fp32 --set optim.method=lbfgs --set optim.average=0.9 --set optim.stop_tolerance=0.4 --set optim.stop_window=40 --set optim.stop_min=100
if at=$(sed -n 's/.*stopped after \([0-9]*\) of 160.*/\1/p' "$T/ref_lbfgs.log" | head -n 1) && [ -n "$at" ] && [ "$at" -lt 140 ]; then
  ok "lbfgs: the stopping rule ended the reference at iteration $at of 160 (before 140, where a resume without its history could), and the resumed render with it"
else bad "lbfgs: the stopping rule did not fire in the reference" "" "$(tail -n 4 "$T/ref_lbfgs.log")"; fi

# ---- exit statuses ------------------------------------------------------------------------------------
NSTBATCH_SLOW='*:20:signal' nst_bg usr1 ck.ini --set output.path=out/usr1.tif --set checkpoint.path=ck_usr1
paused usr1; pkill -USR1 -P $bg; wait $bg; r=$?
[ $r -eq 75 ] && grep -q "stopped by SIGUSR1" "$T/usr1.log" && ok "SIGUSR1 to mpirun: checkpoint and exit status 75" || bad "SIGUSR1 exit status" "exit $r" "$(tail -n 4 "$T/usr1.log")"
# the manifest counts levels from 1, as the log does; a format-1 manifest (counted from 0) still resumes
grep -q '^format = 2$' "$T/ck_usr1/manifest" && grep -q '^level = 1$' "$T/ck_usr1/manifest" && ok "the manifest says level = 1, as the log does" \
  || bad "manifest level" "" "$(head -n 8 "$T/ck_usr1/manifest")"
cp -r "$T/ck_usr1" "$T/ck_v1" && sed -i 's/^format = 2$/format = 1/; s/^level = 1$/level = 0/' "$T/ck_v1/manifest"
nst v1 ck.ini --set output.path=out/v1.tif --set checkpoint.path=ck_v1
[ $rc -eq 0 ] && grep -q "resumed: level 1 at iteration" "$T/v1.log" && ok "a format-1 manifest (levels from 0) resumes at level 1" \
  || bad "format-1 manifest" "exit $rc" "$(grep -i 'resum\|error' "$T/v1.log")"
# Ctrl-C: to mpirun itself (it sends every rank SIGTERM and exits 1: Open MPI's status), and to
# tools/nstbatch-mpirun (it asks the ranks with USR1: exit 75); both leave a checkpoint to resume.
# ($IDLE passes the signal to mpirun alone, as `timeout --foreground` does: sent to the group too,
# a second SIGINT would make mpirun kill the ranks at once, as a second Ctrl-C would.) mpirun's
# SIGKILL follows its SIGTERM after odls_base_sigkill_timeout, the ranks' time to end their
# iteration, checkpoint and stop: Open MPI's default, 1 s, was that time on a fast machine, and at
# a slow one's pace the stop was cut off (docs/USAGE.md says so). Here it follows this machine: 20
# times the slowest iteration and checkpoint write the adam case's last resume logged, at least
# 1 s (tests/idle.sh sets 0 for the suites' failing runs). mpirun waits it out whatever the ranks
# do (twice: after its SIGTERM and after its SIGKILL), idle seconds, no CPU.
grace=$(awk '$1 ~ /^[0-9]+$/ && NF >= 8 && $6 ~ /^[0-9.]+$/ && $6 + 0 > it { it = $6 + 0 }
             /^checkpoint: level .* s\)$/ && match($0, /[0-9.]+ s\)$/) { c = substr($0, RSTART, RLENGTH - 3) + 0; if (c > ck) ck = c }
             END { print int(20 * (it + ck)) + 1 }' "$T/adam_4.log" 2>/dev/null)
(cd "$T" && OMPI_MCA_odls_base_sigkill_timeout=${grace:-1} NSTBATCH_SLOW='*:20:signal' exec "$IDLE" 300 mpirun --oversubscribe --bind-to none -np 2 "$NST" ck.ini --set output.path=out/int.tif \
    --set checkpoint.path=ck_int) >"$T/int.log" 2>&1 &
bg=$!
paused int; kill -INT $bg; wait $bg; r=$?
[ $r -eq 1 ] && grep -q "stopped by SIGTERM.*checkpoint written to ck_int" "$T/int.log" && grep -q '^state = running' "$T/ck_int/manifest" &&
  ok "SIGINT to mpirun: the ranks checkpoint and stop; mpirun exits 1 (Open MPI's status for a job it ends; its SIGKILL after ${grace:-1} s)" || bad "SIGINT to mpirun" "exit $r, its SIGKILL after ${grace:-1} s" "$(tail -n 4 "$T/int.log")"
WRAP=1 NSTBATCH_SLOW='*:20:signal' nst_bg wint ck.ini --set output.path=out/wint.tif --set checkpoint.path=ck_wint
paused wint; kill -INT $bg; wait $bg; r=$?
nst wint_resume ck.ini --set output.path=out/wint.tif --set checkpoint.path=ck_wint
if [ $r -eq 75 ] && grep -q "stopped by SIGUSR1.*checkpoint written to ck_wint" "$T/wint.log" && [ $rc -eq 0 ] && grep -q resum "$T/wint_resume.log"; then
  ok "SIGINT to tools/nstbatch-mpirun: checkpoint, exit 75, and the run resumes from it"
else bad "SIGINT to tools/nstbatch-mpirun" "exit $r, resume $rc" "$(tail -n 4 "$T/wint.log")"; fi
same "the render interrupted by Ctrl-C and resumed equals the uninterrupted one" out/ref_adam.tif out/wint.tif
# a closed terminal sends tools/nstbatch-mpirun SIGHUP, often twice: both come as one stop (USR1: the
# checkpoint, 75), the second never as a second Ctrl-C, even a second later, while the checkpoint is
# still being written (held 3 s by the test hook; a TERM to mpirun there would have it killed: exit 1)
WRAP=1 NSTBATCH_CKPT_PAUSE=3 NSTBATCH_SLOW='*:20:signal' nst_bg whup ck.ini --set output.path=out/whup.tif --set checkpoint.path=ck_whup
paused whup; kill -HUP $bg; sleep 1.1; kill -HUP $bg; wait $bg; r=$?
[ $r -eq 75 ] && grep -q "nstbatch-mpirun: SIGHUP: asking every rank" "$T/whup.log" && grep -q "stopped by SIGUSR1.*checkpoint written to ck_whup" "$T/whup.log" &&
  ok "SIGHUP twice, a second apart, to tools/nstbatch-mpirun (a closed terminal): one stop, checkpoint, exit 75" || bad "SIGHUP to tools/nstbatch-mpirun" "exit $r" "$(tail -n 4 "$T/whup.log")"
# Ctrl-C to a run without mpirun (a terminal's reaches it alone; $IDLE passes SIGINT to it): it
# says so at once, checkpoints at the iteration's end and exits 75; resumed, the same image as 2
# ranks' (exact tiling: the image does not depend on the ranks)
SINGLE=1 NSTBATCH_SLOW='*:20:signal' nst_bg sint ck.ini --set output.path=out/sint.tif --set checkpoint.path=ck_sint
paused sint; kill -INT $bg; wait $bg; r=$?
SINGLE=1 nst sint_resume ck.ini --set output.path=out/sint.tif --set checkpoint.path=ck_sint
if [ $r -eq 75 ] && grep -q "Ctrl-C: stopping at the next iteration's end" "$T/sint.log" &&
  grep -q "stopped by SIGINT (Ctrl-C) at level 1, iteration [0-9]* of [0-9]*: checkpoint written to ck_sint" "$T/sint.log" && [ $rc -eq 0 ] && grep -q resum "$T/sint_resume.log"; then
  ok "Ctrl-C to a run without mpirun: said at once, checkpoint at the iteration's end, exit 75, and the run resumes from it"
else bad "Ctrl-C without mpirun" "exit $r, resume $rc" "$(tail -n 4 "$T/sint.log" "$T/sint_resume.log")"; fi
same "the render without mpirun interrupted by Ctrl-C and resumed equals 2 ranks' uninterrupted one" out/ref_adam.tif out/sint.tif
# srun -X passes a Ctrl-C on to every task as SIGINT: the ranks checkpoint and stop, 75, and one
# line says so (rank 0's)
NSTBATCH_SLOW='*:20:signal' nst_bg rint ck.ini --set output.path=out/rint.tif --set checkpoint.path=ck_rint
paused rint; ranks INT; wait $bg; r=$?
said=$(grep -c "Ctrl-C: stopping at the next iteration's end" "$T/rint.log")
[ $r -eq 75 ] && [ "$said" = 1 ] && grep -q "stopped by SIGINT (Ctrl-C) .*checkpoint written to ck_rint" "$T/rint.log" &&
  ok "SIGINT to 2 ranks (as srun -X passes a Ctrl-C on): checkpoint, exit 75, said once" || bad "SIGINT to the ranks" "exit $r, said $said times" "$(tail -n 4 "$T/rint.log")"
# a second Ctrl-C, a second or more later, stops it at once, and a repeat within the second (the
# same Ctrl-C passed on twice: the terminal's and a wrapper's) does not: here while the rank
# computes 300 s before iteration 5 (the hook), where nothing acts on the first
SINGLE=1 NSTBATCH_SLOW='*:5:300' nst_bg sint2 ck.ini --set output.path=out/sint2.tif --set checkpoint.path=ck_sint2
grown_wait 120 "$T/sint2.log" grep -q "NSTBATCH_SLOW: rank 0 computes" "$T/sint2.log"
t1=$(date +%s.%N)
kill -INT $bg
said() { grep -q "Ctrl-C again (a second later) stops at once" "$T/sint2.log" || ! kill -0 $bg 2>/dev/null; } # (or ended by the first)
grown_wait 120 "$T/sint2.log" said
kill -INT $bg 2>/dev/null
t2=$(date +%s.%N)
sleep 0.3
alive=0; kill -0 $bg 2>/dev/null && alive=1
after=$(awk -v a="$t1" -v b="$t2" 'BEGIN { printf "%.2f", b - a }')
sleep 1.1 # (the next, at least a second after the first)
t0=$SECONDS
kill -INT $bg 2>/dev/null; wait $bg; r=$?
# (the repeat is judged where it went within 0.7 s of the first: a machine too loaded for that says so)
if awk -v x="$after" 'BEGIN { exit !(x < 0.7) }'; then repeat="a repeat $after s after the first" quick=1; else repeat="the repeat came $after s after the first: not judged" quick=0; fi
if [ $r -eq 130 ] && grep -q "Ctrl-C again (a second later) stops at once" "$T/sint2.log" && [ ! -e "$T/out/sint2.tif" ] && [ ! -e "$T/ck_sint2/manifest" ] &&
  { [ $quick = 0 ] || [ $alive = 1 ]; }; then
  ok "one more Ctrl-C a second later stops it at once ($((SECONDS - t0)) s; exit 130, no output, no checkpoint); $repeat$([ $quick = 1 ] && echo ", ignored")"
else bad "a second Ctrl-C" "exit $r after $((SECONDS - t0)) s; alive after the repeat: $alive ($repeat)" "$(tail -n 4 "$T/sint2.log")"; fi

# a run started with SIGINT and SIGHUP ignored (a script's background job, nohup) keeps ignoring
# them: SIGTERM stops it (started without $IDLE, which would give SIGINT its default action back)
(cd "$T" && trap '' INT HUP && NSTBATCH_SLOW='*:20:signal' exec "$NST" ck.ini --set output.path=out/ign.tif --set checkpoint.path=ck_ign) >"$T/ign.log" 2>&1 &
bg=$!
paused ign; kill -INT $bg; kill -HUP $bg; sleep 0.5; alive=0; kill -0 $bg 2>/dev/null && alive=1
kill -TERM $bg; wait $bg; r=$?
[ $alive = 1 ] && [ $r -eq 75 ] && ! grep -q "nstbatch: Ctrl-C:" "$T/ign.log" && grep -q "stopped by SIGTERM" "$T/ign.log" &&
  ok "SIGINT and SIGHUP ignored at the start stay ignored (a script's background run, nohup); SIGTERM then stops it, 75" ||
  bad "an ignored SIGINT and SIGHUP" "alive $alive, exit $r" "$(tail -n 3 "$T/ign.log")"
# SIGHUP (the terminal or ssh session of a run without mpirun closed) checkpoints and stops it, and
# a reader of its output that has gone first (| tee, ended by the same Ctrl-C or hang-up) does not
# end it: its writes fail instead (SIGPIPE, exit 141, came with the stop's line after the checkpoint)
mkfifo "$T/hup.pipe"
cat "$T/hup.pipe" >"$T/hup.log" &
reader=$!
(cd "$T" && NSTBATCH_SLOW='*:20:signal' exec "$NST" ck.ini --set output.path=out/hup.tif --set checkpoint.path=ck_hup) >"$T/hup.pipe" 2>&1 &
bg=$!
paused hup; kill $reader; wait $reader
kill -HUP $bg; wait $bg; r=$?
[ $r -eq 75 ] && grep -q '^state = running' "$T/ck_hup/manifest" && [ ! -e "$T/out/hup.tif" ] &&
  ok "SIGHUP to a run without mpirun whose output's reader has gone: checkpoint, exit 75" || bad "SIGHUP with the reader gone" "exit $r" "$(tail -n 3 "$T/hup.log")"
NSTBATCH_SLOW='*:20:signal' nst_bg nockpt ck.ini --set output.path=out/nockpt.tif
paused nockpt; ranks TERM; wait $bg; r=$?
[ $r -eq 1 ] && grep -q "checkpoint.path is not set, so nothing was saved" "$T/nockpt.log" && [ ! -e "$T/out/nockpt.tif" ] \
  && ok "SIGTERM without checkpoint.path: exit 1, 'nothing was saved', no output" || bad "SIGTERM without checkpoint.path" "exit $r" "$(tail -n 4 "$T/nockpt.log")"

# ---- refusals, --restart --------------------------------------------------------------------------
# ck_usr1 holds a running checkpoint of ck.ini (output out/usr1.tif)
nst changed ck.ini --set output.path=out/usr1.tif --set checkpoint.path=ck_usr1 --set style.weight=2000
[ $rc -eq 2 ] && grep -q "holds an unfinished checkpoint of a different render (it has 'style.weight = 1000' where this run has 'style.weight = 2000', at level 1, iteration [0-9]*): put the key back to resume it, or start over with --restart" "$T/changed.log" \
  && ok "an unfinished checkpoint of another config is refused, naming the key and both ways on (exit 2)" || bad "changed config" "exit $rc" "$(tail -n 3 "$T/changed.log")"
touch -d '2001-01-01' "$T/content.png"
nst input ck.ini --set output.path=out/usr1.tif --set checkpoint.path=ck_usr1
[ $rc -eq 2 ] && grep -q "file content.path .*content.png: size [0-9]*, mtime" "$T/input.log" && ok "a changed input file (mtime) is refused (exit 2)" \
  || bad "changed input" "exit $rc" "$(tail -n 3 "$T/input.log")"
touch -d "@$(sed -n 's/.*content.png: size [0-9]*, mtime \([0-9]*\)$/\1/p' "$T/ck_usr1/manifest" | head -n 1)" "$T/content.png"
(cd "$T" && "$IDLE" 120 mpirun --oversubscribe --bind-to none -np 1 "$NST" ck.ini --set output.path=out/usr1.tif --set checkpoint.path=ck_usr1) >"$T/ranks.log" 2>&1; r=$?
[ $r -eq 2 ] && grep -q "written by 2 ranks and this run has 1: launch with 2 ranks" "$T/ranks.log" && ok "another rank count is refused (exit 2)" \
  || bad "rank count" "exit $r" "$(tail -n 3 "$T/ranks.log")"
cp -a "$T/ck_usr1" "$T/ck_bad"
f=$(ls "$T"/ck_bad/g*-r00001.nstc | head -n 1)
printf '\x55' | dd of="$f" bs=1 seek=200 conv=notrunc status=none
nst corrupt ck.ini --set output.path=out/usr1.tif --set checkpoint.path=ck_bad
[ $rc -eq 2 ] && grep -q "r00001.nstc: not a complete nstbatch checkpoint file (checksum mismatch)" "$T/corrupt.log" && ok "a corrupt rank file is refused by its checksum (exit 2)" \
  || bad "corrupt rank file" "exit $rc" "$(tail -n 3 "$T/corrupt.log")"
nst restart ck.ini --set output.path=out/usr1.tif --set checkpoint.path=ck_usr1 --set style.weight=2000 --restart
[ $rc -eq 0 ] && grep -q "starting over (--restart)" "$T/restart.log" && ! grep -q "resumed:" "$T/restart.log" && grep -q "^state = done" "$T/ck_usr1/manifest" \
  && ok "--restart starts over and finishes" || bad "--restart" "exit $rc" "$(tail -n 4 "$T/restart.log")"
nst again ck.ini --set output.path=out/usr1.tif --set checkpoint.path=ck_usr1 --set style.weight=2000
[ $rc -eq 0 ] && grep -q "already rendered by an earlier run" "$T/again.log" && ! grep -q "iteration" "$T/again.log" \
  && ok "a finished job is not rendered again" || bad "finished job again" "exit $rc" "$(tail -n 4 "$T/again.log")"
# the artist's loop: tweak a key of a finished job and render again, no --restart
nst tweak ck.ini --set output.path=out/usr1.tif --set checkpoint.path=ck_usr1 --set style.weight=3000 --set output.overwrite=true
[ $rc -eq 0 ] && grep -q "the finished render there had another config (it has 'style.weight = 2000' where this run has 'style.weight = 3000'): rendering this one" "$T/tweak.log" \
  && grep -q "^state = done" "$T/ck_usr1/manifest" && grep -q '^| style.weight = 3000' "$T/ck_usr1/manifest" \
  && ok "a finished job with a changed key renders again without --restart, and records the new config" || bad "the artist's loop" "exit $rc" "$(tail -n 4 "$T/tweak.log")"

# ---- a batch stopped by a signal -------------------------------------------------------------------
# 4 jobs of 30 iterations (a and b side by side on 1 rank each, then c and d), checkpoints every
# 10: the signal comes once c or d has written one, about 20 iterations before their end, on any
# machine: the test polls every 0.1 s, and a slower machine slows the iterations too
{ sed 's/^iterations = 60$/iterations = 30/' "$T/ck.ini"
  printf '[checkpoint]\npath = ck_batch\nevery = 10\n[batch]\nsummary = out/bsum.json\n'
  w=500; for n in a b c d; do printf '[job.%s]\noutput.path = out/b_%s.tif\nstyle.weight = %s\n' $n $n $w; w=$((w * 2)); done; } >"$T/batch.ini"
nst bref batch.ini --set checkpoint.path=ck_bref
for n in a b c d; do mv "$T/out/b_$n.tif" "$T/out/bref_$n.tif" 2>/dev/null; done
[ $rc -eq 0 ] || bad "batch reference" "exit $rc" "$(tail -n 8 "$T/bref.log")"
nst_bg b1 batch.ini
grown_wait 120 "$T/b1.log" grep -q "^\[[cd]\] checkpoint:" "$T/b1.log"
pkill -USR1 -P $bg; wait $bg; r=$?
ndone=$(grep -c '"status": "done"' "$T/out/bsum.json" 2>/dev/null) nstop=$(grep -c '"status": "stopped"' "$T/out/bsum.json" 2>/dev/null)
[ $r -eq 75 ] && [ "${nstop:-0}" -ge 1 ] && ok "a batch signalled: exit 75, $ndone done, $nstop stopped and checkpointed" || bad "batch signal" "exit $r" "$(tail -n 10 "$T/b1.log")"
nst b2 batch.ini
nearlier=$(grep -c '"status": "earlier"' "$T/out/bsum.json" 2>/dev/null)
if [ $rc -eq 0 ] && [ "${ndone:-0}" -ge 1 ] && [ "${nearlier:-0}" = "${ndone:-x}" ] && grep -q "resumed: level" "$T/b2.log"; then ok "run again: $nearlier finished jobs skipped, the stopped ones resumed"
else bad "batch again" "exit $rc, earlier '$nearlier' vs done '$ndone'" "$(tail -n 10 "$T/b2.log")"; fi
for n in a b c d; do same "batch job $n: signalled and resumed == the uninterrupted batch" out/b_$n.tif out/bref_$n.tif; done
# --restart=JOB starts over that job of a batch only; an unknown name lists the jobs
nst b3 batch.ini --restart=b
if [ $rc -eq 0 ] && [ "$(grep -c '"status": "earlier"' "$T/out/bsum.json")" = 3 ] && grep -q 'checkpoint: ck_batch/b: starting over (--restart)' "$T/b3.log"; then
  ok "--restart=b renders job b again and skips the 3 others"
else bad "--restart=JOB" "exit $rc" "$(grep -E 'earlier|restart|error' "$T/b3.log" | head -n 8)"; fi
nst b4 batch.ini --restart=b,zz
[ $rc -eq 2 ] && grep -q -- "--restart=b,zz: no job 'zz' in this batch; its jobs: a, b, c, d" "$T/b4.log" \
  && ok "--restart=JOB with an unknown job: exit 2, naming the jobs" || bad "--restart=unknown" "exit $rc" "$(tail -n 3 "$T/b4.log")"

# ---- a level whose tiles were halved, stopped and resumed -----------------------------------------
# Over NSTBATCH_MEMORY_LIMIT_MB=7 the 160 px tiles are halved to 80 (two-pass Gram); a fault at
# iteration 12 leaves the checkpoint of iteration 10; the resume plans the checkpoint's 80 px tiles
# (resident Gram, over the limit), and tries them again in less memory (two-pass).
shallow=(--set content.layers=relu2_2 --set style.layers=relu1_1,relu2_1 --set style.scale=0.4 --set output.width=320
         --set output.height=240 --set tiling.tile_size=160 --set optim.iterations=20 --set checkpoint.every=5)
nst halve_ref ck.ini "${shallow[@]}" --set output.path=out/halve_ref.tif
export NSTBATCH_MEMORY_LIMIT_MB=7
NSTBATCH_FAULT=0:12 nst halve_fault ck.ini "${shallow[@]}" --set checkpoint.path=ck_halve --set output.path=out/halve.tif
f=$rc
nst halve_resume ck.ini "${shallow[@]}" --set checkpoint.path=ck_halve --set output.path=out/halve.tif
unset NSTBATCH_MEMORY_LIMIT_MB
if [ $f -eq 1 ] && [ $rc -eq 0 ] && grep -q "trying again with 80x80 px$" "$T/halve_fault.log" &&
   grep -q "resumed: level 1 at iteration 10" "$T/halve_resume.log" &&
   grep -q "trying again with 80x80 px (the checkpoint's), Gram two_pass" "$T/halve_resume.log"; then
  same "halved tiles, stopped and resumed in less memory == the uninterrupted render" out/halve.tif out/halve_ref.tif
else
  bad "halved tiles resumed" "exit $f then $rc" "$(grep -h 'warning\|error\|resumed' "$T/halve_fault.log" "$T/halve_resume.log")"
fi

finish

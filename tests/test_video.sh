#!/usr/bin/env bash
# tests/test_video.sh: clip renders end to end on a generated clip with exact flow (tools/make_test_clip),
# random VGG-19 at width 1/8, a few iterations:
# - an image sequence to H.264 .mp4: the frame count and the rate kept (ffprobe where installed);
# - a frame event per frame in metrics.path (its warping error) and the frame series in metrics.prometheus;
# - the temporal term lowers the warping error against independent frames (video.temporal_weight = 0);
# - tiles: 2 ranks with 64 px tiles (2 of the 96x64 frame, one a rank) give the same 16-bit
#   frames as 1 rank, bit for bit;
# - resume: a render stopped by SIGTERM after its second frame exits 75 and, run again, ends with
#   the same frames as an uninterrupted render; so does one killed by SIGKILL after its third;
# - the multi-pass mode (video.passes = 3): 2 ranks with tiles equal 1 rank, and stopped in its second
#   pass it resumes to the same frames;
# - shots: a cut (video.cuts) on 2 ranks gives 2 groups rendering the 2 shots at once, with the
#   frames of a 1-rank render;
# - a video with sound (made by the ffmpeg program) to .mp4 with DIS flow: the count, the rate and the audio kept;
# - bad input: a range outside the clip, more frames than it has, FFV1 in .mp4, a truncated video, a
#   mask of another aspect, a missing .flo, a missing frame: one line, exit 2, nothing written; a clip
#   as a job of a batch: the job fails naming its line;
# - the video plugin: nstbatch links neither FFmpeg nor OpenCV; a plugin that does not load (not a
#   shared object, missing) on 2 ranks: one line naming it, exit 1, nothing written; video.flow =
#   dis then names the plugin as why there is no DIS.
#
#   tests/test_video.sh NSTBATCH BUILD_DIR
NST=$(readlink -f "$1") B=$(readlink -f "${2:-build}")
. "$(dirname "$0")/lib.sh" test_video_clip
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
"$B/tools/make_test_clip" "$T/clip" --size 96x64 --frames 6 --motion all >/dev/null || { bad "make_test_clip" "failed"; finish; }
cat >"$T/v.ini" <<INI
[content]
path = clip/frame_%05d.png
[style]
path = $ROOT/configs/demo/style.png
[model]
random_width_divisor = 8
[optim]
iterations = 30
[run]
print_every = 0
threads = 1
[video]
flow = files
flow_forward = clip/fwd_%05d.flo
flow_backward = clip/bwd_%05d.flo
iterations = 30
detect_cuts = false
INI
run() { (cd "$T" && "$IDLE" 300 "$@") >"$T/last.log" 2>&1; }
# same_frames A B: every frame of A has B's pixels (the files differ: each stores its own config)
same_frames() { local a=$1 b=$2 n=0; for f in "$T/$a"/*.png; do [ "$("$B/tests/image_diff" "$f" "$T/$b/$(basename "$f")")" = "max 0 mean 0" ] || return 1; n=$((n + 1)); done; [ $n -eq 6 ]; }
mean_err() { sed -n 's/^clip:    mean warping error \([0-9.e+-]*\) .*/\1/p' "$T/$1"; }

# an image sequence to .mp4
if run "$NST" v.ini --set output.path=out.mp4 && [ -s "$T/out.mp4" ] && [ ! -e "$T/out.mp4.frames" ]; then
  cp "$T/last.log" "$T/temporal.log"
  if command -v ffprobe >/dev/null; then
    got=$(ffprobe -v error -count_frames -show_entries stream=nb_read_frames,r_frame_rate -of csv=p=0 "$T/out.mp4")
    [ "$got" = "25/1,6" ] && ok "sequence to .mp4: 6 frames at 25/1 fps, the work directory removed" || bad "the .mp4" "ffprobe: $got"
  else ok "sequence to .mp4 (ffprobe not installed: the count is not checked)"; fi
else bad "a sequence to .mp4" "exit $?" "$(cat "$T/last.log")"; fi

# a video with sound to .mp4, the flow estimated (DIS): the count, the exact rate and the audio kept
if command -v ffmpeg >/dev/null && command -v ffprobe >/dev/null; then
  ffmpeg -v error -y -framerate 30000/1001 -i "$T/clip/frame_%05d.png" -f lavfi -i sine=frequency=440:duration=1 \
    -c:v libx264 -pix_fmt yuv420p -c:a aac -shortest "$T/src.mp4"
  if run "$NST" v.ini --set content.path=src.mp4 --set video.flow=dis --set output.path=fromvideo.mp4; then
    v=$(ffprobe -v error -count_frames -select_streams v -show_entries stream=nb_read_frames,r_frame_rate -of csv=p=0 "$T/fromvideo.mp4")
    a=$(ffprobe -v error -select_streams a -show_entries stream=codec_name -of csv=p=0 "$T/fromvideo.mp4")
    [ "$v" = "30000/1001,6" ] && [ "$a" = "aac" ] && ok ".mp4 with sound to .mp4 (DIS flow): 6 frames at 30000/1001 fps, the aac audio copied" ||
      bad "a video to .mp4" "video '$v', audio '$a'"
  else bad "a video to .mp4" "exit $?" "$(cat "$T/last.log")"; fi
  head -c 3000 "$T/src.mp4" >"$T/cut.mp4"
else skip "video files in: the ffmpeg program is not installed (scripts/install-deps.sh --test)"; fi

# the metrics: a frame event per frame in metrics.path, the frame series in metrics.prometheus
if run "$NST" v.ini --set output.path=met.mp4 --set metrics.path=met.jsonl --set metrics.prometheus=met.prom --set run.print_every=5; then
  n=$(grep -c '"event": "frame"' "$T/met.jsonl") w=$(grep -c '"warping_error": ' "$T/met.jsonl")
  p=$(grep -c '^nstbatch_video_warping_error{job="met",clip="result",normalisation="ruder"} [0-9]' "$T/met.prom")
  { [ "$n" = 6 ] && [ "$w" = 5 ] && [ "$p" = 1 ] && { ! command -v promtool >/dev/null || promtool check metrics <"$T/met.prom" >/dev/null 2>&1; }; } &&
    ok "metrics: 6 frame events (5 with their warping error), the Prometheus frame series" || bad "metrics" "$n frame events, $w measured, $p series" "$(cat "$T/met.prom")"
else bad "metrics" "exit $?" "$(cat "$T/last.log")"; fi

# temporal against independent frames
if run "$NST" v.ini --set output.path=ind.mp4 --set video.temporal_weight=0; then
  t=$(mean_err temporal.log) i=$(mean_err last.log)
  awk -v t="$t" -v i="$i" 'BEGIN { exit !(t > 0 && i > 0 && t < 0.5 * i) }' && ok "warping error: temporal $t, independent $i" ||
    bad "the temporal term" "warping error temporal ${t:-?}, independent ${i:-?}"
else bad "independent frames" "exit $?" "$(cat "$T/last.log")"; fi

# tiles: 2 ranks, 64 px tiles (2, one a rank, each window the whole frame; 4 of 48 px cost the
# suite 1.3 CPU seconds more), against 1 rank
mkdir -p "$T/one" "$T/two"
run "$NST" v.ini --set output.path=one/%05d.png --set output.bits=16
run mpirun --oversubscribe --bind-to none -np 2 "$NST" v.ini --set output.path=two/%05d.png --set output.bits=16 --set tiling.tile_size=64
if grep -q 'tiles' "$T/last.log" && same_frames one two; then ok "2 ranks with 64 px tiles: the 1-rank frames, bit for bit"
else bad "tiles" "frames differ or the render failed" "$(tail -n 5 "$T/last.log")"; fi

# resume after SIGTERM
mkdir -p "$T/res"
(cd "$T" && exec "$NST" v.ini --set output.path=res/%05d.png --set output.bits=16 --set video.work=res.work) >"$T/res1.log" 2>&1 &
pid=$!
grown_wait 120 "$T/res1.log" test -e "$T/res.work/frame_00000001.png" # (bounded by the log's growth)
kill -TERM $pid 2>/dev/null; wait $pid; rc=$?
run "$NST" v.ini --set output.path=res/%05d.png --set output.bits=16 --set video.work=res.work
if [ $rc -eq 75 ] && grep -q 'resuming at frame' "$T/last.log" && same_frames one res; then ok "SIGTERM after frame 2: exit 75; resumed, the frames of an uninterrupted render"
else bad "resume" "exit $rc, then: $(grep -c resuming "$T/last.log") resume lines" "$(tail -n 4 "$T/res1.log"; tail -n 4 "$T/last.log")"; fi

# killed outright (SIGKILL, no chance to stop cleanly) after its third frame: the next run resumes
# from the work directory, with the same frames
mkdir -p "$T/kil"
(cd "$T" && exec "$NST" v.ini --set output.path=kil/%05d.png --set output.bits=16 --set video.work=kil.work) >"$T/kil1.log" 2>&1 &
pid=$!
grown_wait 120 "$T/kil1.log" test -e "$T/kil.work/frame_00000002.png"
kill -KILL $pid 2>/dev/null; wait $pid 2>/dev/null
run "$NST" v.ini --set output.path=kil/%05d.png --set output.bits=16 --set video.work=kil.work
if grep -q 'resuming at frame' "$T/last.log" && same_frames one kil; then ok "SIGKILL after frame 3: resumed from the work directory, the frames of an uninterrupted render"
else bad "resume after SIGKILL" "" "$(tail -n 4 "$T/last.log")"; fi

# the multi-pass mode: 3 passes on 1 rank and on 2 with tiles, and stopped in its second pass
mkdir -p "$T/mp1" "$T/mp2" "$T/mp3"
MP=(--set output.bits=16 --set video.passes=3)
run "$NST" v.ini "${MP[@]}" --set output.path=mp1/%05d.png; rc1=$?
grep -q '^pass 3 (forward) frame 6/6' "$T/last.log" && grep -q '^shot 1 after 3 passes: mean warping error' "$T/last.log" && cp "$T/last.log" "$T/mp.log"
run mpirun --oversubscribe --bind-to none -np 2 "$NST" v.ini "${MP[@]}" --set output.path=mp2/%05d.png --set tiling.tile_size=64
if [ $rc1 -eq 0 ] && [ -e "$T/mp.log" ] && same_frames mp1 mp2; then ok "3 passes (forward, backward, forward): 2 ranks with 64 px tiles give the 1-rank frames, bit for bit"
else bad "multi-pass" "exit $rc1" "$(grep -E '^(pass|shot|clip)' "$T/last.log" | tail -n 6)"; fi
(cd "$T" && exec "$NST" v.ini "${MP[@]}" --set output.path=mp3/%05d.png --set video.work=mp3.work) >"$T/mp3a.log" 2>&1 &
pid=$!
grown_wait 120 "$T/mp3a.log" test -e "$T/mp3.work/state_p2_00000003.f32"
kill -TERM $pid 2>/dev/null; wait $pid; rc=$?
run "$NST" v.ini "${MP[@]}" --set output.path=mp3/%05d.png --set video.work=mp3.work
if [ $rc -eq 75 ] && same_frames mp1 mp3; then ok "3 passes stopped by SIGTERM in the second: exit 75; resumed, the uninterrupted frames"
else bad "multi-pass resume" "exit $rc" "$(tail -n 3 "$T/mp3a.log"; tail -n 3 "$T/last.log")"; fi

# two shots on two groups
mkdir -p "$T/s1" "$T/s2"
run "$NST" v.ini --set output.path=s1/%05d.png --set output.bits=16 --set video.cuts=3
run mpirun --oversubscribe --bind-to none -np 2 "$NST" v.ini --set output.path=s2/%05d.png --set output.bits=16 --set video.cuts=3
if grep -q '2 shots in 2 units, on 2 groups of 1 rank' "$T/last.log" && same_frames s1 s2; then ok "a cut on 2 ranks: 2 groups render the 2 shots, the 1-rank frames"
else bad "shots on groups" "" "$(grep '^clip' "$T/last.log")"; fi

# bad input: one line, exit 2
one() { # one NAME FRAGMENT ARGS...
  local name=$1 frag=$2; shift 2
  run "$NST" v.ini "$@"; local rc=$?
  if [ $rc -eq 2 ] && grep -q -- "$frag" "$T/last.log" && [ "$(grep -c 'error:' "$T/last.log")" -eq 1 ]; then ok "$name: exit 2, $(grep 'error:' "$T/last.log" | cut -c1-150)"
  else bad "$name" "exit $rc, expected 2 and '$frag'" "$(cat "$T/last.log")"; fi
}
one "a range outside the clip" "video.first" --set output.path=bad1.mp4 --set video.first=9
one "more frames than the clip has" "video.frames" --set output.path=bad2.mp4 --set video.frames=9
one "passes without the temporal term" "video.passes" --set output.path=bad8.mp4 --set video.passes=2 --set video.temporal_weight=0
one "FFV1 in .mp4" "video.codec" --set output.path=bad3.mp4 --set video.codec=ffv1
[ -e "$T/cut.mp4" ] && one "a truncated video" "cut.mp4" --set content.path=cut.mp4 --set output.path=bad6.mp4
/usr/bin/python3 -c 'from PIL import Image; Image.new("L", (64, 64), 255).save("'"$T"'/square.png")' 2>/dev/null &&
  one "a mask that does not fit the clip" "content.mask" --set content.mask=square.png --set output.path=bad7.mp4
rm "$T/clip/fwd_00002.flo"
one "a missing .flo" "fwd_00002.flo" --set output.path=bad4.mp4
mv "$T/clip/frame_00003.png" "$T/clip/gone.png"
one "a missing frame" "missing" --set output.path=bad5.mp4
printf '[job.a]\ncontent.path = clip/frame_%%05d.png\noutput.path = batch.mp4\n' >"$T/batch.ini"
run "$NST" --set style.path="$ROOT/configs/demo/style.png" --set model.random_width_divisor=8 batch.ini; rc=$?
[ $rc -eq 2 ] && grep -q 'is a clip: a clip renders on its own' "$T/last.log" && ok "a clip as a batch job: the job fails naming the line, exit 2" ||
  bad "a clip in a batch" "exit $rc" "$(cat "$T/last.log")"
[ ! -e "$T/bad4.mp4" ] && ok "nothing written under the output's name after a failure" || bad "a failed render" "left bad4.mp4"

# the video plugin (util/plugin.h): nstbatch itself loads neither FFmpeg nor OpenCV; a plugin that
# cannot be loaded, on 2 ranks: one line naming it and saying what to do, exit 1, nothing written
libs=$(ldd "$NST" | grep -cE 'lib(avcodec|avformat|swscale|opencv_)')
[ "$libs" -eq 0 ] && ok "nstbatch links neither FFmpeg nor OpenCV ($(ldd "$NST" | wc -l) libraries; they come with the plugin)" ||
  bad "nstbatch's libraries" "$libs of FFmpeg's and OpenCV's linked" "$(ldd "$NST" | grep -E 'libav|opencv')"
echo "not a shared object" >"$T/bad.so"
mv "$T/clip/gone.png" "$T/clip/frame_00003.png"
if nm -D "$B/lib/nstbatch-video.so" 2>/dev/null | grep -q ' nst_plugin_vfile$'; then
  for plugin in "$T/bad.so" "$T/none.so"; do # (the .mp4 output's check is the first call into the plugin)
    run env NSTBATCH_VIDEO_PLUGIN="$plugin" mpirun --oversubscribe --bind-to none -np 2 "$NST" v.ini --set output.path=bad9.mp4 --set video.temporal_weight=0; rc=$?
    if [ $rc -eq 1 ] && [ "$(grep -c 'error:' "$T/last.log")" -eq 1 ] && grep -q "bad9.mp4: nstbatch's video plugin $plugin cannot be loaded .*: rebuild it" "$T/last.log" && [ ! -e "$T/bad9.mp4" ]; then
      ok "a plugin that does not load ($(basename "$plugin")), 2 ranks: exit 1, $(grep 'error:' "$T/last.log" | cut -c1-150)..."
    else bad "a plugin that does not load ($plugin)" "exit $rc, expected 1 and one line naming it" "$(cat "$T/last.log")"; fi
  done
else skip "a plugin that does not load: this build's plugin has no video files (built without FFmpeg)"; fi
# and the DIS flow's check says why there is no DIS: the plugin, not a build without OpenCV
if nm -D "$B/lib/nstbatch-video.so" 2>/dev/null | grep -q ' nst_plugin_dis$'; then
  run env NSTBATCH_VIDEO_PLUGIN="$T/bad.so" "$NST" v.ini --set output.path=bad9/%05d.png --set video.flow=dis; rc=$?
  if [ $rc -eq 1 ] && grep -q "video.flow = dis (or set video.temporal_weight = 0): optical flow (DIS): nstbatch's video plugin $T/bad.so cannot be loaded" "$T/last.log"; then
    ok "video.flow = dis with a plugin that does not load: exit 1, the plugin named as the reason"
  else bad "video.flow = dis with a plugin that does not load" "exit $rc" "$(cat "$T/last.log")"; fi
else skip "video.flow = dis with a plugin that does not load: this build's plugin has no DIS (built without OpenCV)"; fi
finish

#!/usr/bin/env bash
# scripts/video-figure.sh: docs/video.jpg, the README's video figure, from `make demo-video`'s two
# renders of the generated clip (configs/clip/stylised.mp4 with the temporal loss,
# configs/clip/independent.mp4 without): three consecutive frames of each, and under each frame its
# warping error against the previous frame along the clip's exact flow (nstbatch-flicker --maps:
# white where the frame changed where it should not have, dark blue where the flow check leaves a
# pixel out). The ffmpeg program splits the videos and lays the pictures out.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
C="$ROOT/configs/clip" F="$ROOT/build/tools/nstbatch-flicker" FIRST=${FIRST:-12}
T=$(mktemp -d /tmp/nstbatch-video-figure.XXXXXX)
trap 'rm -rf "$T"' EXIT
for r in stylised independent; do
  mkdir -p "$T/$r"
  ffmpeg -v error -i "$C/$r.mp4" -start_number 0 "$T/$r/f_%05d.png"
  "$F" "$T/$r/f_%05d.png" "$C/fwd_%05d.flo" "$C/bwd_%05d.flo" --first "$FIRST" --count 4 --maps "$T/$r/m_%05d.png" | tail -n 1
done
in=() n=0
for r in stylised independent; do
  for kind in f m; do
    for i in 1 2 3; do in+=(-i "$T/$r/${kind}_$(printf %05d $((FIRST + i))).png"); done
  done
done
ffmpeg -v error -y "${in[@]}" -filter_complex \
  "[0][1][2]hstack=3[r0];[3][4][5]hstack=3[r1];[6][7][8]hstack=3[r2];[9][10][11]hstack=3[r3];[r0][r1][r2][r3]vstack=4" \
  -q:v 6 "$ROOT/docs/video.jpg"
echo "wrote docs/video.jpg: rows: temporal frames, their warping error, independent frames, theirs (frames $((FIRST + 2))-$((FIRST + 4)))"

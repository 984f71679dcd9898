#!/usr/bin/env bash
# scripts/print-figure.sh: does a print look like its preview? docs/print.jpg and
# bench/results/print_preview.md (make print-figure).
#
# The demo's pictures rendered at a preview's size (PREVIEW px long side) and at a print's (PRINT),
# each with one level (the default) and with pyramid.levels = auto (coarse levels at fixed sizes:
# the print's first levels are then the preview's, bit for bit). style.scale is 1 in all four: the
# style image is resized with the output, as by default. Each print is brought down to its preview's
# size by nstbatch's own resampler and compared with it (image_diff --fit --ssim, luminance SSIM).
# The figure has a row per schedule: the preview, the print brought down, the print's detail
# around the house (a quarter of its width, shown at PANEL px), and the same quarter of the preview
# enlarged to that size.
#
#   scripts/print-figure.sh   (PREVIEW=1024 PRINT=4096 ITERS=100 MINITS=50 DIVISOR=8 NP=1 PANEL=480;
#                              OUT=docs/print.jpg RESULTS=bench/results/print_preview.md)
#
# ITERS is optim.iterations: the one level's iterations, and the coarsest level's with auto (the
# finer ones halve down to MINITS, pyramid.min_iterations). DIVISOR is the random VGG-19's width
# divisor. The defaults (about 17 minutes on 2 cores) are smaller than a render's (500 iterations,
# 1/1 width): what sets the strokes' scale is there after the first hundred.
set -eu
# numbers with a decimal point in any locale (awk, printf, sort -n): a user's LC_ALL becomes LANG
[ -z "${LC_ALL:-}" ] || { export LANG="$LC_ALL"; unset LC_ALL; }; export LC_NUMERIC=C
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PREVIEW=${PREVIEW:-1024} PRINT=${PRINT:-4096} ITERS=${ITERS:-100} MINITS=${MINITS:-50} DIVISOR=${DIVISOR:-8} NP=${NP:-1} PANEL=${PANEL:-480}
OUT=${OUT:-$ROOT/docs/print.jpg} RESULTS=${RESULTS:-$ROOT/bench/results/print_preview.md}
NST=$ROOT/nstbatch DIFF=$ROOT/build/tests/image_diff
for f in "$NST" "$DIFF" "$ROOT/configs/demo/content.png" "$ROOT/configs/demo/style.png"; do
  [ -e "$f" ] || { echo "print-figure: $f is missing: run it as make print-figure (it builds them)" >&2; exit 2; }
done
command -v ffmpeg >/dev/null || { echo "print-figure: the ffmpeg program lays out the figure: apt-get install ffmpeg" >&2; exit 2; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
T=$(mktemp -d /tmp/nstbatch-print-figure.XXXXXX)
trap 'rm -rf "$T"' EXIT
cat >"$T/job.ini" <<EOF
[content]
path = $ROOT/configs/demo/content.png
[style]
path = $ROOT/configs/demo/style.png
[output]
overwrite = true
preview = 0
[model]
random_width_divisor = $DIVISOR
[optim]
iterations = $ITERS
[pyramid]
min_iterations = $MINITS
[run]
device = cpu
print_every = 50
EOF

# render NAME SIZE LEVELS: T/NAME.png, its log in T/NAME.log, its wall seconds in T/NAME.s
render() {
  local t0=$SECONDS
  mpirun --bind-to none -np "$NP" "$NST" "$T/job.ini" --set output.path="$T/$1.png" --set output.width="$2" \
    --set pyramid.levels="$3" >"$T/$1.log" 2>&1 || { echo "print-figure: the $1 render failed:" >&2; tail -n 5 "$T/$1.log" >&2; exit 1; }
  echo $((SECONDS - t0)) >"$T/$1.s"
  echo "  $1: ${2} px, levels $3: $(cat "$T/$1.s") s"
}
# levels NAME: its levels as "WxH xN, ..." from the log's level headers (one level: the done line)
levels() {
  local l
  l=$(sed -n 's/^level [0-9]*\/[0-9]*: \([0-9]*x[0-9]*\), \([0-9]*\) iterations$/\1 x\2/p' "$T/$1.log" | paste -sd, | sed 's/,/, /g')
  [ -n "$l" ] || l="$(sed -n 's/^wrote .*(\([0-9]*x[0-9]*\),.*/\1/p' "$T/$1.log") x$(sed -n 's/^done: \([0-9]*\) iterations.*/\1/p' "$T/$1.log")"
  echo "$l"
}
echo "print-figure: $PREVIEW and $PRINT px, $ITERS iterations (at least $MINITS a level), VGG-19 width 1/$DIVISOR, $NP rank(s)"
render preview_one "$PREVIEW" 1
render print_one "$PRINT" 1
render preview_auto "$PREVIEW" auto
render print_auto "$PRINT" auto
# work NAME: its megapixel-iterations, the sum over levels of pixels x iterations (the cost, on any machine)
work() { levels "$1" | tr ',' '\n' | awk '{ split($1, d, "x"); sub("x", "", $2); w += d[1] * d[2] * $2 } END { printf "%.0f", w / 1e6 }'; }
ssim() { "$DIFF" --fit --ssim "$T/$1.png" "$T/$2.png" | sed 's/^ssim //'; }
s_one=$(ssim preview_one print_one) s_auto=$(ssim preview_auto print_auto)
s_cross=$(ssim preview_one preview_auto)

# the figure: a row per schedule (see the file comment)
crop='crop=w=iw/4:h=ih/4:x=iw*0.15:y=ih*0.40'
row() { # row PREVIEW_INPUT PRINT_INPUT LABEL
  echo "[$1]split[$3p1][$3p2];[$2]split[$3q1][$3q2];[$3p1]scale=$PANEL:-2:flags=lanczos[$3a];[$3q1]scale=$PANEL:-2:flags=lanczos[$3b];" \
    "[$3q2]$crop,scale=$PANEL:-2:flags=lanczos[$3c];[$3p2]$crop,scale=$PANEL:-2:flags=lanczos[$3d];[$3a][$3b][$3c][$3d]hstack=4[$3]"
}
ffmpeg -v error -y -i "$T/preview_one.png" -i "$T/print_one.png" -i "$T/preview_auto.png" -i "$T/print_auto.png" \
  -filter_complex "$(row 0 1 r0);$(row 2 3 r1);[r0][r1]vstack=2" -q:v 7 "$OUT"

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
{
  echo "# A print and its preview"
  echo
  echo "\`make print-figure\` (scripts/print-figure.sh), $(date -u +%Y-%m-%d): the demo's pictures at $PREVIEW px"
  echo "(the preview) and $PRINT px (the print), random VGG-19 at width 1/$DIVISOR, \`optim.iterations = $ITERS\`, \`pyramid.min_iterations = $MINITS\`,"
  echo "$NP rank(s) on $cpu ($(nproc) cores), \`style.scale = 1\`. The print brought down to the preview's size by"
  echo "nstbatch's resampler, against the preview: luminance SSIM (\`image_diff --fit --ssim\`)."
  echo
  echo "| schedule | preview: levels | print: levels | work, preview / print (MP-iterations) | wall s, preview / print | SSIM print vs preview |"
  echo "|---|---|---|---|---|---|"
  echo "| one level (the default) | $(levels preview_one) | $(levels print_one) | $(work preview_one) / $(work print_one) | $(cat "$T/preview_one.s") / $(cat "$T/print_one.s") | $s_one |"
  echo "| \`pyramid.levels = auto\` | $(levels preview_auto) | $(levels print_auto) | $(work preview_auto) / $(work print_auto) | $(cat "$T/preview_auto.s") / $(cat "$T/print_auto.s") | $s_auto |"
  echo
  echo "For scale: the two previews against each other (one level against auto), SSIM $s_cross. The wall"
  echo "seconds are this run's${LOAD_NOTE:+ ($LOAD_NOTE)}; the work (pixels times iterations, summed over levels) is the cost on any machine."
  echo "The figure: docs/print.jpg (rows: one level, auto; panels: the preview, the print brought down,"
  echo "the print's detail (a quarter of its width), the preview's same detail enlarged)."
} >"$RESULTS"
cat "$RESULTS"
echo "wrote $OUT and $RESULTS"

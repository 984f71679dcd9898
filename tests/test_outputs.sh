#!/usr/bin/env bash
# tests/test_outputs.sh: the output files, read back with readers we did not write.
#
#   tests/test_outputs.sh NSTBATCH MAKE_TEST_TIFF
#
# A small render (a tiled TIFF content read by region and resized on every rank, the random VGG-19
# at width 1/8, 4 L-BFGS steps, 4 tiles of 160 px, which the 64 px output tiles straddle; 64 px
# output tiles so every level has several) written as TIFF, HDF5
# and PNG on 1, 2 and 4 ranks: tiffinfo/tiffdump (tiles, compression, SubIFDs, BigTIFF), h5dump
# (chunks, filters, fixed-length string attributes), and tests/check_outputs.py with tifffile,
# h5py, Pillow and libvips (every level, NewSubfileType, the HDF5 Image attributes, reduced levels
# = 2x2 rounded means, all formats and all rank counts the same pixels). Then 16-bit zstd BigTIFF,
# lzw (lossless: the same pixels), jpeg (PSNR), the cheap mode's blend over ranks, and the
# guarantees: a run killed with SIGKILL while writing leaves no output under the final name and
# an existing output intact; a rank that fails while writing leaves nothing at all.
. "$(dirname "$0")/lib.sh" test_outputs
NST=$(readlink -f "$1") MKTIFF=$(readlink -f "$2")
CHECK="$ROOT/tests/check_outputs.py"

# readers we did not write: present where scripts/install-deps.sh ran
readers=1
/usr/bin/python3 -c 'import h5py, tifffile, numpy, PIL' 2>/dev/null || { readers=0; why="python3 h5py/tifffile/numpy/PIL missing"; }
for tool in vips tiffinfo tiffdump h5dump; do command -v $tool >/dev/null || { readers=0; why="$tool missing"; }; done
[ $readers -eq 1 ] || echo "  (reader checks skipped: $why; scripts/install-deps.sh installs them)"
# check_outputs.py ARGS...: count its ok/FAIL lines
pycheck() {
  if [ $readers -eq 0 ]; then skip "check_outputs.py $1 ${2##*/}" "$why"; return; fi
  local out; out=$(/usr/bin/python3 "$CHECK" "$@" 2>&1)
  echo "$out" | grep -E '^  (ok|FAIL) '
  pass=$((pass + $(grep -c '^  ok ' <<<"$out"))) fail=$((fail + $(grep -c '^  FAIL ' <<<"$out")))
  grep -q -E '^  (ok|FAIL) ' <<<"$out" || bad "check_outputs.py $*" "no result" "$out"
}

"$MKTIFF" "$T/content.tif" 420 300 --tile 32 >/dev/null || { echo "cannot make the content TIFF"; exit 1; }
cat >"$T/out.ini" <<EOF
[content]
path = content.tif
[style]
path = $ROOT/configs/demo/style.png
[output]
path = out.png
format = tiff,hdf5,png
width = 300
height = 214
tile_size = 64
overwrite = true
[model]
random_width_divisor = 8
[optim]
iterations = 4
[tiling]
tile_size = 160
[run]
device = cpu
threads = 1
print_every = 0
EOF

# run NAME RANKS [--set ...]: renders T/NAME.{tif,h5,png} (the formats of the config)
run() { render_ranks out.ini "$1.png" "$2" "${@:3}"; }

# ---- the three formats on 1, 2 and 4 ranks -----------------------------------------------------
for n in 1 2 4; do
  run "r$n" "$n" || continue
  grep -q "read by region" "$T/r$n.log" && ok "r$n: the TIFF content is read by region on $n rank(s)" || bad "r$n: read by region" "" "$(cat "$T/r$n.log")"
  pycheck formats "$T/r$n" 8 64 deflate
done
pycheck same "$T/r1" "$T/r2"
pycheck same "$T/r1" "$T/r4"
if [ $readers -eq 1 ] && [ -f "$T/r2.tif" ]; then
  info=$(tiffinfo "$T/r2.tif" 2>&1) dump=$(tiffdump "$T/r2.tif" 2>&1) levels=$(grep -c '^  ok   TIFF: level' < <(/usr/bin/python3 "$CHECK" formats "$T/r2" 8 64) )
  grep -q "Tile Width: 64 Tile Length: 64" <<<"$info" && grep -q "Compression Scheme: AdobeDeflate" <<<"$info" && grep -q "Predictor" <<<"$info" \
    && ok "tiffinfo: 64x64 tiles, AdobeDeflate with a predictor" || bad "tiffinfo" "unexpected" "$info"
  grep -q "Version: 0x2a" <<<"$dump" && grep -q -E "SubIFD \(330\) (IFD|LONG)[^ ]* \([0-9]+\) $levels<" <<<"$dump" \
    && ok "tiffdump: classic TIFF (small output, auto), SubIFD tag with $levels reduced levels" || bad "tiffdump" "expected classic TIFF and $levels SubIFDs" "$dump"
  h5=$(h5dump -p -H "$T/r2.h5" 2>&1)
  grep -q "CHUNKED ( 64, 64, 3 )" <<<"$h5" && grep -q "SHUFFLE" <<<"$h5" && grep -q "DEFLATE" <<<"$h5" && grep -q 'DATASET "level1"' <<<"$h5" \
    && grep -q "STRPAD H5T_STR_NULLTERM" <<<"$h5" && grep -q 'ATTRIBUTE "CLASS"' <<<"$h5" \
    && ok "h5dump: /level0 and /level1.., chunked 64x64x3, SHUFFLE + DEFLATE, null-terminated fixed-length string attributes" \
    || bad "h5dump" "unexpected layout" "$h5"
fi

# ---- codecs and bit depths ----------------------------------------------------------------------
if run z16 2 --set output.bits=16 --set output.compression=zstd --set output.bigtiff=yes --set output.format=tiff,hdf5; then
  pycheck formats "$T/z16" 16 64 zstd
  [ $readers -eq 1 ] && { tiffdump "$T/z16.tif" 2>&1 | grep -q "Version: 0x2b" && ok "output.bigtiff = yes: tiffdump shows BigTIFF (0x2b)" || bad "BigTIFF" "not BigTIFF" "$(tiffdump "$T/z16.tif" | head -3)"; }
fi
if run lzw 2 --set output.compression=lzw --set output.format=tiff; then
  pycheck formats "$T/lzw" 8 64 lzw
  pycheck same "$T/lzw" "$T/r2"
fi
if run jpg 2 --set output.compression=jpeg --set output.quality=90 --set output.format=tiff; then
  pycheck formats "$T/jpg" 8 64 jpeg
  pycheck psnr "$T/jpg" "$T/r2" 90
fi
if run raw 1 --set output.compression=none --set output.format=tiff --set output.pyramid=false; then
  pycheck formats "$T/raw" 8 64 none 0
  pycheck same "$T/raw" "$T/r1" 1
fi

# ---- print-ready: resolution, the sRGB profile --------------------------------------------------
if [ $readers -eq 1 ]; then
  if run dpi 2 --set output.dpi=300 --set output.format=tiff,png; then
    pycheck print "$T/dpi" 300
    info=$(tiffinfo "$T/dpi.tif" 2>&1)
    grep -q "Resolution: 300, 300 pixels/inch" <<<"$info" && grep -q "ICC Profile: <present>, [0-9]* bytes" <<<"$info" \
      && ok "tiffinfo: $(grep -o 'Resolution: 300, 300 pixels/inch' <<<"$info" | head -n 1), $(grep -o 'ICC Profile: <present>, [0-9]* bytes' <<<"$info" | head -n 1)" \
      || bad "tiffinfo: resolution and ICC profile" "" "$info"
  fi
  run nodpi 1 --set output.format=tiff,png && pycheck print "$T/nodpi" 0
  # JPEG, as a stream of tile rows gathered from 2 ranks, against the PNG of the same render
  run jpg2 2 --set output.format=jpeg,png --set output.dpi=150 && pycheck jpeg "$T/jpg2" "$T/jpg2" 90 150
  run q75 1 --set output.format=jpeg --set output.quality=75 && pycheck jpeg "$T/q75" "$T/r1" 75 0
  # the only output a JPEG: so is the preview
  if [ -f "$T/q75.preview.jpg" ] && [ ! -e "$T/q75.preview.png" ] && [ "$(head -c 3 "$T/q75.preview.jpg" | od -An -tx1 | tr -d ' ')" = ffd8ff ]; then
    ok "the only output a JPEG: the preview is q75.preview.jpg (a JPEG)"
  else bad "JPEG preview" "" "$(ls "$T" | grep q75)"; fi
else
  skip "print-ready outputs" "$why"
fi

# ---- the cheap mode: blended overlaps, the same on any rank count -------------------------------
if run cheap1 1 --set tiling.mode=cheap --set tiling.tile_size=64 --set tiling.blend=linear --set tiling.blend_width=8 --set output.format=tiff \
   && run cheap2 2 --set tiling.mode=cheap --set tiling.tile_size=64 --set tiling.blend=linear --set tiling.blend_width=8 --set output.format=tiff \
   && run cheapw 2 --set tiling.mode=cheap --set tiling.tile_size=64 --set output.format=tiff; then
  grep -q "linear ramp of 8 px" "$T/cheap2.log" && ok "cheap mode: the log names the blend (linear ramp of 8 px)" || bad "cheap blend" "not named" "$(cat "$T/cheap2.log")"
  pycheck same "$T/cheap1" "$T/cheap2"
  if [ $readers -eq 1 ]; then
    /usr/bin/python3 "$CHECK" same "$T/cheap2" "$T/cheapw" | grep -q FAIL && ok "tiling.blend_width changes the blended pixels" || bad "blend width" "no effect"
  fi
fi

# ---- nothing half-written under a final name ----------------------------------------------------
"$MKTIFF" "$T/big.tif" 3000 2400 --tile 256 >/dev/null
printf 'an existing output\n' >"$T/keep.tif"
cp "$T/keep.tif" "$T/keep.orig"
( cd "$T" && exec "$NST" out.ini --set content.path=big.tif --set output.path=keep.tif --set output.format=tiff,hdf5 --set optim.iterations=0 \
    --set output.width=0 --set output.height=0 --set output.level=9 --set output.tile_size=128 --set output.preview=0 --set run.threads=1 \
    >"$T/kill.log" 2>&1 ) &
pid=$!
killed=0
# SIGKILL as soon as a temporary file has data in it, polled for as long as the render runs (it ends
# by itself: its own progress bounds the wait, not a number of seconds)
while kill -0 $pid 2>/dev/null; do
  if ls -a "$T" | grep -q '^\.keep\..*\.tmp$' && [ -n "$(find "$T" -maxdepth 1 -name '.keep.*.tmp' -size +1k)" ]; then
    kill -9 $pid 2>/dev/null && killed=1
    break
  fi
  sleep 0.02
done
wait $pid 2>/dev/null
if [ $killed -eq 1 ]; then
  cmp -s "$T/keep.tif" "$T/keep.orig" && [ ! -e "$T/keep.h5" ] \
    && ok "killed (SIGKILL) while writing: the existing keep.tif is untouched, no keep.h5 appeared (temporaries: $(ls -a "$T" | grep -c 'nstbatch-.*\.tmp'))" \
    || bad "killed while writing" "an output under its final name changed" "$(ls -la "$T")"
else
  bad "killed while writing" "never saw a temporary file being written" "$(cat "$T/kill.log")"
fi
rm -f "$T"/.keep.* "$T/keep.h5"

out=$(cd "$T" && NSTBATCH_FAULT=1:output "$IDLE" 120 mpirun --oversubscribe -np 2 "$NST" out.ini --set output.path=keep.tif 2>&1); status=$?
errors=$(grep -c '^nstbatch: error:' <<<"$out")
if [ $status -eq 1 ] && [ "$errors" -eq 1 ] && grep -q "injected fault while writing the output" <<<"$out" && cmp -s "$T/keep.tif" "$T/keep.orig" \
   && [ ! -e "$T/keep.h5" ] && [ ! -e "$T/keep.png" ] && [ ! -e "$T/keep.preview.png" ] && ! ls -a "$T" | grep -q 'nstbatch-.*\.tmp'; then
  ok "a rank failing mid-write: exit 1, one message, no output appears, the existing one is intact, no temporary left"
else
  bad "a rank failing mid-write" "status $status, $errors error lines" "$out
$(ls -la "$T")"
fi

finish

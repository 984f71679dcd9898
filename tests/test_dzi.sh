#!/usr/bin/env bash
# tests/test_dzi.sh: the Deep Zoom output (output.format = dzi), read back by readers we did not
# write, and nstbatch-dzi, which makes the same pyramid from a finished TIFF.
#
#   tests/test_dzi.sh NSTBATCH NSTBATCH_DZI MAKE_TEST_TIFF
#
# A small render (300x214, 64 px tiles, so the tiled levels have several tiles and seven more
# levels run down to 1x1) on 1 and 3 ranks: the same bytes; the descriptor, the levels and every
# tile's name and size as Deep Zoom defines them (OpenSeadragon's level sizes, ceil(size / 2^k));
# the same file set as `vips dzsave`; the pixels against the PNG and the TIFF's levels (JPEG tiles
# within JPEG's error, PNG tiles exactly, the levels below one tile the 2x2 rounded means); a
# 16-bit output's tiles rounded to 8 bits; a rank failing while writing leaves the previous
# pyramid whole and no temporary behind; nstbatch-dzi on the TIFF gives the render's own tiles,
# byte for byte, and refuses what it cannot convert with one line.
. "$(dirname "$0")/lib.sh" test_dzi
NST=$(readlink -f "$1") DZI=$(readlink -f "$2") MKTIFF=$(readlink -f "$3")

readers=1
/usr/bin/python3 -c 'import tifffile, numpy, PIL' 2>/dev/null || { readers=0; why="python3 tifffile/numpy/PIL missing (scripts/install-deps.sh --test)"; }
# py NAME SCRIPT ARGS...: a check in Python, passing when it prints "ok"
py() {
  local name=$1; shift
  if [ $readers -eq 0 ]; then skip "$name" "$why"; return; fi
  local out; out=$(/usr/bin/python3 - "$@" 2>&1)
  if [ "$(tail -n 1 <<<"$out")" = ok ]; then ok "$name${out:+: $(grep -v '^ok$' <<<"$out" | tr '\n' ' ')}"; else bad "$name" "" "$out"; fi
}

"$MKTIFF" "$T/content.tif" 420 300 --tile 32 >/dev/null || { echo "cannot make the content TIFF"; exit 1; }
cat >"$T/out.ini" <<EOF
[content]
path = content.tif
[style]
path = $ROOT/configs/demo/style.png
[output]
path = out.dzi
format = dzi,png,tiff
width = 300
height = 214
tile_size = 64
overwrite = true
[model]
random_width_divisor = 8
[optim]
iterations = 4
[tiling]
tile_size = 96
[run]
device = cpu
threads = 1
print_every = 0
EOF

# run NAME RANKS [--set ...]: renders T/NAME.dzi (and the config's other formats)
run() { render_ranks out.ini "$1.dzi" "$2" "${@:3}"; }

# ---- the pyramid: layout, ranks, pixels ----------------------------------------------------------
CHECK=$(cat <<'EOF'
import sys, os, math, re
import numpy as np, tifffile
from PIL import Image
stem, ext, exact = sys.argv[1], sys.argv[2], sys.argv[3] == "exact"
xml = open(stem + ".dzi").read()
m = re.search(r'Format="(\w+)" Overlap="(\d+)" TileSize="(\d+)"', xml); size = re.search(r'Width="(\d+)" Height="(\d+)"', xml)
assert m and size and 'xmlns="http://schemas.microsoft.com/deepzoom/2008"' in xml, xml
fmt, overlap, T = m.group(1), int(m.group(2)), int(m.group(3)); W, H = int(size.group(1)), int(size.group(2))
assert (fmt, overlap, T, W, H) == (ext, 0, 64, 300, 214), (fmt, overlap, T, W, H)
top = math.ceil(math.log2(max(W, H)))
levels = sorted(int(d) for d in os.listdir(stem + "_files"))
assert levels == list(range(top + 1)), levels
png = np.asarray(Image.open(stem + ".png").convert("RGB")).astype(np.int64)
tif = tifffile.TiffFile(stem + ".tif"); tlev = [tif.pages[0].asarray()] + [p.asarray() for p in tif.pages[0].pages]
img, worst = None, 99.0
for L in range(top, -1, -1):
    k = top - L; w, h = -(-W // 2**k), -(-H // 2**k); nx, ny = -(-w // T), -(-h // T)
    want = {f"{i}_{j}.{ext}" for i in range(nx) for j in range(ny)}
    have = set(os.listdir(f"{stem}_files/{L}"))
    assert have == want, (L, sorted(have ^ want))
    got = np.zeros((h, w, 3), np.int64)
    for i in range(nx):
        for j in range(ny):
            t = np.asarray(Image.open(f"{stem}_files/{L}/{i}_{j}.{ext}").convert("RGB")).astype(np.int64)
            tw, th = min(T, w - i * T), min(T, h - j * T)
            assert t.shape == (th, tw, 3), (L, i, j, t.shape)
            got[j * T:j * T + th, i * T:i * T + tw] = t
    # the truth: level 0 the PNG, tiled levels the TIFF's, below them the 2x2 rounded means
    if k < len(tlev): ref = tlev[k].astype(np.int64)
    else:
        a = img; hh, ww = a.shape[:2]
        pa = np.pad(a, ((0, hh % 2), (0, ww % 2), (0, 0)))
        cnt = np.pad(np.ones((hh, ww), np.int64), ((0, hh % 2), (0, ww % 2)))
        s = pa[0::2, 0::2] + pa[1::2, 0::2] + pa[0::2, 1::2] + pa[1::2, 1::2]
        n = (cnt[0::2, 0::2] + cnt[1::2, 0::2] + cnt[0::2, 1::2] + cnt[1::2, 1::2])[..., None]
        ref = (s + n // 2) // n
    if k == 0: assert (ref == png).all(), "the TIFF's level 0 is the PNG"
    img = ref
    if exact:
        assert (got == ref).all(), f"level {L}: {np.abs(got - ref).max()} off"
    elif w * h >= 256:
        mse = ((got - ref) ** 2).mean(); psnr = 10 * math.log10(255**2 / max(mse, 1e-9)); worst = min(worst, psnr)
        assert psnr > 26, f"level {L}: PSNR {psnr:.1f} dB"  # quality 90 on random-feature texture: 29.9 dB seen at level 0
print(f"levels 0..{top}" + ("" if exact else f", JPEG PSNR >= {worst:.1f} dB"))
print("ok")
EOF
)
for n in 1 3; do run "r$n" "$n"; done
if [ -f "$T/r1.dzi" ] && [ -f "$T/r3.dzi" ]; then
  if cmp -s "$T/r1.dzi" "$T/r3.dzi" && diff -r "$T/r1_files" "$T/r3_files" >/dev/null; then
    ok "1 and 3 ranks: the same descriptor and the same $(find "$T/r1_files" -type f | wc -l) tile files, byte for byte"
  else bad "1 and 3 ranks" "the pyramids differ" "$(diff -r "$T/r1_files" "$T/r3_files" | head)"; fi
  py "the Deep Zoom layout and JPEG tiles (3 ranks)" "$T/r3" jpg approx <<<"$CHECK"
  ls -a "$T" | grep -q 'nstbatch-' && bad "no temporaries left" "" "$(ls -a "$T")" || ok "no temporary file or folder left"
fi
run p2 2 --set output.dzi_tiles=png && py "PNG tiles: every level exactly the PNG, the TIFF's levels and their halvings" "$T/p2" png exact <<<"$CHECK"

# the same file set as libvips' own Deep Zoom writer
if command -v vips >/dev/null && [ -f "$T/r1.png" ]; then
  vips dzsave "$T/r1.png" "$T/vref" --tile-size 64 --overlap 0 --suffix '.jpg[Q=90]' 2>/dev/null
  if diff <(cd "$T/r1_files" && find . | sort) <(cd "$T/vref_files" && find . ! -name vips-properties.xml | sort) >/dev/null \
     && grep -q 'TileSize="64"' "$T/vref.dzi" && grep -q 'Height="214"' "$T/vref.dzi"; then
    ok "vips dzsave makes the same levels and tile names"
  else bad "vips dzsave" "different file sets" "$(diff <(cd "$T/r1_files" && find . | sort) <(cd "$T/vref_files" && find . | sort) | head)"; fi
else skip "vips dzsave comparison" "vips missing"; fi

# 16-bit: the tiles are the 16-bit samples rounded to 8 bits
if run b16 2 --set output.bits=16 --set output.format=dzi,tiff --set output.dzi_tiles=png; then
  py "16-bit output: its Deep Zoom tiles are v * 255 / 65535 rounded" "$T/b16" <<'EOF'
import sys, numpy as np, tifffile
from PIL import Image
stem = sys.argv[1]
v = tifffile.imread(stem + ".tif").astype(np.int64)
assert v.max() > 255, v.max()
t = np.asarray(Image.open(stem + "_files/9/1_1.png").convert("RGB")).astype(np.int64)
want = (v[64:128, 64:128] * 255 + 32767) // 65535
assert (t == want).all(), np.abs(t - want).max()
print("ok")
EOF
fi

# ---- nothing half-written: a rank failing while writing ------------------------------------------
if [ -f "$T/r1.dzi" ]; then
  cp -a "$T/r1_files" "$T/keep_files" && cp "$T/r1.dzi" "$T/keep.dzi"
  out=$(cd "$T" && NSTBATCH_FAULT=1:output "$IDLE" 300 mpirun --oversubscribe -np 2 "$NST" out.ini --set output.path=r1.dzi --set optim.iterations=1 2>&1); status=$?
  if [ $status -ne 0 ] && cmp -s "$T/r1.dzi" "$T/keep.dzi" && diff -r "$T/r1_files" "$T/keep_files" >/dev/null && ! ls -a "$T" | grep -q 'nstbatch-'; then
    ok "a rank failing while writing (exit $status): the earlier r1.dzi and r1_files intact, no temporary left"
  else bad "a rank failing while writing" "exit $status; the earlier pyramid changed or a temporary is left" "$(ls -a "$T"; echo "$out" | tail -3)"; fi
  if run r1 1 --set optim.iterations=2 && ! diff -r "$T/r1_files" "$T/keep_files" >/dev/null && ! ls -a "$T" | grep -q 'nstbatch-'; then
    ok "output.overwrite: a new render replaces the pyramid, and the old folder is gone"
  else bad "overwrite" "the pyramid was not replaced, or a temporary is left" "$(ls -a "$T")"; fi
fi

# ---- nstbatch-dzi: the pyramid from a finished TIFF ------------------------------------------------
if [ -f "$T/r3.tif" ]; then
  mkdir -p "$T/conv" && cp "$T/r3.tif" "$T/conv/r3.tif"
  out=$("$DZI" "$T/conv/r3.tif" 2>&1); status=$?
  if [ $status -eq 0 ] && cmp -s "$T/conv/r3.dzi" "$T/r3.dzi" && diff -r "$T/conv/r3_files" "$T/r3_files" >/dev/null; then
    ok "nstbatch-dzi r3.tif: the render's own descriptor and tiles, byte for byte ($(tail -n 1 <<<"$out"))"
  else bad "nstbatch-dzi" "exit $status or different files" "$out$(diff -r "$T/conv/r3_files" "$T/r3_files" | head -5)"; fi
  out=$("$DZI" "$T/conv/r3.tif" 2>&1); status=$?
  [ $status -eq 2 ] && [ "$(grep -c 'error' <<<"$out")" -eq 1 ] && grep -q 'r3.dzi: output exists; use --overwrite to replace it' <<<"$out" \
    && ok "nstbatch-dzi refuses to replace a pyramid without --overwrite: $out" || bad "nstbatch-dzi without --overwrite" "exit $status" "$out"
  "$DZI" "$T/conv/r3.tif" "$T/conv/p.dzi" --tiles png >/dev/null 2>&1 && cmp -s "$T/conv/p_files/0/0_0.png" "$T/p2_files/0/0_0.png" \
    && ok "nstbatch-dzi --tiles png: the render's PNG tiles" || bad "nstbatch-dzi --tiles png" "" "$(ls "$T/conv")"
  # a TIFF without reduced levels: every level halved from the one above, the same bytes again
  if run np 2 --set output.format=tiff,dzi --set output.pyramid=false && "$DZI" "$T/np.tif" "$T/conv/np.dzi" >/dev/null 2>&1 \
     && diff -r "$T/conv/np_files" "$T/np_files" >/dev/null; then ok "nstbatch-dzi on a TIFF without reduced levels (output.pyramid = false): the render's tiles"
  else bad "nstbatch-dzi without reduced levels" "different tiles" "$(ls "$T/conv")"; fi
  # a JPEG-compressed TIFF (YCbCr tiles, decoded to RGB on every level): near the PNG, not its chroma planes
  if run jt 2 --set output.format=tiff,png --set output.compression=jpeg && "$DZI" "$T/jt.tif" "$T/conv/jt.dzi" >/dev/null 2>&1; then
    py "nstbatch-dzi on a JPEG-compressed TIFF: every tiled level near the PNG's" "$T/conv/jt" "$T/jt.png" <<'EOF'
import sys, numpy as np
from PIL import Image
stem, png = sys.argv[1], sys.argv[2]
a = np.asarray(Image.open(png).convert("RGB")).astype(float)
worst = 0
for level, f in ((9, 1), (8, 2)):  # the image, and the TIFF's first reduced level against the PNG's 2x2 means
    ref = a if f == 1 else (a[:a.shape[0] // 2 * 2:2, :a.shape[1] // 2 * 2:2] + a[1::2, 1::2][:a.shape[0] // 2, :a.shape[1] // 2]
                             + a[:a.shape[0] // 2 * 2:2, 1::2][:, :a.shape[1] // 2] + a[1::2, :a.shape[1] // 2 * 2:2][:a.shape[0] // 2]) / 4
    t = np.asarray(Image.open(f"{stem}_files/{level}/1_1.jpg").convert("RGB")).astype(float)
    r = ref[64:64 + t.shape[0], 64:64 + t.shape[1]]
    worst = max(worst, abs(r - t[:r.shape[0], :r.shape[1]]).mean())
assert worst < 12, f"mean abs error {worst:.1f} (YCbCr read as RGB gives about 43)"
print(f"mean abs error at most {worst:.1f} / 255 (two JPEG generations at quality 90)")
print("ok")
EOF
  else bad "nstbatch-dzi on a JPEG-compressed TIFF" "the render or the conversion failed" "$(ls "$T/conv")"; fi
  head -c 3000 "$T/r3.tif" >"$T/conv/cut.tif"
  for c in "missing|$T/conv/none.tif|none.tif: cannot open" "truncated|$T/conv/cut.tif|cut.tif: " "not a TIFF|$T/out.ini|out.ini: "; do
    IFS='|' read -r what file frag <<<"$c"
    out=$("$DZI" "$file" "$T/conv/x.dzi" 2>&1); status=$?
    if [ $status -eq 2 ] && [ "$(wc -l <<<"$out")" -eq 1 ] && grep -q -F "$frag" <<<"$out" && [ ! -e "$T/conv/x.dzi" ] && [ ! -e "$T/conv/x_files" ] \
       && ! ls -a "$T/conv" | grep -q nstbatch-; then ok "nstbatch-dzi, $what input: exit 2, one line, nothing written: $out"
    else bad "nstbatch-dzi, $what input" "exit $status" "$out"; fi
  done
  "$MKTIFF" "$T/conv/strips.tif" 100 80 --strip 16 >/dev/null 2>&1 && { out=$("$DZI" "$T/conv/strips.tif" 2>&1); status=$?
    [ $status -eq 2 ] && grep -q 'not tiled' <<<"$out" && ok "nstbatch-dzi, a striped TIFF: $out" || bad "nstbatch-dzi, striped TIFF" "exit $status" "$out"; }
fi

finish

#!/usr/bin/env bash
# tests/test_cli.sh: the command line end to end, and the table of bad inputs.
#
#   tests/test_cli.sh NSTBATCH [LABEL]
#
# Every bad config, flag, image and weight file must give exit status 2 (1 for runtime
# failures), exactly one "nstbatch: error:" line containing the expected text, no sanitizer
# report, no crash, and leave no output or temporary file behind. make test runs this table
# with the normal build and with the ASan+UBSan build (build/asan/nstbatch).
. "$(dirname "$0")/lib.sh" "${2:-test_cli}" # (the ASan build's run is test_cli_asan)
NST=$(readlink -f "$1")
BAD_LINES="head -n 12" # a failure shows a sanitizer report's first lines: the error and its top frames
trap 'kill ${live_pid:-} 2>/dev/null; rm -rf "$T"' EXIT # (live_pid: the living singleton below)
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1} UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}

# case NAME EXPECTED_STATUS FRAGMENT -- ARGS...
case_() {
  local name=$1 want=$2 frag=$3; shift 4
  local out status
  out=$(cd "$T" && "$IDLE" 120 "$@" 2>&1); status=$?
  local errors; errors=$(grep -c '^nstbatch: error:' <<<"$out")
  if [ "$status" -ne "$want" ]; then bad "$name" "exit status $status, expected $want" "$out"; return; fi
  if grep -q -E 'AddressSanitizer|runtime error|LeakSanitizer|Segmentation|core dumped' <<<"$out"; then bad "$name" "sanitizer report or crash" "$out"; return; fi
  if [ "$want" -ne 0 ] && [ "$errors" -ne 1 ]; then bad "$name" "$errors error lines, expected 1" "$out"; return; fi
  if ! grep -q -F -- "$frag" <<<"$out"; then bad "$name" "output lacks '$frag'" "$out"; return; fi
  if ls -a "$T" | grep -q 'nstbatch-.*\.tmp'; then bad "$name" "a temporary file was left behind" "$(ls -a "$T")"; return; fi
  if [ "$want" -ne 0 ] && [ -e "$T/out.png" -o -e "$T/out.preview.png" ]; then bad "$name" "an output was written" "$(ls "$T")"; rm -f "$T/out.png" "$T/out.preview.png"; return; fi
  ok "$name"
}

# ---- fixtures ------------------------------------------------------------------------------------
cp "$ROOT/configs/demo/content.png" "$T/content.png"
cp "$ROOT/configs/demo/style.png" "$T/style.png"
"$NST" --make-weights random "$T/w.h5" --width-divisor 16 >/dev/null || { echo "cannot make weights"; exit 1; }
base() { # a valid config, with extra lines appended (then run.device = cpu, last: the cases' line numbers stay)
  { printf '[content]\npath = content.png\n[style]\npath = style.png\n[output]\npath = out.png\n'
    printf '[model]\nweights = w.h5\n[optim]\niterations = 2\n'
    printf '%b' "${1:-}"; printf '[run]\ndevice = cpu\n'; } >"$T/$2"
}
head -c 4000 "$T/content.png" >"$T/trunc.png"
printf 'not an image at all\n' >"$T/text.png"
head -c 3000 "$T/w.h5" >"$T/trunc.h5"
mkdir -p "$T/adir"
# A little-endian TIFF whose header claims 1,000,000 x 1,000,000 RGB pixels in one 16-byte strip:
# refused before any allocation (a float image of it would need 12 TB).
printf 'II*\0\010\0\0\0\010\0'\
'\0\1\4\0\1\0\0\0\100\102\17\0'\
'\1\1\4\0\1\0\0\0\100\102\17\0'\
'\2\1\3\0\1\0\0\0\10\0\0\0'\
'\6\1\3\0\1\0\0\0\2\0\0\0'\
'\21\1\4\0\1\0\0\0\156\0\0\0'\
'\25\1\3\0\1\0\0\0\3\0\0\0'\
'\26\1\4\0\1\0\0\0\100\102\17\0'\
'\27\1\4\0\1\0\0\0\20\0\0\0'\
'\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0' >"$T/huge.tif"
"$NST" --make-weights random "$T/w_prefix.h5" --width-divisor 16 >/dev/null

# ---- good uses ---------------------------------------------------------------------------------------
case_ "help" 0 "optim.iterations" -- "$NST" --help
case_ "version" 0 "nstbatch 0.1.0" -- "$NST" --version
base "" ok.ini
case_ "print-config applies --set" 0 "iterations = 7" -- "$NST" ok.ini --print-config --set optim.iterations=7
case_ "make-weights refuses to overwrite" 2 "--make-weights: w.h5 exists; add --force to replace it" -- "$NST" --make-weights random w.h5
out=$(cd "$T" && "$NST" --make-weights random w.h5 2>&1)
if ! grep -q 'output.overwrite' <<<"$out"; then ok "make-weights onto a file: no hint about output.overwrite"; else bad "make-weights hint" "a hint about output.overwrite" "$out"; fi
# --print-config from elsewhere: paths absolute (the copy reads the same files wherever it goes),
# numbers in their shortest exact form
mkdir -p "$T/elsewhere"
(cd "$T/elsewhere" && "$NST" ../ok.ini --print-config --set optim.lr=0.9) >"$T/elsewhere/printed.ini" 2>&1
if grep -qx "path = $T/content.png" "$T/elsewhere/printed.ini" && grep -qx 'lr = 0.9' "$T/elsewhere/printed.ini" && grep -qx 'beta1 = 0.9' "$T/elsewhere/printed.ini"; then
  ok "print-config writes absolute paths and 0.9 as 0.9"
else bad "print-config paths and numbers" "" "$(grep -E '^(path|lr|beta1) =' "$T/elsewhere/printed.ini")"; fi
mv "$T/elsewhere/printed.ini" "$T/moved.ini"
case_ "a printed config still reads the same files after it moves" 0 "path = $T/content.png" -- "$NST" moved.ini --print-config
# random weights: the hint rides on the model line, which -q silences
out=$(cd "$T" && "$NST" -q ok.ini --set model.weights= --set optim.iterations=1 --set output.size=64 --set output.path=q.png 2>&1); rc=$?
if [ $rc -eq 0 ] && [ -z "$out" ]; then ok "random weights under -q: nothing printed"; else bad "random weights under -q" "exit $rc" "$out"; fi
out=$(cd "$T" && "$NST" ok.ini --set model.weights= --set optim.iterations=1 --set output.size=64 --set output.path=q.png --set output.overwrite=true 2>&1)
if [ "$(grep -c 'make weights' <<<"$out")" = 1 ] && grep -q '^model: .*random VGG-19.*`make weights` gives the real look' <<<"$out"; then
  ok "random weights: one short hint, on the model line"
else bad "random weights hint" "" "$(grep -n 'weights\|random' <<<"$out")"; fi
rm -f "$T/q.png" "$T/q.preview.png"
case_ "a short render" 0 "wrote out.png (64x43, 8-bit)" -- "$NST" ok.ini --set optim.iterations=3 --set output.size=64 --set output.overwrite=true
cp "$T/out.png" "$T/first.png"
case_ "a second identical run" 0 "wrote out.png" -- "$NST" ok.ini --set optim.iterations=3 --set output.size=64 --set output.overwrite=true
if cmp -s "$T/first.png" "$T/out.png"; then ok "two identical runs write identical files"; else bad "two identical runs write identical files" "outputs differ"; fi
rm -f "$T/out.png" "$T/out.preview.png" "$T/first.png"

# ---- docs/CONFIGURATION.md documents every key ---------------------------------------------------
undocumented=""
section=""
while IFS= read -r line; do
  case "$line" in
    \[*\]) section=${line#[}; section=${section%]} ;;
    *" = "*) key="$section.${line%% = *}"; grep -q -F "\`$key\`" "$ROOT/docs/CONFIGURATION.md" || grep -q -F "$key\`" "$ROOT/docs/CONFIGURATION.md" || undocumented="$undocumented $key" ;;
  esac
done < <("$NST" --print-config)
if [ -z "$undocumented" ]; then ok "docs/CONFIGURATION.md documents every config key"; else bad "docs/CONFIGURATION.md documents every config key" "missing:$undocumented"; fi

# ---- configs -----------------------------------------------------------------------------------------
printf '[optm]\n' >"$T/c1.ini"; case_ "unknown section" 2 "c1.ini:1: unknown section [optm] (did you mean [optim]?)" -- "$NST" c1.ini
base '[optim]\niteration = 5\n' c2.ini; case_ "unknown key" 2 "did you mean 'optim.iterations'?" -- "$NST" c2.ini
base '[run]\nseed = ten\n' c3.ini; case_ "wrong type" 2 "c3.ini:12: run.seed = 'ten': expected an integer" -- "$NST" c3.ini
printf '[optim]\nlr = 100\n' >"$T/c4.ini"; case_ "out of range" 2 "c4.ini:2: optim.lr = '100': expected a number in [1e-09, 10]" -- "$NST" c4.ini
printf '[run]\ndevice = gpu\n' >"$T/c5.ini"; case_ "bad enum" 2 "expected one of auto, cpu, cuda" -- "$NST" c5.ini
printf '[optim]\nthis is not ini\n' >"$T/c6.ini"; case_ "malformed line" 2 "c6.ini:2: malformed line" -- "$NST" c6.ini
{ printf '[content]\npath = '; head -c 5000 /dev/zero | tr '\0' 'a'; printf '\n'; } >"$T/c7.ini"
case_ "over-long line" 2 "c7.ini:2: line longer than 4095 bytes" -- "$NST" c7.ini
printf '[optim]\nlr = 0.1\nlr = 0.2\n' >"$T/c8.ini"; case_ "duplicate key" 2 "set twice (first at line 2)" -- "$NST" c8.ini
printf 'content.path = content.png\n' >"$T/c12.ini"
case_ "--set's form in a file" 2 "c12.ini:1: 'content.path' is the form of --set and of job sections; in a config file write 'path = ...' on a line under [content]" -- "$NST" c12.ini
printf '[output]\niterations = 5\n' >"$T/c13.ini"
case_ "a key of other sections" 2 "c13.ini:2: unknown key 'iterations' in [output] (did you mean 'iterations' under [video], or 'iterations' under [optim], or 'iterations' under [pyramid]?)" -- "$NST" c13.ini
base '[run]\nprint_every = 1\n[output]\noverwrite = True\n' c14.ini
case_ "booleans in any case (True, NO)" 0 "pyramid = false" -- "$NST" c14.ini --print-config --set output.pyramid=NO
base '[model]\n' c15.ini; sed -i 's/^weights = w.h5$/weights = models\/vgg19.h5/' "$T/c15.ini"
case_ "missing weights: the line, the reason, what to do" 2 "c15.ini:8: model.weights: models/vgg19.h5: cannot open: No such file or directory; run \`make weights\`" -- "$NST" c15.ini
base '' c16.ini; sed -i 's/^path = content.png$/path = nope.png/' "$T/c16.ini"
case_ "missing content: the line" 2 "c16.ini:2: content.path: nope.png: cannot open: No such file or directory" -- "$NST" c16.ini
printf '[style]\npath = style.png\n[output]\npath = out.png\n' >"$T/c9.ini"; case_ "missing content.path" 2 "content.path is not set" -- "$NST" c9.ini
base '[style]\nlayers = relu1_1,relu6_1\n' c10.ini; case_ "unknown layer" 2 "style.layers: unknown layer 'relu6_1'" -- "$NST" c10.ini
base '[style]\nlayer_weights = 1,2\n' c11.ini; case_ "layer weights count" 2 "2 values for 5 style layers" -- "$NST" c11.ini
case_ "output format" 2 "valid extensions: .tif, .tiff, .h5, .hdf5, .png, .jpg, .jpeg" -- "$NST" ok.ini --set output.path=out.bmp
case_ "output directory missing" 2 "output directory nowhere does not exist" -- "$NST" ok.ini --set output.path=nowhere/out.png
case_ "unknown output format" 2 "output.format: unknown format 'gif'; valid: tiff, hdf5, png, jpeg, dzi" -- "$NST" ok.ini --set output.format=tiff,gif
case_ "output without extension or format" 2 "unknown format; valid extensions: .tif, .tiff, .h5, .hdf5, .png, .jpg, .jpeg, .dzi (or set output.format)" -- "$NST" ok.ini --set output.path=result
case_ "jpeg compression with only a PNG output" 2 "output.compression = jpeg applies to TIFF outputs only, and this run writes none (PNG): remove the key, or add tiff to output.format" -- "$NST" ok.ini --set output.compression=jpeg
case_ "a 16-bit JPEG output" 2 "output.bits = 16, but a JPEG holds 8 bits per sample: set output.bits = 8" -- "$NST" ok.ini --set output.path=out.jpg --set output.bits=16
case_ "a JPEG wider than JPEG allows" 2 "the output is 70000x64, but a JPEG side is at most 65535 px: write TIFF" -- "$NST" ok.ini --set output.path=out.jpg --set output.width=70000 --set output.height=64
case_ "jpeg at 16 bits" 2 "output.bits: jpeg compression needs 8 bits per sample" -- "$NST" ok.ini --set output.format=tiff --set output.compression=jpeg --set output.bits=16
mkdir -p "$T/dz" && touch "$T/dz/in_files"
case_ "a file where the Deep Zoom tiles go" 2 "dz/in_files: a file is in the way of the folder: move it away" -- "$NST" ok.ini --set output.path=dz/in.dzi --set output.overwrite=true
mkdir -p "$T/dz/old_files"
case_ "an existing Deep Zoom tile folder" 2 "dz/old_files: output exists; set output.overwrite = true to replace it" -- "$NST" ok.ini --set output.path=dz/old.dzi --set output.overwrite=false
case_ "PNG Deep Zoom tiles without a Deep Zoom output" 2 "output.dzi_tiles = png applies to a Deep Zoom output only, and this run writes none" -- "$NST" ok.ini --set output.dzi_tiles=png
case_ "output tile off 16" 2 "output.tile_size = 100: must be a multiple of 16" -- "$NST" ok.ini --set output.format=tiff --set output.tile_size=100
case_ "deflate level 15" 2 "output.level = 15: deflate levels are 1 to 9" -- "$NST" ok.ini --set output.level=15
case_ "zstd level with a deflate PNG" 2 "is a zstd level, but the PNG output is deflate-compressed" -- "$NST" ok.ini --set output.format=tiff,png --set output.compression=zstd --set output.level=15
case_ "classic TIFF too small for the output" 2 "output.bigtiff = no, but the 60000x40000 output is 9.6 GB uncompressed" -- "$NST" ok.ini --set output.format=tiff --set output.bigtiff=no --set output.width=60000 --set output.height=40000
case_ "PNG above the whole-image limit" 2 "above input.max_whole_megapixels = 0.01; PNG and JPEG are decoded whole" -- "$NST" ok.ini --set input.max_whole_megapixels=0.01
printf 'x' >"$T/out.h5"
case_ "an existing HDF5 output" 2 "out.h5: output exists; set output.overwrite = true" -- "$NST" ok.ini --set output.format=png,hdf5
rm -f "$T/out.h5"
cp "$T/content.png" "$T/exists.png"
case_ "output exists" 2 "set output.overwrite = true" -- "$NST" ok.ini --set output.path=exists.png
case_ "config missing" 2 "cannot open config file" -- "$NST" missing.ini
case_ "config is a directory" 2 "cannot read config file" -- "$NST" adir
head -c 300 "$T/w.h5" >"$T/binary.ini"; case_ "binary config" 2 "binary.ini:1: malformed line" -- "$NST" binary.ini
printf '[optim]\nlr = 0.1\0\n' >"$T/nul.ini"; case_ "NUL in a config" 2 "nul.ini:2: line contains a NUL byte" -- "$NST" nul.ini
case_ "init image without path" 2 "optim.init = image needs optim.init_path" -- "$NST" ok.ini --set optim.init=image
case_ "size and width" 2 "cannot be combined" -- "$NST" ok.ini --set output.size=64 --set output.width=50

# ---- flags ---------------------------------------------------------------------------------------------
case_ "unknown option" 2 "unknown option '--iterations'" -- "$NST" ok.ini --iterations 5
case_ "malformed --set" 2 "expected SECTION.KEY=VALUE" -- "$NST" ok.ini --set iterations
case_ "--set type error" 2 "--set optim.iterations: optim.iterations = 'x'" -- "$NST" ok.ini --set optim.iterations=x
case_ "two config files" 2 "more than one config file" -- "$NST" ok.ini ok.ini
case_ "no config" 2 "no config file given" -- "$NST"
case_ "bad width divisor" 2 "expected 1, 2, 4, 8, 16, 32 or 64" -- "$NST" --make-weights random x.h5 --width-divisor 5
# (where a GPU is usable, run.device = cuda renders: that is test_gpu_render.sh's)
if "$NST" --version | grep -q 'GPUs visible now: [1-9]'; then
  skip "cuda without a GPU: this host has a GPU"
else
  case_ "cuda without a GPU" 2 "run.device = cuda" -- "$NST" ok.ini --set run.device=cuda
fi

# ---- images --------------------------------------------------------------------------------------------
case_ "truncated content" 2 "content.path: trunc.png: corrupt PNG" -- "$NST" ok.ini --set content.path=trunc.png
case_ "style not an image" 2 "style.path: text.png: not a PNG, JPEG or TIFF" -- "$NST" ok.ini --set style.path=text.png
# a file whose name has a comma (a painting's "Monet, Water Lilies.png") is named, with what to do,
# rather than "Monet: cannot open"
cp "$T/style.png" "$T/Monet, Water Lilies.png"
case_ "style file with a comma in its name" 2 "'Monet, Water Lilies.png' is one file whose name has a comma, but style.path splits at commas: give it a name without one (ln -s" \
  -- "$NST" ok.ini --set style.path="style.png, Monet, Water Lilies.png"
case_ "mask file with a comma in its name" 2 "'Monet, Water Lilies.png' is one file whose name has a comma, but style.masks splits" \
  -- "$NST" ok.ini --set style.masks="Monet, Water Lilies.png"
# ... its link to make is the file's absolute path as one shell word (an apostrophe too), so it
# works from any folder: here the config's folder is not the current one
mkdir -p "$T/cfgdir"; cp "$T/style.png" "$T/cfgdir/it's, odd.png"
base "" cfgdir/a.ini; sed -i "s|^path = style.png|path = style.png, it's, odd.png|" "$T/cfgdir/a.ini"
shq() { printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"; } # as one shell word
case_ "comma file named from another folder, its link quoted" 2 "cfgdir/a.ini:4: 'it's, odd.png' is one file whose name has a comma, but style.path splits at commas: give it a name without one (ln -s $(shq "$(readlink -f "$T/cfgdir")/it's, odd.png") NEWNAME) and list that" \
  -- "$NST" cfgdir/a.ini
# ... the file as listed, not where its link leads (here a folder with a newline: still one line)
mkdir -p "$T/t"$'\n'"gt"; cp "$T/style.png" "$T/t"$'\n'"gt/real.png"; ln -s "$T/t"$'\n'"gt/real.png" "$T/Link, W.png"
case_ "comma file that is a link: the link named" 2 "(ln -s $(shq "$(readlink -f "$T")/Link, W.png") NEWNAME) and list that" \
  -- "$NST" ok.ini --set style.path="style.png, Link, W.png"
# ... and no advice where the message could not hold it whole (a path of about 1400 bytes, twice)
deep=$T; for i in 1 2 3 4 5 6 7; do deep=$deep/$(printf 'd%.0s' $(seq 200)); done
mkdir -p "$deep" && cp "$T/style.png" "$deep/A, B.png"
case_ "comma file in a deep folder: no advice cut in its quotes" 2 "is one file whose name has a comma, but style.path splits at commas: give it a name without one and list that" \
  -- "$NST" ok.ini --set style.path="style.png, $deep/A, B.png"
# a long list of missing files (as many as the value's 4095 bytes hold, about 680): a stat an item
# and a bounded number of joins, not one for every pair (about 230000)
# (strace may exist where tracing is not allowed: a container without ptrace, Yama's scope 3)
if ! command -v strace >/dev/null; then skip "the stats of a long list of missing files" "no strace"
elif ! strace -f -c -o /dev/null true 2>/dev/null; then skip "the stats of a long list of missing files" "strace cannot trace here (ptrace not allowed)"
else
  many=$(printf '/n/x,%.0s' $(seq 700))
  stats=$(cd "$T" && strace -f -c -e trace='?stat,?newfstatat,?statx,?fstatat64,?stat64' "$NST" ok.ini --print-config --set style.path="${many}style.png" 2>&1 >/dev/null | awk '$NF ~ /stat/ {s += $4} END {print s + 0}')
  [ "$stats" -gt 0 ] && [ "$stats" -lt 2000 ] && ok "a value full of missing files: $stats stats (a stat each and a bounded number of joins)" ||
    bad "the stats of a value full of missing files" "$stats (a join for every pair would be about 230000)"
fi
case_ "huge TIFF header" 2 "1000000x1000000 = 1000000.0 megapixels" -- "$NST" ok.ini --set content.path=huge.tif
case_ "content is a directory" 2 "not a regular file" -- "$NST" ok.ini --set content.path=adir
case_ "content missing" 2 "content.path: missing.png: cannot open" -- "$NST" ok.ini --set content.path=missing.png
case_ "max megapixels" 2 "above input.max_megapixels = 0.001" -- "$NST" ok.ini --set input.max_megapixels=0.001
case_ "style scale too large" 2 "style.scale = 100 makes the style image" -- "$NST" ok.ini --set style.scale=100 --set input.max_megapixels=1
case_ "output too small" 2 "needs at least 16x16" -- "$NST" ok.ini --set output.size=8

# ---- masks ---------------------------------------------------------------------------------------------
# (fixtures drawn with vips, a writer we did not write: gray, the content's 384x256 or another shape)
vips black "$T/black.png" 384 256 && vips linear "$T/black.png" "$T/white.png" 1 255 --uchar && vips black "$T/wide.png" 400 100 &&
  head -c 300 "$T/white.png" >"$T/trunc_mask.png" || echo "  (vips could not draw the mask fixtures)"
base '[style]\nmasks = white.png, black.png\n' m1.ini
case_ "style.masks: two masks for one style image" 2 "m1.ini:12: style.masks lists 2 masks for 1 style image (m1.ini:4): give one mask per style image, in style.path's order" -- "$NST" m1.ini
base '[style]\nmasks = nope.png\n' m2.ini
case_ "style.masks: a missing mask, its line" 2 "m2.ini:12: style.masks: nope.png: cannot open: No such file or directory" -- "$NST" m2.ini
case_ "style.masks: a colour mask" 2 "the mask content.png is RGB, 8-bit PNG: a mask is a grayscale image" -- "$NST" ok.ini --set style.masks=content.png
case_ "style.masks: another aspect than the content's" 2 "the mask wide.png is 400x100 and the content 384x256: a mask covers the content, so it needs the content's aspect (resize it to 400x267" -- "$NST" ok.ini --set style.masks=wide.png
case_ "style.masks: a truncated mask" 2 "style.masks: trunc_mask.png: corrupt PNG" -- "$NST" ok.ini --set style.masks=trunc_mask.png
case_ "style.masks: not an image" 2 "style.masks: text.png: not a PNG, JPEG or TIFF" -- "$NST" ok.ini --set style.masks=text.png
case_ "content.mask: missing" 2 "content.mask: missing.png: cannot open" -- "$NST" ok.ini --set content.mask=missing.png
case_ "content.mask: a colour mask" 2 "content.mask: the mask style.png is RGB" -- "$NST" ok.ini --set content.mask=style.png
case_ "content.mask: a directory" 2 "not a regular file" -- "$NST" ok.ini --set content.mask=adir
case_ "masks render" 0 "wrote out.png" -- "$NST" ok.ini --set style.masks=white.png --set content.mask=black.png --set output.size=64 --set output.overwrite=true
rm -f "$T/out.png" "$T/out.preview.png"

# ---- weights -------------------------------------------------------------------------------------------
case_ "truncated weights" 2 "model.weights: trunc.h5" -- "$NST" ok.ini --set model.weights=trunc.h5
case_ "weights not HDF5" 2 "not an HDF5 file" -- "$NST" ok.ini --set model.weights=text.png
case_ "weights missing" 2 "model.weights: missing.h5: cannot open" -- "$NST" ok.ini --set model.weights=missing.h5

# ---- a singleton's MPI session ----------------------------------------------------------------------
# Without a launcher, Open MPI's isolated singletons all share one session path (TMPDIR/ompi.HOST.UID/
# jf.0), which one that ends removes under another that starts (MPI_Init then fails): each run must
# keep its session under a base of its own, TMPDIR/nstbatch-mpi.*, and leave TMPDIR empty
# session NAME BASE ENV...: a render without a launcher with ENV (TMPDIR, OMPI_MCA_orte_tmpdir_base);
# what BASE holds while it runs in $seen (bounded by the render's log growing), its status in $st
session() {
  local name=$1 base=$2; shift 2
  mkdir -p "$T/tmpd" "$base"
  (cd "$T" && env "$@" "$IDLE" 120 "$NST" ok.ini --set optim.iterations=40 --set output.size=64 --set output.overwrite=true >"$T/$name.log" 2>&1) &
  seen=""
  sessions() { seen=$(cd "$base" && ls -d nstbatch-mpi.*/ompi.*/jf.0 ompi.* 2>/dev/null | tr '\n' ' '); [ -n "$seen" ]; }
  grown_wait 120 "$T/$name.log" sessions
  seen=${seen% }
  wait $!; st=$?
}
session single "$T/tmpd" -u OMPI_MCA_orte_tmpdir_base TMPDIR="$T/tmpd"
left=$(ls -A "$T/tmpd")
if [ $st -eq 0 ] && [[ "$seen" == nstbatch-mpi.*/ompi.*/jf.0 ]] && [ -z "$left" ]; then
  ok "a singleton's MPI session under a base of its own ($seen), TMPDIR left empty"
else bad "a singleton's MPI session" "exit $st, seen '$seen', left '$left'" "$(tail -n 5 "$T/single.log")"; fi
# with a base set (OMPI_MCA_orte_tmpdir_base, as make test's suites run): under it, still its own
session based "$T/based" OMPI_MCA_orte_tmpdir_base="$T/based" TMPDIR="$T/tmpd"
left="$(ls -A "$T/based")$(ls -A "$T/tmpd")"
if [ $st -eq 0 ] && [[ "$seen" == nstbatch-mpi.*/ompi.*/jf.0 ]] && [ -z "$left" ]; then
  ok "with OMPI_MCA_orte_tmpdir_base set: the session under a base of its own inside it ($seen), both folders left empty"
else bad "a singleton's MPI session with a base set" "exit $st, seen '$seen', left '$left'" "$(tail -n 5 "$T/based.log")"; fi
rm -f "$T/out.png" "$T/out.preview.png"
# A killed singleton cannot remove its base: the next singleton on the host removes it (its .owner
# lock no longer held), and leaves alone a living run's base, one without .owner and that of a host
# whose name begins with this one's (HOST.ib)
S=$T/sweep
mkdir -p "$S"
# long N: a singleton rendering until stopped, its base in $S; its pid in $pid, its base in $base
long() {
  local before; before=$(ls "$S")
  (cd "$T" && exec env -u OMPI_MCA_orte_tmpdir_base TMPDIR="$S" "$NST" ok.ini --set optim.iterations=1000000 --set output.size=64 \
    --set output.path=long$1.png --set run.print_every=10 >"$T/long$1.log" 2>&1) &
  pid=$!
  fresh() { base=$(cd "$S" && ls -d nstbatch-mpi.*/.owner 2>/dev/null | grep -vxF -f <(sed 's|$|/.owner|' <<<"$before") | head -n 1); [ -n "$base" ]; }
  # (its base and .owner come before MPI_Init, the banner after: a banner without them ends the wait)
  local log=$T/long$1.log
  started() { fresh || grep -q '^nstbatch .*: 1 rank' "$log"; }
  grown_wait 120 "$log" started
  fresh
  base=${base%/.owner}
}
long 1; live_pid=$pid live=$base
long 2; kill -KILL $pid; wait $pid 2>/dev/null; dead=$base
prefix=${live%.*}. # (nstbatch-mpi.HOST.)
names() { if [ $# -gt 0 ]; then printf '%s\n' "$@"; else ls "$S"; fi | LC_ALL=C sort | tr '\n' ' '; } # NAME... or $S's, in one order
mkdir -p "$S/${prefix}nolock" "$S/${prefix}ib.abcdef" && touch "$S/${prefix}ib.abcdef/.owner"
if [ -n "$live" ] && [ -n "$dead" ] && [ -e "$S/$dead/.owner" ]; then
  (cd "$T" && env -u OMPI_MCA_orte_tmpdir_base TMPDIR="$S" "$IDLE" 120 "$NST" ok.ini --set optim.iterations=2 --set output.size=64 --set output.overwrite=true >"$T/sweeper.log" 2>&1)
  st=$? left=$(names)
  kill -TERM $live_pid; wait $live_pid 2>/dev/null; live_pid=
  after=$(names)
  if [ $st -eq 0 ] && [ "$left" = "$(names "$live" "${prefix}nolock" "${prefix}ib.abcdef")" ] &&
    [ "$after" = "$(names "${prefix}nolock" "${prefix}ib.abcdef")" ]; then
    ok "a killed singleton's base removed by the next singleton; a living one's, one without .owner and host HOST.ib's kept; the living one's removed at its end"
  else bad "the killed singletons' bases" "exit $st; left '$left' (living $live, killed $dead); after the living one ended '$after'" "$(tail -n 5 "$T/sweeper.log")"; fi
else
  kill -TERM $live_pid 2>/dev/null; wait $live_pid 2>/dev/null; live_pid=
  bad "the killed singletons' bases" "no base seen: living '$live', killed '$dead' (its .owner $([ -e "$S/$dead/.owner" ] && echo there || echo missing))" "$(tail -n 5 "$T/long1.log" "$T/long2.log")"
fi
rm -f "$T/out.png" "$T/out.preview.png" "$T"/long*.png

# ---- ranks ---------------------------------------------------------------------------------------------
if command -v mpirun >/dev/null; then
  case_ "two ranks: a bad input stops both, one message" 2 "content.path: trunc.png: corrupt PNG" -- mpirun --oversubscribe -np 2 "$NST" ok.ini --set content.path=trunc.png
  case_ "two ranks: a bad mask stops both, one message" 2 "style.masks: trunc_mask.png: corrupt PNG" -- mpirun --oversubscribe -np 2 "$NST" ok.ini --set style.masks=trunc_mask.png
  case_ "two ranks render" 0 "wrote out.png" -- mpirun --oversubscribe -np 2 "$NST" ok.ini --set optim.iterations=2 --set output.size=64 --set tiling.tile_size=32 --set output.overwrite=true
  rm -f "$T/out.png" "$T/out.preview.png"
  # the binding warning: for a rank that mpirun bound to fewer cores than mpirun was given, never
  # for a mask the user set (taskset) on mpirun or on a singleton (here: this shell's first core)
  first=$(taskset -cp $$ | sed 's/.*: *//; s/[-,].*//') cores=$(nproc)
  w=(ok.ini --set optim.iterations=0 --set output.size=64 --set output.path=bind.png --set output.overwrite=true)
  warned() { grep -c 'warning: the launcher bound this rank to' <<<"$1"; }
  b1=$(cd "$T" && "$IDLE" 120 mpirun -np 1 --bind-to core "$NST" "${w[@]}" 2>&1)
  b2=$(cd "$T" && "$IDLE" 120 taskset -c "$first" mpirun -np 1 --bind-to core "$NST" "${w[@]}" 2>&1)
  b3=$(cd "$T" && "$IDLE" 120 taskset -c "$first" "$NST" "${w[@]}" 2>&1)
  if [ "$cores" -gt 1 ] && ! grep -q "warning: the launcher bound this rank to 1 of the $cores cores it was given" <<<"$b1"; then
    bad "mpirun --bind-to core on $cores cores: the warning names the launcher's binding" "" "$b1"
  elif [ "$(warned "$b2")" != 0 ] || [ "$(warned "$b3")" != 0 ]; then
    bad "a mask of the user's (taskset -c $first): no binding warning" "" "$b2$b3"
  else
    ok "the binding warning: for mpirun --bind-to core on $cores core(s) $([ "$cores" -gt 1 ] && echo said || echo "(none possible)"), not for taskset on mpirun or on a singleton"
  fi
  rm -f "$T/bind.png" "$T/bind.preview.png"
  case_ "a tile size that mostly computes halos: a warning" 0 "tiling.tile_size = 16 makes the windows" -- "$NST" ok.ini --set tiling.tile_size=16 --set output.size=64 --set optim.iterations=1 --set output.overwrite=true
  rm -f "$T/out.png" "$T/out.preview.png"
  case_ "tile size off the stride" 2 "tiling.tile_size = 100: must be a multiple of 16" -- "$NST" ok.ini --set tiling.tile_size=100
  case_ "halo off the stride" 2 "tiling.halo = 40: must be a multiple of 16" -- "$NST" ok.ini --set tiling.halo=40
  case_ "exchange_every in exact mode" 2 "tiling.exchange_every = 4 needs tiling.mode = cheap" -- "$NST" ok.ini --set tiling.exchange_every=4
  case_ "resident that cannot fit" 2 "fits the memory budget" -- "$NST" ok.ini --set tiling.gram=resident --set run.memory_gb=0.001
fi

finish

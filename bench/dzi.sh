#!/usr/bin/env bash
# bench/dzi.sh: writing a Deep Zoom pyramid, against libvips' own Deep Zoom writer in the same run
# (make bench-dzi; results in bench/results/dzi.md).
#
# Input: a synthetic WIDTH x HEIGHT RGB tiled TIFF (tools/make_test_tiff.c). nstbatch runs it with
# optim.iterations = 0 (no network: the output alone) on 1 and 2 ranks, writing output.format = dzi
# (512 px JPEG tiles at quality 90, no overlap, every level down to 1x1; output.dzi_content off, so
# one pyramid is timed). Its time is the run record's observed output time of the Deep Zoom file
# (quantising the floats, moving and halving tiles, encoding on every rank, rank 0 writing the
# files); the sink alone (encoding and writing) is a column of its own. libvips writes
# the same layout from the same pixels already decoded (a .v file): `vips dzsave --tile-size 512
# --overlap 0 --suffix .jpg[Q=90]`, its wall time. Then nstbatch-dzi makes the pyramid from a
# finished nstbatch TIFF, whole command timed (it decodes the TIFF's tiles as it goes).
#
#   bench/dzi.sh [WIDTH HEIGHT]      (default 8192 8192)
set -eu
# numbers with a decimal point in any locale (awk, printf, sort -n): a user's LC_ALL becomes LANG
[ -z "${LC_ALL:-}" ] || { export LANG="$LC_ALL"; unset LC_ALL; }; export LC_NUMERIC=C
ROOT=$(cd "$(dirname "$0")/.." && pwd)
NST="$ROOT/nstbatch" DZI="$ROOT/nstbatch-dzi" MKTIFF="$ROOT/build/tools/make_test_tiff"
W=${1:-8192} H=${2:-8192}
B=$(mktemp -d /tmp/nstbatch-bench-dzi.XXXXXX)
trap 'rm -rf "$B"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
OUT="$ROOT/bench/results/dzi.md"
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
mp=$(awk -v w="$W" -v h="$H" 'BEGIN { printf "%.1f", w * h / 1e6 }')

"$MKTIFF" "$B/in.tif" "$W" "$H" --tile 512 --level 1 --bigtiff >/dev/null
cat >"$B/dz.ini" <<EOF
[content]
path = in.tif
[style]
path = $ROOT/configs/demo/style.png
[output]
path = out.dzi
tile_size = 512
quality = 90
dzi_content = false
preview = 0
overwrite = true
[optim]
iterations = 0
[tiling]
mode = cheap
halo = 16
tile_size = 2048
[run]
print_every = 0
record = r.json
EOF

# libvips from decoded pixels
vips copy "$B/in.tif" "$B/in.v"
t0=$(now); vips dzsave "$B/in.v" "$B/vips" --tile-size 512 --overlap 0 --suffix '.jpg[Q=90]'; t1=$(now)
vips_s=$(secs "$t0" "$t1") vips_tiles=$(find "$B/vips_files" -name '*.jpg' | wc -l) vips_mb=$(du -sm "$B/vips_files" | cut -f1)
rm -rf "$B/vips_files" "$B/vips.dzi" "$B/in.v"

rows=""
fmt_seconds() { sed -n 's/.*"dzi": {"path": [^,]*, "bytes": \([0-9]*\), "seconds_max": \([0-9.]*\).*/\1 \2/p' "$1"; }
for n in 1 2; do
  bind=""; [ "$n" -eq 1 ] && bind="--bind-to none"
  (cd "$B" && mpirun --oversubscribe $bind -np "$n" "$NST" dz.ini) >"$B/run$n.log" 2>&1
  ex=$(sed -n 's/.*"exchange_seconds_max": \([0-9.]*\).*/\1/p' "$B/r.json" | head -n 1)
  read -r bytes f_s < <(fmt_seconds "$B/r.json")
  obs=$(awk -v a="$ex" -v b="$f_s" 'BEGIN { printf "%.2f", a + b }')
  tiles=$(find "$B/out_files" -name '*.jpg' | wc -l)
  rows="$rows| nstbatch, $n rank$([ "$n" -gt 1 ] && echo s) | $obs | $f_s | $(awk -v m="$mp" -v s="$obs" 'BEGIN { printf "%.1f", m / s }') | $tiles | $((bytes / 1000000)) | $(awk -v v="$vips_s" -v o="$obs" 'BEGIN { printf "%.2fx", v / o }') |"$'\n'
done
# nstbatch-dzi from the TIFF that nstbatch writes of the same image
(cd "$B" && mpirun --bind-to none -np 1 "$NST" dz.ini --set output.path=t.tif --set output.format=tiff) >"$B/tif.log" 2>&1
t0=$(now); "$DZI" "$B/t.tif" "$B/c.dzi" >/dev/null; t1=$(now)
c_s=$(secs "$t0" "$t1")
identical=$(diff -rq "$B/c_files" "$B/out_files" >/dev/null && echo "byte for byte the render's own tiles" || echo "NOT the render's tiles")
rows="$rows| nstbatch-dzi (from the TIFF, decoding it) | $c_s | | $(awk -v m="$mp" -v s="$c_s" 'BEGIN { printf "%.1f", m / s }') | $(find "$B/c_files" -name '*.jpg' | wc -l) | $(du -sm "$B/c_files" | cut -f1) | $(awk -v v="$vips_s" -v o="$c_s" 'BEGIN { printf "%.2fx", v / o }') |"$'\n'

cpu=$(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -n 1)
cat >"$OUT" <<EOF
# Writing a Deep Zoom pyramid

\`make bench-dzi\` (bench/dzi.sh), $(date -u +%Y-%m-%d). Machine: $cpu, $(nproc) cores, no GPU; local disk, page cache warm.
libjpeg-turbo $(pkg-config --modversion libjpeg), libvips $(vips --version | sed 's/vips-//').

Input: a synthetic ${W}x${H} RGB 8-bit tiled TIFF (${mp} MP). Every writer makes the same layout: 512 px JPEG tiles at quality
90, no overlap, levels down to 1x1. nstbatch: \`optim.iterations = 0\`, \`output.format = dzi\`, the run record's observed time of
the output (moving and halving tiles, encoding on every rank, rank 0 writing). libvips: \`vips dzsave --tile-size 512 --overlap 0
--suffix .jpg[Q=90]\` of the pixels already decoded (a .v file), wall time: **${vips_s} s**, ${vips_tiles} tiles, ${vips_mb} MB.
The last column is vips' time over the row's (above 1: faster than vips). nstbatch's time is mostly the output pipeline every
format shares (quantising the render's floats to 8 bits and moving them to the tiles' owners: bench/results/io_throughput.md);
the Deep Zoom sink itself is the third column.

| writer | s | of which encoding and writing the tiles, s | MP/s | tiles | MB | vips / this |
|---|---|---|---|---|---|---|
${rows}
nstbatch-dzi's pyramid is ${identical}.
EOF
cat "$OUT"

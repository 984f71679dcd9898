#!/usr/bin/env bash
# bench/io_throughput.sh: read and write throughput of the gigapixel I/O, and libvips as the
# yardstick, on this machine in the same run (make bench-io; results in bench/results/io_throughput.md).
#
# Input: a synthetic 20000 x 20000 (400 MP, 1.2 GB of 8-bit RGB) tiled BigTIFF, deflate-compressed
# (tools/make_test_tiff.c). nstbatch runs it with optim.iterations = 0 (no network: the I/O alone)
# on 1, 2 and 4 ranks, once writing the TIFF pyramid (BigTIFF, 512 px tiles, deflate + predictor,
# SubIFD levels down to one tile) and once the HDF5 (512 px chunks, shuffle + deflate, /level0..n).
# libvips writes the same TIFF layout from the same pixels: `vips tiffsave` of the image already
# decoded (a .v file), so that both sides start from pixels in memory.
#
# Rates in the manner of h5bench: "raw" divides the bytes by the time in the library's I/O calls
# alone, "observed" by the whole phase. Read: the uncompressed input (1.2 GB) over the slowest
# rank's time decoding source pixels (raw) and reading + resampling its windows (observed). Write:
# the uncompressed bytes of every level written (1.6 GB) over the time in the writing calls (raw:
# TIFF raw tile writes on rank 0 -- compression happens before them, on every rank; HDF5 H5Dwrite,
# which compresses inside) and over the whole output phase of that file (observed: moving and
# halving tiles, compression, writing, closing). The vips ratio compares that observed time with
# vips tiffsave's wall time: above 1 means nstbatch is faster.
#
#   bench/io_throughput.sh [WIDTH HEIGHT]      (default 20000 20000)
set -eu
# numbers with a decimal point in any locale (awk, printf, sort -n): a user's LC_ALL becomes LANG
[ -z "${LC_ALL:-}" ] || { export LANG="$LC_ALL"; unset LC_ALL; }; export LC_NUMERIC=C
ROOT=$(cd "$(dirname "$0")/.." && pwd)
NST="$ROOT/nstbatch" MKTIFF="$ROOT/build/tools/make_test_tiff"
W=${1:-20000} H=${2:-20000}
B=$(mktemp -d /tmp/nstbatch-bench-io.XXXXXX)
trap 'rm -rf "$B"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
OUT="$ROOT/bench/results/io_throughput.md"
LOG="$ROOT/bench/results/io_throughput.log"
: >"$LOG"
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }

echo "generating the ${W}x${H} input" | tee -a "$LOG"
"$MKTIFF" "$B/in.tif" "$W" "$H" --tile 512 --level 1 --bigtiff
in_bytes=$((W * H * 3))
# the uncompressed bytes of a pyramid halving down to one 512 px tile
pyr_bytes=$(awk -v w="$W" -v h="$H" 'BEGIN { s = 0; for (;;) { s += w * h * 3; if (w <= 512 && h <= 512) break; w = int((w + 1) / 2); h = int((h + 1) / 2) } printf "%.0f", s }')

cat >"$B/io.ini" <<EOF
[content]
path = in.tif
[style]
path = $ROOT/configs/demo/style.png
[output]
path = out.tif
tile_size = 512
bigtiff = yes
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
EOF

# ---- libvips --------------------------------------------------------------------------------------
vips copy "$B/in.tif" "$B/in.v"
t0=$(now)
vips tiffsave "$B/in.v" "$B/vips.tif" --tile --tile-width 512 --tile-height 512 --pyramid --subifd \
  --compression deflate --predictor horizontal --bigtiff
t1=$(now)
vips_s=$(secs "$t0" "$t1")
vips_mb=$(stat -c %s "$B/vips.tif")
echo "vips tiffsave: $vips_s s, $((vips_mb / 1000000)) MB" | tee -a "$LOG"
rm -f "$B/vips.tif"

# ---- nstbatch -------------------------------------------------------------------------------------
json() { sed -n "s/.*\"$2\": \([0-9.]*\).*/\1/p" "$1" | head -n 1; }
fmt_json() { sed -n "s/.*\"$2\": {\"path\": [^,]*, \"bytes\": \([0-9]*\), \"seconds_max\": \([0-9.]*\), \"io_seconds_max\": \([0-9.]*\).*/\1 \2 \3/p" "$1"; }
rate() { awk -v b="$1" -v s="$2" 'BEGIN { if (s > 0) printf "%.0f", b / 1e6 / s; else printf "-" }'; }
rows=""
for n in 1 2 4; do
  bind=""; [ "$n" -eq 1 ] && bind="--bind-to none"
  for fmt in tiff hdf5; do
    t0=$(now)
    (cd "$B" && mpirun --oversubscribe $bind -np "$n" "$NST" io.ini --set output.format=$fmt --set run.record=r.json) >>"$LOG" 2>&1
    t1=$(now)
    r="$B/r.json"
    in_s=$(json "$r" seconds_max) rd_s=$(json "$r" read_seconds_max) ex_s=$(json "$r" exchange_seconds_max)
    read -r bytes f_s io_s < <(fmt_json "$r" "$fmt")
    obs=$(awk -v a="$ex_s" -v b="$f_s" 'BEGIN { printf "%.2f", a + b }')
    ratio=$([ "$fmt" = tiff ] && awk -v v="$vips_s" -v o="$obs" 'BEGIN { printf "%.2fx", v / o }' || echo "")
    line="| $n | $fmt | $(rate $in_bytes $rd_s) | $(rate $in_bytes $in_s) | $(rate $pyr_bytes $io_s) | $(rate $pyr_bytes $obs) | $obs | $((bytes / 1000000)) | $ratio | $(secs "$t0" "$t1") |"
    echo "$line" | tee -a "$LOG"
    rows="$rows$line"$'\n'
    rm -f "$B"/out.*
  done
done

cpu=$(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -n 1)
cat >"$OUT" <<EOF
# Gigapixel I/O throughput

\`make bench-io\` (bench/io_throughput.sh), $(date -u +%Y-%m-%d). Machine: $cpu, $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo),
no GPU; local ext4 disk, page cache warm. libtiff $(pkg-config --modversion libtiff-4), HDF5 $(dpkg-query -W -f='${Version}' libhdf5-openmpi-dev 2>/dev/null),
$(mpirun --version | head -n 1), libvips $(vips --version | sed 's/vips-//').

Input: a synthetic ${W}x${H} RGB 8-bit tiled BigTIFF (512 px tiles, deflate; $((in_bytes / 1000000)) MB uncompressed). nstbatch with
\`optim.iterations = 0\` (no network: the I/O alone), cheap tiling with 2048 px render tiles (16 px halos), output tiles of 512 px,
every level down to one tile ($((pyr_bytes / 1000000)) MB uncompressed over all levels). 4 ranks on 2 cores are oversubscribed.

Rates are MB/s (10^6 bytes) in the manner of h5bench: **raw** divides by the time in the library's I/O calls alone, **observed**
by the whole phase. Read: the uncompressed input over the slowest rank's time decoding source pixels (raw) and reading and
resampling its windows (observed). Write: the uncompressed bytes of every level over the time in the writing calls (raw:
TIFF = rank 0's raw tile writes, the compression having run before them on every rank; HDF5 = H5Dwrite, which compresses
inside) and over the whole output phase of that file (observed: moving and halving tiles, compressing, writing, closing).
Images are never read from HDF5 (docs/INPUT_SAFETY.md: HDF5 inputs are only weights and style caches), so its read column is the BigTIFF input's too.

**libvips**: \`vips tiffsave in.v out.tif --tile --tile-width 512 --tile-height 512 --pyramid --subifd --compression deflate
--predictor horizontal --bigtiff\` from the same pixels already decoded: **${vips_s} s**, $((vips_mb / 1000000)) MB. The vips column is
vips' time over nstbatch's observed TIFF write time (above 1: nstbatch is faster).

| ranks | file | read raw | read observed | write raw | write observed | write s | file MB | vips / nstbatch | run s |
|---|---|---|---|---|---|---|---|---|---|
$rows
Reading the table: the TIFF is compressed on every rank by every thread (one libtiff encoder per thread) and written
by rank 0 with raw tile writes, so its raw rate is the page cache's; vips tiffsave compresses on its writing thread.
HDF5 runs its deflate filter inside H5Dwrite on one thread per rank (pre-compressed chunks through H5Dwrite_chunk are
not coordinated across ranks in HDF5 1.10: tried with two ranks, one rank's chunk was lost), so it gains from ranks,
not threads, and without TIFF's horizontal predictor its files are larger. This
machine has 2 cores: 2 and 4 ranks share them, and nothing here can show scaling beyond 2.

Log: bench/results/io_throughput.log.
EOF
echo "wrote $OUT"

#!/usr/bin/env bash
# bench/checkpoint_format.sh: per-rank checkpoint files against one parallel HDF5 file
# (make bench-ckpt; writes bench/results/checkpoint.md). See bench/checkpoint_format.c.
set -eu
# numbers with a decimal point in any locale (awk, printf, sort -n): a user's LC_ALL becomes LANG
[ -z "${LC_ALL:-}" ] || { export LANG="$LC_ALL"; unset LC_ALL; }; export LC_NUMERIC=C
cd "$(dirname "$0")/.."
B=${BUILD:-build}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
D=$(mktemp -d "${CKPT_BENCH_DIR:-/tmp}/nstbatch-ckpt-bench.XXXXXX")
trap 'rm -rf "$D"' EXIT
out=bench/results/checkpoint.md
{
  echo "# Checkpoint layout: per-rank files against one parallel HDF5 file"
  echo
  echo "\`make bench-ckpt\` ($(date -u +%Y-%m-%d), $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p' | head -n 1); $(df -T "$D" | awk 'NR == 2 { print $2 }') file system at ${CKPT_BENCH_DIR:-/tmp};"
  echo "$(mpirun --version | head -n 1); HDF5 $(pkg-config --modversion hdf5-openmpi 2>/dev/null || echo ?))."
  echo "Each rank writes three float arrays (pixels, Adam m and v) and reads them back; median of 5;"
  echo "writes include fsync and the rename. MB = megabytes over all ranks."
  echo
  echo "| ranks | MB | layout | write s | write MB/s | read s | read MB/s |"
  echo "|---|---|---|---|---|---|---|"
  for r in 1 2 4; do
    for mb in 64 256; do
      mpirun --oversubscribe --bind-to none -np $r "$B/bench/checkpoint_format" "$D" $mb 5
    done
  done
} | tee "$out"

#!/usr/bin/env bash
# scripts/make-gpu-bundle.sh: the GPU bundle (make gpu-bundle; docs/GPUS.md, "The bundle"). It
# stages, in a folder that mirrors the checkout, the lean programs that make built in
# BUNDLE_DIR/bin, the scripts and demo the GPU checks run, the runtime closure of every bundled
# program and plugin (computed with ldd: never glibc, the NVIDIA driver or the CUDA libraries, which
# the node has), Open MPI's mpirun, orted and plugins (less those for UCX, libfabric, verbs and PSM)
# and PMIx's, env.sh and README.txt; then writes BUNDLE_DIR/nstbatch-gpu-VERSION.tar.gz with one top
# folder, or fails if that is over 48 MiB.
#
#   scripts/make-gpu-bundle.sh BUNDLE_DIR VERSION        (CUDA_HOME: default /usr/local/cuda)
set -euo pipefail
# numbers with a decimal point in any locale (awk, printf, sort -n): a user's LC_ALL becomes LANG
[ -z "${LC_ALL:-}" ] || { export LANG="$LC_ALL"; unset LC_ALL; }; export LC_NUMERIC=C
die() { echo "make-gpu-bundle: $*" >&2; exit 1; }
[ $# -eq 2 ] || die "usage: scripts/make-gpu-bundle.sh BUNDLE_DIR VERSION (make gpu-bundle runs it)"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
D=$(cd "$1" && pwd) V=$2
NAME=nstbatch-gpu-$V
TAR=$D/$NAME.tar.gz
LIMIT_MIB=48
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
CUDA_REAL=$(readlink -f "$CUDA_HOME" 2>/dev/null || echo "$CUDA_HOME")
for t in ldd readelf strip ompi_info tar gzip; do command -v "$t" >/dev/null || die "$t not found: it is needed to make the bundle"; done
S=$D/stage/$NAME
rm -rf "$D/stage" && mkdir -p "$S"

# ---- library classes -------------------------------------------------------------------------
# glibc's own libraries: every node has them (and a newer glibc than this build's)
is_glibc() {
  case $1 in
    libc.so.*|libm.so.*|libmvec.so.*|libpthread.so.*|libdl.so.*|librt.so.*|libresolv.so.*|libutil.so.*|libanl.so.*) return 0 ;;
    libnsl.so.1|libBrokenLocale.so.*|libthread_db.so.*|libc_malloc_debug.so.*|libnss_*|ld-linux*.so.*|linux-vdso.so.*) return 0 ;;
  esac
  return 1
}
# the NVIDIA driver's libraries, which must come from the node
is_driver() { case $1 in libcuda.so*|libnvidia-*|libnvcuvid.so*|libnvoptix.so*) return 0 ;; esac; return 1; }
# the CUDA toolkit's and NVIDIA's math and communication libraries: from the node (its CUDA, or
# PyTorch's nvidia-* wheels), found there by env.sh
CUDA_RE='^lib(cudart|cublas|cublasLt|cudnn[a-z_]*|nccl|nvrtc[a-z.-]*|nvJitLink|nvToolsExt|nvtx3interop|cufft[a-z]*|curand|cusolver[A-Za-z]*|cusparse[A-Za-z]*|cupti|nvperf_[a-z]*|npp[a-z]*|nvjpeg|nvblas|nvvm)\.so'
is_cuda() { [[ $1 =~ $CUDA_RE ]] || [[ ${2:-} == "$CUDA_REAL"/* ]]; }
# plugins that need a network stack or GPU library that a GPU node's image does not have
# (UCX, libfabric, verbs, PSM, CUDA): left out, by what they link
NET_RE='^lib(fabric|ucp|ucs|uct|ucm|ibverbs|rdmacm|psm_infinipath|psm2|cuda|cudart|nvidia-ml)\.so'

# closure ELF...: "NAME PATH" for every library in the ELFs' runtime closure (ldd, with this
# machine's CUDA libraries on the path), PATH "-" where ldd finds none
closure() {
  local f out
  for f in "$@"; do
    out=$(LD_LIBRARY_PATH="$CUDA_HOME/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ldd "$f" 2>&1) || die "ldd $f failed: $out"
    awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 } $2 == "=>" && $3 == "not" { print $1, "-" }' <<<"$out"
  done
}
# deps ELF...: the closure, dying on a library that is not found
deps() {
  local out
  out=$(closure "$@")
  if grep -q ' -$' <<<"$out"; then die "$* need $(grep ' -$' <<<"$out" | cut -d' ' -f1 | sort -u | paste -sd' ' -), not found: install them"; fi
  printf '%s\n' "$out"
}

# put SRC DEST: a copy of SRC (links followed) with its debug sections stripped, its origin logged
put() {
  mkdir -p "$(dirname "$2")"
  cp -L "$1" "$2" && chmod u+w "$2"
  if head -c 4 "$2" | grep -q 'ELF'; then strip --strip-debug "$2"; fi
  echo "${2#"$S"/}  <-  $(readlink -f "$1")" >>"$S/runtime/SOURCES.txt"
}

mkdir -p "$S/runtime/lib" "$S/runtime/openmpi/bin" "$S/runtime/openmpi/lib/openmpi" "$S/runtime/openmpi/share/openmpi" \
         "$S/runtime/openmpi/etc" "$S/runtime/pmix/lib/pmix" "$S/runtime/pmix/share/pmix" "$S/runtime/pmix/etc" "$S/runtime/hwloc"
echo "# what each file of the bundle is a copy of (made by scripts/make-gpu-bundle.sh)" >"$S/runtime/SOURCES.txt"

# ---- the programs and the files the GPU checks read, where the checkout has them -------------
for p in nstbatch:nstbatch test_backend_ops:build/tests/test_backend_ops image_diff:build/tests/image_diff conv_layers:build/bench/conv_layers gram_layers:build/bench/gram_layers \
         idle_timeout:build/tests/idle_timeout; do
  [ -x "$D/bin/${p%%:*}" ] || die "$D/bin/${p%%:*} is missing: run make gpu-bundle"
  put "$D/bin/${p%%:*}" "$S/${p#*:}"
done
(cd "$ROOT" && for f in scripts/* tests/test_gpu_render.sh tests/lib.sh tests/idle.sh bench/gpu_frame.sh bench/gpu_iteration.sh bench/profile_table.sh bench/torch_gatys.py configs/demo.ini LICENSE; do
   [ -e "$f" ] || die "$ROOT/$f is missing"
   mkdir -p "$S/$(dirname "$f")" && cp -a "$f" "$S/$f"
 done)
ls "$ROOT"/configs/demo/*.png >/dev/null 2>&1 || die "configs/demo/*.png are missing: run make demo-images"
mkdir -p "$S/configs/demo" && cp "$ROOT"/configs/demo/*.png "$S/configs/demo/"
sed "s/@VERSION@/$V/g" "$ROOT/scripts/gpu-bundle/env.sh" >"$S/env.sh"
sed "s/@VERSION@/$V/g" "$ROOT/scripts/gpu-bundle/README.txt" >"$S/README.txt"
install -m 755 "$ROOT/scripts/gpu-bundle/host-python3" "$S/runtime/host-python3"
[ -x "$D/bin/cudnn-version" ] || die "$D/bin/cudnn-version is missing: run make gpu-bundle"
put "$D/bin/cudnn-version" "$S/runtime/cudnn-version" # env.sh's probe of the node's cuDNN
printf 'Empty on purpose: env.sh points HWLOC_PLUGINS_PATH here, so that the bundled hwloc\nnever loads plugins of another hwloc version from the node.\n' >"$S/runtime/hwloc/README.txt"

# ---- Open MPI: mpirun, orted, ompi_info; the plugins; help texts; the parameter file ----------
ompi() { ompi_info --parsable --path "$1" | sed -n "s/^path:$1://p" | head -n 1; }
OMPI_BIN=$(ompi bindir) OMPI_PLUGINS=$(ompi pkglibdir) OMPI_DATA=$(ompi pkgdatadir) OMPI_ETC=$(ompi sysconfdir)
[ -x "$OMPI_BIN/orterun" ] || die "$OMPI_BIN/orterun not found: the bundle takes Open MPI 4's mpirun"
put "$OMPI_BIN/orterun" "$S/runtime/openmpi/bin/orterun"
put "$OMPI_BIN/orterun" "$S/runtime/openmpi/bin/mpirun"
put "$OMPI_BIN/orted" "$S/runtime/openmpi/bin/orted"
put "$(command -v ompi_info)" "$S/runtime/openmpi/bin/ompi_info"
cp "$OMPI_DATA"/help-*.txt "$S/runtime/openmpi/share/openmpi/"
[ -d "$OMPI_DATA/amca-param-sets" ] && cp -r "$OMPI_DATA/amca-param-sets" "$S/runtime/openmpi/share/openmpi/"
cp "$OMPI_ETC"/openmpi-mca-params.conf "$S/runtime/openmpi/etc/"
[ -f "$OMPI_ETC/openmpi-default-hostfile" ] && cp "$OMPI_ETC/openmpi-default-hostfile" "$S/runtime/openmpi/etc/"

# plugin_ok SO: whether SO's closure is all here and avoids the network stacks (a line in
# SOURCES.txt if not)
plugin_ok() {
  local bad
  bad=$(closure "$1" | awk -v re="$NET_RE" '$1 ~ re || $2 == "-" { print $1 }' | sort -u | paste -sd' ' -)
  [ -z "$bad" ] && return 0
  echo "left out: $1 (needs $bad)" >>"$S/runtime/SOURCES.txt"
  return 1
}
for so in "$OMPI_PLUGINS"/*.so; do
  plugin_ok "$so" && put "$so" "$S/runtime/openmpi/lib/openmpi/$(basename "$so")"
done

# ---- PMIx (Open MPI's external one): its plugins, help texts, parameter file ------------------
PMIX_LIB=$(closure "$OMPI_PLUGINS"/mca_pmix_*.so | awk '$1 ~ /^libpmix\.so/ && $2 != "-" { print $2; exit }')
if [ -n "$PMIX_LIB" ]; then
  PMIX_PREFIX=$(dirname "$(dirname "$(readlink -f "$PMIX_LIB")")")
  for so in "$PMIX_PREFIX"/lib/pmix/*.so; do
    [ -e "$so" ] && plugin_ok "$so" && put "$so" "$S/runtime/pmix/lib/pmix/$(basename "$so")"
  done
  cp "$PMIX_PREFIX"/share/pmix/help-*.txt "$S/runtime/pmix/share/pmix/" 2>/dev/null || true
  # its parameter file, less the plugin path that points into this machine (env.sh sets it)
  conf=$(ls "$PMIX_PREFIX"/etc/pmix-mca-params.conf "$PMIX_PREFIX"/share/pmix-mca-params.conf 2>/dev/null | head -n 1) || true
  if [ -n "$conf" ]; then
    { echo "# $conf, without mca_base_component_path: env.sh sets PMIX_MCA_mca_base_component_path to the bundle's"
      grep -v '^[[:space:]]*mca_base_component_path' "$conf"; } >"$S/runtime/pmix/etc/pmix-mca-params.conf"
  fi
fi

# ---- the runtime closure of every program and plugin ------------------------------------------
mapfile -t elves < <(find "$S" -type f \( -perm -u+x -o -name '*.so' \) -exec sh -c 'head -c 4 "$1" | grep -q ELF && echo "$1"' _ {} \;)
: >"$D/cuda-needed"
deps "${elves[@]}" | sort -u | while read -r name path; do
  if is_glibc "$name" || is_driver "$name"; then continue; fi
  if is_cuda "$name" "$(readlink -f "$path")"; then echo "$name" >>"$D/cuda-needed"; continue; fi
  [ -e "$S/runtime/lib/$name" ] || put "$path" "$S/runtime/lib/$name"
done
# (ldd's answer is the whole closure: the libraries' own needs are in it; tests/test_gpu_bundle.sh
# checks every bundled library's from the unpacked bundle)

# ---- the CUDA libraries env.sh must find on the node -------------------------------------------
# the programs' own (DT_NEEDED), cuBLAS as the CUDA backend opens it (kernels/cuda/cublas_dl.cu: the
# versioned name is a string in the program), and what those need of each other
for b in "$S/nstbatch" "$S"/build/*/*; do readelf -d "$b" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; done | grep -E "$CUDA_RE" >>"$D/cuda-needed" || true
grep -aoE 'libcublas\.so\.[0-9]+' "$S/nstbatch" | sort -u >>"$D/cuda-needed" || true
todo=$(sort -u "$D/cuda-needed")
while [ -n "$todo" ]; do
  next=""
  for n in $todo; do
    f=$CUDA_HOME/lib64/$n
    [ -e "$f" ] || continue
    next="$next $(readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | grep -E "$CUDA_RE" | grep -vxF -f "$D/cuda-needed" || true)"
  done
  todo=$(echo $next | tr ' ' '\n' | sort -u)
  [ -n "$todo" ] && echo "$todo" >>"$D/cuda-needed"
done
{ echo "# the CUDA libraries the bundled programs need, found on the node by env.sh (from their DT_NEEDED, the"
  echo "# cuBLAS the CUDA backend opens, and what those need): one SONAME a line"
  sort -u "$D/cuda-needed"; } >"$S/runtime/cuda-libs.txt"
rm -f "$D/cuda-needed"

# ---- licences: each bundled library's Debian copyright file, where dpkg knows the file ---------
# (Debian 12 installs some libraries under /lib, merged with /usr/lib: dpkg knows either name)
if command -v dpkg-query >/dev/null; then
  mkdir -p "$S/runtime/licenses"
  srcs=$(sed -n 's/.*  <-  \(\/.*\)$/\1/p' "$S/runtime/SOURCES.txt" | sort -u)
  for pkg in $({ dpkg-query -S $srcs; dpkg-query -S $(sed -n 's|^/usr/lib/|/lib/|p' <<<"$srcs"); } 2>/dev/null | sed -n 's/^\([^:,]*\)[:,].*/\1/p' | sort -u); do
    [ -f "/usr/share/doc/$pkg/copyright" ] && cp "/usr/share/doc/$pkg/copyright" "$S/runtime/licenses/$pkg.copyright"
  done
fi

# ---- nothing of glibc, the driver or CUDA may have come in ---------------------------------------
for f in $(cd "$S" && find . -name '*.so*' | sed 's|.*/||'); do
  if is_glibc "$f" || is_driver "$f" || is_cuda "$f"; then die "$f is in the bundle: glibc, the driver and CUDA must come from the node"; fi
done

# ---- the tarball ------------------------------------------------------------------------------
rm -f "$D"/nstbatch-gpu-*.tar.*
tar -C "$D/stage" --sort=name --owner=0 --group=0 --numeric-owner -cf - "$NAME" | gzip -6 -n >"$TAR.part"
rm -rf "$D/stage"
size=$(stat -c %s "$TAR.part")
echo "gpu-bundle: $(awk -v s="$size" 'BEGIN { printf "%.1f", s / 1048576 }') MiB, limit $LIMIT_MIB MiB"
[ "$size" -le $((LIMIT_MIB * 1048576)) ] || { rm -f "$TAR.part"; die "the bundle is $size bytes, over $LIMIT_MIB MiB: leave something out"; }
mv "$TAR.part" "$TAR"

#!/usr/bin/env bash
# tests/test_gpu_bundle.sh: the GPU bundle (make gpu-bundle) used as a GPU node would use it: its
# size; unpacked into an empty folder and set up by env.sh in a clean environment, every library of
# every bundled program and plugin resolved inside the bundle, to glibc or to the CUDA folders
# env.sh found; nothing of glibc, the driver or CUDA inside; 2 ranks of a CPU render through the
# bundled mpirun, to PNG and to parallel HDF5, and one rank without mpirun, with the system's Open
# MPI, PMIx, hwloc, HDF5, oneDNN, libtiff, every other library the bundle carries and ssh hidden (a
# mount namespace, where unshare -m works); ompi_info relocated into the bundle; env.sh on a fake
# PyTorch venv layout (through NSTBATCH_CUDA_SEARCH, and by its own search with the CUDA folders
# hidden), and a missing library reported in one line.
#
#   tests/test_gpu_bundle.sh BUNDLE      (the .tar.gz, or the folder holding exactly one)
. "$(dirname "$0")/lib.sh" test_gpu_bundle
LIMIT=$((48 * 1048576))
arg=${1:-}
if [ -d "$arg" ]; then
  mapfile -t tars < <(ls "$arg"/nstbatch-gpu-*.tar.* 2>/dev/null)
  [ ${#tars[@]} -eq 1 ] || { bad "the bundle" "${#tars[@]} nstbatch-gpu-*.tar.* in $arg, expected one: run make gpu-bundle"; finish; exit 1; }
  arg=${tars[0]}
fi
[ -f "$arg" ] || { echo "usage: tests/test_gpu_bundle.sh BUNDLE.tar.gz|DIR (make gpu-bundle makes it)" >&2; bad "the bundle" "no file $arg"; finish; exit 1; }
TAR=$(readlink -f "$arg")

# ---- the tarball ----------------------------------------------------------------------------
size=$(stat -c %s "$TAR")
mib=$(awk -v s="$size" 'BEGIN { printf "%.1f", s / 1048576 }')
if [ "$size" -le $LIMIT ]; then ok "the tarball is $mib MiB ($size bytes; limit 48 MiB)"; else bad "the tarball's size" "$mib MiB, over 48 MiB"; fi
tops=$(tar -tzf "$TAR" | cut -d/ -f1 | sort -u)
pytops=$(python3 -c 'import sys, tarfile; print("\n".join(sorted({m.name.split("/")[0] for m in tarfile.open(sys.argv[1])})))' "$TAR" 2>&1)
if [ "$(wc -l <<<"$tops")" -eq 1 ] && [[ $tops == nstbatch-gpu-* ]] && [ "$pytops" = "$tops" ]; then
  ok "one top folder, $tops (tar and python3's tarfile agree)"
else
  bad "one top folder" "tar: $(echo $tops), python3: $(echo $pytops)"
fi
# unpacked into a folder whose path has a space, as a user's may be
UP="$T/un packed"
mkdir "$UP" && tar -xzf "$TAR" -C "$UP"
U=$UP/$(head -n 1 <<<"$tops")

# in_bundle SCRIPT: SCRIPT in the unpacked bundle, in a clean environment after . ./env.sh, under
# set -euo pipefail (env.sh must not end the caller); extra variables before it with env
in_bundle() { env -i PATH=/usr/bin:/bin HOME="$HOME" U="$U" "$@"; }
BOOT='set -euo pipefail; cd "$U"; . ./env.sh >"$U/../env.log" 2>&1;'

# ---- env.sh here: the CUDA libraries -------------------------------------------------------
out=$(in_bundle bash -c "$BOOT"' echo "DIRS=$NSTBATCH_CUDA_DIRS"; echo "MISSING=$NSTBATCH_BUNDLE_MISSING"; echo "LD=$LD_LIBRARY_PATH"; echo survived' 2>&1)
envlog=$(cat "$UP/env.log" 2>/dev/null)
CUDA_DIRS=$(sed -n 's/^DIRS=//p' <<<"$out")
mapfile -t want < <(grep -v '^#' "$U/runtime/cuda-libs.txt")
# the bundled programs' DT_NEEDED that the bundle does not carry and glibc does not give
libc_names() { dpkg-query -L libc6 2>/dev/null | grep -E '/lib[^/]*\.so[.0-9]*$|/ld-linux' | sed 's|.*/||' | sort -u; }
GLIBC_NAMES=$(libc_names)
[ -n "$GLIBC_NAMES" ] || GLIBC_NAMES=$(printf '%s\n' libc.so.6 libm.so.6 libmvec.so.1 libpthread.so.0 libdl.so.2 librt.so.1 libresolv.so.2 libutil.so.1 ld-linux-x86-64.so.2)
uncovered=""
for b in "$U/nstbatch" "$U"/build/tests/* "$U"/build/bench/*; do
  for n in $(readelf -d "$b" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
    [ -e "$U/runtime/lib/$n" ] || grep -qxF "$n" <<<"$GLIBC_NAMES" || printf '%s\n' "${want[@]}" | grep -qxF "$n" || uncovered="$uncovered $n"
  done
done
uncovered=$(echo $uncovered | tr ' ' '\n' | sort -u | paste -sd' ' -)
if [ -z "$uncovered" ]; then ok "runtime/cuda-libs.txt names every library the programs need that the bundle does not carry (${want[*]:-none})"
else bad "runtime/cuda-libs.txt" "not listed: $uncovered"; fi
notfound=""
for n in "${want[@]}"; do
  d=$(sed -n "s|^env.sh: $n: \(/.*\)|\1|p" <<<"$envlog")
  [ -n "$d" ] && [ -e "$d/$n" ] || notfound="$notfound $n"
done
if grep -q '^survived$' <<<"$out" && grep -q '^MISSING=$' <<<"$out" && [ -z "$notfound" ]; then
  ok "env.sh (clean environment, set -euo pipefail) found ${#want[@]} CUDA libraries in ${CUDA_DIRS:-no folder}, one line each"
else
  bad "env.sh finds the CUDA libraries" "not found:${notfound:- (none)}" "$envlog"$'\n'"$out"
fi

# ---- every library of every bundled ELF resolves inside the bundle, to glibc or to CUDA ------
(cd "$U" && find . -type f -exec sh -c 'for f; do [ "$(head -c 4 "$f" | od -An -c | tr -d " ")" = 177ELF ] && echo "$f"; done' _ {} +) >"$UP/elves"
# (each ldd line after its file and a tab: "FILE<tab><tab>NAME => PATH (0xADDRESS)", PATH as it is,
# spaces and all, or "not found")
in_bundle bash -c "$BOOT"' while read -r f; do ldd "$f" 2>&1 | sed "s|^|$f\t|"; done <"$U/../elves"' >"$T/ldd.log" 2>&1
glibc_real=$(dpkg-query -L libc6 2>/dev/null | grep -E '\.so' | xargs -r readlink -f | sort -u)
offenders=$(while IFS=$'\t' read -r f rest; do
  case $rest in *" => "*) ;; *) continue ;; esac
  name=${rest%% => *} path=${rest#* => }
  name=${name//[[:space:]]/} path=${path% (0x*}
  case $path in
    "$U"/*) continue ;;
    "not found") echo "$f: $name not found"; continue ;;
  esac
  real=$(readlink -f "$path")
  if [ -n "$glibc_real" ]; then grep -qxF "$real" <<<"$glibc_real" && continue
  else grep -qxF "$name" <<<"$GLIBC_NAMES" && continue; fi
  case ":$CUDA_DIRS:" in *":${path%/*}:"*) continue ;; esac
  echo "$f: $name => $path"
done <"$T/ldd.log")
n_elves=$(wc -l <"$UP/elves")
if [ "$n_elves" -gt 0 ] && [ -z "$offenders" ] && ! grep -q 'not a dynamic executable' "$T/ldd.log"; then
  ok "ldd of all $n_elves programs, libraries and plugins: every library in the bundle, glibc or env.sh's CUDA folders"
else
  bad "ldd of the bundle's $n_elves ELF files" "libraries from elsewhere or not found" "$offenders"
fi

# ---- nothing of glibc, the NVIDIA driver or CUDA inside --------------------------------------
cuda_names=$(ls /usr/local/cuda*/lib64/ /usr/local/cuda*/targets/*/lib/ 2>/dev/null | grep -E '^lib.*\.so' | sort -u)
inside=$(cd "$U" && find . -type f | while read -r f; do
  n=${f##*/}
  so=$(readelf -d "$f" 2>/dev/null | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
  for x in "$n" $so; do
    case $x in libcuda.so*|libnvidia-*) echo "$f (the driver's)"; continue ;; esac
    grep -qxF "$x" <<<"$GLIBC_NAMES" && echo "$f (glibc's $x)"
    grep -qxF "$x" <<<"$cuda_names" && echo "$f (CUDA's $x)"
  done
done | sort -u)
if [ -z "$inside" ]; then ok "no file of glibc, the driver or CUDA inside ($(find "$U" -type f | wc -l) files, $(ls "$U/runtime/lib" | wc -l) libraries)"
else bad "nothing of glibc, the driver or CUDA inside" "found" "$inside"; fi

# ---- renders through the bundle, with the system's copies hidden ------------------------------
RENDER='--set run.device=cpu --set output.width=96 --set output.height=64 --set optim.iterations=2 --set model.random_width_divisor=8'
RUNS="$BOOT"' cd "$U";
  mpirun --oversubscribe -np 2 ./nstbatch configs/demo.ini '"$RENDER"' --set tiling.tile_size=48 --set output.path="$U/../r2.png" >"$U/../r2.log" 2>&1 || echo "mpirun: $?" >>"$U/../r2.log";
  mpirun --oversubscribe -np 2 ./nstbatch configs/demo.ini '"$RENDER"' --set tiling.tile_size=48 --set output.path="$U/../r2.h5" >"$U/../h5.log" 2>&1 || echo "mpirun: $?" >>"$U/../h5.log";
  ./nstbatch configs/demo.ini '"$RENDER"' --set output.path="$U/../r1.png" >"$U/../r1.log" 2>&1 || echo "singleton: $?" >>"$U/../r1.log";
  ompi_info --parsable --path all >"$U/../oi.log" 2>&1; ompi_info >>"$U/../oi.log" 2>&1 || true'
# hide.sh EMPTY BUNDLE CMD...: bind-mounts empty folders and files over the system's Open MPI and
# PMIx (folders, programs), ssh and rsh, the libraries of Open MPI, PMIx, hwloc, libevent, oneDNN,
# HDF5 and libtiff, and every other system copy of a library the bundle carries, then runs CMD
cat >"$T/hide.sh" <<'EOF'
set -eu
E=$1; U=$2; shift 2
mkdir -p "$E/d" && : >"$E/f"
for d in /usr/lib/x86_64-linux-gnu/openmpi /usr/lib/x86_64-linux-gnu/pmix2 /usr/lib/x86_64-linux-gnu/hwloc /usr/share/openmpi /etc/openmpi; do
  [ -d "$d" ] && mount --bind "$E/d" "$d" && echo "hidden $d"
done
for f in /usr/bin/orterun /usr/bin/orted /usr/bin/ompi_info /usr/bin/ssh /usr/bin/rsh; do
  f=$(readlink -f "$f" || true); [ -f "$f" ] && mount --bind "$E/f" "$f" && echo "hidden $f"
done
for n in $(ls "$U/runtime/lib") 'libmpi*.so*' 'libopen-pal*.so*' 'libopen-rte*.so*' 'libmca_common*.so*' 'libpmix*.so*' \
         'libhwloc*.so*' 'libevent*.so*' 'libdnnl*.so*' 'libhdf5*.so*' 'libtiff*.so*'; do
  for f in /lib/x86_64-linux-gnu/$n /usr/lib/x86_64-linux-gnu/$n /usr/lib64/$n; do
    f=$(readlink -f "$f" || true)
    [ -f "$f" ] && [ -s "$f" ] && mount --bind "$E/f" "$f" && echo "hidden $f"
  done
done
exec "$@"
EOF
unshare_ok=""
if err=$(unshare -m true 2>&1); then
  unshare_ok=yes
  where="the system's Open MPI, PMIx, hwloc, HDF5, oneDNN, libtiff and every library the bundle carries hidden, and ssh"
  unshare -m bash "$T/hide.sh" "$T/empty" "$U" env -i PATH=/usr/bin:/bin HOME="$HOME" U="$U" bash -c "$RUNS" >"$T/hide.log" 2>&1
  hidden=$(grep -c '^hidden' "$T/hide.log")
  if [ "$hidden" -ge 10 ] && grep -q 'libdnnl' "$T/hide.log" && grep -q 'libhdf5' "$T/hide.log" && grep -q 'libtiff' "$T/hide.log" &&
     grep -q 'openmpi$' "$T/hide.log" && grep -q 'libmpi' "$T/hide.log"; then
    ok "in a mount namespace: $hidden system folders and files hidden (Open MPI, PMIx, HDF5, oneDNN, libtiff among them)"
  else
    bad "hiding the system's copies" "$hidden hidden" "$(cat "$T/hide.log")"
  fi
else
  where="the system's copies visible"
  skip "hiding the system's Open MPI, HDF5, oneDNN, libtiff: unshare -m does not work here (${err##*: })"
  in_bundle bash -c "$RUNS" >"$T/hide.log" 2>&1
fi
# magic FILE SIGNATURE: FILE starts with SIGNATURE (its first 8 bytes as od -c writes them)
magic() { [ -s "$1" ] && [ "$(head -c 8 "$1" | od -An -c | tr -d ' ')" = "$2" ]; }
png_ok() { magic "$1" '211PNG\r\n032\n'; }
if png_ok "$UP/r2.png" && grep -q '2 ranks' "$UP/r2.log" && grep -q 'wrote .*r2.png (96x64' "$UP/r2.log"; then
  ok "the bundled mpirun ran 2 ranks of a CPU render on 48 px tiles, wrote the 96x64 PNG ($where)"
else
  bad "2 ranks through the bundled mpirun" "no output ($where)" "$(cat "$UP/r2.log" "$T/hide.log" 2>/dev/null)"
fi
if magic "$UP/r2.h5" '211HDF\r\n032\n' && grep -q 'wrote .*r2.h5 (96x64' "$UP/h5.log"; then
  ok "the same 2 ranks wrote a parallel HDF5 output (MPI-IO through the bundled plugins)"
else
  bad "2 ranks writing HDF5 through the bundle" "no output" "$(cat "$UP/h5.log" 2>/dev/null)"
fi
if png_ok "$UP/r1.png" && grep -q 'wrote .*r1.png (96x64' "$UP/r1.log"; then
  ok "a render without mpirun (MPI singleton) wrote its PNG ($where)"
else
  bad "a render without mpirun" "no output" "$(cat "$UP/r1.log" 2>/dev/null)"
fi
oi_bad=""
for k in pkglibdir pkgdatadir sysconfdir bindir; do grep -q "^path:$k:$U/runtime/openmpi/" "$UP/oi.log" || oi_bad="$oi_bad $k"; done
for c in "btl: self" "btl: vader" "btl: tcp" "pml: ob1" "pmix: ext3x" "plm: isolated" "io: ompio"; do grep -q "MCA $c " "$UP/oi.log" || oi_bad="$oi_bad '$c'"; done
if [ -z "$oi_bad" ]; then ok "the bundled ompi_info: its install folders in the bundle, btl self/vader/tcp, pml ob1, pmix ext3x, plm isolated, io ompio found"
else bad "Open MPI relocated into the bundle" "wrong or missing:$oi_bad" "$(cat "$UP/oi.log" 2>/dev/null)"; fi

# ---- env.sh on a node's layout: a PyTorch venv's nvidia-* wheels --------------------------------
# links to this machine's libraries where a CUDA 13 PyTorch keeps them, one library left out (NCCL's
# wheel, or the last name), a link-time stub of cuDNN that sorts first and must not be taken; the
# real CUDA folders out of the search
V=$T/node/opt/torch/.venv/lib/python3.12/site-packages/nvidia
mkdir -p "$V/cudnn/lib" "$V/nccl/lib" "$V/cu13/lib/stubs" "$T/node/usr/local/cuda-13.0/lib64"
left_out=$(printf '%s\n' "${want[@]}" | grep -m1 '^libnccl' || printf '%s\n' "${want[@]}" | tail -n 1)
placed=()
for n in "${want[@]}"; do
  [ "$n" = "$left_out" ] && continue
  real=$(sed -n "s|^env.sh: $n: \(/.*\)|\1|p" <<<"$envlog")/$n
  case $n in libcudnn*) d=$V/cudnn/lib ;; libnccl*) d=$V/nccl/lib ;; *) d=$V/cu13/lib ;; esac
  ln -s "$real" "$d/$n" && placed+=("$n:$d")
done
: >"$V/cu13/lib/stubs/libcudnn.so.9"
# ldd for the programs' own libraries; dlopen (as the CUDA backend opens cuBLAS) for every placed
# one: the dynamic loader names the file it initialises, link path and all
fake=$(in_bundle NSTBATCH_CUDA_SEARCH="$T/node/usr/local/cuda-13.0/lib64 $T/node/opt" LOAD="${placed[*]%%:*}" bash -c "$BOOT"' cat "$U/../env.log";
  echo "MISSING=$NSTBATCH_BUNDLE_MISSING"; echo "LD=$LD_LIBRARY_PATH"; ldd ./nstbatch
  LD_DEBUG=libs python3 -c "import ctypes, os; [ctypes.CDLL(n) for n in os.environ[\"LOAD\"].split()]" 2>&1 | grep "calling init:" || true
  echo survived' 2>&1)
fake_bad=""
for p in "${placed[@]}"; do grep -qxF "env.sh: ${p%%:*}: ${p#*:}" <<<"$fake" || fake_bad="$fake_bad ${p%%:*}"; done
grep -q '/stubs' <<<"$fake" && fake_bad="$fake_bad (a stub taken)"
for p in "${placed[@]}"; do
  n=${p%%:*}
  grep -q "^[[:space:]]*$n => ${p#*:}/$n " <<<"$fake" || ! grep -q "^[[:space:]]*$n => " <<<"$fake" || fake_bad="$fake_bad (ldd: $n not from the venv)"
  grep -q "calling init: ${p#*:}/$n\$" <<<"$fake" || fake_bad="$fake_bad (dlopen: $n not from the venv)"
done
if [ ${#placed[@]} -gt 0 ] && [ -z "$fake_bad" ] && grep -q '^survived$' <<<"$fake"; then
  ok "env.sh on a PyTorch venv's layout (NSTBATCH_CUDA_SEARCH): ${#placed[@]} libraries found in their wheels, not the stub; ldd and dlopen take them from there"
else
  bad "env.sh on a PyTorch venv's layout" "wrong:${fake_bad:- nothing placed}" "$fake"
fi
if [ -n "$left_out" ] && [ "$(grep -c "MISSING" <<<"$(grep "^env.sh: $left_out: " <<<"$fake")")" -eq 1 ] &&
   grep -qxF "MISSING=$left_out" <<<"$fake" && grep -q '^survived$' <<<"$fake"; then
  ok "a missing library: one line ($(grep "^env.sh: $left_out: " <<<"$fake" | cut -c1-90)...), NSTBATCH_BUNDLE_MISSING=$left_out, the shell goes on"
else
  bad "a missing library reported" "${left_out:-no library to leave out}" "$fake"
fi
# the same without NSTBATCH_CUDA_SEARCH, as on a node: the CUDA folders hidden, the venv in /opt
# (a tmpfs there), linked to this machine's libraries through a folder the hiding leaves visible
if [ -n "$unshare_ok" ] && [ ${#placed[@]} -gt 0 ]; then
  cat >"$T/node.sh" <<'EOF'
set -eu
E=$1; shift
mkdir -p "$E/real" "$E/d"
mount --bind "$(readlink -f "$REAL")" "$E/real"
for d in /usr/local/cuda /usr/local/cuda-*; do r=$(readlink -f "$d") && [ -d "$r" ] && mount --bind "$E/d" "$r"; done
mount -t tmpfs tmpfs /opt
for p in $PLACED; do mkdir -p "/opt/${p#*:}" && ln -s "$E/real/${p%%:*}" "/opt/${p#*:}/${p%%:*}"; done
exec "$@"
EOF
  real=$(sed -n "s|^env.sh: ${placed[0]%%:*}: \(/.*\)|\1|p" <<<"$envlog")
  node=$(REAL=$real PLACED="${placed[*]//$T\/node\/opt\//}" unshare -m bash "$T/node.sh" "$T/nodeempty" env -i PATH=/usr/bin:/bin HOME="$HOME" U="$U" \
         bash -c "$BOOT"' cat "$U/../env.log"; echo "MISSING=$NSTBATCH_BUNDLE_MISSING"' 2>&1)
  node_bad=""
  for p in "${placed[@]}"; do d=${p#*:}; grep -qxF "env.sh: ${p%%:*}: ${d#"$T/node"}" <<<"$node" || node_bad="$node_bad ${p%%:*}"; done
  if [ -z "$node_bad" ] && grep -qxF "MISSING=$left_out" <<<"$node"; then
    ok "env.sh's own search, no CUDA folder and PyTorch's venv in /opt (mount namespace): ${#placed[@]} found in the wheels, $left_out missing"
  else
    bad "env.sh's own search on a node's layout" "not found where placed:${node_bad:- (none)}" "$node"
  fi
else
  skip "env.sh's own search on a node's layout: needs unshare -m"
fi
py=$(in_bundle LD_LIBRARY_PATH=/before bash -c "$BOOT"' runtime/host-python3 -c "import os; print(os.environ.get(\"LD_LIBRARY_PATH\"))"' 2>&1)
if [ "$py" = /before ]; then ok "runtime/host-python3 runs python3 with the library path from before env.sh"
else bad "runtime/host-python3" "LD_LIBRARY_PATH: $py"; fi

# ---- env.sh passes over a cuDNN older than the build's, or for another CUDA ----------------------
# stand-in libcudnn.so.9 files (cudnnGetVersion and cudnnGetCudartVersion alone) beside links to the
# real other libraries: the build's version less one minor; more one minor; more two minors but for
# the CUDA major before the build's (cuDNN's CUDA 12 and 13 builds share the name). An H200 node had
# the system's 9.14 before PyTorch's 9.19 for a 9.19 build.
read -r bv bc < <("$U/runtime/cudnn-version" --built 2>/dev/null) || true
if [ -z "${bv:-}" ] || ! command -v cc >/dev/null; then skipped "env.sh and an older cuDNN" "no runtime/cudnn-version --built (a CPU-only build) or no C compiler"
else
  printf 'unsigned long cudnnGetVersion(void) { return V; }\nunsigned long cudnnGetCudartVersion(void) { return C; }\n' >"$T/fake_cudnn.c"
  older=$((bv - 100)) newer=$((bv + 100)) other=$((bv + 200))
  for vc in "$older $bc" "$newer $bc" "$other $((bc - 1000))"; do
    v=${vc% *} c=${vc#* }
    mkdir -p "$T/cv/$v" && cc -shared -fPIC -DV="${v}UL" -DC="${c}UL" -o "$T/cv/$v/libcudnn.so.9" "$T/fake_cudnn.c"
    for n in "${want[@]}"; do
      case $n in libcudnn.so.9) ;; *) ln -sf "$(sed -n "s|^env.sh: $n: \(/.*\)|\1|p" <<<"$envlog")/$n" "$T/cv/$v/$n" ;; esac
    done
  done
  vs() { echo "$(($1 / 10000)).$(($1 % 10000 / 100)).$(($1 % 100))"; }
  # found first: the older one; further on, the newer one for another CUDA, then the suitable one
  cv=$(in_bundle NSTBATCH_CUDA_SEARCH="$T/cv/$older $T/cv/$other $T/cv/$newer" bash -c "$BOOT"' cat "$U/../env.log"; echo "DIRS=$NSTBATCH_CUDA_DIRS"; echo survived' 2>&1)
  if grep -qxF "env.sh: libcudnn.so.9: $T/cv/$newer" <<<"$cv" && grep -q "^DIRS=$T/cv/$newer:" <<<"$cv" &&
     grep -qF "taking cuDNN $(vs $newer) for CUDA $((bc / 1000)) in $T/cv/$newer over $(vs $older) for CUDA $((bc / 1000)) in $T/cv/$older" <<<"$cv" &&
     grep -q '^survived$' <<<"$cv"; then
    ok "env.sh passes over a cuDNN older than the build's ($(vs $older) < $(vs "$bv")) and a newer one for CUDA $((bc / 1000 - 1)), takes $(vs $newer), its folder first on the path, in one line"
  else bad "env.sh and an older cuDNN first" "not the suitable one, or not first" "$cv"; fi
  # a suitable cuDNN found first, alone in its folder, and the other libraries in a folder with an
  # older cuDNN: the suitable one's folder still goes first on the path (its sub-libraries, loaded
  # by name, would otherwise come from the other); sourced from a shell with IFS unset (set -u)
  mkdir -p "$T/cv/only" && cp "$T/cv/$newer/libcudnn.so.9" "$T/cv/only/"
  cv=$(in_bundle NSTBATCH_CUDA_SEARCH="$T/cv/only $T/cv/$older" bash -c 'unset IFS; '"$BOOT"' cat "$U/../env.log"; echo "DIRS=$NSTBATCH_CUDA_DIRS"; echo "IFS=${IFS-unset}"; echo survived' 2>&1)
  if grep -qxF "env.sh: libcudnn.so.9: $T/cv/only" <<<"$cv" && grep -qx "DIRS=$T/cv/only:$T/cv/$older" <<<"$cv" && grep -qx 'IFS=unset' <<<"$cv" &&
     grep -q '^survived$' <<<"$cv"; then
    ok "a suitable cuDNN found first: its folder first on the path, before the other libraries' folder with an older cuDNN; IFS unset in the shell (set -u) stays unset"
  else bad "env.sh, the first cuDNN's folder first" "not first, or the shell ended" "$cv"; fi
  # a cuDNN that answers through its sub-library, loaded by name (as cuDNN 9 does, libcudnn_graph),
  # read with its own folder first: the node's path (LD_LIBRARY_PATH) holding another cuDNN's
  # sub-library (the older) does not answer for it
  printf '#include <dlfcn.h>\nstatic unsigned long ask(const char *f) { void *h = dlopen("libcudnn_graph.so.9", RTLD_NOW | RTLD_LOCAL);\n'\
'  unsigned long (*g)(void) = h ? (unsigned long (*)(void))dlsym(h, f) : 0; return g ? g() : 0; }\n'\
'unsigned long cudnnGetVersion(void) { return ask("cudnnGetVersion"); }\nunsigned long cudnnGetCudartVersion(void) { return ask("cudnnGetCudartVersion"); }\n' >"$T/fwd_cudnn.c"
  mkdir -p "$T/cv/fwd" && cc -shared -fPIC -o "$T/cv/fwd/libcudnn.so.9" "$T/fwd_cudnn.c" -ldl &&
    cp "$T/cv/$newer/libcudnn.so.9" "$T/cv/fwd/libcudnn_graph.so.9" && cp "$T/cv/$older/libcudnn.so.9" "$T/cv/$older/libcudnn_graph.so.9"
  cv=$(in_bundle LD_LIBRARY_PATH="$T/cv/$older" NSTBATCH_CUDA_SEARCH="$T/cv/$older $T/cv/fwd" bash -c "$BOOT"' cat "$U/../env.log"; echo survived' 2>&1)
  if grep -qxF "env.sh: libcudnn.so.9: $T/cv/fwd" <<<"$cv" && grep -qF "taking cuDNN $(vs $newer) for CUDA $((bc / 1000)) in $T/cv/fwd" <<<"$cv" &&
     grep -q '^survived$' <<<"$cv"; then
    ok "a cuDNN that answers through its sub-library, with another cuDNN's on the node's path: read as its own version ($(vs $newer)), taken"
  else bad "env.sh reading a cuDNN through its sub-library" "read as another's version" "$cv"; fi
  # only the older one: kept, with a note that says what to do
  cv=$(in_bundle NSTBATCH_CUDA_SEARCH="$T/cv/$older" bash -c "$BOOT"' cat "$U/../env.log"; echo "MISSING=$NSTBATCH_BUNDLE_MISSING"; echo survived' 2>&1)
  if grep -qxF "env.sh: libcudnn.so.9: $T/cv/$older" <<<"$cv" && grep -q "^env.sh: note: libcudnn.so.9 in .* is cuDNN $(vs $older) for CUDA .*NSTBATCH_CUDA_SEARCH" <<<"$cv" &&
     grep -qx 'MISSING=' <<<"$cv" && grep -q '^survived$' <<<"$cv"; then
    ok "only an older cuDNN: kept, with a note naming NSTBATCH_CUDA_SEARCH"
  else bad "env.sh with only an older cuDNN" "no note, or not kept" "$cv"; fi
  # a library that prints at load: its version is not read, and sourcing goes on (set -eu)
  mkdir -p "$T/cv/loud" && printf '#include <stdio.h>\n__attribute__((constructor)) static void hi(void) { puts("cuDNN says hello"); }\n' >"$T/loud.c" &&
    cat "$T/fake_cudnn.c" >>"$T/loud.c" && cc -shared -fPIC -DV="${older}UL" -DC="${bc}UL" -o "$T/cv/loud/libcudnn.so.9" "$T/loud.c" &&
    for n in "${want[@]}"; do case $n in libcudnn.so.9) ;; *) ln -sf "$T/cv/$older/$n" "$T/cv/loud/$n" ;; esac; done
  cv=$(in_bundle NSTBATCH_CUDA_SEARCH="$T/cv/loud $T/cv/$newer" bash -c "$BOOT"' cat "$U/../env.log"; echo survived' 2>&1)
  if grep -qxF "env.sh: libcudnn.so.9: $T/cv/$newer" <<<"$cv" && grep -q '^survived$' <<<"$cv"; then
    ok "a cuDNN that prints at load: its line is not taken for a version, the shell goes on"
  else bad "a cuDNN that prints at load" "the shell ended or took it" "$cv"; fi
fi

# every file the first contact's scripts name (outside comments) is in the bundle: a helper left out
# (bench/profile_table.sh once was) fails only on the GPU node
refs=$(cd "$U" && sed -e 's/^[[:space:]]*#.*//' -e 's/[[:space:]]#[[:space:]].*//' -e 's#\$ROOT/##g' -e 's#\${ROOT}/##g' \
         scripts/gpu-first-contact.sh tests/test_gpu_render.sh bench/gpu_iteration.sh |
       grep -oE '(^|[^A-Za-z0-9_/.])((bench|tests|scripts|configs)/[A-Za-z0-9_-]+\.(sh|py|ini|png)|build/(tests|bench)/[a-z_]+)' | sed -E 's#^[^a-z]##' | sort -u)
absent=$(cd "$U" && for f in $refs; do [ -e "$f" ] || printf '%s ' "$f"; done)
if [ -n "$refs" ] && [ -z "$absent" ]; then ok "every file the first contact's scripts name is in the bundle ($(wc -w <<<"$refs") files)"
else bad "files the first contact's scripts name" "missing from the bundle: ${absent:-(no file names found: the pattern broke)}"; fi

# the first contact as a GPU node runs it, from the unpacked bundle in a clean environment (its
# CPU mode, first steps: the script finds env.sh and the bundled programs; tests/test_first_contact.sh
# covers the steps themselves)
fc=$(cd "$U" && env -i PATH=/usr/bin:/bin HOME="$HOME" OUT="$T/fc" STEPS="env selftest" scripts/gpu-first-contact.sh --cpu 2>&1); st=$?
if [ $st -eq 0 ] && grep -qE '^selftest +ok' "$T/fc/summary.txt" && grep -q "runtime/lib" "$T/fc/env.txt" &&
   grep -q '^env.sh: libcudart.so.13: ' "$T/fc/env.txt"; then
  ok "scripts/gpu-first-contact.sh from the unpacked bundle (--cpu, env and selftest): env.sh sourced, the bundle's libraries resolved"
else bad "the first contact from the bundle" "exit $st" "$fc"; fi
finish

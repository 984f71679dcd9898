# env.sh: the environment of an unpacked nstbatch GPU bundle (@VERSION@). Source it from bash or sh
# (not run it):
#
#   . ./env.sh           (from the bundle's folder; bash may source it from anywhere)
#
# It puts the bundle's Open MPI and nstbatch first on PATH, its libraries first on LD_LIBRARY_PATH,
# relocates Open MPI and PMIx to the bundle (OPAL_* and PMIX_* variables), and finds this machine's
# CUDA libraries (the names in runtime/cuda-libs.txt), wherever they are: CUDA_HOME, /usr/local/cuda*,
# the system's library folders, the site-packages of python3 and of /opt/*/.venv and
# /usr/local/lib/python3* (PyTorch's nvidia-* wheels), then /opt, searched to a depth of 12 and for at
# most NSTBATCH_CUDA_FIND_SECONDS (20) a folder. NSTBATCH_CUDA_SEARCH="DIR ..." replaces those
# places. One line per library says where it was found or that it is MISSING;
# NSTBATCH_BUNDLE_MISSING holds the missing names (empty when all were found). A libcudnn.so.9 older
# than the build's, or for another CUDA, is passed over for a suitable one found anywhere in those
# places, where there is one (runtime/cudnn-version reads them; the line says which it took). Sourcing never exits
# the calling shell, with or without set -e. Sourcing it again starts from the saved originals.
#
# Python and PyTorch must not run with this LD_LIBRARY_PATH (the bundle's libstdc++, zlib, ... come
# first): runtime/host-python3 runs python3 with the original one (NSTBATCH_ORIG_LD_LIBRARY_PATH), e.g.
# PY=$NSTBATCH_BUNDLE/runtime/host-python3 bench/gpu_iteration.sh, or: env -u LD_LIBRARY_PATH python3 ...

# the bundle's folder: this file's (bash), else the current folder
if [ -n "${BASH_SOURCE:-}" ]; then
  NSTBATCH_BUNDLE=$(cd "$(dirname "${BASH_SOURCE}")" && pwd)
else
  NSTBATCH_BUNDLE=$(pwd)
fi

_nst_env_main() {
  _nst_b=$NSTBATCH_BUNDLE
  if [ ! -f "$_nst_b/runtime/cuda-libs.txt" ]; then
    echo "env.sh: $_nst_b is not an unpacked nstbatch bundle (no runtime/cuda-libs.txt): cd into the bundle's folder and source ./env.sh again" >&2
    unset NSTBATCH_BUNDLE
    return 1
  fi
  # the originals, once: sourcing again starts from them
  [ -n "${NSTBATCH_ORIG_PATH+set}" ] || NSTBATCH_ORIG_PATH=${PATH:-/usr/bin:/bin}
  [ -n "${NSTBATCH_ORIG_LD_LIBRARY_PATH+set}" ] || NSTBATCH_ORIG_LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}
  export NSTBATCH_BUNDLE NSTBATCH_ORIG_PATH NSTBATCH_ORIG_LD_LIBRARY_PATH
  _nst_openmpi "$_nst_b/runtime"
  _nst_find_cuda "$_nst_b/runtime/cuda-libs.txt"
  PATH=$_nst_b/runtime/openmpi/bin:$_nst_b:$NSTBATCH_ORIG_PATH
  LD_LIBRARY_PATH=$_nst_b/runtime/lib${NSTBATCH_CUDA_DIRS:+:$NSTBATCH_CUDA_DIRS}${NSTBATCH_ORIG_LD_LIBRARY_PATH:+:$NSTBATCH_ORIG_LD_LIBRARY_PATH}
  export PATH LD_LIBRARY_PATH
  if [ -n "$NSTBATCH_BUNDLE_MISSING" ]; then
    echo "env.sh: MISSING $NSTBATCH_BUNDLE_MISSING: nstbatch and its tests need them (the lines above say where to look)"
  else
    echo "env.sh: nstbatch bundle @VERSION@ ready in $_nst_b (python3 for PyTorch: runtime/host-python3)"
  fi
}

# Open MPI 4.1 and PMIx 4 relocated into the bundle: their install-directory variables, read by
# their "env" installdirs components, override the paths compiled into them
_nst_openmpi() {
  _nst_o=$1/openmpi
  export OPAL_PREFIX="$_nst_o" OPAL_EXEC_PREFIX="$_nst_o" OPAL_BINDIR="$_nst_o/bin" OPAL_LIBEXECDIR="$_nst_o/bin" \
         OPAL_LIBDIR="$1/lib" OPAL_PKGLIBDIR="$_nst_o/lib/openmpi" OPAL_DATAROOTDIR="$_nst_o/share" \
         OPAL_DATADIR="$_nst_o/share" OPAL_PKGDATADIR="$_nst_o/share/openmpi" OPAL_SYSCONFDIR="$_nst_o/etc"
  export OMPI_MCA_mca_base_component_path="$_nst_o/lib/openmpi"
  _nst_p=$1/pmix
  export PMIX_PREFIX="$_nst_p" PMIX_EXEC_PREFIX="$_nst_p" PMIX_BINDIR="$_nst_p/bin" PMIX_LIBDIR="$1/lib" \
         PMIX_PKGLIBDIR="$_nst_p/lib/pmix" PMIX_DATAROOTDIR="$_nst_p/share" PMIX_DATADIR="$_nst_p/share" \
         PMIX_PKGDATADIR="$_nst_p/share/pmix" PMIX_SYSCONFDIR="$_nst_p/etc"
  export PMIX_MCA_mca_base_component_path="$_nst_p/lib/pmix"
  # no ssh on the node: with an empty agent Open MPI takes its one-node launcher (plm isolated);
  # root allowed; no CMA/XPMEM between ranks (often refused in containers)
  export OMPI_MCA_plm_rsh_agent= OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
         OMPI_MCA_btl_vader_single_copy_mechanism=none
  # the bundled hwloc loads no plugins of the node's hwloc (the folder is empty)
  export HWLOC_PLUGINS_PATH="$1/hwloc"
}

# the places to search, in order, in two rounds (the second, which asks python3, only when the
# first leaves something missing); NSTBATCH_CUDA_SEARCH replaces both
_nst_cuda_roots() {
  if [ -n "${NSTBATCH_CUDA_SEARCH:-}" ]; then
    [ "$1" = 1 ] && echo "$NSTBATCH_CUDA_SEARCH"
    return 0
  fi
  if [ "$1" = 1 ]; then
    [ -n "${CUDA_HOME:-}" ] && echo "$CUDA_HOME/lib64 $CUDA_HOME/lib $CUDA_HOME/targets"
    for _nst_d in /usr/local/cuda /usr/local/cuda-*; do [ -d "$_nst_d" ] && echo "$_nst_d/lib64 $_nst_d/targets"; done
    echo /usr/lib/x86_64-linux-gnu /usr/lib64
    return 0
  fi
  # python3's site-packages (PyTorch's nvidia-* wheels), asked without this bundle's libraries
  if command -v python3 >/dev/null 2>&1; then
    env LD_LIBRARY_PATH="$NSTBATCH_ORIG_LD_LIBRARY_PATH" $_nst_to python3 -c \
      'import site; print(" ".join(site.getsitepackages() + [site.getusersitepackages()]))' 2>/dev/null || true
  fi
  for _nst_d in /opt/*/.venv/lib/python3*/site-packages /opt/*/lib/python3*/site-packages /usr/local/lib/python3*/dist-packages \
                /usr/local/lib/python3*/site-packages /usr/lib/python3/dist-packages; do
    [ -d "$_nst_d" ] && echo "$_nst_d"
  done
  echo /opt
}

# _nst_find_cuda LIST: each name of LIST found once; NSTBATCH_CUDA_DIRS, NSTBATCH_BUNDLE_MISSING
_nst_find_cuda() {
  _nst_to=""
  command -v timeout >/dev/null 2>&1 && _nst_to="timeout ${NSTBATCH_CUDA_FIND_SECONDS:-20}"
  _nst_want=$(grep -v '^#' "$1" | tr '\n' ' ')
  _nst_found=""   # lines "NAME DIR"
  _nst_roots=""
  for _nst_round in 1 2; do
    [ -n "$(_nst_missing "$_nst_want" "$_nst_found")" ] || break
    for _nst_r in $(_nst_cuda_roots $_nst_round); do
      case "$_nst_roots " in *" $_nst_r "*) continue ;; esac
      _nst_roots="$_nst_roots $_nst_r"
      _nst_search "$_nst_r"
    done
  done
  _nst_cudnn_pick
  NSTBATCH_CUDA_DIRS="" NSTBATCH_BUNDLE_MISSING=""
  for _nst_n in $_nst_want; do
    _nst_dir=$(printf '%s' "$_nst_found" | awk -v n="$_nst_n" '$1 == n { print $2; exit }')
    if [ -n "$_nst_dir" ]; then
      echo "env.sh: $_nst_n: $_nst_dir"
      case ":$NSTBATCH_CUDA_DIRS:" in *":$_nst_dir:"*) ;; *) NSTBATCH_CUDA_DIRS=$NSTBATCH_CUDA_DIRS${NSTBATCH_CUDA_DIRS:+:}$_nst_dir ;; esac
    else
      echo "env.sh: $_nst_n: MISSING (not under$_nst_roots): install it (CUDA 13's package, or PyTorch's nvidia-* wheels) or set NSTBATCH_CUDA_SEARCH=\"DIR ...\" to where it is, then source env.sh again"
      NSTBATCH_BUNDLE_MISSING=$NSTBATCH_BUNDLE_MISSING${NSTBATCH_BUNDLE_MISSING:+ }$_nst_n
    fi
  done
  # the folder of the cuDNN taken (the first found, or the one taken over it) first: cuDNN loads its
  # sub-libraries by name, and a folder before it with another cuDNN (one of cuBLAS's, say) would
  # give them; the list walked without IFS, which the calling shell may have unset or changed
  _nst_cdir=$(printf '%s' "$_nst_found" | awk '$1 == "libcudnn.so.9" { print $2; exit }')
  if [ -n "$_nst_cdir" ]; then
    _nst_rest="" _nst_dl=$NSTBATCH_CUDA_DIRS
    while [ -n "$_nst_dl" ]; do
      _nst_d=${_nst_dl%%:*}
      case $_nst_dl in *:*) _nst_dl=${_nst_dl#*:} ;; *) _nst_dl="" ;; esac
      [ "$_nst_d" = "$_nst_cdir" ] || _nst_rest=$_nst_rest${_nst_rest:+:}$_nst_d
    done
    NSTBATCH_CUDA_DIRS=$_nst_cdir${_nst_rest:+:$_nst_rest}
  fi
  export NSTBATCH_CUDA_DIRS NSTBATCH_BUNDLE_MISSING
}

# _nst_search ROOT: the names still missing, looked for under ROOT (one find, bounded in depth and
# time; the link-time stubs are never the library; ROOT itself may be a link) into _nst_found
_nst_search() {
  [ -d "$1" ] || return 0
  _nst_left=$(_nst_missing "$_nst_want" "$_nst_found")
  [ -n "$_nst_left" ] || return 0
  _nst_expr=""
  for _nst_n in $_nst_left; do _nst_expr="$_nst_expr${_nst_expr:+ -o }-name $_nst_n"; done
  _nst_hits=$( { $_nst_to find -H "$1" -maxdepth 12 -path '*/stubs' -prune -o \( $_nst_expr \) -print 2>/dev/null || \
                 [ $? -ne 124 ] || echo TIMEOUT; } | sort)
  for _nst_h in $_nst_hits; do
    if [ "$_nst_h" = TIMEOUT ]; then
      echo "env.sh: note: the search of $1 stopped after ${NSTBATCH_CUDA_FIND_SECONDS:-20} s (NSTBATCH_CUDA_FIND_SECONDS)"
      continue
    fi
    _nst_n=${_nst_h##*/}
    case " $(_nst_missing "$_nst_want" "$_nst_found") " in *" $_nst_n "*)
      _nst_found="$_nst_found$_nst_n ${_nst_h%/*}
" ;; esac
  done
}

# cuDNN runs builds of its own minor version or older ones, not newer (its compatibility rule),
# and its builds for CUDA 12 and 13 share the name: where the libcudnn.so.9 found first is older
# than the build's or for another CUDA (runtime/cudnn-version says), the newest suitable one
# anywhere the search looks (both rounds) is taken instead, and its folder goes first on the path
# (cuDNN loads its sub-libraries by name). An H200 node had the system's 9.14 before PyTorch's 9.19
# for a 9.19 build. Else a note; nstbatch warns.
_nst_cudnn_pick() {
  _nst_best="" _nst_bestv=0 _nst_seen=""
  _nst_cv=$NSTBATCH_BUNDLE/runtime/cudnn-version
  _nst_dir=$(printf '%s' "$_nst_found" | awk '$1 == "libcudnn.so.9" { print $2; exit }')
  [ -x "$_nst_cv" ] && [ -n "$_nst_dir" ] || return 0
  _nst_built=$(_nst_cudnn_v --built) || return 0
  _nst_have=$(_nst_cudnn_v "$_nst_dir/libcudnn.so.9") || return 0
  _nst_cudnn_ok "$_nst_have" && return 0
  for _nst_r in $_nst_roots $(_nst_cuda_roots 2); do
    case "$_nst_seen " in *" $_nst_r "*) continue ;; esac
    [ -d "$_nst_r" ] || continue
    _nst_seen="$_nst_seen $_nst_r"
    for _nst_h in $($_nst_to find -H "$_nst_r" -maxdepth 12 -path '*/stubs' -prune -o -name libcudnn.so.9 -print 2>/dev/null); do
      _nst_v=$(_nst_cudnn_v "$_nst_h") || continue
      if _nst_cudnn_ok "$_nst_v" && [ "${_nst_v% *}" -gt "$_nst_bestv" ]; then _nst_best=${_nst_h%/*} _nst_bestv=${_nst_v% *} _nst_bestf=$_nst_v; fi
    done
  done
  if [ -n "$_nst_best" ]; then
    echo "env.sh: libcudnn.so.9: taking cuDNN $(_nst_cudnn_s "$_nst_bestf") in $_nst_best over $(_nst_cudnn_s "$_nst_have") in $_nst_dir: the build is $(_nst_cudnn_s "$_nst_built"), and cuDNN runs only builds of its own minor version or older, for its own CUDA"
    _nst_found=$(printf '%s' "$_nst_found" | awk -v d="$_nst_best" '$1 == "libcudnn.so.9" { print $1, d; next } { print }')
  else
    echo "env.sh: note: libcudnn.so.9 in $_nst_dir is cuDNN $(_nst_cudnn_s "$_nst_have"), not one the $(_nst_cudnn_s "$_nst_built") build promises to run on (an older minor version or another CUDA), and no suitable one is under$_nst_seen: nstbatch will warn; set NSTBATCH_CUDA_SEARCH=\"DIR ...\" to a suitable cuDNN's folder, then the folders above, and source env.sh again"
  fi
}
# "VERSION CUDART" of a cuDNN (or --built), with its own folder first (it answers through its
# sub-library libcudnn_graph, loaded by name: another folder's would answer for it) and the bundle's
# libraries (a cuDNN may need a newer libstdc++ than the node's); fails unless the last line is two
# numbers (a library may print)
_nst_cudnn_v() {
  case $1 in */*) _nst_own=${1%/*}: ;; *) _nst_own="" ;; esac
  _nst_o=$(env LD_LIBRARY_PATH="$_nst_own$NSTBATCH_BUNDLE/runtime/lib${NSTBATCH_ORIG_LD_LIBRARY_PATH:+:$NSTBATCH_ORIG_LD_LIBRARY_PATH}" "$_nst_cv" "$1" 2>/dev/null | tail -n 1) || return 1
  case $_nst_o in [0-9]*" "[0-9]*) ;; *) return 1 ;; esac
  case ${_nst_o%% *}${_nst_o#* } in *[!0-9]*) return 1 ;; esac
  echo "$_nst_o"
}
# the same major version, a minor at least the build's, built for the build's CUDA major
_nst_cudnn_ok() {
  _nst_a=${1% *} _nst_c=${1#* } _nst_ba=${_nst_built% *} _nst_bc=${_nst_built#* }
  [ $((_nst_a / 10000)) -eq $((_nst_ba / 10000)) ] && [ $((_nst_a % 10000 / 100)) -ge $((_nst_ba % 10000 / 100)) ] &&
    [ $((_nst_c / 1000)) -eq $((_nst_bc / 1000)) ]
}
# "9.14.0 for CUDA 13" from "91400 13000" (or the version alone)
_nst_cudnn_s() {
  _nst_a=${1% *}
  printf '%s' "$((_nst_a / 10000)).$((_nst_a % 10000 / 100)).$((_nst_a % 100))"
  case $1 in *" "*) printf ' for CUDA %s' "$((${1#* } / 1000))" ;; esac
}

# _nst_missing WANT FOUND: the names of WANT that FOUND's lines do not have yet
_nst_missing() {
  for _nst_m in $1; do
    case "
$2" in *"
$_nst_m "*) ;; *) printf '%s ' "$_nst_m" ;; esac
  done
}

_nst_env_main || true
unset -f _nst_env_main _nst_openmpi _nst_cuda_roots _nst_find_cuda _nst_search _nst_missing _nst_cudnn_pick _nst_cudnn_v _nst_cudnn_ok _nst_cudnn_s
unset _nst_b _nst_o _nst_p _nst_d _nst_want _nst_roots _nst_to _nst_found _nst_round _nst_r _nst_left _nst_expr _nst_n _nst_hits _nst_h _nst_dir _nst_m \
      _nst_cv _nst_built _nst_have _nst_best _nst_bestv _nst_bestf _nst_v _nst_seen _nst_o _nst_a _nst_c _nst_ba _nst_bc _nst_rest _nst_cdir _nst_dl _nst_own

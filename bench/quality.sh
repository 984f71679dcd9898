#!/usr/bin/env bash
# bench/quality.sh: time to quality (make bench-quality). nstbatch and two PyTorch tools, each at its
# own defaults (schedule, optimiser, averaging, upsampling untouched), on one network: how long and
# how much work nstbatch needs to come within 0, 1 and 5 % of the best peer's final score.
#
#   bench/quality.sh [OUT_DIR]       (default bench/results: quality.md, quality.tsv, quality.log)
#
# The peers: crowsonkb/style-transfer-pytorch ("kc") and ProGamerGov/neural-style-pt ("pt"), checkouts
# in $PEERS (default bench/peers/, ignored by git), adapted at run time (bench/quality/kc.py, pt.py):
#   fair (kc, pt; the main table): the shared network, and nstbatch's objective in place of their losses;
#   whole (kc-whole, pt-whole; reported only): the shared network, their own losses and weights.
# Shared network: nstbatch --make-weights random (seed 1, width 1/4) with its preprocessing. Inputs:
# tubingen.jpg, starry_night.jpg (pt's examples/inputs), content resized to exactly WxH, style to long
# side W (bench/quality/prep.py). Every tool writes a snapshot every 25 iterations of every level with
# its wall clock; one float64 scorer (bench/quality/score.py) evaluates nstbatch's objective at the
# final size on each, and on each output; the snapshots' own seconds are taken off each tool's time.
# The tools run one after another, never together, THREADS threads each.
#
# Knobs: SIZES ("512x384"; FULL=1: "512x384 1024x768"), TOOLS ("nstbatch kc pt kc-whole pt-whole"; ""
# runs the VARIANTS alone),
# VARIANTS (further nstbatch rows, NAME:ARGS;NAME:ARGS with ARGS split on blanks, e.g.
# 'lv2:--set pyramid.levels=2 --set pyramid.iterations=300,150;adam300:--set optim.iterations=300'),
# PEERS, CONTENT and STYLE (image paths; default pt's examples), THREADS (2), WORK (build/quality),
# NST (./nstbatch), QUICK_ITERS (N iterations per level of each peer: plumbing only, marked in the
# report as not their defaults). Needs /usr/bin/python3 with PyTorch, torchvision, h5py, tifffile,
# Pillow, and vips (scripts/install-deps.sh --dev).
set -euo pipefail
# numbers with a decimal point in any locale (awk, printf, sort -n): a user's LC_ALL becomes LANG
[ -z "${LC_ALL:-}" ] || { export LANG="$LC_ALL"; unset LC_ALL; }; export LC_NUMERIC=C
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=$(mkdir -p "${1:-$ROOT/bench/results}" && cd "${1:-$ROOT/bench/results}" && pwd)
NST=$(readlink -f "${NST:-$ROOT/nstbatch}")
PY=/usr/bin/python3
Q=$ROOT/bench/quality
PEERS=$(readlink -m "${PEERS:-$ROOT/bench/peers}")
WORK=$(readlink -m "${WORK:-$ROOT/build/quality}")
SIZES=${SIZES:-$([ "${FULL:-0}" = 1 ] && echo "512x384 1024x768" || echo 512x384)}
TOOLS=${TOOLS-nstbatch kc pt kc-whole pt-whole} # set and empty: VARIANTS only
VARIANTS=${VARIANTS:-}
THREADS=${THREADS:-2}
QUICK_ITERS=${QUICK_ITERS:-}
KC=$PEERS/style-transfer-pytorch PT=$PEERS/neural-style-pt
CONTENT=${CONTENT:-$PT/examples/inputs/tubingen.jpg}
STYLE=${STYLE:-$PT/examples/inputs/starry_night.jpg}
export OMP_NUM_THREADS=$THREADS LC_ALL=C # C: EPOCHREALTIME with a decimal point
# PyTorch on OpenBLAS's OpenMP build where installed, as bench/cpu_iteration.sh (its Gram matmuls)
blas_dir=/usr/lib/x86_64-linux-gnu/openblas-openmp
[ -e "$blas_dir/libblas.so.3" ] && export LD_LIBRARY_PATH=$blas_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

need_peer() { # name folder url: one line saying how to get a missing checkout, exit 2
  [ -d "$2" ] && return 0
  echo "bench/quality.sh: no $1 in $PEERS: git clone $3 $2" >&2
  exit 2
}
case " $TOOLS " in *" kc"*) need_peer style-transfer-pytorch "$KC" https://github.com/crowsonkb/style-transfer-pytorch ;; esac
case " $TOOLS " in *" pt"*) need_peer neural-style-pt "$PT" https://github.com/ProGamerGov/neural-style-pt ;; esac
if [ ! -f "$CONTENT" ] || [ ! -f "$STYLE" ]; then
  need_peer neural-style-pt "$PT" https://github.com/ProGamerGov/neural-style-pt # the default images are its examples
  echo "bench/quality.sh: no image $CONTENT or $STYLE" >&2
  exit 2
fi
"$PY" -c 'import torch, torchvision, h5py, tifffile, PIL' || { echo "bench/quality.sh: $PY lacks PyTorch, torchvision, h5py, tifffile or Pillow (scripts/install-deps.sh --dev)" >&2; exit 2; }
command -v vips >/dev/null || { echo "bench/quality.sh: no vips, which reads the 16-bit snapshots (libvips-tools)" >&2; exit 2; }

mkdir -p "$WORK"
log=$OUT/quality.log tsv=$OUT/quality.tsv runs=$WORK/runs.tsv checks=$WORK/checks.tsv
: >"$log"; : >"$runs"; : >"$checks"
"$PY" "$Q/score.py" header >"$tsv"
say() { printf '%s\n' "$*" | tee -a "$log" >&2; }
W=$WORK/weights.h5
"$NST" --make-weights random "$W" --seed 1 --width-divisor 4 --force >>"$log"

nst_ini() { # folder: a config of nstbatch's defaults but for the files, 16-bit output and snapshots
  cat >"$1/run.ini" <<EOF
[content]
path = ../inputs/content.png
[style]
path = ../inputs/style.png
[output]
path = out.png
overwrite = true
bits = 16
save_every = 25
[model]
weights = $W
[run]
threads = $THREADS
progress = lines
EOF
}

timed() { # folder command...: the command's output to folder/log; launch and end (epoch seconds) to folder/times
  local dir=$1 t0 t1
  shift
  t0=$EPOCHREALTIME
  if ! "$@" >"$dir/log" 2>&1; then
    say "FAILED: $*"
    tail -n 20 "$dir/log" | tee -a "$log" >&2
    exit 1
  fi
  t1=$EPOCHREALTIME
  echo "$t0 $t1" >"$dir/times"
}

score() { # size tool folder [score.py run options]: rows to the TSV
  local size=$1 tool=$2 dir=$3 t0 t1
  shift 3
  read -r t0 t1 <"$dir/times"
  "$PY" "$Q/score.py" run --tool "$tool" --size "$size" --dir "$dir/snaps" --launch "$t0" --end "$t1" \
    --weights "$W" --inputs "$(dirname "$dir")/inputs" --runs "$runs" "$@" >>"$tsv"
  tail -n 1 "$runs" | tee -a "$log" >&2
}

run_nstbatch() { # size name [nstbatch arguments]
  local size=$1 name=$2 dir=$WORK/$1/$2
  shift 2
  rm -rf "$dir" && mkdir -p "$dir/snaps"
  nst_ini "$dir"
  say "== $size $name: nstbatch $*"
  "$NST" "$dir/run.ini" "$@" --print-config 2>/dev/null | sed -n '/^\[optim\]/,/^$/p;/^\[pyramid\]/,/^$/p' >"$dir/config"
  timed "$dir" env NSTBATCH_SNAPSHOTS="$dir/snaps" "$NST" "$dir/run.ini" "$@"
  cat "$dir/log" >>"$log"
  printf '[run]\nprecision = %s\n' "$(sed -n 's/.*backend: [^,]*, \([a-z0-9]*\),.*/\1/p' "$dir/log" | head -n 1)" >>"$dir/config"
  score "$size" "$name" "$dir" --log "$dir/log" --final "$dir/out.png"
}

run_peer() { # size tool: kc, pt, kc-whole or pt-whole
  local size=$1 tool=$2 dir=$WORK/$1/$2 peer variant=fair opts=()
  rm -rf "$dir" && mkdir -p "$dir/snaps"
  case $tool in *-whole) variant=whole ;; esac
  case $tool in kc*) peer=$KC ;; pt*) peer=$PT ;; esac
  [ -z "$QUICK_ITERS" ] || opts+=(--quick "$QUICK_ITERS")
  [ $variant = whole ] || opts+=(--check "$dir/check.json")
  say "== $size $tool: ${tool%-whole}.py --variant $variant${QUICK_ITERS:+ --quick $QUICK_ITERS}"
  timed "$dir" "$PY" "$Q/${tool%-whole}.py" --peer "$peer" --weights "$W" --content "$WORK/$size/inputs/content.png" \
    --style "$WORK/$size/inputs/style.png" --out "$dir/snaps" --variant "$variant" --threads "$THREADS" "${opts[@]}"
  cat "$dir/log" >>"$log"
  score "$size" "$tool" "$dir"
  if [ $variant = fair ]; then "$PY" "$Q/score.py" check --weights "$W" --inputs "$WORK/$size/inputs" "$dir/check.json" | tee -a "$log" >>"$checks"; fi
}

for size in $SIZES; do
  mkdir -p "$WORK/$size/inputs"
  "$PY" "$Q/prep.py" "$CONTENT" "$STYLE" "$size" "$WORK/$size/inputs"
  for tool in $TOOLS; do
    case $tool in
      nstbatch) run_nstbatch "$size" nstbatch ;;
      kc | pt | kc-whole | pt-whole) run_peer "$size" "$tool" ;;
      *) echo "bench/quality.sh: unknown tool $tool (TOOLS: nstbatch kc pt kc-whole pt-whole)" >&2; exit 2 ;;
    esac
  done
  IFS=';' read -ra variants <<<"$VARIANTS"
  for v in "${variants[@]}"; do
    [ -n "${v// /}" ] || continue
    read -ra args <<<"${v#*:}"
    run_nstbatch "$size" "nstbatch-${v%%:*}" "${args[@]}"
  done
done

meta() { printf '%s\t%s\n' "$1" "$2"; }
commit() { # a peer's checkout: its commit (not that of a repository around it, as bench/peers/ is)
  if [ -e "$1/.git" ]; then git -C "$1" rev-parse --short HEAD; else echo "(a checkout without git: commit unknown)"; fi
}
{
  meta date "$(date -u '+%Y-%m-%d %H:%M UTC')"
  meta cpu "$(lscpu | sed -n 's/^Model name: *//p' | head -n 1), $(nproc) cores"
  meta nstbatch "$("$NST" --version 2>&1 | head -n 1), commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$ROOT" diff --quiet 2>/dev/null || echo ' (with uncommitted changes)')"
  meta torch "$("$PY" -c 'import torch; print(torch.__version__)')"
  meta kc "$(commit "$KC")"
  meta pt "$(commit "$PT")"
  meta threads "$THREADS"
  meta quick "$QUICK_ITERS"
  meta inputs "$(basename "$CONTENT"), $(basename "$STYLE")"
} >"$WORK/meta.tsv"
"$PY" "$Q/report.py" --tsv "$tsv" --runs "$runs" --checks "$checks" --meta "$WORK/meta.tsv" --configs "$WORK" >"$OUT/quality.md"
say "wrote $OUT/quality.md, $tsv, $log"

#!/usr/bin/env bash
# bench/auto_precision.sh: run.precision = auto against the faster of fp32 and bf16 on this CPU
# (make bench-auto). The goal: auto within 5 % of the faster, on every CPU measured. The rule it
# checks is nst_cpu_auto_precision (kernels/cpu/backend_cpu.c): bf16 on AMX and on AMD cores with
# AVX512_BF16, fp32 elsewhere.
#
#   bench/auto_precision.sh [RESULTS_MD]     (default bench/results/auto_precision.md: a row per size appended)
#
# One rank, every core, the full-width random VGG-19 on the demo pictures; s/iter is the median
# of the progress rows after two warm-ups; fp32, bf16 and auto interleaved for ROUNDS rounds
# (default 5), the fastest round of each (a shared machine only ever slows a round down).
# SIZES (default "512x384 1024x768"), ITERS (8).
set -euo pipefail
# numbers with a decimal point in any locale (awk, printf, sort -n): a user's LC_ALL becomes LANG
[ -z "${LC_ALL:-}" ] || { export LANG="$LC_ALL"; unset LC_ALL; }; export LC_NUMERIC=C
ROOT=$(cd "$(dirname "$0")/.." && pwd)
MD=${1:-$ROOT/bench/results/auto_precision.md}
NST=${NST:-$ROOT/nstbatch}
SIZES=${SIZES:-512x384 1024x768} ITERS=${ITERS:-8} ROUNDS=${ROUNDS:-5}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cat >"$T/b.ini" <<EOF
[content]
path = $ROOT/configs/demo/content.png
[style]
path = $ROOT/configs/demo/style.png
[output]
path = $T/o.tif
overwrite = true
[model]
random_width_divisor = 1
[run]
device = cpu
print_every = 1
EOF
median() { sort -g | awk '{ a[NR] = $1 } END { if (NR) print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
# spi SIZE PRECISION: one render's median s/iter
spi() {
  "$NST" "$T/b.ini" --set run.precision="$2" --set output.width="${1%x*}" --set output.height="${1#*x}" \
    --set optim.method=adam --set optim.iterations=$((ITERS + 2)) >"$T/run.log" 2>&1 || { cat "$T/run.log" >&2; return 1; }
  awk -v n="$((ITERS + 2))" '$1 ~ /^[0-9]+$/ && NF >= 6 && $1 >= 2 && $1 < n && $6 ~ /^[0-9.]+$/ { print $6 }' "$T/run.log" | median
}
"$NST" "$T/b.ini" --set optim.iterations=0 --set output.width=64 --set output.height=48 >"$T/probe.log" 2>&1
first=$(head -n 1 "$T/probe.log")
auto=$(sed -n 's/.*precision auto: \([a-z0-9]*\),.*/\1/p' <<<"$first")
why=$(sed -n 's/.*\(precision auto: [^)]*)\).*/\1/p' <<<"$first")
cpu=$(grep -m1 "model name" /proc/cpuinfo | cut -d: -f2- | sed "s/^ *//")
fam=$(grep -m1 'cpu family' /proc/cpuinfo | cut -d: -f2 | tr -d ' ')
model=$(grep -m1 '^model\s' /proc/cpuinfo | cut -d: -f2 | tr -d ' ')
level=$(sed -n 's/.*oneDNN [0-9.]* (\([A-Z0-9_]*\):.*/\1/p' <<<"$first")
echo "$cpu (family $fam, model $model), $level, $(nproc) cores; $why" >&2
[ -f "$MD" ] || { echo "bench/auto_precision.sh: $MD is missing: its header (the rule, the earlier measurements) comes from the repository" >&2; exit 2; }
for S in $SIZES; do
  f=() b=() a=()
  for r in $(seq "$ROUNDS"); do
    f+=("$(spi "$S" fp32)") b+=("$(spi "$S" bf16)") a+=("$(spi "$S" auto)")
    echo "$S round $r: fp32 ${f[-1]} bf16 ${b[-1]} auto ${a[-1]}" >&2
  done
  F=$(printf '%s\n' "${f[@]}" | sort -g | head -n 1) B=$(printf '%s\n' "${b[@]}" | sort -g | head -n 1) A=$(printf '%s\n' "${a[@]}" | sort -g | head -n 1)
  row=$(awk -v f="$F" -v b="$B" -v a="$A" -v p="$auto" 'BEGIN { m = f < b ? f : b; printf "%.3f | %.3f | %.2fx | %s: %.3f | %.3f", f, b, f / b, p, a, a / m }')
  echo "| $(date -u +%Y-%m-%d) | $cpu (family $fam, model $model) | $level | $(nproc) | ${S/x/ x } | $row |" >>"$MD"
  tail -n 1 "$MD"
done

# tests/lib.sh: the start every shell suite shares, sourced as `. "$(dirname "$0")/lib.sh" NAME`:
# ROOT (the repository), T (a temporary folder removed at exit), Open MPI allowed as root, the
# counters with ok / bad / skip, and finish, which prints "NAME: N passed, N failed, N skipped"
# (tests/run.sh adds these up) and returns the suite's status.
set -u
# numbers with a decimal point in any locale (awk, printf, sort -n): a user's LC_ALL becomes LANG
[ -z "${LC_ALL:-}" ] || { export LANG="$LC_ALL"; unset LC_ALL; }; export LC_NUMERIC=C
SUITE=$1
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# (under TMPDIR where the user set one, as on a cluster whose /tmp is small)
T=$(mktemp -d "${TMPDIR:-/tmp}/nstbatch-$SUITE.XXXXXX") || { echo "$SUITE: cannot make a folder in ${TMPDIR:-/tmp}: set TMPDIR to a writable folder"; exit 1; }
trap 'rm -rf "$T"' EXIT
# every process this suite starts carries it, so that `ours` tells them from another run's beside it
export NST_SUITE_T=$T
# ours PATTERN: the pids matching PATTERN (pgrep -f) that this suite started
ours() { local p; for p in $(pgrep -f "$1"); do tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qxF "NST_SUITE_T=$T" && echo "$p"; done; }
. "$ROOT/tests/idle.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
pass=0 fail=0 skipped=0
ok() { pass=$((pass + 1)); printf '  ok   %s\n' "$1"; }
# bad WHAT WHY [OUTPUT]: a failure, with the output's last 15 lines (BAD_LINES: another choice)
bad() { fail=$((fail + 1)); printf '  FAIL %s: %s\n' "$1" "$2"; [ -n "${3:-}" ] && sed 's/^/       | /' <<<"$3" | ${BAD_LINES:-tail -n 15}; }
# skip WHAT [WHY]: a check not run here, and why
skip() { skipped=$((skipped + 1)); printf '  SKIP %s%s\n' "$1" "${2:+: $2}"; }
# run_nst INI LOG ARGS...: one rank of $NST on T/INI, run in T, output in T/LOG.log, status in $rc
run_nst() {
  local ini=$1 log=$2; shift 2
  (cd "$T" && "$IDLE" 300 "$NST" "$ini" "$@") >"$T/$log.log" 2>&1
  rc=$?
}
# ranks N: in the array RANKS, the words that start N ranks of the command after them: mpirun's,
# or for one rank none, a singleton (a one-rank job without a launcher): mpirun's own start cost
# each of some 250 one-rank runs 0.06 CPU seconds more
ranks() { if [ "$1" = 1 ]; then RANKS=(); else RANKS=(mpirun --oversubscribe --bind-to none -np "$1"); fi; }
# render_ranks INI PATH RANKS [ARGS...]: RANKS ranks of $NST (ranks above) render T/INI with
# output.path = PATH, in T; the output in T/NAME.log (NAME: PATH less its extension), and a failed
# run one bad "NAME renders" with its status
render_ranks() {
  local ini=$1 path=$2 ranks=$3 out status; shift 3
  ranks "$ranks"
  out=$(cd "$T" && "$IDLE" 300 "${RANKS[@]}" "$NST" "$ini" --set output.path="$path" "$@" 2>&1); status=$?
  echo "$out" >"$T/${path%.*}.log"
  [ $status -eq 0 ] || { bad "${path%.*} renders" "exit status $status" "$out"; return 1; }
}
# one_error LOG STATUS FRAGMENT: exit STATUS and exactly one "nstbatch: error:" line in T/LOG.log,
# which holds FRAGMENT (a grep pattern)
one_error() { [ "$rc" -eq "$2" ] && [ "$(grep -c '^nstbatch: error:' "$T/$1.log")" -eq 1 ] && grep -q "$3" "$T/$1.log"; }
# same NAME A B: T/A and T/B the same image, bit for bit (image_diff, at $DIFF, says max 0)
same() {
  local d; d=$("$DIFF" "$T/$2" "$T/$3" 2>&1)
  if [ "${d%% mean*}" = "max 0" ]; then ok "$1"; else bad "$1" "$d"; fi
}
# demo_pair: a config's [content] and [style] sections on the demo's pictures
demo_pair() { printf '[content]\npath = %s/configs/demo/content.png\n[style]\npath = %s/configs/demo/style.png\n' "$ROOT" "$ROOT"; }
# cpu_flags: the CPU's flags as the suite sees them: /proc/cpuinfo's, less those a global
# ONEDNN_MAX_CPU_ISA hides (oneDNN and our own kernels honour it: kernels/cpu/isa_cpu.c), so that
# `ONEDNN_MAX_CPU_ISA=AVX512_CORE make test` runs every suite as on an AVX-512 CPU without bf16
# (Skylake-SP), and AVX2 as on a Zen 3; capped LEVEL: LEVEL, or that cap where it is lower, for a
# run that sets its own (a run's ONEDNN_MAX_CPU_ISA replaces the suite's)
isa_rank() {
  case ${1^^} in
    SSE41) echo 1 ;; AVX) echo 2 ;; AVX2 | AVX2_VNNI*) echo 3 ;; AVX512_CORE) echo 4 ;; AVX512_CORE_VNNI) echo 5 ;;
    AVX512_CORE_BF16) echo 6 ;; AVX512_CORE_AMX* | AVX512_CORE_FP16) echo 7 ;; *) echo 9 ;;
  esac
}
cpu_flags() {
  local f r
  f=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) " r=$(isa_rank "${ONEDNN_MAX_CPU_ISA:-ALL}")
  [ "$r" -lt 7 ] && f=$(sed -E 's/ amx[a-z0-9_]*/ /g' <<<"$f")
  [ "$r" -lt 6 ] && f=$(sed -E 's/ avx512_bf16 / /g' <<<"$f")
  [ "$r" -lt 4 ] && f=$(sed -E 's/ avx512[a-z0-9_]*/ /g' <<<"$f")
  [ "$r" -lt 3 ] && f=$(sed -E 's/ avx2 / /g' <<<"$f")
  echo "flags :$f"
}
capped() { if [ "$(isa_rank "$1")" -le "$(isa_rank "${ONEDNN_MAX_CPU_ISA:-ALL}")" ]; then echo "$1"; else echo "$ONEDNN_MAX_CPU_ISA"; fi; }
finish() {
  echo "$SUITE: $pass passed, $fail failed, $skipped skipped"
  [ "$fail" -eq 0 ]
}

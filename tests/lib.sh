# tests/lib.sh: the start every shell suite shares, sourced as `. "$(dirname "$0")/lib.sh" NAME`:
# ROOT (the repository), T (a temporary folder removed at exit), Open MPI allowed as root, the
# counters with ok / bad / skip, and finish, which prints "NAME: N passed, N failed, N skipped"
# (tests/run.sh adds these up) and returns the suite's status.
set -u
SUITE=$1
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
T=$(mktemp -d "/tmp/nstbatch-$SUITE.XXXXXX")
trap 'rm -rf "$T"' EXIT
. "$ROOT/tests/idle.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
pass=0 fail=0 skipped=0
ok() { pass=$((pass + 1)); printf '  ok   %s\n' "$1"; }
# bad WHAT WHY [OUTPUT]: a failure, with the output's last 15 lines
bad() { fail=$((fail + 1)); printf '  FAIL %s: %s\n' "$1" "$2"; [ -n "${3:-}" ] && sed 's/^/       | /' <<<"$3" | tail -n 15; }
skip() { skipped=$((skipped + 1)); printf '  SKIP %s\n' "$1"; }
# run_nst INI LOG ARGS...: one rank of $NST on T/INI, run in T, output in T/LOG.log, status in $rc
run_nst() {
  local ini=$1 log=$2; shift 2
  (cd "$T" && "$IDLE" 300 "$NST" "$ini" "$@") >"$T/$log.log" 2>&1
  rc=$?
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
finish() {
  echo "$SUITE: $pass passed, $fail failed, $skipped skipped"
  [ "$fail" -eq 0 ]
}

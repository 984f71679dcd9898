#!/usr/bin/env bash
# tests/slow_machine.sh: run a command as on a machine FACTOR times slower than this one, with as
# many cores: the command and everything it starts share 1/FACTOR of the cores' time, in a CPU
# control group made for it (cgroup v2's cpu.max, else v1's cpu.cfs_quota_us), over a 10 ms period
# so that no process waits long for its share. Faithful where the command keeps every core busy,
# as make test's lanes do: a thread alone still runs at this CPU's pace, up to 1/FACTOR of all
# the cores. docs/TESTS.md ("The Skylake-SP's pace") measured
# FACTOR for the slowest CPU seen; with ONEDNN_MAX_CPU_ISA its instruction set is capped too:
#
#   tests/slow_machine.sh 2.35 make test     (root: making a control group needs it)
#
# Prints the group's throttled time at the end; exits with the command's status, or 2 when no
# control group can be made here (with the reason).
set -u
# numbers with a decimal point in any locale (awk, printf, sort -n): a user's LC_ALL becomes LANG
[ -z "${LC_ALL:-}" ] || { export LANG="$LC_ALL"; unset LC_ALL; }; export LC_NUMERIC=C
die() { echo "tests/slow_machine.sh: $*" >&2; exit 2; }
factor=${1:-}
shift
awk -v f="$factor" 'BEGIN { exit !(f + 0 >= 1) }' || die "FACTOR '$factor': give a number 1 or more (how many times slower)"
[ $# -gt 0 ] || die "usage: tests/slow_machine.sh FACTOR COMMAND [ARGS...]"
period=10000
quota=$(awk -v f="$factor" -v n="$(nproc --all)" -v p=$period 'BEGIN { printf "%d", n * p / f }')
name=nstbatch-slow-$$
if grep -qw cpu /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then # v2
  grep -qw cpu /sys/fs/cgroup/cgroup.subtree_control || echo +cpu >/sys/fs/cgroup/cgroup.subtree_control ||
    die "cannot enable the cpu controller in /sys/fs/cgroup/cgroup.subtree_control (run as root)"
  G=/sys/fs/cgroup/$name
  mkdir "$G" 2>/dev/null || die "cannot make $G (run as root)"
  echo "$quota $period" >"$G/cpu.max" || die "cannot write $G/cpu.max"
  throttled() { awk '/throttled_usec/ { printf "%.1f s throttled", $2 / 1e6 }' "$G/cpu.stat"; }
elif [ -d /sys/fs/cgroup/cpu ]; then # v1
  G=/sys/fs/cgroup/cpu/$name
  mkdir "$G" 2>/dev/null || die "cannot make $G (run as root)"
  { echo $period >"$G/cpu.cfs_period_us" && echo "$quota" >"$G/cpu.cfs_quota_us"; } || die "cannot set $G's quota"
  throttled() { awk '/throttled_time/ { printf "%.1f s throttled", $2 / 1e9 }' "$G/cpu.stat"; }
else
  die "no CPU controller under /sys/fs/cgroup (cgroup v2 with cpu enabled, or v1's cpu)"
fi
# the command in the group (this shell moves in, then out once the command has ended)
echo $$ >"$G/cgroup.procs" || die "cannot move into $G"
echo "tests/slow_machine.sh: $* at 1/$factor of $(nproc --all) cores ($quota us of CPU every $period us)" >&2
"$@"
status=$?
parent=$(dirname "$G")
echo $$ >"$parent/cgroup.procs" 2>/dev/null
echo "tests/slow_machine.sh: done, exit $status, $(throttled)" >&2
rmdir "$G" 2>/dev/null # (left where a process of the command's still runs)
exit $status

#!/usr/bin/env bash
# tests/test_runner.sh: the runner itself (tests/run.sh), whose closing line is make test's verdict.
# A copy of it with its suite lists replaced by small scripts (passing, failing, without a summary,
# failing without counting a failure, killed with its worker) must, with 1, 2 and 3 lanes:
# - print every suite's output under its own "== NAME" line, in the list's order, though the
#   suites end in another order;
# - add up the counts, count a suite without its summary line, one that exits non-zero with 0
#   failures and one that never ends (its worker killed) as failures, name each, and exit 1;
# - read a suite's status line only once it is whole: the copy's awk writes it slowly, so a runner
#   that read it early would fail here every time.
# With 2 lanes two suites each wait for the other (60 s at most: bounded, not timed), so both pass
# only if they run at the same time, and three suites each wait for the two others, which pass only
# if a beside chain that has ended takes suites of the list too; so do two beside suites in two
# chains ("--" between them) with 2 and 3 lanes, and with 1 lane a lone "--" is no suite. TEST_LANES=0 is refused with one line.
#
#   tests/test_runner.sh
. "$(dirname "$0")/lib.sh" test_runner

# the copy: run.sh with everything from its "suites=(" line to its first function replaced
mkdir -p "$T/r/tests" "$T/r/build/tests"
cp "$IDLE" "$T/r/build/tests/" # the copy's bound on each suite (tests/idle.sh)
src=$(cat "$ROOT/tests/run.sh")
head=${src%%$'\n'suites=(*} tail=${src#*$'\n'# run_suite NAME}
if [ "$head" = "$src" ] || [ "$tail" = "$src" ]; then
  bad "the copy of tests/run.sh" "no 'suites=(' line or no '# run_suite NAME' comment after it: update this test with the runner"
  finish; exit 1
fi
# fake NAME SECONDS PASSED FAILED SKIPPED [STATUS]: a suite that waits, then prints its summary
cat >"$T/fake.sh" <<'EOF'
#!/bin/sh
sleep "$2"; echo "  ok   $1 says hello"; echo "$1: $3 passed, $4 failed, $5 skipped"; exit "${6:-0}"
EOF
# meet NAME OTHER...: creates NAME's flag, then passes once every OTHER's exists (60 s at most)
cat >"$T/meet.sh" <<EOF
#!/bin/sh
me=\$1; shift; touch "$T/\$me.here"; i=0
all() { for o in "\$@"; do [ -e "$T/\$o.here" ] || return 1; done; }
while ! all "\$@" && [ \$i -lt 600 ]; do sleep 0.1; i=\$((i + 1)); done
all "\$@" && echo "\$me: 1 passed, 0 failed, 0 skipped" || echo "\$me: 0 passed, 1 failed, 0 skipped"
EOF
# killer: kills its worker, its parent's parent (idle_timeout's parent: field 4 of /proc/PID/stat)
printf '#!/bin/sh\necho "half an output"\nkill -9 $(cut -d" " -f4 /proc/$PPID/stat)\n' >"$T/killer.sh"
printf '#!/bin/sh\necho "no summary here"\n' >"$T/mute.sh"
# awk, slow to write a suite's status line: a runner that reads a status file before it is whole
# (the other lanes poll for it every 0.2 s) then reads it empty every time, not once in a while
mkdir -p "$T/bin"
printf '#!/bin/sh\ncase "$*" in *"cpu %%.1f"*) sleep 0.5 ;; esac\nexec %s "$@"\n' "$(command -v awk)" >"$T/bin/awk"
chmod +x "$T"/*.sh "$T/bin/awk"
F=$T/fake.sh
list() { # list MEET BMEET: the suite lists, with the two suites that meet where MEET is 1, and two
  # beside suites in two chains that meet where BMEET is 1 (else a lone "--" that must be harmless)
  echo 'suites=('
  echo "  \"s_slow|$F s_slow 1 1 0 0\""
  echo "  \"s_fast|$F s_fast 0 2 0 1\""
  echo "  \"s_fails|$F s_fails 0.4 1 1 0 1\""
  echo "  \"s_mute|$T/mute.sh\""
  [ "$1" = 1 ] && echo "  \"s_meet_a|$T/meet.sh s_meet_a s_meet_b\"" && echo "  \"s_meet_b|$T/meet.sh s_meet_b s_meet_a\""
  # three that meet: with 2 lanes, only if a beside chain that has ended works on as a lane
  [ "$1" = 1 ] && for t in a b c; do echo "  \"s_trio_$t|$T/meet.sh s_trio_$t $(printf 's_trio_%s ' a b c | sed "s/s_trio_$t //")\""; done
  echo "  \"s_status|$F s_status 0.2 3 0 0 3\""
  echo "  \"s_killed|$T/killer.sh\""
  echo "  \"s_last|$F s_last 0 1 0 0\""
  echo ')'
  if [ "$2" = 1 ]; then
    echo "beside=(\"s_bmeet_a|$T/meet.sh s_bmeet_a s_bmeet_b\" \"s_beside|$F s_beside 0.5 5 0 0\" -- \"s_bmeet_b|$T/meet.sh s_bmeet_b s_bmeet_a\")"
  else echo "beside=(\"s_beside|$F s_beside 0.5 5 0 0\" --)"; fi
}
for lanes in 1 2 3; do
  meet=0 && [ $lanes = 2 ] && meet=1
  bmeet=0 && [ $lanes -gt 1 ] && bmeet=1
  rm -f "$T"/*.here
  { printf '%s\n' "$head"; list $meet $bmeet; printf '# run_suite NAME%s\n' "$tail"; } >"$T/r/tests/run.sh"
  out=$(PATH="$T/bin:$PATH" TEST_LANES=$lanes NST_IDLE= "$IDLE" 120 bash "$T/r/tests/run.sh" 2>&1); rc=$?
  # the headers in the list's order (the beside suite last with 2 lanes or more), each suite's lines under its own
  order=$(sed -n 's/^== \([a-z0-9_]*\).*/\1/p' <<<"$out" | tr '\n' ' ')
  want="s_slow s_fast s_fails s_mute $([ $meet = 1 ] && echo 's_meet_a s_meet_b s_trio_a s_trio_b s_trio_c ')s_status s_killed s_last "
  want+=$([ $bmeet = 1 ] && echo 's_bmeet_a s_beside s_bmeet_b ' || echo 's_beside ')
  if [ "$order" = "$want" ]; then ok "$lanes lane(s): the suites' output in the list's order"; else bad "$lanes lane(s): order" "got '$order', want '$want'" "$out"; fi
  misplaced=$(awk '/^== /{cur=$2} /says hello/{if ($1 != "ok" || $2 != cur) print}' <<<"$out")
  [ -z "$misplaced" ] && ok "$lanes lane(s): each suite's lines under its own header" || bad "$lanes lane(s): lines under another header" "$misplaced" "$out"
  # passed: s_slow 1, s_fast 2, s_fails 1, s_status 3, s_last 1, s_beside 5 (and 2 meeting); failed:
  # s_fails' 1, s_mute, s_status, s_killed; skipped: s_fast's 1. With 1 lane the killed worker was
  # the only one: the suites after it (s_beside its list's last) never start and count as failures.
  if [ $lanes = 1 ]; then want="7 passed, 6 failed, 1 skipped" lost="s_killed s_last s_beside"
  else want="$((13 + 5 * meet + 2 * bmeet)) passed, 4 failed, 1 skipped" lost="s_killed"; fi
  last=$(tail -n 1 <<<"$out") named=1
  for b in "s_mute (exit status 0, no summary)" "s_status (exit status 3)" $(printf '%s\n' $lost | sed 's/$/#(did#not#end)/'); do
    grep -qxF "broken: ${b//#/ }" <<<"$out" || named=0
  done
  if [ "$last" = "$want" ] && [ $rc -eq 1 ] && [ $named = 1 ]; then
    ok "$lanes lane(s): '$last', exit 1; named: the suite without a summary, the one exiting 3, $lost (did not end)"
  else bad "$lanes lane(s): the totals" "exit $rc, last line '$last', want '$want' and the 'broken:' lines" "$out"; fi
done
out=$(TEST_LANES=0 bash "$T/r/tests/run.sh" 2>&1); rc=$?
[ $rc -eq 2 ] && [ "$out" = "tests/run.sh: TEST_LANES=0: give a number of lanes, 1 or more" ] && ok "TEST_LANES=0: exit 2, one line" ||
  bad "TEST_LANES=0" "exit $rc" "$out"

# tests/suite_times.sh, docs/TESTS.md's table from the runner's lines: two logs (a suite beside the
# others, one missing from the second log, another order there), the rows by the first log's CPU
# seconds, the totals; a file without a suite's time refused
printf '== test_a\n  ok   x\ntest_a: 1 passed, 0 failed, 0 skipped\n   (10.0 s, cpu 2.5 s)\n== test_b\n   (3.0 s, cpu 7.5 s)\n== test_c (beside the others)\n   (100.0 s, cpu 5.0 s)\n' >"$T/times1"
printf '== test_b\n   (4.0 s, cpu 8.0 s)\n== test_a\n   (9.0 s, cpu 2.0 s)\n' >"$T/times2"
out=$("$ROOT/tests/suite_times.sh" "$T/times1" "$T/times2" 2>&1); rc=$?
want='| suite | wall s | CPU s | wall s | CPU s |
|---|---:|---:|---:|---:|
| test_b | 3.0 | 7.5 | 4.0 | 8.0 |
| test_c | 100.0 | 5.0 | - | - |
| test_a | 10.0 | 2.5 | 9.0 | 2.0 |
| all suites | 113 | 15 | 13 | 10 |'
bad_out=$("$ROOT/tests/suite_times.sh" "$T/times1" "$T/r/tests/run.sh" 2>&1); bad_rc=$?
if [ $rc -eq 0 ] && [ "$out" = "$want" ] && [ $bad_rc -eq 2 ] && grep -q "holds no suite's time line" <<<"$bad_out"; then
  ok "suite_times.sh: a row a suite, a column pair a log, longest CPU first, the totals; a file that is no log refused (exit 2)"
else bad "suite_times.sh" "exit $rc, then $bad_rc: $bad_out" "$out"; fi
# ---- a locale that writes numbers with a decimal comma (German, French, Russian, ...) -------------
# There mawk reads an input's 1.5 as 1 and prints 0.5 as 0,5, and bash's printf refuses 0.5: the
# first contact, the benchmarks and this runner's time lines went wrong under LANG=de_DE.UTF-8 (13
# checks failed). Every script of ours that handles numbers sets LC_NUMERIC=C (the suites through
# lib.sh and run.sh): the rule over every script, then suite_times.sh under such a locale for real.
NUMERIC_USE='\bawk\b|sort -[a-zA-Z]*[ng]\b|\bseq |\bbc\b|EPOCHREALTIME|printf [^|;]*%[-+ 0-9.]*[fge]'
numbers_unset() { # the files named on stdin: the shell scripts handling numbers without LC_NUMERIC=C
  local f
  while IFS= read -r f; do
    [ -f "$f" ] && head -n 1 "$f" | grep -qE '^#!.*(bash|/sh)' || continue
    grep -qE "$NUMERIC_USE" "$f" && ! grep -qE '^[^#]*export LC_NUMERIC=C|^\. .*/lib\.sh' "$f" && echo "$f"
  done
}
printf '#!/bin/sh\nawk "BEGIN { printf \\"%%.1f\\", 1 / 2 }"\n' >"$T/plant_numbers.sh"
scripts=$(cd "$ROOT" && { git ls-files 2>/dev/null || find . -path ./build -prune -o -path '*/node_modules' -prune -o -type f -print; })
unset_now=$(cd "$ROOT" && numbers_unset <<<"$scripts") planted=$(numbers_unset <<<"$T/plant_numbers.sh")
if [ -z "$unset_now" ] && [ "$planted" = "$T/plant_numbers.sh" ]; then
  ok "every shell script of ours that handles numbers sets LC_NUMERIC=C ($(grep -c . <<<"$scripts") files read; a planted one without it is named)"
else bad "LC_NUMERIC=C in the scripts that handle numbers" "without it: ${unset_now:-none}; the planted one named: ${planted:-no}"; fi
mkdir -p "$T/loc"
localedef -i de_DE -f UTF-8 "$T/loc/de_DE.UTF-8" >/dev/null 2>&1 # (its own, where none is installed)
if [ "$(LOCPATH=$T/loc LC_ALL=de_DE.UTF-8 awk 'BEGIN { printf "%.1f", 0.5 }' 2>/dev/null)" = "0,5" ]; then
  out=$(LOCPATH=$T/loc LC_ALL=de_DE.UTF-8 "$ROOT/tests/suite_times.sh" "$T/times1" "$T/times2" 2>&1)
  [ "$out" = "$want" ] && ok "suite_times.sh under LC_ALL=de_DE.UTF-8 (0.5 written 0,5 there): the same table" ||
    bad "suite_times.sh under LC_ALL=de_DE.UTF-8" "its table differs" "$out"
else skip "suite_times.sh under a locale with a decimal comma: none could be made (localedef and Debian's locales package: scripts/install-deps.sh --test installs it)"; fi
# tests/slow_machine.sh (the stand-in for a slower machine, docs/TESTS.md): a factor below 1 refused
# in one line; where a CPU control group can be made, the command runs in it (its /proc/self/cgroup
# names the group) and its exit status comes back, and the group is gone afterwards
SLOW=$ROOT/tests/slow_machine.sh
out=$("$SLOW" 0.5 true 2>&1); rc=$?
if [ $rc -eq 2 ] && [ "$out" = "tests/slow_machine.sh: FACTOR '0.5': give a number 1 or more (how many times slower)" ]; then
  ok "slow_machine.sh 0.5: exit 2, one line"
else bad "slow_machine.sh 0.5" "exit $rc" "$out"; fi
out=$("$SLOW" 3 sh -c 'grep -o "nstbatch-slow-[0-9]*" /proc/self/cgroup | head -n 1; exit 7' 2>"$T/slow.err"); rc=$?
if [ $rc -eq 2 ] && grep -q 'cannot\|no CPU controller' "$T/slow.err"; then skip "slow_machine.sh 3: $(tail -n 1 "$T/slow.err")"
elif [ $rc -eq 7 ] && [ -n "$out" ] && [ ! -e "/sys/fs/cgroup/cpu/$out" ] && [ ! -e "/sys/fs/cgroup/$out" ] &&
     grep -q 'at 1/3 of [0-9]* cores' "$T/slow.err"; then
  ok "slow_machine.sh 3: the command in its group ($out), its exit status 7 passed on, the group removed"
else bad "slow_machine.sh 3" "exit $rc, group '$out'" "$(cat "$T/slow.err")"; fi
finish

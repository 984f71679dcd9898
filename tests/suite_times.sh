#!/usr/bin/env bash
# tests/suite_times.sh: the time per suite of one or more `make test` logs, as the Markdown table
# of docs/TESTS.md ("Time per suite"), so that a run on another machine gives the same table.
#
#   tests/suite_times.sh LOG [LOG...]    (each LOG: make test's output, or tests/run.sh's)
#
# tests/run.sh prints "== NAME" (or "== NAME (beside the others)") before each suite's output and
# "   (W s, cpu C s)" after it: the suite's wall seconds and the CPU seconds of its own processes.
# One row per suite, a wall and a CPU column for each log, the rows by the first log's CPU seconds,
# longest first; the last row adds the columns up (the wall seconds of suites that ran side by
# side, so more than the run's length). A suite missing from a log has "-" there. Exit 2 when a log
# is unreadable or holds no suite's time. Tested in tests/test_runner.sh.
set -u
# numbers with a decimal point in any locale (awk, printf, sort -n): a user's LC_ALL becomes LANG
[ -z "${LC_ALL:-}" ] || { export LANG="$LC_ALL"; unset LC_ALL; }; export LC_NUMERIC=C
[ $# -ge 1 ] || { echo "usage: tests/suite_times.sh LOG [LOG...]" >&2; exit 2; }
for f in "$@"; do
  [ -r "$f" ] || { echo "suite_times: cannot read $f" >&2; exit 2; }
  grep -qE '^ +\([0-9.]+ s, cpu [0-9.]+ s\)$' "$f" || { echo "suite_times: $f holds no suite's time line (is it make test's output?)" >&2; exit 2; }
done
awk -v nlogs=$# '
  FNR == 1 { log_i++ }
  /^== test_[a-z0-9_]+( \(beside the others\))?$/ { name = $2; if (!(name in seen)) { seen[name] = 1; order[++n] = name } next }
  name != "" && /^ +\([0-9.]+ s, cpu [0-9.]+ s\)$/ {
    line = $0; gsub(/[(),]/, "", line); split(line, f, " ")
    wall[name, log_i] = f[1]; cpu[name, log_i] = f[4]; name = ""
  }
  END {
    head = "| suite |"; rule = "|---|"
    for (l = 1; l <= nlogs; l++) { head = head " wall s | CPU s |"; rule = rule "---:|---:|" }
    print head; print rule
    # by the first log CPU seconds, longest first (an insertion sort: some 60 suites)
    for (i = 1; i <= n; i++) key[i] = ((order[i], 1) in cpu) ? cpu[order[i], 1] + 0 : -1
    for (i = 2; i <= n; i++)
      for (j = i; j > 1 && key[j] > key[j - 1]; j--) { t = key[j]; key[j] = key[j - 1]; key[j - 1] = t; t = order[j]; order[j] = order[j - 1]; order[j - 1] = t }
    for (i = 1; i <= n; i++) {
      row = "| " order[i] " |"
      for (l = 1; l <= nlogs; l++) {
        if ((order[i], l) in cpu) { row = row " " wall[order[i], l] " | " cpu[order[i], l] " |"; sw[l] += wall[order[i], l]; sc[l] += cpu[order[i], l] }
        else row = row " - | - |"
      }
      print row
    }
    row = "| all suites |"
    for (l = 1; l <= nlogs; l++) row = row sprintf(" %.0f | %.0f |", sw[l], sc[l])
    print row
  }' "$@"

#!/usr/bin/env bash
# bench/profile_table.sh: where an iteration's time goes, from two NSTBATCH_PROFILE=1 runs that differ
# only in their iteration count: their difference per iteration leaves out what runs once (the
# style targets, the first pass's bounds, first-touch zeroing; on a GPU also the libraries' loading
# and each shape's first call, which the profile bills to that op's first call).
#
#   bench/profile_table.sh SHORT_LOG LONG_LOG N     (N: the long run's iterations less the short's)
#
# Prints markdown rows "| op | ms per iteration | share | GB/s |", the rows of each op (first word)
# added up, largest first; GB/s: the bytes an element pass must move at least over its time, both
# differences ("-" for the ops bound by arithmetic). The logs hold the profile's table as nstbatch
# prints it at the end ("profile: ...", "op calls seconds share GB/s", then a row per op and
# channels).
set -euo pipefail
# numbers with a decimal point in any locale (awk, printf, sort -n): a user's LC_ALL becomes LANG
[ -z "${LC_ALL:-}" ] || { export LANG="$LC_ALL"; unset LC_ALL; }; export LC_NUMERIC=C
[ $# -eq 3 ] || { echo "usage: $0 SHORT_LOG LONG_LOG N" >&2; exit 2; }
(sed -n '/^profile:/,$p' "$1" | sed 's/^/short /'; sed -n '/^profile:/,$p' "$2" | sed 's/^/long /') | awk -v n="$3" '
  $2 != "profile:" && $2 != "op" && NF >= 6 {
    v = $(NF - 2); b = ($NF == "-") ? 0 : $NF * 1e9 * v; sg = ($1 == "long") ? 1 : -1
    t[$2] += sg * v; bytes[$2] += sg * b }
  END { for (k in t) all += t[k]
        for (k in t) printf "| %s | %.2f | %.1f %% | %s |\n", k, 1e3 * t[k] / n, (all > 0 ? 100 * t[k] / all : 0),
                            (bytes[k] > 0 && t[k] > 0 ? sprintf("%.1f", bytes[k] / t[k] / 1e9) : "-") }' |
  sort -t'|' -k3 -g -r

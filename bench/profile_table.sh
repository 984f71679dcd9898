#!/usr/bin/env bash
# bench/profile_table.sh: where an iteration's time goes, from two NSTBATCH_PROFILE=1 runs that differ
# only in their iteration count: their difference per iteration leaves out what runs once (the
# style targets, the first pass's bounds, first-touch zeroing; on a GPU also the libraries' loading
# and each shape's first call, which the profile bills to that op's first call).
#
#   bench/profile_table.sh SHORT_LOG LONG_LOG N     (N: the long run's iterations less the short's)
#
# Prints markdown rows "| op | ms per iteration | share |", the rows of each op (first word) added
# up, largest first. The logs hold the profile's table as nstbatch prints it at the end
# ("profile: ...", "op calls seconds share", then a row per op and channels).
set -euo pipefail
[ $# -eq 3 ] || { echo "usage: $0 SHORT_LOG LONG_LOG N" >&2; exit 2; }
(sed -n '/^profile:/,$p' "$1" | sed 's/^/short /'; sed -n '/^profile:/,$p' "$2" | sed 's/^/long /') | awk -v n="$3" '
  $2 != "profile:" && $2 != "op" && NF >= 5 { v = $(NF - 1); if ($1 == "long") t[$2] += v; else t[$2] -= v }
  END { for (k in t) all += t[k]; for (k in t) printf "| %s | %.2f | %.1f %% |\n", k, 1e3 * t[k] / n, (all > 0 ? 100 * t[k] / all : 0) }' |
  sort -t'|' -k3 -g -r

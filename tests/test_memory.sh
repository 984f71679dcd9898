#!/usr/bin/env bash
# tests/test_memory.sh: the memory guarantee of a large print, end to end.
#
#   tests/test_memory.sh NSTBATCH IMAGE_DIFF
#
# - In memory control groups (cgroup v1 or v2, made here; SKIP where none can be made), a 2-level
#   pyramid with its iterations per level and optim.iterations = 0 (the planner used to skip its
#   check then), whose one-tile plan needs more than the group has: in 700 MiB it takes its budget
#   from the group's limit (it used to take the machine's free memory, and the kernel killed the
#   job without a word), plans within it and finishes with the one-tile image; in 400 MiB, where
#   no plan fits, it stops at start with one line saying what would fit.
# - Every level is planned before anything renders: a level that fits no plan stops the job at
#   start, exit 2, one line naming the level, the budget and what the smallest plan needs.
# - The style targets are tiled within what the content's windows leave of the budget (a rank holds
#   all its style windows at once); a style image too large for that stops the job at start.
# - run.memory_gb beyond what the node has left: exit 2, one line saying what there is.
# - A rank short of memory while rendering (NSTBATCH_LOW_MEMORY, as the check every iteration
#   would see it) stops every rank with one line and a checkpoint; the run resumes from it to the
#   same image as an uninterrupted render.
NST=$(readlink -f "$1") DIFF=$(readlink -f "$2")
. "$(dirname "$0")/lib.sh" test_memory

{ demo_pair; cat <<EOF; } >"$T/m.ini"
[output]
width = 1152
height = 768
bits = 16
overwrite = true
preview = 0
[model]
random_width_divisor = 4
[optim]
method = adam
iterations = 0
[pyramid]
levels = 2
iterations = 2,2
[run]
device = cpu
precision = fp32
threads = 1
print_every = 1
EOF
# nst LOG ARGS...: one rank in T, log in T/LOG.log, exit status in $rc
nst() { run_nst m.ini "$@"; }

# ---- a memory control group -----------------------------------------------------------------------
# make_group NAME LIMIT_MIB: a memory group of this process's controller (its path in $group), or return 1
make_group() {
  local limit=$(($2 << 20)) base
  group=
  if [ -d /sys/fs/cgroup/memory ] && [ -w /sys/fs/cgroup/memory ]; then
    group=/sys/fs/cgroup/memory/nstbatch-test-$$-$1
    mkdir "$group" 2>/dev/null && echo "$limit" >"$group/memory.limit_in_bytes" 2>/dev/null && groups+=("$group") && return 0
  elif [ -f /sys/fs/cgroup/cgroup.controllers ] && grep -qw memory /sys/fs/cgroup/cgroup.controllers; then
    base=/sys/fs/cgroup$(sed -n 's/^0:://p' /proc/self/cgroup)
    group=$base/nstbatch-test-$$-$1
    mkdir "$group" 2>/dev/null && echo "$limit" >"$group/memory.max" 2>/dev/null && groups+=("$group") && return 0
  fi
  [ -n "$group" ] && rmdir "$group" 2>/dev/null
  return 1
}
groups=()
trap 'for g in "${groups[@]}"; do rmdir "$g" 2>/dev/null; done; rm -rf "$T"' EXIT
# in_group GROUP LOG ARGS...: nstbatch in T inside the group, log in T/LOG.log, exit status in $rc
in_group() {
  local g=$1 log=$2; shift 2
  (cd "$T" && "$IDLE" 300 sh -c 'g=$1; shift; echo $$ >"$g/cgroup.procs" && exec "$@"' sh "$g" "$NST" m.ini "$@") >"$T/$log.log" 2>&1
  rc=$?
}
if make_group big 700; then
  in_group "$group" g --set output.path=g.tif --set run.record=g.json
  rss=$(sed -n 's/.*"rss_peak_bytes_max": \([0-9]*\).*/\1/p' "$T/g.json" 2>/dev/null)
  budget=$(grep -o 'of [0-9.]* GiB budget' "$T/g.log" | tail -n 1 | awk '{ print $2 }')
  if [ $rc -eq 0 ] && [ -f "$T/g.tif" ] && [ -n "$rss" ] && [ "$rss" -lt $((700 << 20)) ] &&
     awk -v b="$budget" 'BEGIN { exit !(b > 0 && b < 0.8 * 700 / 1024) }'; then
    ok "in a 700 MiB memory group: a budget from the group's limit ($budget GiB), planned within it, finished, peak RSS $((rss >> 20)) MiB"
  else
    bad "in a 700 MiB memory group" "exit $rc (137: killed), budget ${budget:-?}, RSS ${rss:-?}" "$(tail -n 8 "$T/g.log")"
  fi
  nst whole --set output.path=whole.tif --set tiling.gram=resident --set tiling.tile_size=1152
  [ -f "$T/whole.tif" ] && [ -f "$T/g.tif" ] && [ "$("$DIFF" "$T/whole.tif" "$T/g.tif")" = "max 0 mean 0" ] &&
    ok "the image planned in the group equals the one-tile render" || bad "group image" "$("$DIFF" "$T/whole.tif" "$T/g.tif" 2>&1)"
else
  skip "a memory control group: cannot make one here (no writable cgroup memory controller)"
fi
if make_group small 400; then
  in_group "$group" s --set output.path=s.tif
  if one_error s 2 "level 2 of 2 (1152x768): no tiling of the 1152x768 image fits the memory budget of .* (80 % of what the node and its memory group have left); the smallest plan .* needs .* or 2 ranks" &&
     ! grep -q 'level 1/2 done' "$T/s.log" && [ ! -e "$T/s.tif" ]; then
    ok "in a 400 MiB memory group: refused at start (exit 2, one line: budget, smallest plan, 2 ranks), not killed"
  else bad "in a 400 MiB memory group" "exit $rc (137: killed)" "$(tail -n 5 "$T/s.log")"; fi
fi

# ---- every level planned first ---------------------------------------------------------------------
nst pre --set output.path=pre.tif --set run.memory_gb=0.2
if one_error pre 2 "level 2 of 2 (1152x768): .*run.memory_gb: no tiling of the 1152x768 image fits the memory budget of 0.2 GiB per rank (run.memory_gb); the smallest plan (tiles of .* needs" &&
   ! grep -q 'level 1/2 done' "$T/pre.log" && [ ! -e "$T/pre.tif" ]; then
  ok "a level that fits no plan stops the job before level 1 renders (exit 2, one line: level, budget, smallest plan)"
else bad "preflight" "exit $rc" "$(cat "$T/pre.log")"; fi

# ---- the style targets within what the windows leave -----------------------------------------------
nst sty --set output.path=sty.tif --set run.memory_gb=0.6 --set style.scale=7
if one_error sty 2 "level 2 of 2 (1152x768): the 8064x8064 style image needs .* GiB per rank in its smallest tiles, and .* GiB is left of the budget beside the content's windows: lower style.scale, or give each rank more memory" &&
   ! grep -q 'style targets' "$T/sty.log" && [ ! -e "$T/sty.tif" ]; then
  ok "a style image too large for what the windows leave of the budget: refused before any level renders (exit 2, one line)"
else bad "style targets over the budget" "exit $rc" "$(cat "$T/sty.log")"; fi

# ---- run.memory_gb beyond the node -----------------------------------------------------------------
nst huge --set output.path=huge.tif --set run.memory_gb=100000
one_error huge 2 "run.memory_gb = 100000 for each of this node's 1 rank is more than there is: .* set run.memory_gb to at most" &&
  ok "run.memory_gb beyond what the node has: exit 2, one line" || bad "run.memory_gb too large" "exit $rc" "$(cat "$T/huge.log")"

# ---- short of memory while rendering: checkpoint and stop, then resume -------------------------------
args=(--set output.width=192 --set output.height=128 --set pyramid.levels=1 --set pyramid.iterations=12 --set tiling.tile_size=64)
(cd "$T" && "$IDLE" 300 mpirun --oversubscribe --bind-to none -np 2 "$NST" m.ini "${args[@]}" --set output.path=ref.tif) >"$T/ref.log" 2>&1
(cd "$T" && NSTBATCH_LOW_MEMORY=1:6 "$IDLE" 300 mpirun --oversubscribe --bind-to none -np 2 "$NST" m.ini "${args[@]}" \
    --set output.path=low.tif --set checkpoint.path=ck --set checkpoint.every=100) >"$T/low.log" 2>&1
rc=$?
if [ $rc -eq 1 ] && [ "$(grep -c '^nstbatch: error:' "$T/low.log")" -eq 1 ] && [ ! -e "$T/low.tif" ] &&
   grep -q "stopped at level 1, iteration 6 of 12 before the system would kill the job: rank 1's node has 0 MiB of memory left.*checkpoint written to ck" "$T/low.log"; then
  ok "a rank short of memory at iteration 6: every rank stops, one line, a checkpoint"
else bad "short of memory" "exit $rc" "$(cat "$T/low.log")"; fi
(cd "$T" && "$IDLE" 300 mpirun --oversubscribe --bind-to none -np 2 "$NST" m.ini "${args[@]}" --set output.path=low.tif \
    --set checkpoint.path=ck --set checkpoint.every=100) >"$T/resume.log" 2>&1
rc=$?
if [ $rc -eq 0 ] && grep -q 'resum' "$T/resume.log" && [ "$("$DIFF" "$T/ref.tif" "$T/low.tif")" = "max 0 mean 0" ]; then
  ok "resumed from that checkpoint: the same image as the uninterrupted render"
else bad "resume after the memory stop" "exit $rc, $("$DIFF" "$T/ref.tif" "$T/low.tif" 2>&1)" "$(tail -n 5 "$T/resume.log")"; fi

finish

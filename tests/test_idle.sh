#!/usr/bin/env bash
# tests/test_idle.sh: build/tests/idle_timeout, the bound every suite puts on its commands
# (tests/idle.sh): on silence, not on wall time. It must:
# - let a command that talks run past the bound (a slow machine's render), with its stdout and
#   stderr each on its own stream, and exit with its status;
# - end a silent command after the bound with 124 and one line saying so, its whole process group
#   with it (a child it left in the background, as a stuck compile or mpirun's daemons would);
# - pass SIGINT to the command alone (mpirun handles it as from a terminal), and report 128 + N
#   for a command ended by signal N, 127 for one it cannot run, 125 for a bad bound.
#
#   tests/test_idle.sh
. "$(dirname "$0")/lib.sh" test_idle

start=$(date +%s.%N)
"$IDLE" 2 sh -c 'for i in 1 2 3 4 5 6 7 8; do echo o$i; echo e$i >&2; sleep 0.5; done; exit 3' >"$T/o" 2>"$T/e"; rc=$?
secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
if [ $rc -eq 3 ] && [ "$(tr '\n' ' ' <"$T/o")" = "o1 o2 o3 o4 o5 o6 o7 o8 " ] && [ "$(tr '\n' ' ' <"$T/e")" = "e1 e2 e3 e4 e5 e6 e7 e8 " ] &&
   awk -v s="$secs" 'BEGIN { exit !(s > 3) }'; then
  ok "a command printing every 0.5 s runs ${secs} s under a 2 s bound; stdout and stderr apart; its status 3"
else bad "a talking command" "exit $rc after $secs s" "$(cat "$T/o" "$T/e")"; fi

out=$("$IDLE" 1 sh -c 'echo started; sleep 331 & sleep 332' 2>&1); rc=$?
sleep 0.3
left=$(ours 'sleep 33[12]')
if [ $rc -eq 124 ] && grep -q '^started$' <<<"$out" && grep -q '^idle_timeout: no output for 1 s from sh: ending it (exit 124)$' <<<"$out" && [ -z "$left" ]; then
  ok "a command silent for 1 s: ended with 124, one line saying so, nothing of its group left"
else bad "a silent command" "exit $rc, left running: ${left:-none}" "$out"; [ -n "$left" ] && kill $left; fi

"$IDLE" 5 sh -c 'trap "echo got INT; exit 7" INT; echo ready; sleep 3 & wait' >"$T/int" 2>&1 &
p=$!
# (until the shell says it is ready, while it lives; a start has no progress to follow)
for _ in $(seq 600); do grep -q ready "$T/int" 2>/dev/null && break; kill -0 $p 2>/dev/null || break; sleep 0.1; done
kill -INT $p; wait $p; rc=$?
if [ $rc -eq 7 ] && grep -q '^got INT$' "$T/int"; then ok "SIGINT to it reaches the command, whose status 7 it returns"
else bad "SIGINT passed on" "exit $rc" "$(cat "$T/int")"; fi

"$IDLE" 5 sh -c 'kill -9 $$'; r1=$?
"$IDLE" 5 "$T/none" 2>/dev/null; r2=$?
"$IDLE" 0 true 2>/dev/null; r3=$?
"$IDLE" 2x true 2>/dev/null; r4=$?
if [ "$r1 $r2 $r3 $r4" = "137 127 125 125" ]; then ok "killed by SIGKILL: 137; not found: 127; bounds 0 and 2x refused: 125"
else bad "exit statuses" "got $r1 $r2 $r3 $r4, want 137 127 125 125"; fi
finish

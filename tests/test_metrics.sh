#!/usr/bin/env bash
# tests/test_metrics.sh: progress, the JSON-lines log, the run record, the Prometheus file, GPU
# monitoring through NVML, and the plot command.
#
#   tests/test_metrics.sh NSTBATCH FAKE_NVML_DIR
#
# - every line of metrics.path parses as JSON with the fields docs/MONITORING.md lists; rows carry per-phase
#   min <= mean <= max over ranks; the run record parses and has the build, the config, the rank map;
# - the Prometheus file has only HELP/TYPE comments and `name{labels} value` samples, and no
#   temporary file is left beside it;
# - GPU monitoring with a stand-in NVML (FAKE_NVML_DIR/libnvidia-ml.so.1, tests/fake_nvml.c):
#   samples in the rows, the rank map names the GPU, warnings for low utilisation and heat, once each;
#   metrics.gpu = on without NVML says why and the run goes on; the CPU default says nothing;
# - run.progress = live draws a status line with the ETA; --quiet prints nothing on stdout;
# - tools/nstbatch-plot makes its PNGs (with the GPU plot when the log has samples) and refuses a
#   log that is not JSON lines (exit 2).
# Skips the JSON/PNG checks with a reason when /usr/bin/python3 or gnuplot are missing.
. "$(dirname "$0")/lib.sh" test_metrics
NST=$(readlink -f "$1") NVML=$(readlink -f "$2")
PY=/usr/bin/python3
have_py=1; $PY -c 'import json' 2>/dev/null || have_py=0

cat >"$T/m.ini" <<EOF
[content]
path = $ROOT/configs/demo/content.png
[style]
path = $ROOT/configs/demo/style.png
[output]
width = 256
height = 64
overwrite = true
preview = 0
[model]
random_width_divisor = 8
[optim]
method = adam
iterations = 60
[tiling]
tile_size = 64
[pyramid]
levels = 2
[run]
device = cpu
threads = 1
print_every = 20
EOF
# (64 px tiles: 4 at level 2, 2 at level 1, so each rank has tiles at both; every window is the
# whole image: at 192x128, 6 tiles of the larger windows, the suite took 14 CPU seconds, not 9,
# for the same checks, capped at AVX512_CORE)
nst() { # nst LOG ARGS...
  local log=$1; shift
  (cd "$T" && "$IDLE" 300 mpirun --oversubscribe --bind-to none -np 2 "$@") >"$T/$log.log" 2>"$T/$log.err"
  rc=$?
}

# ---- JSON lines, run record, Prometheus (CPU, no GPU monitoring) ---------------------------------------
nst plain "$NST" m.ini --set output.path=plain.png --set metrics.path=m.jsonl --set metrics.prometheus=m.prom --set run.record=rec.json
[ $rc -eq 0 ] || bad "a render with metrics" "exit $rc" "$(cat "$T/plain.err")"
if [ $have_py = 1 ]; then
  out=$($PY - "$T/m.jsonl" "$T/rec.json" <<'EOF' 2>&1
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
ev = [r["event"] for r in rows]
assert ev[0] == "job_start" and ev[-1] == "job_end", ev
assert ev.count("level_start") == 2 and ev.count("level_end") == 2, ev
its = [r for r in rows if r["event"] in ("iteration", "level_end")]
for r in its:
    for k in ("time", "elapsed_s", "job", "level", "levels", "width", "height", "iteration", "iterations", "loss", "megapixel_iterations_per_second", "eta_s", "memory"):
        assert k in r, (k, r)
    assert set(r["loss"]) == {"total", "content", "style", "tv"}
    for p in r.get("phases_s_per_iteration", {}).values():
        assert p["min"] <= p["mean"] + 1e-12 and p["mean"] <= p["max"] + 1e-12, p
    assert "gpu" not in r, "a CPU run has no GPU samples"
assert sum("phases_s_per_iteration" in r for r in its) >= 4
assert [r["iteration"] for r in its if r["level"] == 2] == [0, 20, 40, 60], its
rec = json.load(open(sys.argv[2]))
for k in ("build", "config", "rank_map", "tiling", "phases_seconds_per_iteration", "checkpoint", "levels"):
    assert k in rec, k
assert len(rec["rank_map"]) == 2 and rec["rank_map"][1]["rank"] == 1 and rec["rank_map"][0]["host"], rec["rank_map"]
assert "[optim]" in rec["config"] and rec["build"]["mpi"], rec["build"]
print(len(rows), "lines,", len(its), "rows")
EOF
)
  [ $? -eq 0 ] && ok "metrics.path: $out parse, with phases min <= mean <= max; the run record has build, config, rank map" \
    || bad "metrics.path / run.record" "$out" "$(head -c 600 "$T/m.jsonl")"
else skip "JSON checks" "no /usr/bin/python3"; fi
bad_lines=$(grep -v -E '^# (HELP|TYPE) nstbatch_[a-z_]+ ' "$T/m.prom" | grep -v -E '^nstbatch_[a-z_]+\{[a-z_]+="[^"]*"(,[a-z_]+="[^"]*")*\} -?[0-9.e+-]+$' | head -n 3)
if [ -s "$T/m.prom" ] && [ -z "$bad_lines" ] && grep -q '^nstbatch_level{job="m"} 2$' "$T/m.prom" && ! ls -a "$T" | grep -q 'm.prom.*tmp'; then
  ok "metrics.prometheus: $(grep -c '^nstbatch' "$T/m.prom") samples in the text format, written atomically"
else bad "metrics.prometheus" "'$bad_lines'" "$(head -n 20 "$T/m.prom")"; fi
# a user's file names as they are: an output path with a quote, a backslash and a Latin-1 byte
# (not UTF-8) gives a run record that is valid JSON read as strict UTF-8 (the path's bad byte as
# U+FFFD), and a Prometheus file whose job label is valid UTF-8 (each bad byte, quote or backslash
# '_'); before 2026-12-01 the record wrote the path unescaped and promtool refused the label
odd=$(printf 'caf\351 "q" \\b')
nst odd "$NST" m.ini --set pyramid.levels=1 --set optim.iterations=2 --set output.path="$odd.png" --set run.record="$odd.json" \
  --set metrics.prometheus="$odd.prom"
if [ $rc -ne 0 ]; then bad "a render with an odd file name" "exit $rc" "$(cat "$T/odd.err")"
else
  if [ $have_py = 1 ]; then
    out=$($PY -c 'import json, sys
rec = json.loads(open(sys.argv[1], "rb").read().decode("utf-8"))
assert rec["output"]["files"]["png"]["path"] == "caf\ufffd \"q\" \\b.png", rec["output"]["files"]' "$T/$odd.json" 2>&1) \
      && ok "an output named 'caf\\351 \"q\" \\b': the run record is JSON in UTF-8, the path's byte as U+FFFD" \
      || bad "an odd file name in the run record" "$out"
  else skip "an odd file name in the run record" "no /usr/bin/python3"; fi
  label=$(grep -o -m1 '^nstbatch_level{job="[^"]*"}' "$T/$odd.prom")
  if [ "$label" = 'nstbatch_level{job="caf_ _q_ _b"}' ] && iconv -f UTF-8 -t UTF-8 "$T/$odd.prom" >/dev/null 2>&1 \
     && { ! command -v promtool >/dev/null || promtool check metrics <"$T/$odd.prom" >/dev/null 2>&1; }; then
    ok "... its Prometheus file is UTF-8, the label $label$(command -v promtool >/dev/null && echo ", promtool check metrics passes")"
  else bad "an odd file name in the Prometheus file" "label '$label'" "$(head -n 3 "$T/$odd.prom")"; fi
fi
# a diverged run's losses (NaN, planted: no CPU input gives one) are null in the metrics log's rows
# and the run record's levels, which a strict JSON reader takes (NaN is no JSON; Python's json
# reads it unless told not to, so it is told)
if [ $have_py = 1 ]; then
  NSTBATCH_PLANT=nanloss nst nan "$NST" m.ini --set pyramid.levels=1 --set optim.iterations=4 --set run.print_every=2 \
    --set output.path=nan.png --set metrics.path=nan.jsonl --set run.record=nan.json --set metrics.prometheus=nan.prom
  out=$($PY -c 'import json, sys
def no(c): raise ValueError("not JSON: " + c)
rows = [json.loads(l, parse_constant=no) for l in open(sys.argv[1])]
its = [r for r in rows if r["event"] == "iteration"]
assert its and all(r["loss"]["total"] is None and r["loss"]["style"] is None and r["loss"]["content"] >= 0 for r in its), its
rec = json.loads(open(sys.argv[2]).read(), parse_constant=no)
lv, ls = rec["levels"], rec["loss"]
assert lv and all(l["loss_first"] is None and l["loss_last"] is None for l in lv), lv
assert all(ls[w]["total"] is None and ls[w]["style"] is None and ls[w]["content"] >= 0 for w in ("first", "last")), ls
print(len(its), "rows")' "$T/nan.jsonl" "$T/nan.json" 2>&1); py=$?
  [ $rc -eq 0 ] && [ $py -eq 0 ] && ok "a diverged loss (NaN, planted): null in the metrics log ($out) and the run record (its loss, its levels), strict JSON" \
    || bad "a diverged loss in the metrics log and the run record" "exit $rc: $out" "$(grep -m2 loss "$T/nan.jsonl" 2>/dev/null; cat "$T/nan.err")"
else skip "a diverged loss in the metrics log" "no /usr/bin/python3"; fi
# ... and NaN in the Prometheus file as the format spells it (printf's "-nan", x86's NaN, is refused)
if [ -s "$T/nan.prom" ] && grep -q '^nstbatch_loss{job="nan",term="total"} NaN$' "$T/nan.prom" && grep -q '^nstbatch_loss{job="nan",term="style"} NaN$' "$T/nan.prom" &&
   ! grep -q -- '-nan\| nan$' "$T/nan.prom" && { ! command -v promtool >/dev/null || promtool check metrics <"$T/nan.prom" >/dev/null 2>&1; }; then
  ok "... the Prometheus file has it as NaN$(command -v promtool >/dev/null && echo ", promtool check metrics passes")"
else bad "a diverged loss in the Prometheus file" "$(grep -m2 'term="total"\|term="style"' "$T/nan.prom" 2>/dev/null)"; fi
grep -qi "gpu\|nvml" "$T/plain.err" && bad "CPU run with metrics.gpu = auto" "mentions GPUs" "$(cat "$T/plain.err")" || ok "a CPU run (metrics.gpu = auto) says nothing about GPUs"

# ---- GPU monitoring with the stand-in NVML -----------------------------------------------------------
# (the last level must outlast NVML's 1 s utilisation window after its start, from when utilisation
# is judged: every rank waits 1.5 s before iteration 10's step of each level, NSTBATCH_SLOW, so it
# does on any machine without rendering more; 400 iterations did it before)
nst gpu env LD_LIBRARY_PATH="$NVML" FAKE_NVML_UTIL=40 FAKE_NVML_TEMP=91 NSTBATCH_SLOW='*:10:1.5' "$NST" m.ini --set output.path=gpu.png \
  --set metrics.gpu=on --set metrics.gpu_interval=0.05 --set metrics.path=g.jsonl --set run.record=grec.json
nwarn=$(grep -c "warning: GPU" "$T/gpu.err")
if [ $rc -eq 0 ] && grep -q "GPU utilisation under 70%: the least busy GPU averaged 40%" "$T/gpu.err" && grep -q "GPU temperature over 85 C: 91 C" "$T/gpu.err" \
  && [ "$nwarn" = 2 ]; then ok "NVML (stand-in): warnings for utilisation 40% and 91 C, once each per job"
else bad "GPU warnings" "exit $rc, $nwarn warnings" "$(cat "$T/gpu.err")"; fi
if [ $have_py = 1 ]; then
  out=$($PY - "$T/g.jsonl" "$T/grec.json" <<'EOF' 2>&1
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
g = [r["gpu"] for r in rows if "gpu" in r]
assert g and all(x["gpus"] == 2 and x["util_percent_min"] == 40 and x["temperature_c_max"] == 91 for x in g), g[:1]
assert all(abs(x["memory_used_bytes_max"] - 10e9) < 1 and x["power_w_max"] == 300 for x in g), g[:1]
assert sum(r["event"] == "warning" for r in rows) == 2
rec = json.load(open(sys.argv[2]))
assert all("Fake GPU" in m["device"] for m in rec["rank_map"]), rec["rank_map"]
print(len(g), "rows with GPU samples")
EOF
)
  [ $? -eq 0 ] && ok "GPU samples in metrics.path ($out), warnings as events, the GPU in the rank map" || bad "GPU samples" "$out"
fi
# a job shorter than NVML's window: utilisation read then covers the idle start-up before the level
# (an H200 showed 2% at 6 ms per iteration), so it is not judged; the temperature still is
# (one level: the fence is at its start, so its seconds in the run record bound what is judged; 3
# iterations of 96x64 px, 0.1 s quiet, so that a loaded machine rarely makes it a second: 10 of
# 192x128 took 2.1 s beside 3 other suites, and the check skipped)
nst gpushort env LD_LIBRARY_PATH="$NVML" FAKE_NVML_UTIL=40 FAKE_NVML_TEMP=91 "$NST" m.ini --set output.path=gpushort.png --set metrics.gpu=on \
  --set metrics.gpu_interval=0.05 --set run.record=gsrec.json --set optim.iterations=3 --set run.print_every=1 --set pyramid.levels=1 \
  --set output.width=96 --set output.height=64
secs=$(grep -m1 '^ *{"width": .*"tiles": .*"seconds": ' "$T/gsrec.json" 2>/dev/null | sed 's/.*"seconds": \([0-9.]*\).*/\1/')
if [ $rc -ne 0 ] || [ -z "$secs" ]; then bad "a short job with GPU monitoring" "exit $rc, no level seconds in the record" "$(cat "$T/gpushort.err")"
elif awk -v s="$secs" 'BEGIN { exit !(s >= 1) }'; then skip "a short job's utilisation" "its level took $secs s (a loaded machine): not shorter than NVML's window"
elif ! grep -q "utilisation under" "$T/gpushort.err" && grep -q "GPU temperature over 85 C: 91 C" "$T/gpushort.err"; then
  ok "a level shorter than NVML's 1 s window ($secs s): no utilisation verdict, the temperature warned"
else bad "a short job's GPU warnings" "$secs s" "$(cat "$T/gpushort.err")"; fi
# (2 iterations of one level: the notice comes at the start, the run going on is its end)
nst nogpu env LD_LIBRARY_PATH=/nonexistent "$NST" m.ini --set output.path=nogpu.png --set metrics.gpu=on --set pyramid.levels=1 --set optim.iterations=2
[ $rc -eq 0 ] && grep -q "metrics.gpu = on: no GPU monitoring on rank 0: NVML not loaded" "$T/nogpu.err" && ok "metrics.gpu = on without NVML: one notice, the run goes on" \
  || bad "metrics.gpu = on without NVML" "exit $rc" "$(cat "$T/nogpu.err")"

# ---- progress ------------------------------------------------------------------------------------------
# (the line is drawn at a level's first iteration, then at most every 0.2 s: no length is needed)
nst live "$NST" m.ini --set output.path=live.png --set run.progress=live --set pyramid.iterations=60,30 --set run.print_every=20
if [ $rc -eq 0 ] && grep -a -q $'\r\033\\[Klevel 2/2  iteration [0-9]*/30  loss .* MPit/s  ETA [0-9]' "$T/live.log"; then
  ok "run.progress = live: a status line redrawn in place with level, iteration, loss, MPit/s, ETA"
else bad "live progress" "exit $rc" "$(tr '\r' '\n' <"$T/live.log" | tail -n 5)"; fi
rows=$(tr '\r' '\n' <"$T/live.log" | sed 's/\x1b\[K//g' | grep -a -E '^ +20 ')
grep -q -E '^ +20( +[0-9.e+-]+){6} +([0-9]+s|[0-9]+m[0-9]+s)$' <<<"$rows" && ok "rows carry s/iter, MPit/s and the ETA" || bad "row ETA" "no ETA column" "$rows"
# a pyramid's progress tells the truth: the header's iterations, the closing line's, the loss per
# level, and an ETA that is unknown only before the first measurement and 0 only at the job's end
nst pyr "$NST" m.ini --set output.path=pyr.png --set pyramid.iterations=40,20 --set metrics.path=pyr.jsonl
if [ $rc -eq 0 ] && grep -q 'optim:   adam, 60 iterations over the levels' "$T/pyr.log" && grep -q 'done: 60 iterations over 2 levels' "$T/pyr.log" &&
   grep -q 'style loss (level 1, 128x32): ' "$T/pyr.log" && grep -q 'style loss (level 2, 256x64): ' "$T/pyr.log"; then
  ok "a pyramid's header and closing line count every level's iterations; the style loss is given per level"
else bad "pyramid progress" "exit $rc" "$(grep -E 'optim:|done:|loss' "$T/pyr.log")"; fi
etas=$(grep -E '"event": "(iteration|level_end)"' "$T/pyr.jsonl" | sed -n 's/.*"eta_s": \([^,]*\),.*/\1/p' | tr '\n' ' ')
if [ "$(awk '{ print $1 }' <<<"$etas")" = null ] && [ "$(awk '{ print $NF }' <<<"$etas")" = 0.000 ] &&
   [ "$(awk '{ for (i = 2; i < NF; i++) if ($i == "null" || $i + 0 <= 0) n++; print n + 0 }' <<<"$etas")" = 0 ]; then
  ok "the ETA in metrics.path: unknown (null) before the first measurement, positive at every level's rows until the job's last (0)"
else bad "pyramid ETA" "eta_s: $etas"; fi
# run.progress = auto on a terminal without a launcher (a singleton, whose MPI start sets PMIX_RANK too)
if command -v script >/dev/null; then
  (cd "$T" && COLUMNS=60 "$IDLE" 120 script -qec "stty cols 60; $(printf %q "$NST") m.ini --set output.path=tty.png --set optim.iterations=20 --set run.print_every=10 --set pyramid.levels=1" /dev/null) >"$T/tty.log" 2>&1
  widest=$(tr '\r' '\n' <"$T/tty.log" | sed 's/\x1b\[K//g' | grep -a '^level 1/1' | awk '{ print length($0) }' | sort -n | tail -n 1)
  if grep -a -q $'\r\033\\[Klevel 1/1  iteration' "$T/tty.log" && [ -n "$widest" ] && [ "$widest" -lt 60 ]; then
    ok "run.progress = auto on a terminal, run directly: the live line, cut to the terminal's 60 columns ($widest)"
  else bad "live line on a terminal" "widest ${widest:-none}" "$(tr '\r' '\n' <"$T/tty.log" | tail -n 4)"; fi
else
  skip "the live line on a terminal" "no script(1) to make one"
fi
# (2 iterations of one level: without --quiet they print the header, the rows and the closing lines)
nst quiet "$NST" m.ini --set output.path=quiet.png --quiet --set pyramid.levels=1 --set optim.iterations=2 --set run.print_every=1
[ $rc -eq 0 ] && [ ! -s "$T/quiet.log" ] && ok "--quiet: nothing on stdout" || bad "--quiet" "exit $rc" "$(head -n 5 "$T/quiet.log")"

# ---- plots ---------------------------------------------------------------------------------------------
if [ $have_py = 1 ] && command -v gnuplot >/dev/null; then
  out=$("$ROOT/tools/nstbatch-plot" "$T/g.jsonl" "$T/plots" 2>&1); r=$?
  good=0
  for f in loss throughput phases gpu; do
    [ "$(head -c 8 "$T/plots/$f.png" 2>/dev/null | od -An -tx1 | tr -d ' ')" = 89504e470d0a1a0a ] && [ "$(stat -c %s "$T/plots/$f.png")" -gt 5000 ] && good=$((good + 1))
  done
  [ $r -eq 0 ] && [ $good = 4 ] && ok "tools/nstbatch-plot: loss, throughput, phases and GPU PNGs" || bad "plots" "exit $r, $good good PNGs" "$out"
  echo "not json" >"$T/bad.jsonl"
  out=$("$ROOT/tools/nstbatch-plot" "$T/bad.jsonl" "$T/plots2" 2>&1); r=$?
  [ $r -eq 2 ] && grep -q "bad.jsonl:1: not a JSON line" <<<"$out" && ok "tools/nstbatch-plot refuses a log that is not JSON lines (exit 2)" || bad "plot on bad input" "exit $r" "$out"
else
  skip "plots" "needs /usr/bin/python3 and gnuplot (scripts/install-deps.sh --test)"
fi

finish

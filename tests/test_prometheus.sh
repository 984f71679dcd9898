#!/usr/bin/env bash
# tests/test_prometheus.sh: nstbatch's metrics read by the real components, on localhost.
#
#   tests/test_prometheus.sh NSTBATCH FAKE_NVML_DIR
#
# Debian's prometheus-node-exporter serves a textfile directory, Debian's prometheus scrapes it
# every second with monitoring/prometheus's alert rules loaded, and a render writes
# metrics.prometheus there (GPU gauges from the stand-in NVML, tests/fake_nvml.c). Then, through
# Prometheus's HTTP API: the series are there with the job's name; their last values equal the
# run's own metrics log (iteration, every loss term, the rate, the ETA, the GPU gauges); the
# iteration was seen rising while the render ran; the four alert rules are loaded; and every
# series the Grafana dashboard (monitoring/grafana/nstbatch.json) plots exists. promtool checks the
# rules and runs their unit tests. SKIPs with the reason where the programs are missing.
NST=$(readlink -f "$1") NVML=$(readlink -f "$2")
. "$(dirname "$0")/lib.sh" test_prometheus
MON=$ROOT/monitoring
PY=/usr/bin/python3
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$T"' EXIT

# ---- the rules, offline ----------------------------------------------------------------------------
if ! command -v promtool >/dev/null; then
  skip "every check: promtool, prometheus and prometheus-node-exporter are missing (scripts/install-deps.sh --test installs them)"
  finish
  exit
fi
out=$(promtool check rules "$MON/prometheus/nstbatch-alerts.yml" 2>&1) && grep -q "SUCCESS: 4 rules found" <<<"$out" \
  && ok "promtool check rules: 4 rules" || bad "promtool check rules" "" "$out"
out=$(cd "$MON/prometheus" && promtool test rules nstbatch-alerts.test.yml 2>&1) && grep -q SUCCESS <<<"$out" \
  && ok "promtool test rules: stalled (not when finished), GPU hot, GPU underused, loss NaN fire as tested" || bad "promtool test rules" "" "$out"
out=$(promtool check config "$MON/prometheus/prometheus.yml" 2>&1) && ok "promtool check config: the example prometheus.yml" || bad "example config" "" "$out"
$PY -c 'import json, sys; json.load(open(sys.argv[1]))' "$MON/grafana/nstbatch.json" 2>/dev/null && ok "the Grafana dashboard is valid JSON" \
  || bad "Grafana dashboard" "not JSON"

# ---- node_exporter and Prometheus on free ports ---------------------------------------------------------
free_port() { local p; while :; do p=$((20000 + RANDOM % 20000)); ss -ltn | grep -q ":$p " || { echo $p; return; }; done; }
NP=$(free_port) PP=$(free_port)
mkdir -p "$T/textfile" "$T/prom"
prometheus-node-exporter --web.listen-address=127.0.0.1:$NP --collector.disable-defaults --collector.textfile \
  --collector.textfile.directory="$T/textfile" >"$T/node.log" 2>&1 &
pids+=($!)
cp "$MON/prometheus/nstbatch-alerts.yml" "$T/prom/"
# Prometheus's schedule, which bounds the waits for its scrapes below: a scrape every SCRAPE_S, and
# target updates passed on by its discovery manager every UPDATE_S (5 s, fixed in Prometheus's code)
SCRAPE_S=1 UPDATE_S=5
cat >"$T/prom/prometheus.yml" <<EOF
global: {scrape_interval: ${SCRAPE_S}s, evaluation_interval: 1s}
rule_files: [nstbatch-alerts.yml]
scrape_configs:
  - job_name: node
    honor_labels: true
    static_configs: [{targets: ["127.0.0.1:$NP"]}]
EOF
prometheus --config.file="$T/prom/prometheus.yml" --storage.tsdb.path="$T/prom/data" --web.listen-address=127.0.0.1:$PP >"$T/prom.log" 2>&1 &
prom_pid=$!
pids+=($!)
# api PATH [PARAM=VALUE...]: a GET of Prometheus's HTTP API, the parameters URL-encoded
api() { local path=$1 args=(); shift; for a in "$@"; do args+=(--data-urlencode "$a"); done; curl -s -G --max-time 5 "http://127.0.0.1:$PP/api/v1/$path" "${args[@]}"; }
# Prometheus's start is work on this machine (its storage opened, the rules loaded), a line of its log
# for each stage: the wait ends once it is ready or has died, or after 60 s in which its log did not
# grow (tests/idle.sh: bounded by progress, not by a length)
ready() { curl -s --max-time 2 "http://127.0.0.1:$PP/-/ready" | grep -q Ready; }
ready_or_gone() { ready || ! kill -0 "$prom_pid" 2>/dev/null; }
grown_wait 60 "$T/prom.log" ready_or_gone
SECONDS_READY=$SECONDS
if ! ready; then
  bad "Prometheus did not start" "" "$(tail -n 5 "$T/prom.log"; tail -n 3 "$T/node.log")"
  finish
  exit
fi
# the first scrape: once ready, Prometheus's timers bring it within one target update and one scrape
# interval; 4 of those (24 s), as the schedule is its clock's, not this machine's speed
scraped() { [ "$(api query 'query=up' | grep -c '"value":\[[0-9.]*,"1"\]')" -ge 1 ]; }
until scraped || [ $SECONDS -ge $((SECONDS_READY + 4 * (UPDATE_S + SCRAPE_S))) ]; do sleep 0.5; done
scraped && ok "node_exporter (textfile collector) on :$NP and Prometheus on :$PP are up, the first scrape done" \
  || bad "Prometheus never scraped node_exporter" "" "$(api targets | head -c 600)"

# ---- a render that writes the textfile --------------------------------------------------------------------
{ demo_pair; cat <<EOF; } >"$T/m.ini"
[output]
path = out.png
width = 192
height = 128
[model]
random_width_divisor = 8
[optim]
iterations = 80
[run]
device = cpu
print_every = 10
threads = 1
[metrics]
path = m.jsonl
prometheus = $T/textfile/print1.prom
gpu = on
EOF
# paced by the clock, not by this machine's speed: 0.1 s before every iteration's step (the test
# hook NSTBATCH_SLOW=*:1+:0.1, nst/render/render.c), so the render moves for 8 s or more on any
# machine, a row a second, and Prometheus's scrapes (one a second) see it move; 600 iterations
# computed for that took 7 CPU seconds here, and would have been over in 2 s on a machine 4 times faster
t0=$(date +%s)
(cd "$T" && env LD_LIBRARY_PATH="$NVML" FAKE_NVML_UTIL=40 FAKE_NVML_TEMP=91 NSTBATCH_SLOW='*:1+:0.1' "$NST" m.ini) >"$T/run.log" 2>&1; rc=$?
t1=$(date +%s)
[ $rc -eq 0 ] && ok "the render ran $((t1 - t0)) s, writing metrics.prometheus into the collector's directory" || bad "render" "exit $rc" "$(tail -n 5 "$T/run.log")"

# value QUERY: the one sample's value ("" if none, "many" if several)
value() {
  api query "query=$1" | $PY -c 'import json, sys
r = json.load(sys.stdin)["data"]["result"]
print(r[0]["value"][1] if len(r) == 1 else ("many" if r else ""))'
}
# last ROW_FIELD: from the metrics log's last row with that field
last() { $PY - "$T/m.jsonl" "$1" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if '"loss"' in l]
v = rows[-1]
for k in sys.argv[2].split("."):
    v = v[k]
print(v)
PY
}
close() { $PY -c 'import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); sys.exit(0 if abs(a - b) <= 1e-6 * max(1.0, abs(b)) else 1)' "$1" "$2" 2>/dev/null; }
# a scrape after the last write: until Prometheus holds the final iteration the metrics log names
# (the textfile is written whole, so every series is that scrape's), for 30 of its scrape intervals
# (its clock's schedule, as the first scrape's above)
final=$(last iteration)
waited=$SECONDS
until close "$(value 'nstbatch_iteration{job="print1"}')" "$final" || [ $((SECONDS - waited)) -ge $((30 * SCRAPE_S)) ]; do sleep 0.5; done

names=$(api query 'query=count by (__name__) ({__name__=~"nstbatch_.*",job="print1"})' | $PY -c 'import json, sys
print(" ".join(sorted(s["metric"]["__name__"] for s in json.load(sys.stdin)["data"]["result"])))')
n=$(wc -w <<<"$names")
[ "$n" -ge 12 ] && ok "Prometheus holds $n nstbatch series names, labelled job=\"print1\" (the textfile's name)" || bad "series in Prometheus" "$n names" "$names"
for pair in "nstbatch_iteration|iteration" "nstbatch_loss{term=\"total\"}|loss.total" "nstbatch_loss{term=\"content\"}|loss.content" \
            "nstbatch_loss{term=\"style\"}|loss.style" "nstbatch_loss{term=\"tv\"}|loss.tv" "nstbatch_level|level" \
            "nstbatch_megapixel_iterations_per_second|megapixel_iterations_per_second" "nstbatch_eta_seconds|eta_s"; do
  q=${pair%%|*} f=${pair#*|}
  sel=${q/\{/\{job=\"print1\",}; [ "$sel" = "$q" ] && sel="$q{job=\"print1\"}"
  got=$(value "$sel") want=$(last "$f")
  close "$got" "$want" && ok "$q = $got, as the run's metrics log says ($f)" || bad "$q" "Prometheus $got, log $want"
done
for pair in 'nstbatch_gpu_temperature_celsius_max|91' 'nstbatch_gpu_utilization_percent{stat="mean"}|40'; do
  q=${pair%%|*} want=${pair#*|}
  sel=${q/\{/\{job=\"print1\",}; [ "$sel" = "$q" ] && sel="$q{job=\"print1\"}"
  got=$(value "$sel")
  close "$got" "$want" && ok "$q = $got (the stand-in NVML's reading)" || bad "$q" "Prometheus '$got', NVML $want"
done
seen=$(api query_range "query=nstbatch_iteration{job=\"print1\"}" "start=$t0" "end=$(date +%s)" "step=0.5" | $PY -c 'import json, sys
r = json.load(sys.stdin)["data"]["result"]
print(len({v[1] for v in r[0]["values"]}) if r else 0)' 2>/dev/null)
[ "${seen:-0}" -ge 3 ] && ok "Prometheus saw the iteration at $seen different values while the render ran" || bad "progress over time" "${seen:-0} values"
rules=$(api rules | $PY -c 'import json, sys
print(" ".join(r["name"] for g in json.load(sys.stdin)["data"]["groups"] for r in g["rules"]))')
[ "$(wc -w <<<"$rules")" = 4 ] && ok "the alert rules are loaded: $rules" || bad "rules loaded" "'$rules'"
missing=$($PY - "$MON/grafana/nstbatch.json" "$names" <<'PY'
import json, re, sys
have = set(sys.argv[2].split())
used = {m for p in json.load(open(sys.argv[1]))["panels"] for t in p["targets"] for m in re.findall(r"nstbatch_[a-z_]+", t["expr"])}
print(" ".join(sorted(used - have)) if used else "no series at all")
PY
)
[ -z "$missing" ] && ok "every series the Grafana dashboard plots is in Prometheus" || bad "dashboard series" "missing: $missing"
finish

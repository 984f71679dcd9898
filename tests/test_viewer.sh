#!/usr/bin/env bash
# tests/test_viewer.sh: the Deep Zoom viewer, in a real browser. A render of nstbatch as Deep Zoom
# with its content image beside it, the page written by nst_viewer_write (viewer/page.c), served
# by nstbatch-view --log, shown by headless Chromium (playwright-core from tests/browser, on the
# system's /usr/bin/chromium): the deepest level's tiles and the half-size level's are requested
# and served; screenshots at 1:1 and 1:2 hold the image's pixels where they belong (within JPEG's
# error; the same crop 8 px off fails); left of the wipe the content shows; the console stays
# silent. Then nstbatch-view alone: it writes a missing page, refuses paths out of its folder,
# names bad arguments in one line with exit status 2, stops on SIGINT and SIGTERM with 0, and
# finds the assets `make install` put in PREFIX/share/nstbatch/viewer. The C side without a
# browser (JSON escaping, files, failures, path rules) is BUILD/tests/test_viewer_page, run first.
#
#   tests/test_viewer.sh NSTBATCH [BUILD_DIR]
#
# Needs Chromium and Node.js (scripts/install-deps.sh --test installs both and runs npm ci in
# tests/browser): the browser part is skipped, with the reason, without them.
NST=$(readlink -f "$1")
. "$(dirname "$0")/lib.sh" test_viewer
B=$(cd "$ROOT" && readlink -f "${2:-build}")
VIEW=$B/nstbatch-view PAGE=$B/tests/test_viewer_page
PY=/usr/bin/python3 PIXELS=$ROOT/tests/viewer_pixels.py
CHROMIUM=${CHROMIUM:-$(command -v chromium || echo /usr/bin/chromium)}
export CHROMIUM
start_s=$(date +%s.%N)
servers=()
trap 'for p in "${servers[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$T"' EXIT

# serve NAME OUTPUT ARGS...: start nstbatch-view OUTPUT ARGS... --log, its stdout in T/NAME.out and
# its log in T/NAME.log; sets pid and port once it prints its line (while it lives; a start has no
# progress to follow: 60 s at most, hundreds of times its usual)
serve() {
  local name=$1; shift
  "$VIEW" "$@" --log >"$T/$name.out" 2>"$T/$name.log" &
  pid=$! port=
  servers+=("$pid")
  for _ in $(seq 600); do
    port=$(sed -n 's|^nstbatch-view: serving .* at http://127\.0\.0\.1:\([0-9]*\)/.* (Ctrl-C stops)$|\1|p' "$T/$name.out")
    [ -n "$port" ] && return 0
    kill -0 "$pid" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}
# http PORT REQUEST: the raw answer to a request written as is (no client tidies the path)
http() {
  exec 3<>"/dev/tcp/127.0.0.1/$1" || return 1
  printf '%b' "$2" >&3
  "$IDLE" 5 cat <&3
  exec 3<&-
}
# stopped PID SIGNAL: the server stops on SIGNAL and exits 0
stopped() { kill "-$2" "$1" && wait "$1"; }
# one_line CMD...: exit status 2 and exactly one line of output (both streams) in $out
one_line() { out=$("$@" 2>&1); local r=$?; [ $r -eq 2 ] && [ "$(wc -l <<<"$out")" -eq 1 ]; }
# r EXPR: a field of the browser's result (JavaScript on r)
r() { node -e 'const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")); const v = eval(process.argv[2]); console.log(typeof v === "string" ? v : JSON.stringify(v))' "$T/result.json" "$1" 2>/dev/null; }
# within "M P" mae X p99 Y: X < M and Y < P (false when the numbers are missing)
within() { [ $# -eq 5 ] && awk -v m="$3" -v p="$5" -v tm="${1% *}" -v tp="${1#* }" 'BEGIN { exit !(m < tm && p < tp) }'; }
# check_pixels NAME SHOT SX,SY IX,IY W,H FACTOR THRESHOLD LEVEL:FACTOR...: the screenshot's region
# against out.png (reduced FACTOR times), within THRESHOLD; against the tiles it was drawn from (one
# of the LEVEL:FACTOR, the level's tiles put together and reduced), nearly exact; the crop 8 px to
# the right, not within THRESHOLD. Prints the numbers, and the JPEG tiles' own error for scale.
check_pixels() {
  local name=$1 shot=$2 s=$3 i=$4 size=$5 f=$6 limit=$7 view jpeg shifted drawn= lf m
  shift 7
  view=$("$PY" "$PIXELS" "$shot" "$O/out.png" "$s" "$i" "$size" "$f")
  jpeg=$("$PY" "$PIXELS" "$O/out_files/${1%:*}" "$O/out.png" "$i" "$i" "$size" "$f")
  shifted=$("$PY" "$PIXELS" "$shot" "$O/out.png" "$s" "$((${i%,*} + 8)),${i#*,}" "$size" "$f")
  for lf in "$@"; do
    m=$("$PY" "$PIXELS" "$shot" "$O/out_files/${lf%:*}" "$s" "$i" "$size" "${lf#*:}")
    # shellcheck disable=SC2086
    within "1 4" $m && { drawn="level ${lf%:*}'s tiles$([ "${lf#*:}" = 1 ] || echo ", halved") ($m)"; break; }
  done
  echo "    | $name: screenshot against out.png: $view; the level's JPEG tiles against out.png: $jpeg; the crop 8 px off: $shifted"
  # shellcheck disable=SC2086
  within "$limit" $view && ok "$name: the screenshot is out.png within JPEG's error ($view, limit $limit)" || bad "$name pixels" "$view, not below $limit"
  [ -n "$drawn" ] && ok "$name: the screenshot is $drawn, drawn exactly" || bad "$name against the tiles" "matches none of $* (last: $m)"
  # shellcheck disable=SC2086
  ! within "$limit" $shifted && ok "$name: the same crop 8 px off fails ($shifted)" || bad "$name shifted crop" "passes: $shifted"
}

# ---- the C side: JSON escaping, the files written, failures, the server's path rules -----------
if [ -x "$PAGE" ] && [ -x "$VIEW" ]; then
  out=$("$PAGE" 2>&1)
  grep -v '^test_viewer_page: ' <<<"$out"
  read -r p f s < <(sed -nE 's/^test_viewer_page: ([0-9]+) passed, ([0-9]+) failed, ([0-9]+) skipped$/\1 \2 \3/p' <<<"$out")
  [ -n "${p:-}" ] && pass=$((pass + p)) fail=$((fail + f)) skipped=$((skipped + s)) || bad "test_viewer_page" "no summary line" "$out"
else
  bad "built programs" "$PAGE or $VIEW is missing: make all and make $B/tests/test_viewer_page (make test builds both)"
  finish; exit
fi

# ---- nstbatch-view's arguments: one line, exit status 2 -----------------------------------------
"$VIEW" --help | grep -q "usage: nstbatch-view OUTPUT" && ok "nstbatch-view --help" || bad "--help" "no usage"
one_line "$VIEW" "$T/nope.dzi" && grep -q "nope.dzi: no such file" <<<"$out" \
  && ok "a missing output: exit 2, one line: ${out:0:80}..." || bad "missing output" "exit or message" "$out"
one_line "$VIEW" "$T/nope.dzi" --port 70000 && grep -q -- "--port 70000: not a port" <<<"$out" \
  && ok "--port 70000: exit 2, one line: ${out:0:72}..." || bad "--port out of range" "exit or message" "$out"
one_line "$VIEW" && grep -q "no OUTPUT given" <<<"$out" && ok "no OUTPUT: exit 2, one line" || bad "no OUTPUT" "exit or message" "$out"

# ---- what the rest needs: the output's tools and the page's assets; the browser's -----------------
why=
if ! "$PY" -c 'import numpy, PIL' 2>/dev/null || ! command -v vips >/dev/null; then why="no numpy/Pillow for $PY or no vips (scripts/install-deps.sh)"
elif [ ! -f "$ROOT/configs/demo/content.png" ]; then why="no demo images (make demo-images)"
elif ! msg=$("$PAGE" write "$T/probe.dzi" - 1 1 - 2>&1); then why="$msg"
fi
if [ -n "$why" ]; then
  skip "the output, the server and the browser: $why"
  finish; exit
fi
browser_why=
if [ ! -x "$CHROMIUM" ]; then browser_why="no Chromium at $CHROMIUM (scripts/install-deps.sh --test installs it)"
elif ! command -v node >/dev/null; then browser_why="no Node.js (scripts/install-deps.sh --test installs it)"
elif [ ! -d "$ROOT/tests/browser/node_modules/playwright-core" ] && \
     ! (cd "$ROOT/tests/browser" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null 2>&1); then
  browser_why="no playwright-core in tests/browser, and npm ci there failed (offline?)"
fi

# ---- the output: a small render, as Deep Zoom with its content beside it ------------------------
O=$T/out
mkdir -p "$O"
cat >"$T/view.ini" <<EOF
[content]
path = $ROOT/configs/demo/content.png
[style]
path = $ROOT/configs/demo/style.png
[output]
path = $O/out.png
format = png,dzi
width = 700
height = 500
preview = 0
[model]
random_width_divisor = 16
[optim]
iterations = 8
lr = 0.02
[run]
print_every = 0
record = $T/run.json
EOF
t=$(date +%s.%N)
run_nst view.ini render
render_s=$(awk -v a="$t" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
(cd "$T" && "$NST" view.ini --print-config >"$T/config.ini" 2>/dev/null)
losses=$("$PY" -c 'import json, sys
l = json.load(open(sys.argv[1]))["loss"]
print(" ".join(",".join(repr(l[w][k]) for k in ("total", "content", "style", "tv")) for w in ("first", "last")))' "$T/run.json" 2>/dev/null)
[ "$rc" -eq 0 ] && [ -f "$O/out.png" ] && [ -n "$losses" ] && ok "nstbatch renders the 700x500 image ($render_s s)" \
  || { bad "render" "exit $rc" "$(cat "$T/render.log")"; finish; exit; }
# nstbatch wrote out.dzi, out_files/, out_content.dzi (the content at the output's size) and the
# page with the run's configuration and losses (nst_viewer_write)
[ -f "$O/out.dzi" ] && [ -f "$O/out_content.dzi" ] && [ -f "$O/out.html" ] && [ -f "$O/out.view.json" ] && [ -d "$O/out_viewer" ] \
  && ok "nstbatch wrote the pyramids and the page: $(cd "$O" && ls -d out.dzi out_content.dzi out.html out.view.json out_viewer | tr '\n' ' ')" \
  || bad "the page beside nstbatch's Deep Zoom output" "missing" "$(ls "$O"; grep -i 'viewer\|warning' "$T/render.log")"

# ---- served, and shown in Chromium ----------------------------------------------------------------
if serve main "$O/out.dzi"; then
  ok "nstbatch-view prints its one line: $(cat "$T/main.out")"
else
  bad "nstbatch-view" "no address line" "$(cat "$T/main.out" "$T/main.log")"; finish; exit
fi
main_pid=$pid main_port=$port
# the page in Chromium: (a) tiles served, (b) pixels, (c) the console, (d) the content side
browser_checks() {
  t=$(date +%s.%N)
  out=$(cd "$ROOT/tests/browser" && "$IDLE" 120 node view_test.js "http://127.0.0.1:$port/out.html" "$T" 2>&1); brc=$?
  browser_s=$(awk -v a="$t" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  echo "$out" | tail -n 1 >"$T/result.json"
  if [ $brc -ne 0 ] || [ "$(r r.fatal)" != undefined ]; then
    bad "the browser" "exit $brc" "$out"; return
  fi
  [ "$(r 'r.viewerError')" = "null" ] && [ "$(r 'r.items')" = 2 ] \
    && ok "the page opens both images (drawer $(r r.drawer); browser $browser_s s: $(r "Object.entries(r.ms).map(([k, v]) => k + ' ' + v + ' ms').join(', ')"))" \
    || bad "the page" "error $(r r.viewerError), $(r r.items) images"
  # (c) a silent console
  [ "$(r 'r.errors.length')" = 0 ] && ok "no console errors and no page errors" || bad "console errors" "$(r 'r.errors.join(" | ")')"
  [ "$(r 'r.messages.length')" = 0 ] && ok "nothing else on the console ($(r r.browserNotes) notes of Chromium's software GL left aside)" \
    || bad "console messages" "$(r 'r.messages.join(" | ")')"
  # the panel: the configuration as given, the losses from the run's record
  [ "$(r 'r.panel.config')" = "$(cat "$T/config.ini")" ] && [ "$(r 'r.panel.losses.length')" = 4 ] && r 'r.panel.losses[2]' | grep -q '^style ' \
    && ok "the panel: the configuration ($(wc -l <"$T/config.ini") lines) and 4 losses ($(r 'r.panel.losses[0]'))" \
    || bad "the panel" "config or losses differ" "$(diff <(r 'r.panel.config') "$T/config.ini"; r 'r.panel.losses')"
  # the wipe, dragged to x = 120: the content clipped there (the home view shows 700 px in 640)
  [ "$(r r.wipe.left)" = 120px ] && awk -v w="$(r r.wipe.clipWidth)" 'BEGIN { exit !(w > 128 && w < 134) }' \
    && ok "the wipe dragged to x = 120 clips the content at image x = $(r 'r.wipe.clipWidth.toFixed(1)')" || bad "the wipe" "$(r r.wipe)"
  [ "$(r r.zoom1)" = "[320,240]" ] && [ "$(r r.zoom2)" = "[320,240]" ] \
    && ok "image pixels (512, 256) at 1:1 and (350, 250) at 1:2 are at the window's centre" || bad "positions" "$(r r.zoom1) $(r r.zoom2)"

  # (a) the tiles served: the deepest level (10: 700 px needs 2^10) and the half-size level (9)
  for tile in out_files/10/0_0.jpg out_files/10/1_0.jpg out_files/9/0_0.jpg out_content_files/10/0_0.jpg; do
    size=$(stat -c %s "$O/$tile")
    grep -qx "GET /$tile 200 $size" "$T/main.log" && ok "served: GET /$tile 200 $size" \
      || bad "tile $tile" "not served whole with 200" "$(grep "$tile" "$T/main.log")"
  done
  # (b) the pixels. At 1:1 screen (x, y) shows image (x + 192, y + 16); at 1:2 the half-size image's
  # (x - 145, y - 115). The regions keep clear of the wipe (x < 140), the buttons (top left), the
  # panel (top right), the navigator (bottom right) and the image's edge (x = 508 at 1:1).
  check_pixels "1:1" "$T/zoom1.png" 146,60 338,76 354,370 1 "8 32" 10:1
  check_pixels "1:2" "$T/zoom2.png" 150,120 5,5 330,240 2 "8 32" 9:1 10:2
  # (d) left of the wipe, the content
  content=$("$PY" "$PIXELS" "$T/zoom1.png" "$O/out_content_files/10" 8,60 200,76 92,370 1)
  styled=$("$PY" "$PIXELS" "$T/zoom1.png" "$O/out.png" 8,60 200,76 92,370 1)
  # shellcheck disable=SC2086
  within "4 24" $content && ! within "8 32" $styled \
    && ok "left of the wipe the content shows (against out_content.dzi's tiles: $content; against out.png: $styled)" \
    || bad "the content side" "against out_content.dzi's tiles: $content; against out.png: $styled"
}
browser_s=-
if [ -z "$browser_why" ]; then browser_checks; else skip "the browser test: $browser_why"; fi

# ---- the server's walls, and HTTP -----------------------------------------------------------------
ln -s /etc "$O/etc-link"
for target in '/../../etc/passwd' '/%2e%2e/%2e%2e/etc/passwd' '/out_files/..%2f..%2f..%2fetc%2fpasswd' '/etc-link/passwd' '/.%2e/etc/passwd'; do
  ans=$(http "$main_port" "GET $target HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
  status=$(head -n 1 <<<"$ans" | tr -d '\r')
  grep -qE '^HTTP/1.1 (400|404) ' <<<"$status" && ! grep -q 'root:' <<<"$ans" && ok "GET $target: $status" || bad "GET $target" "$status" "$ans"
done
ans=$(http "$main_port" "HEAD /out.dzi HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
grep -q "^Content-Length: $(stat -c %s "$O/out.dzi")" <<<"$ans" && grep -q '^Content-Type: application/xml' <<<"$ans" && ! grep -q '<Image' <<<"$ans" \
  && ok "HEAD /out.dzi: its length and type, no body" || bad "HEAD" "" "$ans"
ans=$(http "$main_port" "POST /out.dzi HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
grep -q '^HTTP/1.1 405 ' <<<"$ans" && grep -q '^Allow: GET, HEAD' <<<"$ans" && ok "POST: 405 with Allow" || bad "POST" "" "$ans"
ans=$(http "$main_port" "GET /?x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
grep -q '^Location: /out.html' <<<"$ans" && ok "GET /: a redirect to /out.html" || bad "GET /" "" "$ans"
ans=$(http "$main_port" "GET /out.dzi HTTP/1.1\r\nHost: x\r\n\r\nGET /out.view.json HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
[ "$(grep -c '^HTTP/1.1 200 OK' <<<"$ans")" = 2 ] && grep -q '"image": "out.dzi"' <<<"$ans" \
  && ok "two requests on one connection (keep-alive, pipelined)" || bad "keep-alive" "" "$ans"
exec 4<>"/dev/tcp/127.0.0.1/$main_port" && printf 'GET /out.dzi HTTP/1.1\r\nHo' >&4 # a client that stops mid-request
ans=$(http "$main_port" "GET /out.dzi HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
grep -q '^HTTP/1.1 200 OK' <<<"$ans" && ok "a client stalled mid-request holds up no other" || bad "a stalled client" "blocks the server" "$ans"
exec 4<&-
one_line "$VIEW" "$O/out.dzi" --port "$main_port" && grep -q "port $main_port is in use: choose another or leave --port out" <<<"$out" \
  && ok "a port in use: exit 2, one line: $out" || bad "port in use" "" "$out"
stopped "$main_pid" TERM && ok "SIGTERM stops it with exit status 0" || bad "SIGTERM" "exit $?"

# ---- a bare output: nstbatch-view writes its page (size from the .dzi, no config or losses) ------
mkdir -p "$T/bare" && cp -r "$O/out.dzi" "$O/out_files" "$O/out_content.dzi" "$O/out_content_files" "$T/bare/"
if serve bare "$T/bare/out.png"; then
  json=$(cat "$T/bare/out.view.json" 2>/dev/null)
  grep -q '"width": 700' <<<"$json" && grep -q '"loss": null' <<<"$json" && grep -q '"content": "out_content.dzi"' <<<"$json" && [ -f "$T/bare/out.html" ] \
    && grep -q "wrote the page" "$T/bare.log" && ok "given out.png of a bare output, it writes out.html, out.view.json (700 wide, no losses) and out_viewer/" \
    || bad "the page of a bare output" "" "$json"
  http "$port" "GET /out.html HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" | grep -q 'out_viewer/viewer.js' && ok "and serves it" || bad "serving the bare page" ""
  stopped "$pid" INT && ok "SIGINT stops it with exit status 0" || bad "SIGINT" "exit $?"
else
  bad "the bare output" "nstbatch-view did not start" "$(cat "$T/bare.out" "$T/bare.log")"
fi
# a TIFF without its .dzi goes through the converter nstbatch-dzi, beside nstbatch-view or on PATH
vips copy "$O/out.png" "$T/bare/big.tif[tile,tile-width=256,tile-height=256]"
if [ -x "$B/nstbatch-dzi" ]; then
  if serve tiff "$T/bare/big.tif"; then
    [ -f "$T/bare/big.dzi" ] && [ -f "$T/bare/big.html" ] && ok "a TIFF: nstbatch-dzi makes big.dzi and the page, then it is served" || bad "the TIFF" "no big.dzi or page"
    stopped "$pid" TERM
  else bad "the TIFF" "nstbatch-view did not start" "$(cat "$T/tiff.out" "$T/tiff.log")"; fi
else
  PATH=/usr/bin:/bin one_line "$VIEW" "$T/bare/big.tif" && grep -q "nstbatch-dzi, which makes one, is neither beside nstbatch-view nor on PATH" <<<"$out" \
    && ok "a TIFF without nstbatch-dzi: exit 2, one line naming it" || bad "the TIFF without nstbatch-dzi" "" "$out"
fi

# ---- installed: the programs and the assets in PREFIX, found from there ------------------------
P=$T/prefix
# BUILD relative to the checkout where it lies inside it: make cannot take a target path with a
# space, which an absolute one has in a checkout whose folder has one
out=$(make -C "$ROOT" -s --no-print-directory BUILD="${B#"$ROOT"/}" install PREFIX="$P" 2>&1); irc=$?
if [ $irc -eq 0 ] && [ -x "$P/bin/nstbatch-view" ] && [ -f "$P/share/nstbatch/viewer/web/viewer.js" ] \
   && [ -f "$P/share/nstbatch/viewer/openseadragon/openseadragon.min.js" ] && [ -f "$P/share/nstbatch/viewer/openseadragon/LICENSE.txt" ]; then
  ok "make install: bin/nstbatch-view, share/nstbatch/viewer/{web,openseadragon}"
  echo '/* from the installed assets */' >>"$P/share/nstbatch/viewer/web/viewer.css"
  mkdir -p "$T/inst" && cp -r "$O/out.dzi" "$O/out_files" "$T/inst/"
  VIEW=$P/bin/nstbatch-view
  unset NSTBATCH_VIEWER_DIR
  if serve installed "$T/inst/out.dzi" && grep -q "from the installed assets" "$T/inst/out_viewer/viewer.css"; then
    ok "the installed nstbatch-view writes the page from PREFIX/share/nstbatch/viewer"
  else bad "installed assets" "not used" "$(cat "$T/installed.log" 2>/dev/null)"; fi
  kill "$pid" 2>/dev/null
else
  bad "make install" "exit $irc or files missing" "$out"
fi

echo "    | time: $(awk -v a="$start_s" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s (render $render_s s, browser $browser_s s)"
finish

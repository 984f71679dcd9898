#!/usr/bin/env bash
# tests/test_demo.sh: the shipped demo end to end. configs/demo.ini (as the README's main
# command runs it) must exit 0, write a PNG of the configured size (checked with libpng directly,
# tests/png_probe), leave no temporary file, and lower the style loss by at least 50x; and the
# README's picture of it (docs/demo.jpg) must show this render, not an older demo (the figure tool
# beside the probe, BUILD/tools/demo_figure; make demo-figure remakes the picture). The same for the
# masks demo (configs/masks.ini, docs/masks.jpg, make demo-masks-figure).
#
#   tests/test_demo.sh NSTBATCH PNG_PROBE
set -u
# numbers with a decimal point in any locale (awk, printf, sort -n): a user's LC_ALL becomes LANG
[ -z "${LC_ALL:-}" ] || { export LANG="$LC_ALL"; unset LC_ALL; }; export LC_NUMERIC=C
NST=$(readlink -f "$1") PROBE=$(readlink -f "$2")
FIGURE=$(dirname "$PROBE")/../tools/demo_figure
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
pass=0 fail=0
check() { if eval "$2"; then pass=$((pass + 1)); echo "  ok   $1"; else fail=$((fail + 1)); echo "  FAIL $1 ($2)"; fi; }

out_png="$ROOT/configs/demo/stylised.png"
rm -rf "$out_png" "$ROOT"/configs/demo/stylised*.dzi "$ROOT"/configs/demo/stylised*_files
# on the CPU (fp32 where the CPU has no bf16) on any host: docs/demo.jpg is the CPU's render, and a
# GPU host would otherwise take the GPU in bf16 (test_gpu_render.sh covers the GPU)
# (make demo adds the Deep Zoom output, for nstbatch-view)
log=$(cd "$ROOT" && mpirun --bind-to none -np 1 "$NST" configs/demo.ini --set run.device=cpu --set output.format=png,dzi 2>&1); status=$?
echo "$log" | sed 's/^/    | /' | tail -n 14
check "the demo exits 0" '[ $status -eq 0 ]'
check "it writes its output" '[ -f "$out_png" ]'
check "the output is 384x256, 8-bit (libpng)" '[ "$("$PROBE" "$out_png" 2>&1)" = "384x256 8" ]'
check "no temporary file is left" '! ls -a "$ROOT/configs/demo" | grep -q "nstbatch-.*tmp"'
dz="$ROOT/configs/demo/stylised"
check "it writes the Deep Zoom pyramid and the content's (levels 0..9, the top one 384x256)" \
  '[ -f "$dz.dzi" ] && [ -f "${dz}_content.dzi" ] && [ "$(ls "${dz}_files" | sort -n | tr "\n" " ")" = "0 1 2 3 4 5 6 7 8 9 " ] \
   && /usr/bin/python3 -c "from PIL import Image; import sys; sys.exit(Image.open(\"${dz}_files/9/0_0.jpg\").size != (384, 256))" 2>/dev/null'
# the README's recipe: nstbatch-view serves the demo's pyramid and its page (the browser: test_viewer)
VIEW=$(dirname "$NST")/nstbatch-view
if [ -x "$VIEW" ] && [ -f "$dz.dzi" ]; then
  vout=$(mktemp); "$VIEW" "$dz.dzi" >"$vout" 2>&1 & vpid=$!
  # its line, while it lives (a start has no progress to follow: 60 s, hundreds of times its usual)
  port=; for _ in $(seq 600); do port=$(sed -n 's|.*http://127\.0\.0\.1:\([0-9]*\)/stylised.html.*|\1|p' "$vout"); [ -n "$port" ] && break; kill -0 $vpid 2>/dev/null || break; sleep 0.1; done
  page=$(curl -s "http://127.0.0.1:$port/stylised.html") tile=$(curl -s -o /dev/null -w '%{http_code} %{size_download}' "http://127.0.0.1:$port/stylised_files/9/0_0.jpg")
  kill -INT $vpid; wait $vpid; vrc=$?; rm -f "$vout"
  check "nstbatch-view stylised.dzi serves the page and the tiles (port ${port:-none}; tile: $tile), and stops on Ctrl-C" \
    '[ -n "$port" ] && grep -q openseadragon <<<"$page" && [ "$tile" = "200 $(stat -c %s "${dz}_files/9/0_0.jpg")" ] && [ $vrc -eq 0 ]'
else
  check "nstbatch-view and the demo's page exist (make all builds nstbatch-view)" 'false'
fi
factor=$(sed -n 's/^style loss: .*(\([0-9.]*\)x lower)$/\1/p' <<<"$log")
check "the style loss falls by at least 50x (measured ${factor:-none}x)" 'awk -v f="${factor:-0}" "BEGIN { exit !(f >= 50) }"'
check "it names the random network and how to get real weights" 'grep -q "make weights" <<<"$log"'
fig=$("$FIGURE" --check "$ROOT/configs/demo" "$out_png" "$ROOT/docs/demo.jpg" 2>&1); fig_rc=$?
echo "    | $fig"
check "docs/demo.jpg shows this render (make demo-figure remakes it)" '[ $fig_rc -eq 0 ]'

# the masks demo (configs/masks.ini, make demo-masks): it renders, and docs/masks.jpg shows it
masked_png="$ROOT/configs/demo/masked.png"
rm -f "$masked_png"
log=$(cd "$ROOT" && mpirun --bind-to none -np 1 "$NST" configs/masks.ini --set run.device=cpu 2>&1); status=$?
echo "$log" | grep -E '^(mask|wrote|style loss)' | sed 's/^/    | /'
check "the masks demo exits 0 and writes its 384x256 output" '[ $status -eq 0 ] && [ "$("$PROBE" "$masked_png" 2>&1)" = "384x256 8" ]'
check "it reads both masks" '[ "$(grep -c "^mask: .* for style.masks" <<<"$log")" = 2 ]'
fig=$("$FIGURE" --masks --check "$ROOT/configs/demo" "$masked_png" "$ROOT/docs/masks.jpg" 2>&1); fig_rc=$?
echo "    | $fig"
check "docs/masks.jpg shows this render (make demo-masks-figure remakes it)" '[ $fig_rc -eq 0 ]'
echo "test_demo: $pass passed, $fail failed, 0 skipped"
[ "$fail" -eq 0 ]

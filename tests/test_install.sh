#!/usr/bin/env bash
# tests/test_install.sh: `make install PREFIX=DIR` into a scratch prefix, then the installed files:
# the programs run from there and the installed nstbatch loads its own video plugin, the manual page renders (man -l), the Slurm templates find
# launch.sh and nstbatch through NSTBATCH_HOME=PREFIX/share/nstbatch, the docs are all there, and
# the installed nstbatch plans the demo from another directory. The prefix's path has a space, an
# apostrophe, a double quote and letters outside ASCII, as a user's folder may (/home/o'brien/données).
#
#   tests/test_install.sh BUILD_DIR
B=$1
. "$(dirname "$0")/lib.sh" test_install

P="$T/install prefix d'été \"q\""
out=$(make -C "$ROOT" -s --no-print-directory BUILD="$B" install PREFIX="$P" 2>&1); r=$?
if [ $r -eq 0 ] && grep -q "installed in $P" <<<"$out"; then ok "make install PREFIX=...: $(grep -o 'installed in .*' <<<"$out" | cut -c1-60)..."
else bad "make install" "exit $r" "$out"; fi

missing=""
# (OpenSeadragon's files only where the build has them: make install says when it does not)
osd=; [ -f "$ROOT/viewer/node_modules/openseadragon/build/openseadragon/openseadragon.min.js" ] &&
  osd="share/nstbatch/viewer/openseadragon/openseadragon.min.js share/nstbatch/viewer/openseadragon/LICENSE.txt share/nstbatch/viewer/openseadragon/images/button_hover.png"
for f in bin/nstbatch bin/nstbatch-plot bin/nstbatch-mpirun bin/nstbatch-dzi bin/nstbatch-view share/man/man1/nstbatch.1 share/nstbatch/slurm/launch.sh \
         share/nstbatch/viewer/web/viewer.html share/nstbatch/viewer/web/viewer.js share/nstbatch/viewer/web/viewer.css $osd \
         share/nstbatch/slurm/one-node-srun.sbatch share/nstbatch/slurm/multi-node.sbatch share/nstbatch/slurm/array.sbatch \
         share/nstbatch/slurm/one-node-mpirun.sbatch share/doc/nstbatch/README.md share/doc/nstbatch/docs/DESIGN.md \
         share/doc/nstbatch/docs/PERFORMANCE.md share/doc/nstbatch/docs/INPUT_SAFETY.md share/doc/nstbatch/docs/OUTPUTS.md; do
  [ -s "$P/$f" ] || missing="$missing $f"
done
[ -z "$missing" ] && ok "every file is installed (programs, manual page, 4 Slurm templates and launch.sh, the viewer's page${osd:+ and OpenSeadragon}, README and docs/)" || bad "installed files" "missing:$missing"
for f in nstbatch nstbatch-plot nstbatch-mpirun nstbatch-dzi nstbatch-view; do [ -x "$P/bin/$f" ] || missing="$missing bin/$f"; done
[ -x "$P/share/nstbatch/slurm/launch.sh" ] || missing="$missing launch.sh"
[ -z "$missing" ] && ok "the programs and launch.sh are executable" || bad "executables" "not executable:$missing"
[ "$(readlink -f "$P/share/nstbatch/nstbatch")" = "$(readlink -f "$P/bin/nstbatch")" ] \
  && ok "NSTBATCH_HOME=PREFIX/share/nstbatch holds nstbatch (a link to bin/nstbatch), as the templates expect" \
  || bad "NSTBATCH_HOME layout" "share/nstbatch/nstbatch does not lead to bin/nstbatch" "$(ls -l "$P/share/nstbatch")"

# the video plugin beside the programs, and the installed nstbatch loads that one (not the build
# tree's), here for an output it refuses (FFV1 in .mp4: exit 2)
if [ -e "$ROOT/$B/lib/nstbatch-video.so" ]; then
  mkdir -p "$T/clip" && "$ROOT/$B/tools/make_test_clip" "$T/clip" --size 32x32 --frames 2 >/dev/null
  out=$(cd "$T" && LD_DEBUG=files "$P/bin/nstbatch" --set content.path=clip/frame_%05d.png --set style.path="$ROOT/configs/demo/style.png" \
          --set output.path=v.mp4 --set video.codec=ffv1 --set video.temporal_weight=0 2>&1); r=$?
  if [ $r -eq 2 ] && grep -q "file=$P/bin/../lib/nstbatch/nstbatch-video.so .*dynamically loaded by $P/bin/nstbatch" <<<"$out" && grep -q 'error: video.codec = ffv1' <<<"$out"; then
    ok "PREFIX/lib/nstbatch/nstbatch-video.so: the installed nstbatch loads it for its first video file"
  else bad "the installed video plugin" "exit $r" "$(grep -E 'nstbatch-video|error' <<<"$out")"; fi
else skip "the installed video plugin: built without FFmpeg and OpenCV"; fi

v=$("$P/bin/nstbatch" --version 2>&1 | head -n 1)
[ "$v" = "$("$ROOT/$B/nstbatch" --version 2>&1 | head -n 1)" ] && ok "the installed nstbatch runs: $v" || bad "installed --version" "$v"
if command -v man >/dev/null; then
  page=$(MANWIDTH=100 man -l "$P/share/man/man1/nstbatch.1" 2>&1)
  if grep -q "NSTBATCH(1)" <<<"$page" && grep -q -- "--print-config" <<<"$page" && grep -q "optim.iterations" <<<"$page" && ! grep -q "warning" <<<"$page"; then
    ok "man -l nstbatch.1: the page renders with every option and key of --help ($(wc -l <<<"$page") lines)"
  else bad "man page" "does not render --help" "$page"; fi
else
  skip "man page: no man(1) here"
fi

# the checkout's own path, baked into the programs (the viewer's assets), passes through the shell
# and the C compiler whole whatever its folder's name: the viewer's assets object made as if the
# checkout were in an awkward folder (CURDIR), with a "compiler" that keeps its -D argument, which
# then compiles into a program that prints it back (before 2026-12-01 an apostrophe ended the
# quoting: "Unterminated quoted string", no build)
odd="/home/o'brien \"x\" \\y données"
printf '#!/bin/sh\nfor a; do case $a in -DNST_VIEWER_DIR=*) printf "%%s\\n" "$a" >"$0.arg" ;; esac; done\n' >"$T/cc-args" && chmod +x "$T/cc-args"
out=$(make -C "$ROOT" -s --no-print-directory BUILD="$T/qb" CC="$T/cc-args" CURDIR="$odd" "$T/qb/obj/viewer/assets.o" 2>&1); r=$?
got=$([ -s "$T/cc-args.arg" ] && printf '#include <stdio.h>\nint main(void) { return puts(NST_VIEWER_DIR) < 0; }\n' \
      | cc "$(cat "$T/cc-args.arg")" -x c - -o "$T/viewer-dir" && "$T/viewer-dir")
[ $r -eq 0 ] && [ "$got" = "$odd/viewer" ] && ok "a checkout under $odd: its viewer folder baked in whole" \
  || bad "a checkout's path with ', \", \\ and a space" "exit $r, baked in: '$got'" "$out$(cat "$T/cc-args.arg" 2>/dev/null)"

# the installed program, from elsewhere, on a copy of the demo config and its two inputs (not the
# folder: test_demo may be writing its outputs there at the same time): a dry run plans it
mkdir -p "$T/work/demo" && cp "$ROOT/configs/demo.ini" "$T/work/" && cp "$ROOT"/configs/demo/{content,style}.png "$T/work/demo/"
out=$(cd "$T/work" && PATH="$P/bin:$PATH" nstbatch demo.ini --dry-run --set optim.iterations=5 2>&1); r=$?
[ $r -eq 0 ] && grep -q "dry run: nothing is rendered or written" <<<"$out" && ok "PATH=PREFIX/bin: nstbatch demo.ini --dry-run plans the demo" \
  || bad "installed dry run" "exit $r" "$out"

finish

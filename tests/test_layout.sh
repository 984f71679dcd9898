#!/usr/bin/env bash
# tests/test_layout.sh: the tree against its map, the room table of docs/ARCHITECTURE.md ("Rooms
# and floors"), through tools/include_graph.py --check: every source file is in a room, no
# include runs back up a floor or leaves its room through a door the table does not list, and
# the table itself names rooms that exist, doors that lead down and no circle of doors; and no
# function is over 80 lines (a screen, signature to closing brace). Then the
# same check on temporary copies of the sources and the map, each with one defect planted, must
# fail and name it: the test can fail.
#
#   tests/test_layout.sh
. "$(dirname "$0")/lib.sh" test_layout

CHECK="$ROOT/tools/include_graph.py"

# ---- the tree ------------------------------------------------------------------------------------
out=$(cd "$ROOT" && python3 "$CHECK" --check .); rc=$?
while IFS= read -r line; do
  case "$line" in
    ok:*) ok "${line#ok: }" ;;
    FAIL:*) what=${line#FAIL: }; bad "${what%%: *}" "${what#*: }" ;;
  esac
done <<<"$out"
[ "$rc" -eq 0 ] || grep -q '^FAIL' <<<"$out" || bad "include_graph.py --check" "exit status $rc without a FAIL line" "$out"

# ---- planted defects -------------------------------------------------------------------------------
# A copy of what the check reads: the C, C++ and CUDA sources and the map.
clean=$T/clean
mkdir -p "$clean/docs" && cp "$ROOT/docs/ARCHITECTURE.md" "$clean/docs/"
(cd "$ROOT" && find . \( -name .git -o -name build -o -name node_modules \) -prune -o \
   -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' -o -name '*.cpp' \) -print0 |
   xargs -0 cp --parents -t "$clean")
copy=$T/copy
if (cd "$clean" && python3 "$CHECK" --check . >/dev/null); then
  ok "a copy of the sources and the map passes (the control)"
else
  bad "the control" "the unchanged copy fails the check" "$(cd "$clean" && python3 "$CHECK" --check .)"
fi

# planted NAME FRAGMENT...: the copy (changed by the commands before the call) must fail, with a
# FAIL line holding every fragment
planted() {
  local name=$1; shift
  local got; got=$(cd "$copy" && python3 "$CHECK" --check . 2>&1); local prc=$?
  local fails; fails=$(grep '^FAIL' <<<"$got")
  for f in "$@"; do
    grep -qF -- "$f" <<<"$fails" || { bad "$name" "no FAIL line names '$f' (exit status $prc)" "$got"; return; }
  done
  [ "$prc" -ne 0 ] && ok "$name: refused" || bad "$name" "exit status 0" "$got"
}
fresh() { rm -rf "$copy" && cp -r "$clean" "$copy"; }
map=docs/ARCHITECTURE.md

fresh; echo '#include "../nst/render/render.h"' >>"$copy/util/mem.c"
planted "an include up a floor (util/ -> nst/render/)" "runs back up a floor" "util/mem.c"

fresh; echo '#include "../render/render.h"' >>"$copy/nst/plan/move.c"
planted "an include through a door not listed (nst/plan/ -> nst/render/, one floor)" "door the map lists" "nst/plan/move.c"

fresh; echo '#include "../kernels/backend.h"' >>"$copy/viewer/page.c"
planted "an include down through a door not listed (viewer/ -> kernels/)" "door the map lists" "viewer/page.c"

fresh; echo '#include "../config/config.h"' >>"$copy/io/image/png_read.c"
planted "an include between io/ rooms not listed (io/image/ -> io/config/)" "door the map lists" "io/image/png_read.c"

fresh; echo '#include "../util/no_such_header.h"' >>"$copy/util/mem.c"
planted "an include that names no file" "names a file of the repository" "no_such_header.h"

fresh; mkdir -p "$copy/attic" && echo 'int attic;' >"$copy/attic/x.c"
planted "a source file in no room (attic/x.c)" "every source file is in a room" "attic/x.c"

fresh; sed -i 's#^| 7 | `util/` | \(.*\) | *|$#| 7 | `util/` | \1 | `nst/render/` |#' "$copy/$map"
planted "a door up a floor in the map (util/ -> nst/render/)" "door points up a floor" "util/ (floor 7) -> nst/render/"

fresh; sed -i 's#^\(| 3 | `nst/model/` | .* | \)`io/config/`#\1`nst/run/`, `io/config/`#' "$copy/$map"
planted "a circle of doors in the map (nst/model/ -> nst/run/)" "no circle between rooms" "nst/model/"

fresh; sed -i 's#^| 7 | `util/` |#| 3 | `nst/ghost/` | nothing | `util/` |\n&#' "$copy/$map"
planted "a room in the map that the tree lacks (nst/ghost/)" "every room of the map exists" "nst/ghost/"

fresh; { printf 'static int too_long(int x)\n{\n'; for i in $(seq 79); do printf '    x += %d;\n' "$i"; done; printf '    return x;\n}\n'; } >>"$copy/util/log.c"
planted "a function of 83 lines (util/log.c)" "no function over 80 lines" "util/log.c:" "too_long (83 lines)"

finish

#!/usr/bin/env python3
"""tools/include_graph.py: the #include "..." graph of nstbatch's C, C++ and CUDA sources, read
against the map of rooms and floors in docs/ARCHITECTURE.md ("Rooms and floors").

The map is a Markdown table with one row per room: | floor | `room` | what it holds | may include |.
A room is a folder (`nst/render/`) or a file (`main.c`); a file belongs to the room whose path is
its longest prefix (io/image/png_read.c is in `io/image/`, io/atomic_file.c in `io/`). Floor 1 is
the top. The last column lists the room's doors, as code spans: the rooms its files may include
besides its own; `io/*` is every room under io/, and "every room below" every room on a lower
floor. The map itself must hold: every room exists; every door names a room on a lower floor, or
on the room's own floor in a row further down the table; the doors make no circle (so no two
rooms can include each other, directly or round a loop). The tree must follow it: every source file is in a room; every include names a file of
the repository, and one of its own room or of a room through a listed door.

  python3 tools/include_graph.py [ROOT]                    the rooms, floors and arrows, and any break
  python3 tools/include_graph.py --check [--map FILE] [ROOT]  one line per check ("ok: ..." or
                                                           "FAIL: ..."), exit status 1 on a failure
                                                           (tests/test_layout.sh runs it)
Standard library only.
"""
import os
import re
import sys

EXTS = (".c", ".h", ".cu", ".cuh", ".cpp")
SKIP_DIRS = {".git", "build", "node_modules"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
BELOW = "every room below"


# ---- the map ------------------------------------------------------------------------------------

def read_map(path):
    """The room table: {room: (floor, [doors])} in the table's order, and the problems met."""
    rooms, problems = {}, []
    in_section = False
    for n, line in enumerate(open(path, encoding="utf-8"), 1):
        if line.startswith("## "):
            in_section = line.strip().lower().startswith("## rooms and floors")
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if in_section and line.startswith("|") else []
        if len(cells) < 4 or not re.fullmatch(r"\d+", cells[0]):
            continue  # the header, its rule, prose
        room = re.fullmatch(r"`([^`]+)`", cells[1])
        if not room:
            problems.append(f"{path}:{n}: the room cell '{cells[1]}' is not one code span")
            continue
        doors = re.findall(r"`([^`]+)`", cells[-1])
        if BELOW in cells[-1]:
            doors.append(BELOW)
        if room.group(1) in rooms:
            problems.append(f"{path}:{n}: room {room.group(1)} listed twice")
        rooms[room.group(1)] = (int(cells[0]), doors)
    if not rooms:
        problems.append(f"{path}: no room table under a '## Rooms and floors' heading")
    return rooms, problems


def expand(rooms, room, door):
    """The rooms a door names."""
    floor = rooms[room][0]
    if door == BELOW:
        return [r for r in rooms if rooms[r][0] > floor]
    if door.endswith("/*"):
        return [r for r in rooms if r.startswith(door[:-1])]
    return [door] if door in rooms else []


def door_graph(rooms):
    return {r: {t for d in rooms[r][1] for t in expand(rooms, r, d)} - {r} for r in rooms}


# ---- the tree -----------------------------------------------------------------------------------

def sources(root):
    files = []
    for dirpath, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        files += [os.path.relpath(os.path.join(dirpath, n), root) for n in names if n.endswith(EXTS)]
    return sorted(files)


def resolve(root, src, inc):
    """The file an include names: beside the includer first, then from the root (-I.)."""
    for base in (os.path.dirname(src), ""):
        p = os.path.normpath(os.path.join(base, inc))
        if os.path.isfile(os.path.join(root, p)):
            return p
    return None


def room_of(rooms, path):
    best = None
    for r in rooms:
        if (path == r or (r.endswith("/") and path.startswith(r))) and (best is None or len(r) > len(best)):
            best = r
    return best


def includes(root, files):
    """{file: [(line number, include text, resolved path or None)]}"""
    out = {}
    for f in files:
        text = open(os.path.join(root, f), encoding="utf-8", errors="replace").read()
        for m in INCLUDE.finditer(text):
            out.setdefault(f, []).append((text.count("\n", 0, m.start()) + 1, m.group(1), resolve(root, f, m.group(1))))
    return out


def sccs(nodes, edges):
    """Tarjan's strongly connected components, iteratively."""
    index, low, on, stack, out, n = {}, {}, set(), [], [], [0]
    for v0 in nodes:
        if v0 in index:
            continue
        work = [(v0, iter(sorted(edges.get(v0, ()))))]
        index[v0] = low[v0] = n[0]; n[0] += 1; stack.append(v0); on.add(v0)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = n[0]; n[0] += 1; stack.append(w); on.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop(); on.discard(w); comp.append(w)
                    if w == v:
                        break
                out.append(sorted(comp))
    return out


# ---- the checks ---------------------------------------------------------------------------------

def check(root, map_path):
    """[(ok, what, why)] for the map and for the tree against it."""
    results = []
    rooms, problems = read_map(map_path)
    results.append((not problems, f"the map in {os.path.relpath(map_path, root)} reads ({len(rooms)} rooms)",
                    "; ".join(problems)))
    if not rooms:
        return results
    missing = [r for r in rooms if not os.path.exists(os.path.join(root, r))]
    results.append((not missing, "every room of the map exists", "no such folder or file: " + " ".join(missing)))
    bad, row = [], {r: i for i, r in enumerate(rooms)}
    for r, (floor, doors) in rooms.items():
        for d in doors:
            targets = expand(rooms, r, d)
            if not targets:
                bad.append(f"{r} -> {d}: names no room of the map")
            bad += [f"{r} (floor {floor}) -> {t} (floor {rooms[t][0]}): the door points up a floor"
                    for t in targets if rooms[t][0] < floor]
            bad += [f"{r} -> {t}: a door on one floor must lead to a room listed below it"
                    for t in targets if t != r and rooms[t][0] == floor and row[t] < row[r]]
    results.append((not bad, "every door leads down: to a lower floor, or to a room listed below on its own",
                    "; ".join(bad)))
    circles = [c for c in sccs(list(rooms), door_graph(rooms)) if len(c) > 1]
    results.append((not circles, "the doors make no circle between rooms",
                    "; ".join(" <-> ".join(c) for c in circles)))

    files = sources(root)
    homeless = [f for f in files if room_of(rooms, f) is None]
    results.append((not homeless, f"every source file is in a room ({len(files)} files)",
                    "in no room of the map: " + " ".join(homeless[:10]) + (" ..." if len(homeless) > 10 else "")))
    doors = door_graph(rooms)
    unresolved, up, through = [], [], []
    n_inc = 0
    for f, incs in includes(root, files).items():
        a = room_of(rooms, f)
        for line, inc, t in incs:
            n_inc += 1
            if t is None:
                unresolved.append(f'{f}:{line}: "{inc}"')
                continue
            b = room_of(rooms, t)
            if a is None or b is None or a == b:
                continue
            if rooms[b][0] < rooms[a][0]:
                up.append(f"{f}:{line} -> {t} ({a}, floor {rooms[a][0]} -> {b}, floor {rooms[b][0]})")
            elif b not in doors[a]:
                through.append(f"{f}:{line} -> {t} ({a} -> {b})")
    results.append((not unresolved, f"every include names a file of the repository ({n_inc} includes)",
                    "names nothing: " + "; ".join(unresolved)))
    results.append((not up, "no include runs back up a floor", "; ".join(up)))
    results.append((not through, "every include between rooms goes through a door the map lists", "; ".join(through)))
    long = [f"{f}:{line} {name} ({n} lines)" for f in files for line, name, n in functions(root, f) if n > MAX_FUNCTION_LINES]
    results.append((not long, f"no function over {MAX_FUNCTION_LINES} lines", "; ".join(long)))
    return results


MAX_FUNCTION_LINES = 80  # a screen: from the line that opens the body to the closing brace
SIGNATURE = re.compile(r"^[A-Za-z_][^;=]*\)\s*(const\s*)?\{\s*$")


def functions(root, f):
    """[(line, name, lines)] of the functions of f, in the project's style: the signature at column 0,
    its body opened by "{" at the end of it (or alone on the next line) and closed by "}" at column
    0. Initialisers (tables) and type definitions do not match a signature ending in ")"."""
    found, start, name = [], None, ""
    with open(os.path.join(root, f), encoding="utf-8", errors="replace") as fh:
        lines = fh.read().split("\n")
    for i, text in enumerate(lines):
        if start is None:
            if SIGNATURE.match(text) and not text.startswith(("typedef", "struct", "enum", "union")):
                start, name = i, text
            elif text.startswith("{") and i > 0 and SIGNATURE.match(lines[i - 1].rstrip() + " {"):
                start, name = i - 1, lines[i - 1]
        elif text.startswith("}"):
            m = re.search(r"([A-Za-z_][A-Za-z_0-9]*)\s*\(", name)
            found.append((start + 1, m.group(1) if m else name.strip()[:40], i - start + 1))
            start = None
    return found


# ---- the report ---------------------------------------------------------------------------------

def lines_of(root, f):
    with open(os.path.join(root, f), encoding="utf-8", errors="replace") as fh:
        return sum(1 for _ in fh)


def report(root, map_path):
    rooms, _ = read_map(map_path)
    files = sources(root)
    incs = includes(root, files)
    print(f"{len(files)} source files in {len(rooms)} rooms on {len({f for f, _ in rooms.values()})} floors "
          f"(the map: {os.path.relpath(map_path, root)})")
    arrows = {}
    for f, fi in incs.items():
        for _, _, t in fi:
            a, b = room_of(rooms, f), room_of(rooms, t) if t else None
            if a and b and a != b:
                arrows.setdefault(a, {}).setdefault(b, 0)
                arrows[a][b] += 1
    for floor in sorted({fl for fl, _ in rooms.values()}):
        print(f"floor {floor}:")
        for r in (r for r in rooms if rooms[r][0] == floor):
            mine = [f for f in files if room_of(rooms, f) == r]
            out = ", ".join(f"{b} {n}" for b, n in sorted(arrows.get(r, {}).items()))
            print(f"  {r:16} {len(mine):3} files {sum(lines_of(root, f) for f in mine):6} lines"
                  + (f"; includes {out}" if out else ""))
    edges = {f: {t for _, _, t in fi if t} for f, fi in incs.items()}
    circles = [c for c in sccs(files, edges) if len(c) > 1]
    print(f"circles between files (headers): {len(circles)}")
    for c in circles:
        print("  " + " <-> ".join(c))
    module = lambda p: os.path.splitext(p)[0]
    medges = {}
    for f, ts in edges.items():
        for t in ts:
            if module(t) != module(f):
                medges.setdefault(module(f), set()).add(module(t))
    mcircles = [c for c in sccs(sorted({module(f) for f in files}), medges) if len(c) > 1]
    print(f"circles between modules (x.c and x.h as one; fine inside one room): {len(mcircles)}")
    for c in mcircles:
        where = sorted({room_of(rooms, m + ".h") or room_of(rooms, m + ".c") or "?" for m in c})
        print("  " + " <-> ".join(c) + f"   [{' '.join(where)}]")
    failed = [(what, why) for ok, what, why in check(root, map_path) if not ok]
    print(f"breaks of the map: {len(failed)}")
    for what, why in failed:
        print(f"  {what}: {why}")
    return 1 if failed else 0


def main():
    args = sys.argv[1:]
    checking = "--check" in args
    args = [a for a in args if a != "--check"]
    map_path = None
    if "--map" in args:
        i = args.index("--map")
        map_path = args[i + 1]
        del args[i:i + 2]
    root = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    map_path = map_path or os.path.join(root, "docs", "ARCHITECTURE.md")
    if not checking:
        return report(root, map_path)
    failed = 0
    for ok, what, why in check(root, map_path):
        print(f"ok: {what}" if ok else f"FAIL: {what}: {why}")
        failed += not ok
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

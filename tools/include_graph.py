#!/usr/bin/env python3
"""tools/include_graph.py: the #include "..." graph of nstbatch's C/CUDA sources, seen from nst/.

Prints for nst/: how many files it holds, its floors (the longest include chain between its
files, circles counted as one step), its circles (strongly connected components of more than one
file), and the arrows that run back up: a lower room (util, tiler, kernels, io, mpi, viewer) including
nst/, or a room of nst/ including a room above it (model < optim < output, run; run may include
output, output may not include run). Circles are reported twice: between headers (what the
compiler sees) and between modules (x.c and x.h taken as one file, what a reader sees).

Works on the flat nst/ of before issue 18 too: a file directly in nst/ is put in its room by
FLAT_ROOMS below. Standard library only.  Usage: python3 tools/include_graph.py [repo root]
"""
import os
import re
import sys

SRC_DIRS = ["nst", "io", "kernels", "mpi", "tiler", "util", "viewer", "flow"]
EXTS = (".c", ".h", ".cu", ".cuh")
LOWER = {"util": 0, "tiler": 0, "kernels": 0, "io": 0, "mpi": 0, "viewer": 0, "flow": 0}  # below every room of nst/
NST_RANK = {"model": 1, "optim": 2, "output": 3, "run": 3, "main": 4}
# run may include output (a job writes its outputs); output may not include run
ALLOWED_SAME_RANK = {("run", "output")}
FLAT_ROOMS = {
    "model": "vgg net spec random_vgg",
    "optim": "objective layout render lbfgs style style_cache color inputs move levels snapshot "
             "checkpoint progress timers",
    "output": "output output_tiles output_spec output_sink output_tiff output_hdf5 output_png",
    "run": "job batch cli device dryrun selftest selftest_checks selftest_impl",
}
FLAT = {stem: room for room, stems in FLAT_ROOMS.items() for stem in stems.split()}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def sources(root):
    files = ["main.c"] if os.path.exists(os.path.join(root, "main.c")) else []
    for d in SRC_DIRS:
        for dirpath, _, names in os.walk(os.path.join(root, d)):
            for n in names:
                if n.endswith(EXTS):
                    files.append(os.path.relpath(os.path.join(dirpath, n), root))
    return sorted(files)


def resolve(root, src, inc):
    """The file an include names: beside the includer first, then from the root (-I.)."""
    for base in (os.path.dirname(src), ""):
        p = os.path.normpath(os.path.join(base, inc))
        if os.path.exists(os.path.join(root, p)):
            return p
    return None


def room(path):
    parts = path.split("/")
    if parts[0] == "main.c":
        return "main"
    if parts[0] != "nst":
        return parts[0]
    if len(parts) > 2:
        return parts[1]
    return FLAT.get(os.path.splitext(parts[1])[0], "?")


def rank(r):
    return LOWER.get(r, NST_RANK.get(r, 9))


def runs_back(a, b):
    """Whether an include from room a to room b climbs (or crosses sideways where not allowed)."""
    ra, rb = room(a), room(b)
    if ra == rb:
        return False
    if ra in LOWER:
        return b.startswith("nst/")
    if rb in LOWER:
        return False
    return rank(rb) > rank(ra) or (rank(rb) == rank(ra) and (ra, rb) not in ALLOWED_SAME_RANK)


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


def floors(nodes, edges):
    """Longest chain (in nodes) through the graph with each circle collapsed; and one such chain."""
    comps = sccs(nodes, edges)
    comp_of = {v: i for i, c in enumerate(comps) for v in c}
    cedges = {i: set() for i in range(len(comps))}
    for v in nodes:
        for w in edges.get(v, ()):
            if w in comp_of and comp_of[w] != comp_of[v]:
                cedges[comp_of[v]].add(comp_of[w])
    memo = {}

    def depth(i):  # Tarjan emits sinks first, so recursion is shallow enough here
        if i not in memo:
            best = max(((depth(j), j) for j in cedges[i]), default=(0, None))
            memo[i] = (best[0] + 1, best[1])
        return memo[i][0]

    top = max(range(len(comps)), key=depth, default=None)
    chain, i = [], top
    while i is not None:
        chain.append("+".join(comps[i]))
        i = memo[i][1]
    return (memo[top][0] if top is not None else 0), chain


def module(path):
    return os.path.splitext(path)[0]


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    files = sources(root)
    edges, missing = {}, []
    for f in files:
        with open(os.path.join(root, f), encoding="utf-8", errors="replace") as fh:
            text = fh.read()
        for inc in INCLUDE.findall(text):
            t = resolve(root, f, inc)
            if t is None:
                missing.append(f"{f} -> {inc}")
            else:
                edges.setdefault(f, set()).add(t)

    nst = [f for f in files if f.startswith("nst/")]
    nst_edges = {f: {t for t in edges.get(f, ()) if t.startswith("nst/")} for f in nst}
    rooms = sorted({room(f) for f in nst})
    print(f"nst/ files: {len(nst)} ({sum(f.endswith('.c') for f in nst)} .c, "
          f"{sum(f.endswith('.h') for f in nst)} .h) in rooms: "
          + ", ".join(f"{r} {sum(room(f) == r for f in nst)}" for r in rooms))
    for r in rooms:
        print(f"  {r}: " + " ".join(sorted({os.path.basename(module(f)) for f in nst if room(f) == r})))

    n, chain = floors(nst, nst_edges)
    print(f"floors (longest include chain in nst/, in files): {n}")
    print("  " + " -> ".join(chain))

    circles = [c for c in sccs(files, edges) if len(c) > 1]
    print(f"circles between files (headers): {len(circles)}")
    for c in circles:
        print("  " + " <-> ".join(c))
    mods = sorted({module(f) for f in files})
    medges = {}
    for f, ts in edges.items():
        for t in ts:
            if module(t) != module(f):
                medges.setdefault(module(f), set()).add(module(t))
    mcircles = [c for c in sccs(mods, medges) if len(c) > 1]
    print(f"circles between modules (x.c + x.h as one): {len(mcircles)}")
    for c in mcircles:
        print("  " + " <-> ".join(c) + f"   [rooms: {' '.join(sorted({room(m + '.x') for m in c}))}]")

    back = sorted(f"{f} -> {t}   ({room(f)} -> {room(t)})"
                  for f in files for t in edges.get(f, ()) if runs_back(f, t))
    into_nst = [b for b in back if not b.startswith("nst/") and not b.startswith("main.c")]
    print(f"arrows back up: {len(back)} ({len(into_nst)} from io/kernels/mpi/tiler/util into nst/, "
          f"{len(back) - len(into_nst)} between rooms of nst/: model < optim < output, run)")
    for b in back:
        print("  " + b)
    mentions = []
    for f in files:
        if f.startswith("nst/") or f == "main.c":
            continue
        with open(os.path.join(root, f), encoding="utf-8", errors="replace") as fh:
            for i, line in enumerate(fh, 1):
                if "nst/" in line and not INCLUDE.match(line):
                    mentions.append(f"{f}:{i}")
    print(f"mentions of nst/ outside includes in lower rooms (comments): {len(mentions)} "
          + " ".join(mentions))
    if missing:
        print(f"unresolved includes: {len(missing)}")
        for m in missing:
            print("  " + m)


if __name__ == "__main__":
    main()

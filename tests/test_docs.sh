#!/usr/bin/env bash
# tests/test_docs.sh: the README and docs/*.md against the tree they describe, so that a renamed
# file, key, flag or make target cannot leave the documentation pointing at nothing:
#
# - every relative Markdown link [text](path) or [text](path#anchor) names a file (or folder) of
#   the repository, and an #anchor names a heading of that file (GitHub's rule: lowercase, spaces
#   to '-', punctuation other than '-' and '_' dropped, repeats numbered -1, -2, ...); external
#   http(s) links are not fetched (no network in CI);
# - every `make TARGET` in code names a target of the Makefile;
# - every --flag given to nstbatch in code, and every flag in the options table, is one that
#   `nstbatch --help` lists (SKIP without a built nstbatch);
# - every section.key in code, and every key of an ```ini block ([section] key = value, or
#   section.key = value in a [job.NAME] section), is declared in io/config/config_keys.h;
# - every path in code under the repository's folders (tools/, scripts/, bench/, tests/, slurm/,
#   configs/, ...) exists, or is a file the build or a benchmark writes (ignored by git, or a
#   bench/results/ file that a bench/ script names);
# - every nstbatch-* program run in code is one `make install` installs or one in tools/;
# - every output.path extension in code is one io/config/config_keys.h lists for output.path;
# - the README stays a front door: at most 260 lines, linking every file in docs/.
#
# Programs and formats that another branch is adding (PENDING_TOOLS, PENDING_EXTENSIONS) SKIP with
# the reason while they are missing here, and are checked like the rest once they exist.
#
#   tests/test_docs.sh NSTBATCH
NST=${1:-./nstbatch}
[ -e "$NST" ] && NST=$(readlink -f "$NST")
. "$(dirname "$0")/lib.sh" test_docs

PENDING_TOOLS=""                # none now (nstbatch-view landed with the Deep Zoom output)
PENDING_EXTENSIONS=""
README_MAX_LINES=260

help=""
[ -x "$NST" ] && help=$("$NST" --help 2>&1)
printf '%s\n' "$help" >"$T/help.txt"

# The checks are in Python (Markdown is easier to take apart there); it prints one line per result,
# "ok|fail|skip<TAB>what[<TAB>why]", which the shared helpers count.
results=$(cd "$ROOT" && /usr/bin/python3 - "$T/help.txt" "$PENDING_TOOLS" "$PENDING_EXTENSIONS" "$README_MAX_LINES" <<'PY'
import glob, os, re, subprocess, sys

help_text = open(sys.argv[1]).read().strip()
pending_tools = set(sys.argv[2].split())
pending_ext = set(sys.argv[3].split())
readme_max = int(sys.argv[4])
root = os.getcwd()
out = []
def ok(what): out.append(f"ok\t{what}")
def fail(what, why): out.append(f"fail\t{what}\t{why}")
def skip(what): out.append(f"skip\t{what}")

files = ["README.md"] + sorted(glob.glob("docs/*.md"))

# ---- the tree's facts -------------------------------------------------------------------------------
keys_h = open("io/config/config_keys.h").read()
keys = set(f"{s}.{k}" for s, k in re.findall(r"^NST_KEY\((\w+),\s*(\w+),", keys_h, re.M))
sections = sorted({k.split(".")[0] for k in keys})
m = re.search(r'^NST_KEY\(output,\s*path,.*"([^"]*)"\)\s*$', keys_h, re.M)
# the extensions its help lists, "(.tif/.tiff, .h5/.hdf5, ...)"; not the ".format" of "output.format"
output_ext = set(re.findall(r"(?<=[\s(/,])\.([a-z0-9]+)\b", m.group(1))) if m else set()

makefile = open("Makefile").read()
targets = set()
for line in makefile.split("\n"):
    if line.startswith(".PHONY:"):
        targets.update(line.split(":", 1)[1].split())
    mt = re.match(r"^([A-Za-z0-9_][A-Za-z0-9_./$()%-]*(?:\s+[A-Za-z0-9_][A-Za-z0-9_./$()%-]*)*)\s*:(?!=)", line)
    if mt:
        targets.update(mt.group(1).split())
# programs make install puts in bin/: the nstbatch* words of the install rules' lines that name bin/
installed = {"nstbatch"}
for rule in re.finditer(r"^install[\w-]*:.*\n((?:\t.*\n)+)", makefile, re.M):
    for line in rule.group(1).split("\n"):
        if "/bin" in line:
            installed.update(os.path.basename(w) for w in re.findall(r"[\w./$()-]*nstbatch[\w-]*", line))

flags = set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*|-[a-zA-Z])(?![\w-])", help_text))

# ---- Markdown: code blocks, code spans, prose, headings -----------------------------------------------
def parse(path):
    """(code_lines, ini_blocks, spans, prose, headings, raw): code_lines and ini lines as (lineno, text);
    spans as (lineno, text); prose is the file with code blocks and spans blanked (same lines), raw
    the same with the spans kept."""
    lines = open(path).read().split("\n")
    code, ini, prose, headings = [], [], [], []
    fence, info, block = None, "", []
    prev_blank = True
    for n, line in enumerate(lines, 1):
        if fence:
            if line.strip().startswith(fence):
                if info == "ini":
                    ini.append(block)
                fence, block = None, []
            else:
                code.append((n, line))
                block.append((n, line))
            prose.append("")
            continue
        mf = re.match(r"^\s*(```+|~~~+)\s*(\w*)", line)
        if mf:
            fence, info, block = mf.group(1), mf.group(2), []
            prose.append("")
            continue
        if (line.startswith("    ") or line.startswith("\t")) and (prev_blank or (code and code[-1][0] == n - 1)) \
                and not re.match(r"^\s*([-*+]|\d+\.)\s", line):
            code.append((n, line))  # an indented code block
            prose.append("")
            prev_blank = False
            continue
        prev_blank = not line.strip()
        prose.append(line)
        mh = re.match(r"^(#{1,6})\s+(.*?)\s*#*\s*$", line)
        if mh:
            headings.append(mh.group(2))
    text = "\n".join(prose)
    spans = []
    # a code span may wrap onto the next line of its paragraph, never across a blank line
    for ms in re.finditer(r"(`+)((?:(?!\1)[^\n]|\n(?!\s*\n))+?)\1", text):
        spans.append((text.count("\n", 0, ms.start()) + 1, ms.group(2).replace("\n", " ")))
    blank = re.sub(r"(`+)((?:(?!\1)[^\n]|\n(?!\s*\n))+?)\1", lambda x: re.sub(r"[^\n]", " ", x.group(0)), text)
    return code, ini, spans, blank.split("\n"), headings, prose

def slug(heading):
    h = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)   # a link's text
    h = h.replace("`", "").lower()
    h = re.sub(r"[^\w\- ]", "", h)
    return h.replace(" ", "-")

def anchors(path):
    seen, result = {}, set()
    for h in parse(path)[4]:
        s = slug(h)
        n = seen.get(s, 0)
        seen[s] = n + 1
        result.add(s if n == 0 else f"{s}-{n}")
    return result

anchor_cache = {}
pending_seen = {}

def first_words(text):
    """The program a code line or span runs: its first word, past a '$ ' prompt and VAR=value."""
    words = text.strip().split()
    while words and (words[0] == "$" or re.match(r"^[A-Z_][A-Z0-9_]*=", words[0])):
        words = words[1:]
    return words[0] if words else ""

PATH_PREFIXES = "tools|scripts|bench|tests|slurm|configs|monitoring|docs|io|nst|kernels|util|mpi|tiler|\\.ci"
def path_ok(p):
    p = p.rstrip(".")
    if any(c in p for c in "*?["):
        return bool(glob.glob(p)), "no file matches"
    if os.path.exists(p):
        return True, ""
    if subprocess.run(["git", "check-ignore", "-q", p]).returncode == 0:
        return True, ""  # written by the build or the demo (ignored by git)
    if p.startswith("bench/results/"):
        name = os.path.basename(p)
        for s in glob.glob("bench/*.sh"):
            if name in open(s).read():
                return True, ""  # a result file that benchmark writes when it is run
    return False, "no such file in the repository"

for f in files:
    code, ini, spans, prose, headings, raw = parse(f)
    base = os.path.dirname(f)
    nlinks = nmake = nflags = nkeys = npaths = ntools = 0
    problems = []
    # ---- links
    for n, line in enumerate(prose, 1):
        for ml in re.finditer(r"!?\[[^\]]*\]\(\s*([^)\s]+)(?:\s+\"[^\"]*\")?\s*\)", line):
            target = ml.group(1)
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                continue  # http(s), mailto: not fetched
            nlinks += 1
            path, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(base, path)) if path else f
            if os.path.isabs(path) or not os.path.abspath(dest).startswith(root + os.sep) and os.path.abspath(dest) != root:
                problems.append(f"{f}:{n}: link ({target}) leads outside the repository")
                continue
            if not os.path.exists(dest):
                problems.append(f"{f}:{n}: link ({target}): no file {dest}")
                continue
            if anchor:
                if not dest.endswith(".md"):
                    problems.append(f"{f}:{n}: link ({target}): an anchor into a file that is not Markdown")
                    continue
                if dest not in anchor_cache:
                    anchor_cache[dest] = anchors(dest)
                if anchor not in anchor_cache[dest]:
                    problems.append(f"{f}:{n}: link ({target}): {dest} has no heading #{anchor}")
    # ---- code: every code-block line and every code span
    pieces = code + spans
    ini_lines = {n for block in ini for n, _ in block}  # their keys are checked with their [section] below
    for i, (n, text) in enumerate(pieces):
        t = re.sub(r"\s#\s.*$", "", text)  # a shell comment is prose
        # make TARGET
        for mm in re.finditer(r"(?<![\w./-])make((?:\s+(?:-\S+|[A-Za-z_]\w*=\S*))*)\s+([a-z][\w-]*)", t):
            nmake += 1
            if mm.group(2) not in targets:
                problems.append(f"{f}:{n}: make {mm.group(2)}: no such target in the Makefile")
        # nstbatch FLAGS: the flags after the word nstbatch, up to a shell separator
        for mn in re.finditer(r"(?:^|[\s/])nstbatch(?=\s)([^|;&>]*)", t):
            for fl in re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*|-[a-zA-Z])(?![\w-])", mn.group(1)):
                if fl in ("-np",):
                    continue
                nflags += 1
                if help_text and fl not in flags:
                    problems.append(f"{f}:{n}: nstbatch {fl}: not an option in nstbatch --help")
        # section.key
        for mk in [] if i < len(code) and n in ini_lines else re.finditer(r"(?<![\w./$-])(%s)\.([a-z_][a-z0-9_]*)(?![\w-])(?!\.[A-Za-z])" % "|".join(sections), t):
            key = f"{mk.group(1)}.{mk.group(2)}"
            if re.fullmatch(r"png|jpe?g|tiff?|h5|hdf5|ini|sh|json|jsonl|prom|txt|md|c|h|py|log|yml|sbatch|dzi|pth|nstc|v|csv", mk.group(2)):
                continue  # a file name (style.png), not a key
            nkeys += 1
            if key not in keys:
                problems.append(f"{f}:{n}: {key}: not a key of io/config/config_keys.h")
        # output.path = NAME.EXT
        for me in re.finditer(r"output\.path\s*=\s*\S*\.([A-Za-z0-9]+)\b", t):
            ext = me.group(1).lower()
            if ext in output_ext:
                continue
            if ext in pending_ext:
                pending_seen.setdefault(f"the .{ext} output", set()).add(f)
            else:
                problems.append(f"{f}:{n}: output.path .{ext}: not a format io/config/config_keys.h lists for output.path")
        # paths
        for mp in re.finditer(r"(?<![\w./$-])((?:%s)/[\w./*?-]*)" % PATH_PREFIXES, t):
            if t[mp.end():mp.end() + 1] in ("<", "{", "$"):
                continue  # a pattern (nst/output/output_<format>.c), not a file
            npaths += 1
            good, why = path_ok(mp.group(1))
            if not good:
                problems.append(f"{f}:{n}: {mp.group(1).rstrip('.')}: {why}")
    # the options table: rows whose first cell is a code span that starts with a flag
    for n, line in enumerate(raw, 1):
        mo = re.match(r"^\|\s*(`--[^|]*)\|", line)
        if not mo:
            continue
        for fl in re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*|-[a-zA-Z])(?![\w-])", mo.group(1)):
            nflags += 1
            if help_text and fl not in flags:
                problems.append(f"{f}:{n}: {fl} (options table): not an option in nstbatch --help")
    # programs: the first word of a code line or span
    for n, text in pieces:
        w = first_words(text)
        name = os.path.basename(w)
        if not name.startswith("nstbatch-") or re.search(r"[.*?\[]", name):
            continue  # another program, a file (nstbatch-selftest-JOBID.txt) or a pattern
        ntools += 1
        if name in installed or os.access(os.path.join("tools", name), os.X_OK):
            continue
        if name in pending_tools:
            pending_seen.setdefault(name, set()).add(f)
        else:
            problems.append(f"{f}:{n}: {name}: not a program make install installs, nor one in tools/")
    # ---- ini blocks: [section] key = value, and section.key = value in [job.NAME]
    for block in ini:
        section = None
        for n, line in block:
            s = re.sub(r"(^|\s)[#;].*$", "", line).strip()
            if not s:
                continue
            mh = re.match(r"^\[([^\]]+)\]$", s)
            if mh:
                section = mh.group(1)
                if section not in sections and not section.startswith("job."):
                    problems.append(f"{f}:{n}: [{section}]: not a section of io/config/config_keys.h")
                continue
            mkv = re.match(r"^([\w.]+)\s*=\s*(.*)$", s)
            if not mkv or section is None:
                problems.append(f"{f}:{n}: '{s}': not a line of a config file")
                continue
            key = mkv.group(1) if section.startswith("job.") else f"{section}.{mkv.group(1)}"
            nkeys += 1
            if key not in keys:
                problems.append(f"{f}:{n}: {key} (ini block): not a key of io/config/config_keys.h")
            if key == "output.path":
                ext = os.path.splitext(mkv.group(2))[1].lstrip(".").lower()
                if ext and ext not in output_ext:
                    if ext in pending_ext:
                        pending_seen.setdefault(f"the .{ext} output", set()).add(f)
                    else:
                        problems.append(f"{f}:{n}: output.path .{ext}: not a format io/config/config_keys.h lists")
    for p in problems:
        fail(p.split(": ")[0], p.split(": ", 1)[1])
    if not problems:
        ok(f"{f}: {nlinks} links, {nmake} make targets, {nflags} nstbatch flags, {nkeys} config keys, "
           f"{npaths} paths, {ntools} programs: all resolve")

if not help_text:
    skip("nstbatch flags: no nstbatch to ask for --help (build it: make); flags were not checked")
for what, where in sorted(pending_seen.items()):
    skip(f"{what} ({', '.join(sorted(where))}): not in this tree yet (another branch adds it); checked once it is")

# the README is the way in: it links every document in docs/
readme = open("README.md").read()
unlinked = [d for d in sorted(glob.glob("docs/*.md")) if f"]({d})" not in readme and f"]({d}#" not in readme]
if unlinked:
    fail("README.md links every docs/ file", "not linked: " + " ".join(unlinked))
else:
    ok(f"README.md links every docs/ file ({len(glob.glob('docs/*.md'))})")

n = len(readme.rstrip("\n").split("\n"))
if n <= readme_max:
    ok(f"README.md is {n} lines (at most {readme_max}: the reference is in docs/)")
else:
    fail("README.md length", f"{n} lines, more than {readme_max}: move the reference to docs/")
print("\n".join(out))
PY
)
status=$?
[ $status -eq 0 ] || bad "the checks ran" "python exited with status $status" "$results"
while IFS=$'\t' read -r kind what why; do
  case "$kind" in
    ok) ok "$what" ;;
    fail) bad "$what" "$why" ;;
    skip) skip "$what" ;;
  esac
done <<<"$results"

finish

#!/usr/bin/python3
"""bench/quality/report.py: bench/results/quality.md from the scorer's rows (bench/quality.sh).

    report.py --tsv quality.tsv --runs runs.tsv --checks checks.tsv --meta meta.tsv --configs WORK

For every size: the fair runs (the peers on nstbatch's objective) with their final scores; for each
nstbatch run the wall time and the work until its score is within 0, 1 and 5 % of the best fair
peer's final score, and that time over the best peer's wall time; the best score every run had
reached by fractions of that wall time; the whole peers (their own objectives) for reference; the
checks of the scorer (against nstbatch's own final loss) and of the adapters (against the scorer).
"""
import argparse
import csv
import os
from collections import defaultdict

FAIR, WHOLE = ("kc", "pt"), ("kc-whole", "pt-whole")
NAMES = {"kc": "crowsonkb/style-transfer-pytorch", "pt": "ProGamerGov/neural-style-pt"}
THRESHOLDS = (0, 1, 5)
FRACTIONS = (0.1, 0.25, 0.5, 1.0)
TERMS = ("total", "content", "style", "tv")


def table(head, rows):
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return out + ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]


def g(v):
    return "%.4g" % v


def load(a):
    runs = defaultdict(lambda: defaultdict(list))  # size -> tool -> rows
    for r in csv.DictReader(open(a.tsv), delimiter="\t"):
        for k in TERMS:
            r[k] = float(r[k])
        if r["kind"] != "logged":
            r["elapsed_s"], r["work"] = float(r["elapsed_s"]), float(r["work"])
        runs[r["size"]][r["tool"]].append(r)
    info = {}
    for line in open(a.runs):
        size, tool, levels, process, snaps = line.rstrip("\n").split("\t")
        info[size, tool] = {"levels": levels, "process": float(process), "snaps": float(snaps)}
    meta = dict(line.rstrip("\n").split("\t", 1) for line in open(a.meta) if "\t" in line)
    checks = [line.rstrip("\n").split("\t") for line in open(a.checks) if line.strip()]
    return runs, info, meta, checks


def timeline(rows):
    """Snapshots and the output in the order of their elapsed time."""
    return sorted((r for r in rows if r["kind"] in ("snap", "final")), key=lambda r: r["elapsed_s"])


def final(rows):
    return next(r for r in rows if r["kind"] == "final")


def first_within(rows, target, pct):
    return next((r for r in timeline(rows) if r["total"] <= target * (1 + pct / 100)), None)


def best_by(rows, t):
    done = [r["total"] for r in timeline(rows) if r["elapsed_s"] <= t]
    return g(min(done)) if done else "-"


def config_of(configs, size, tool):
    """nstbatch's resolved optim.* and pyramid.* keys that set its schedule, and the precision it ran in."""
    path = os.path.join(configs, size, tool, "config")
    keys = {}
    section = ""
    for line in open(path) if os.path.exists(path) else []:
        line = line.strip()
        if line.startswith("["):
            section = line.strip("[]")
        elif "=" in line:
            k, v = (s.strip() for s in line.split("=", 1))
            keys[section + "." + k] = v
    want = ["optim.method", "optim.iterations", "optim.lr", "optim.average", "pyramid.levels", "pyramid.iterations", "pyramid.state",
            "run.precision"]
    return ", ".join("%s %s" % (k, keys[k]) for k in want if keys.get(k))


def thresholds(tools, nst, target, what, peer):
    """For each nstbatch run: time and work until within 0, 1, 5 % of target's total; its time over target's."""
    rows = []
    for t in nst:
        r = [t]
        for p in THRESHOLDS:
            hit = first_within(tools[t], target["total"], p)
            r += ["%.1f" % hit["elapsed_s"], "%.0f" % hit["work"]] if hit else ["not reached", "-"]
        hit = first_within(tools[t], target["total"], 0)
        r.append("**%.3f**" % (hit["elapsed_s"] / target["elapsed_s"]) if hit else
                 "not reached (final %+.1f %%)" % (100 * (final(tools[t])["total"] / target["total"] - 1)))
        r.append(split(hit, target))
        rows.append(r)
    head = ["nstbatch run"]
    for p in THRESHOLDS:
        head += ["within %d %%: s" % p, "work"]
    return table(head + ["time to %s / %s's time to it" % (what, peer), "= work ratio x time per unit of work ratio"], rows) + [""]


def split(hit, target):
    """The time ratio told apart: the schedule's part (work over the peer's work) and the kernels' part
    (seconds per final-size-equivalent iteration over the peer's)."""
    if not hit or not hit["work"] or not target["work"]:
        return "-"
    w = hit["work"] / target["work"]
    return "%.3f x %.3f" % (w, (hit["elapsed_s"] / hit["work"]) / (target["elapsed_s"] / target["work"]))


def size_section(size, tools, info, configs):
    out = ["## %s" % size, ""]
    nst = [t for t in tools if t.startswith("nstbatch")]
    fair = [t for t in FAIR if t in tools]
    out += ["### The runs: the peers on nstbatch's objective (fair), nstbatch at its defaults", ""]
    rows = []
    for t in nst + fair:
        f, i = final(tools[t]), info[size, t]
        what = config_of(configs, size, t) if t in nst else NAMES[t] + "'s defaults"
        rows.append([t, what, i["levels"], g(f["total"]), g(f["content"]), g(f["style"]), g(f["tv"]), "%.1f" % f["elapsed_s"],
                     "%.0f" % f["work"], "%.1f" % i["snaps"]])
    out += table(["run", "settings", "levels (size x iterations)", "final total", "content", "style", "tv", "wall s", "work",
                  "snapshots s (taken off)"], rows) + [""]
    if not fair or not nst:
        return out + ["(no fair peer or no nstbatch run: no time-to-quality figures)", ""]
    best = min(fair, key=lambda t: final(tools[t])["total"])
    bf = final(tools[best])
    out += ["Best peer: **%s**, final score %s after %.1f s (%.0f final-size-equivalent iterations)." % (best, g(bf["total"]), bf["elapsed_s"], bf["work"]), ""]
    out += thresholds(tools, nst, bf, "%s's final score" % best, best)
    # the stricter bar: the lowest score any fair peer's snapshot reached, as if it had been stopped
    # there (which its user could not have known to do)
    peak = min((r for t in fair for r in timeline(tools[t])), key=lambda r: r["total"])
    out += ["Stricter: the best score any peer reached at any snapshot, **%s** (%s, level %s, iteration %s, after %.1f s)." % (
        g(peak["total"]), peak["tool"], peak["level"], peak["iteration"], peak["elapsed_s"]), ""]
    out += thresholds(tools, nst, peak, "that score", peak["tool"])
    rows = [[t] + [best_by(tools[t], f * bf["elapsed_s"]) for f in FRACTIONS] for t in nst + fair + [w for w in WHOLE if w in tools]]
    out += ["Best score reached by a fraction of %s's wall time (%.1f s):" % (best, bf["elapsed_s"]), ""]
    out += table(["run"] + ["%d %%" % (100 * f) for f in FRACTIONS], rows) + [""]
    whole = [t for t in WHOLE if t in tools]
    if whole:
        out += ["### Each peer whole: its own losses and weights (reported only)", "",
                "Scored with nstbatch's objective, which these runs do not optimise: their scores say how far "
                "their own objective's optimum lies from nstbatch's, not how well they optimise.", ""]
        rows = []
        for t in whole:
            f, i = final(tools[t]), info[size, t]
            rows.append([t, i["levels"], g(f["total"]), g(f["content"]), g(f["style"]), g(f["tv"]), "%.1f" % f["elapsed_s"], "%.0f" % f["work"]])
        out += table(["run", "levels", "final total", "content", "style", "tv", "wall s", "work"], rows) + [""]
    return out


def checks_section(runs, checks):
    out = ["## Checks", "", "The scorer against nstbatch's own final loss (its last progress row, float32, on the image it "
           "then wrote in 16 bits): relative differences.", ""]
    rows = []
    for size, tools in runs.items():
        for t, rs in tools.items():
            lg = next((r for r in rs if r["kind"] == "logged"), None)
            if lg:
                f = final(rs)
                rows.append([size, t] + ["%.1e" % (abs(f[k] - lg[k]) / abs(lg[k]) if lg[k] else abs(f[k])) for k in TERMS])
    out += table(["size", "run", "total", "content", "style", "tv"], rows) + [""]
    out += ["Each fair adapter's own objective (float32; kc: its second evaluation, as the first is the content "
            "itself; pt: its first) against the scorer (float64) on the same image and targets.", ""]
    out += table(["adapter", "at", "term", "adapter", "scorer", "difference / term", "difference / total"], checks) + [""]
    return out


def main():
    ap = argparse.ArgumentParser()
    for k in ("--tsv", "--runs", "--checks", "--meta", "--configs"):
        ap.add_argument(k, required=True)
    a = ap.parse_args()
    runs, info, meta, checks = load(a)
    out = ["# Time to quality: nstbatch against two PyTorch tools at their defaults", "",
           "`make bench-quality` (`bench/quality.sh`), %s. %s; %s threads each, one tool at a time. %s; PyTorch %s; "
           "kc: crowsonkb/style-transfer-pytorch %s; pt: ProGamerGov/neural-style-pt %s. Inputs: %s." % (
               meta["date"], meta["cpu"], meta["threads"], meta["nstbatch"], meta["torch"], meta["kc"], meta["pt"], meta["inputs"]), ""]
    if meta.get("quick"):
        out += ["**QUICK_ITERS=%s: the peers ran %s iterations per level, not their defaults. Plumbing only: these "
                "figures compare nothing.**" % (meta["quick"], meta["quick"]), ""]
    out += [
        "Every run: the same network (`nstbatch --make-weights random`, seed 1, width 1/4, with its input "
        "preprocessing), the same pre-resized inputs, and each tool's own schedule, optimiser, averaging and "
        "upsampling. kc and pt optimise nstbatch's objective (their content, style and TV losses replaced "
        "at run time; bench/quality/kc.py, pt.py); kc-whole and pt-whole keep their own. One float64 scorer "
        "evaluates nstbatch's objective (content relu4_2, 1 x ||F-P||^2/||P||^2; style relu1_1..relu5_1, "
        "1000 x sum ||G-A||^2/||A||^2 with G = F F^T / positions; TV 10 x (sum dx^2 + sum dy^2) / (3 W H)) "
        "at the final size on a snapshot every 25 iterations of every level and on each output (a smaller "
        "snapshot upsampled bicubically, clamped). **wall s**: from the process's launch, less the "
        "snapshots' own seconds (nstbatch's last one estimated as the mean of its level's others). **work**: "
        "iterations (gradient evaluations) each weighted by its level's pixels over the final size's. A "
        "threshold's time is that of the first snapshot or output within it: an upper bound at a 25-iteration "
        "resolution. The machine's other load is not controlled: repeat a run before reading much into a "
        "few percent of time.", ""]
    for size, tools in runs.items():
        out += size_section(size, tools, info, a.configs)
    out += checks_section(runs, checks)
    print("\n".join(out))


if __name__ == "__main__":
    main()

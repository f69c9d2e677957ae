"""How the calibration's bar would have done on rounds it never saw: the choice of BAR and
ALPHA in `torchdoctor/scan/calibration.py`, rerun.

    python benchmarks/scan_heldout.py [--rounds 99-105,106-112,...] [--code HEAD]
        [--corpus-root /work/research] [--cache DIR]

Each round (a group of blind sets labelled in one session) is scored with the current rules
(`--code`, a commit) and a table built only from the sets before the round (3 to its first set
minus one), as the table in force when the round was labelled would have been: the per-set
counts of `scan_calibration.py` (each set scanned by the commit it was scored on, its table
emptied). The findings of the round are those of `--code` with its own table emptied, on
labelled lines, with their class (rule, whether the file falls back to the CPU, whether it
calls torch.save). For each bar and confidence of the grid a finding is shown when its own
reasoning shows it (high or medium) and its class, in the round's table, is not lowered;
precision and recall are counted as `scan_blind.py` counts them. Pooled over the rounds, per
point of the grid; `--per-round` adds each round's figures.
"""

from __future__ import annotations

import argparse
import itertools
import json
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT))

import scan_blind as sb  # noqa: E402
import scan_calibration as sc  # noqa: E402

from torchdoctor.scan import calibration as cal  # noqa: E402

BARS = (0.75, 0.7, 0.65, 0.6)
ALPHAS = (0.05, 0.2, 0.5)
DEFAULT_ROUNDS = "99-105,106-112,113-119,120-126,127-133,134-140"
SHOWN = ("high", "medium")


def findings_of_set(n: int, code: Path, corpus_root: Path) -> dict:
    """The labels of set `n` and the findings of `code` (table emptied) on labelled lines,
    each with its class and the labels it points at (their indexes)."""
    here = sc.set_dir(n)
    corpus = json.loads((here / "corpus.json").read_text())
    labels = sb.read_labels(here / "labels.csv")
    trees = corpus_root / f"scan_corpus{n}"
    found = []
    with sc.code_first(code):
        for entry in corpus["repos"]:
            tree = sb.tree_of(trees, entry, corpus)
            keep = set(entry["files_in_scope"])
            for f in sb.scan_repo(tree, entry["repo"], "low", 1):
                hit = [i for i, lab in enumerate(labels) if lab in sb.labels_of(f, [lab])]
                if f.file not in keep or not hit:
                    continue
                text = (tree / f.file).read_text(errors="replace")
                saves = f.rule in cal.BY_SAVES and cal.writes_files(text)
                cls = [f.rule, sc.falls_back(text), saves]
                found.append({"cls": cls, "confidence": f.confidence, "hit": hit})
    wanted = [
        i for i, lab in enumerate(labels) if lab.must_flag and lab.severity in ("crash", "security")
    ]
    return {
        "must": [i for i, lab in enumerate(labels) if lab.must_flag],
        "wanted": wanted,
        "crash": [i for i in wanted if labels[i].severity == "crash"],
        "findings": found,
    }


def cached_findings(n: int, code: Path, commit: str, corpus_root: Path, cache: Path | None):
    saved = cache / f"heldout-{n}.json" if cache else None
    if saved and saved.is_file():
        data = json.loads(saved.read_text())
        if data["commit"] == commit:
            return data["set"]
    got = findings_of_set(n, code, corpus_root)
    if saved:
        saved.parent.mkdir(parents=True, exist_ok=True)
        saved.write_text(json.dumps({"commit": commit, "set": got}))
    return got


def use_table(measured: dict, bar: float, alpha: float) -> None:
    """Put a table and a bar in force in torchdoctor's own calibration module, so that the
    decision is the one the tool makes, not a copy of it."""
    cal.MEASURED = measured
    cal.BAR, cal.ALPHA = bar, alpha
    cal._binomial_tail.cache_clear()


def score(sets: list[dict], lowered) -> Counter:
    c: Counter = Counter()
    for s in sets:
        hit: set[int] = set()
        for f in s["findings"]:
            if f["confidence"] not in SHOWN or (lowered and lowered(f["cls"])):
                continue
            c["tp" if set(f["hit"]) & set(s["must"]) else "fp"] += 1
            hit.update(f["hit"])
        c["found"] += len(hit & set(s["wanted"]))
        c["wanted"] += len(s["wanted"])
        c["crash_found"] += len(hit & set(s["crash"]))
        c["crash"] += len(s["crash"])
    return c


def lowered(cls: list) -> bool:
    """Is the class below the bar of the table in force (`use_table`)?"""
    rule, fb, saves = cls
    return cal.below_bar(rule, fb, False, saves) is not None


def line(name: str, c: Counter) -> str:
    shown = c["tp"] + c["fp"]
    return (
        f"{name:28} precision {c['tp'] / max(shown, 1):6.1%} ({c['tp']}/{shown})  "
        f"crash+security {c['found'] / max(c['wanted'], 1):6.1%} ({c['found']}/{c['wanted']})  "
        f"crash {c['crash_found']}/{c['crash']}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", default=DEFAULT_ROUNDS, help=f"default {DEFAULT_ROUNDS}")
    ap.add_argument("--code", default="HEAD", help="the commit whose rules are scored")
    ap.add_argument("--corpus-root", type=Path, default=Path("/work/research"))
    ap.add_argument("--cache", type=Path, help="keep per-set counts and findings here")
    ap.add_argument("--per-round", action="store_true", help="each round's figures too")
    args = ap.parse_args()
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", args.code], capture_output=True, text=True
    ).stdout.strip()
    if not commit:
        sys.exit(f"{args.code}: not a commit")
    rounds = [sc.span(r) for r in args.rounds.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        code = sc.export(commit, Path(tmp))
        counts = {
            n: sc.cached_classes(n, Path(tmp), args.corpus_root, args.cache)
            for n in range(3, rounds[-1][-1] + 1)
        }
        sets = {
            n: cached_findings(n, code, commit, args.corpus_root, args.cache)
            for r in rounds
            for n in r
        }
    tables = {}
    for r in rounds:
        total: Counter = Counter()
        for n in range(3, r[0]):
            total += counts[n]
        tables[r[0]] = sc.table(total, "repository")

    print(f"rules of {commit[:7]}, rounds {args.rounds}, each with the table of the sets before it")
    print(line("all shown (no calibration)", score(list(sets.values()), None)))
    for bar, alpha in itertools.product(BARS, ALPHAS):
        pooled: Counter = Counter()
        per = []
        for r in rounds:
            use_table(tables[r[0]], bar, alpha)
            c = score([sets[n] for n in r], lowered)
            pooled += c
            per.append((r, c))
        print(line(f"bar {bar} at {1 - alpha:.0%}", pooled))
        if args.per_round:
            for r, c in per:
                print("   " + line(f"{r[0]}-{r[-1]}", c))


if __name__ == "__main__":
    main()

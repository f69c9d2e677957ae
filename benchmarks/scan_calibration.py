"""The blind figures behind `torchdoctor/scan/calibration.py`, recomputed from history.

    python benchmarks/scan_calibration.py [--sets 3-26] [--corpus-root /work/research]

Each blind set was scored once, on the commit its `results-blind.md` names first. This
script checks out that commit's `torchdoctor/` (git archive, into a temporary folder), scans
the set's trees with it at the default confidence, as `scan_blind.py` does, and keeps the
verdict of every finding on a labelled line: true (its label is a must-flag the rule points
at) or false. Each finding is put in a class: its rule, and whether its file picks the CPU
where CUDA is absent (`context.falls_back` of the current code, the split the calibration
uses). It prints, per class, true/false counts over all the sets: the table to paste.

Trees are looked up as `<corpus-root>/scan_corpus<N>/<name>` (set 1: `scan_corpus`).
Unlabelled lines are left out: their verdicts were not blind.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT))

import scan_blind as sb  # noqa: E402

from torchdoctor.scan.context import falls_back  # noqa: E402

COMMIT = re.compile(r"\b[0-9a-f]{7,40}\b")


def set_dir(n: int) -> Path:
    return ROOT / "benchmarks" / ("scan_blind" if n == 1 else f"scan_blind{n}")


def scoring_commit(n: int) -> str:
    """The commit the set was scored on: the first hash its results-blind.md names."""
    found = COMMIT.search((set_dir(n) / "results-blind.md").read_text())
    if found is None:
        sys.exit(f"set {n}: no commit in results-blind.md")
    return found.group(0)


def export(commit: str, into: Path) -> Path:
    out = into / commit
    if not out.is_dir():
        out.mkdir(parents=True)
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", commit, "torchdoctor"],
            capture_output=True,
            check=True,
        )
        subprocess.run(["tar", "-x", "-C", str(out)], input=archive.stdout, check=True)
    return out


def classes_of_set(n: int, code: Path, corpus_root: Path) -> Counter:
    here = set_dir(n)
    corpus = json.loads((here / "corpus.json").read_text())
    labels = sb.read_labels(here / "labels.csv")
    trees = corpus_root / ("scan_corpus" if n == 1 else f"scan_corpus{n}")
    out: Counter = Counter()
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = str(code)  # the scoring commit's torchdoctor, first on the path
    try:
        for entry in corpus["repos"]:
            tree = sb.tree_of(trees, entry)
            keep = set(entry["files_in_scope"])
            for f in sb.scan_repo(tree, entry["repo"], None, 1):
                verdict = sb.verdict(f, labels) if f.file in keep else "unlabelled"
                if verdict == "unlabelled":
                    continue
                text = (tree / f.file).read_text(errors="replace")
                out[(f.rule, falls_back(text), verdict == "tp")] += 1
    finally:
        if old is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = old
    return out


def span(text: str) -> list[int]:
    first, _, last = text.partition("-")
    return list(range(int(first), int(last or first) + 1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", default="3-26", help="a range of set numbers (default 3-26)")
    ap.add_argument("--corpus-root", type=Path, default=Path("/work/research"))
    args = ap.parse_args()
    total: Counter = Counter()
    with tempfile.TemporaryDirectory() as tmp:
        for n in span(args.sets):
            code = export(scoring_commit(n), Path(tmp))
            total += classes_of_set(n, code, args.corpus_root)
    print("MEASURED = {  # (rule, file falls back to the CPU): (true, false)")
    for rule, fb in sorted({(r, b) for r, b, _ in total}):
        print(f'    ("{rule}", {fb}): ({total[(rule, fb, True)]}, {total[(rule, fb, False)]}),')
    print("}")


if __name__ == "__main__":
    main()

"""The blind figures behind `torchdoctor/scan/calibration.py`, recomputed from history.

    python benchmarks/scan_calibration.py [--sets 3-93] [--corpus-root /work/research]

Each blind set was scored once, on the commit its `results-blind.md` names first. This
script checks out that commit's `torchdoctor/` (git archive, into a temporary folder), with
its calibration table emptied where it has one (what is measured is the rules' own
reasoning: a class once calibrated away would otherwise never be measured again), scans the
set's trees with it at the default confidence, as `scan_blind.py` does, and keeps the
verdict of every finding on a labelled line: true (its label is a must-flag the rule points
at) or false. Each finding is put in a class as the current calibration does: its rule,
whether its file picks the CPU where CUDA is absent (`context.falls_back`) and, for the rules
split that way, whether the file calls torch.save (`calibration.writes_files`). It prints,
per class, true/false counts over all the sets: the table to paste.

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

from torchdoctor.scan.calibration import BY_SAVES, writes_files  # noqa: E402
from torchdoctor.scan.context import falls_back  # noqa: E402

COMMIT = re.compile(r"\b[0-9a-f]{7,40}\b")
# The calibration table of a commit that has one (from 939f45e on), to be emptied.
TABLE = re.compile(r"^MEASURED\b[^=\n]*= \{.*?^\}", re.S | re.M)


def set_dir(n: int) -> Path:
    return ROOT / "benchmarks" / ("scan_blind" if n == 1 else f"scan_blind{n}")


def scoring_commit(n: int) -> str:
    """The commit the set was scored on: the first hash its results-blind.md names."""
    results = set_dir(n) / "results-blind.md"
    if not results.is_file():
        sys.exit(f"set {n}: no results-blind.md (score the set once first: scan_blind.py)")
    found = COMMIT.search(results.read_text())
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
        table = out / "torchdoctor" / "scan" / "calibration.py"
        if table.is_file():
            text, n = TABLE.subn("MEASURED = {}", table.read_text())
            if n != 1:
                sys.exit(f"{commit}: no calibration table found to empty")
            table.write_text(text)
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
                saves = f.rule in BY_SAVES and writes_files(text)
                out[(f.rule, falls_back(text), saves, verdict == "tp")] += 1
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
    ap.add_argument("--sets", default="3-93", help="a range of set numbers (default 3-93)")
    ap.add_argument("--corpus-root", type=Path, default=Path("/work/research"))
    args = ap.parse_args()
    total: Counter = Counter()
    with tempfile.TemporaryDirectory() as tmp:
        for n in span(args.sets):
            code = export(scoring_commit(n), Path(tmp))
            total += classes_of_set(n, code, args.corpus_root)
    print("MEASURED = {  # (rule, falls back to the CPU, calls torch.save): (true, false)")
    for cls in sorted({key[:3] for key in total}):
        rule, fb, saves = cls
        real, false = total[(*cls, True)], total[(*cls, False)]
        print(f'    ("{rule}", {fb}, {saves}): ({real}, {false}),')
    print("}")


if __name__ == "__main__":
    main()

"""The blind figures behind `torchdoctor/scan/calibration.py`, recomputed from history.

    python benchmarks/scan_calibration.py [--sets 3-160] [--unit repository|finding]
        [--corpus-root /work/research] [--cache DIR] [--add-to-table]

Each blind set was scored once, on the commit its `results-blind.md` names first. This
script checks out that commit's `torchdoctor/` (git archive, into a temporary folder), with
its calibration table emptied where it has one (what is measured is the rules' own
reasoning: a class once calibrated away would otherwise never be measured again), scans the
set's trees with it at the default confidence, as `scan_blind.py` does, and keeps the
verdict of every finding on a labelled line: true (its label is a must-flag the rule points
at) or false. Each finding is put in a class as the current calibration does: its rule,
whether its file picks the CPU where CUDA is absent (`context.falls_back`) and, for the rules
split that way, whether the file calls torch.save (`calibration.writes_files`). It prints,
per class, the real and not-real weight over all the sets: the table to paste.

What counts one is a repository (`--unit repository`, the default): each repository where a
class fired weighs one, split by the share of its findings there that were real. Lines of
one file, or one repository, are not independent samples: ClassSR's one `base_model.py`
(18 loads) or fairscale's one `offload.py` (7 `.cuda()`) would otherwise each turn a class.
A repository is what the corpora sample (each set picks repositories, then their files) and
what a user scans. `--unit finding` gives the per-finding counts of the earlier tables.

Trees are looked up as `<corpus-root>/scan_corpus<N>/<name>` (set 1: `scan_corpus`). Each
set's counts (repository, rule, falls back, saves, real -> findings, at its scoring commit)
are kept from set 319 on in `benchmarks/scan_calibration_counts/<N>.json` (`--cache` there):
the trees of earlier sets are gone, and with them any table other than the running one (a
window of recent sets, say).
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
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT))

import scan_blind as sb  # noqa: E402

from torchdoctor.scan.calibration import BY_SAVES, MEASURED, SOURCE, writes_files  # noqa: E402
from torchdoctor.scan.context import falls_back  # noqa: E402

COMMIT = re.compile(r"\b[0-9a-f]{7,40}\b")
# The calibration table of a commit that has one (from 939f45e on), to be emptied.
TABLE = re.compile(r"^MEASURED\b[^=]*= \{.*?^\}", re.S | re.M)  # its type may wrap
# the newest sets' table (from a484007 on): emptied with MEASURED, or it would hide a class
RECENT = re.compile(r"^RECENT\b[^=]*= \{.*?^\}", re.S | re.M)


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


def export(commit: str, into: Path, empty: bool = True) -> Path:
    """`commit`'s torchdoctor/ under `into`, its calibration table emptied unless `empty` is
    False (blind_round.py scores with the table)."""
    out = into / (commit if empty else f"{commit}-table")
    if not out.is_dir():
        out.mkdir(parents=True)
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", commit, "torchdoctor"],
            capture_output=True,
            check=True,
        )
        subprocess.run(["tar", "-x", "-C", str(out)], input=archive.stdout, check=True)
        table = out / "torchdoctor" / "scan" / "calibration.py"
        if empty and table.is_file():
            text, n = TABLE.subn("MEASURED = {}", table.read_text())
            if n != 1:
                sys.exit(f"{commit}: no calibration table found to empty")
            table.write_text(RECENT.sub("RECENT = {}", text))
    return out


@contextmanager
def code_first(code: Path) -> Iterator[None]:
    """Scans run in this block (`scan_blind.scan_repo`, a child process) use the torchdoctor
    exported under `code`, first on PYTHONPATH."""
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = str(code)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = old


def classes_of_set(n: int, code: Path, corpus_root: Path) -> Counter:
    """(repository, rule, falls back, saves, real) -> findings, for one set."""
    here = set_dir(n)
    corpus = json.loads((here / "corpus.json").read_text())
    labels = sb.read_labels(here / "labels.csv")
    trees = corpus_root / ("scan_corpus" if n == 1 else f"scan_corpus{n}")
    out: Counter = Counter()
    with code_first(code):  # the scoring commit's torchdoctor
        for entry in corpus["repos"]:
            tree = sb.tree_of(trees, entry, corpus)
            keep = set(entry["files_in_scope"])
            for f in sb.scan_repo(tree, entry["repo"], None, 1):
                verdict = sb.verdict(f, labels) if f.file in keep else "unlabelled"
                if verdict == "unlabelled":
                    continue
                text = (tree / f.file).read_text(errors="replace")
                saves = f.rule in BY_SAVES and writes_files(text)
                out[(entry["repo"], f.rule, falls_back(text), saves, verdict == "tp")] += 1
    return out


def cached_classes(n: int, tmp: Path, corpus_root: Path, cache: Path | None) -> Counter:
    """One set's counts, read from `cache/<n>.json` when an earlier run left them there."""
    saved = cache / f"{n}.json" if cache else None
    commit = scoring_commit(n)
    if saved and saved.is_file():
        data = json.loads(saved.read_text())
        if data["commit"] == commit:
            return Counter({tuple(key): count for key, count in data["counts"]})
    counts = classes_of_set(n, export(commit, tmp), corpus_root)
    if saved:
        saved.parent.mkdir(parents=True, exist_ok=True)
        rows = [[list(key), count] for key, count in sorted(counts.items())]
        saved.write_text(json.dumps({"commit": commit, "counts": rows}))
    return counts


def table(total: Counter, unit: str) -> dict[tuple[str, bool, bool], tuple[float, float]]:
    """(rule, falls back, saves) -> (real, not real). By finding, each finding counts one; by
    repository, each repository where the class fired counts one, split by the share of its
    findings that were real: the precision a user scanning one repository meets, on average,
    not swayed by one file that repeats one pattern twenty times."""
    per: dict[tuple, list[int]] = {}
    for (repo, rule, fb, saves, real), count in total.items():
        per.setdefault((repo, rule, fb, saves), [0, 0])[0 if real else 1] += count
    out: dict[tuple[str, bool, bool], tuple[float, float]] = {}
    for (_repo, *cls), (real, false) in per.items():
        weight = 1 if unit == "finding" else 1 / (real + false)
        had = out.get(tuple(cls), (0, 0))
        out[tuple(cls)] = (had[0] + real * weight, had[1] + false * weight)
    return out


def added(rows: dict, unit: str) -> dict[tuple[str, bool, bool], tuple[float, float]]:
    """The committed table plus these rows: the table of its sets and these together, as each
    repository is in one set and weighs the same alone or among others (to the printed
    hundredths). For new sets whose earlier ones' trees are not on this machine."""
    if unit != "repository":
        sys.exit("--add-to-table: the committed table counts repositories")
    out = dict(MEASURED)
    for cls, (real, false) in rows.items():
        had = out.get(cls, (0, 0))
        out[cls] = (had[0] + real, had[1] + false)
    return out


def refuse_held(sets: list[int]) -> None:
    """Stop before any scan when the committed table (its SOURCE names the range) already
    holds one of these sets: added twice, it would count them twice."""
    upto = re.search(r"corpora \d+-(\d+)", SOURCE)
    if upto is None or min(sets) <= int(upto.group(1)):
        sys.exit(f"--add-to-table: the table already holds sets up to {SOURCE!r}")


def span(text: str) -> list[int]:
    first, _, last = text.partition("-")
    return list(range(int(first), int(last or first) + 1))


def number(x: float) -> str:
    return f"{x:.2f}".rstrip("0").rstrip(".")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", default="3-160", help="a range of set numbers (default 3-160)")
    ap.add_argument("--corpus-root", type=Path, default=Path("/work/research"))
    ap.add_argument(
        "--unit",
        choices=["repository", "finding"],
        default="repository",
        help="what counts one: a repository where the class fired (default) or a finding",
    )
    ap.add_argument("--cache", type=Path, help="keep each set's counts here (N.json), to reuse")
    ap.add_argument(
        "--add-to-table",
        action="store_true",
        help="print the sets' weights added to the table now in torchdoctor/scan/calibration.py",
    )
    args = ap.parse_args()
    if args.add_to_table:
        refuse_held(span(args.sets))
    total: Counter = Counter()
    with tempfile.TemporaryDirectory() as tmp:
        for n in span(args.sets):
            total += cached_classes(n, Path(tmp), args.corpus_root, args.cache)
    rows = table(total, args.unit)
    if args.add_to_table:
        rows = added(rows, args.unit)
    print(
        f"MEASURED = {{  # (rule, falls back to the CPU, calls torch.save): (real, not real) by {args.unit}"
    )
    for cls, (real, false) in sorted(rows.items()):
        rule, fb, saves = cls
        print(f'    ("{rule}", {fb}, {saves}): ({number(real)}, {number(false)}),')
    print("}")


if __name__ == "__main__":
    main()

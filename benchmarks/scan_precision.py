"""Precision of `torchdoctor scan` per rule on a corpus of real public code.

    python benchmarks/scan_precision.py CORPUS_DIR [--labels FILE] [--confidence LEVEL]

CORPUS_DIR holds one folder per repository below, named as in the first column of the labels
file (benchmarks/scan_precision_labels.csv), each a plain checkout of the commit listed here:

    git clone https://github.com/<repo> CORPUS_DIR/<name> && git -C CORPUS_DIR/<name> checkout <commit>

The labels are hand verdicts on a sample of findings (repo, path, line, rule, tp/fp, reason),
made by reading the code around each one. Precision per rule = tp / labelled findings that the
scan still reports; labelled findings it no longer reports are counted apart (a fixed false
positive, or a lost true one).
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections import Counter, defaultdict
from pathlib import Path

from torchdoctor.scan import ScanOptions, scan_paths
from torchdoctor.scan.rules import RULES

REPOS = {
    "examples": ("pytorch/examples", "77f55b912142e11fcfdf5b530231fb9c52f181e8"),
    "nanoGPT": ("karpathy/nanoGPT", "3adf61e154c3fe3fca428ad6bc3818b27a3b8291"),
    "lightning": ("Lightning-AI/pytorch-lightning", "7f0c3436cd3f6ad3753125672024fc415cbcb414"),
    "detectron2": ("facebookresearch/detectron2", "02b5c4e295e990042a714712c21dc79b731e8833"),
    "timm": ("huggingface/pytorch-image-models", "aa4b5850c1543fa488abf260f18390eda46cf85d"),
    "fairseq": ("facebookresearch/fairseq", "3d262bb25690e4eb2e7d3c1309b1e9c406ca4b99"),
    "diffusers": ("huggingface/diffusers", "58eb52c0803ea9af3abec60841c2a093bdf1f951"),
}
ENOUGH = 5  # labelled findings a rule needs before its precision means anything
DEFAULT_LABELS = Path(__file__).with_name("scan_precision_labels.csv")


def scan_corpus(
    corpus: Path, confidence: str = "medium"
) -> tuple[set[tuple[str, str, int, str]], Counter[str], int, int]:
    """(repo, path in repo, line, rule) of every finding shown at `confidence` (the default
    output: medium), findings per rule, files, lines. Each repository is its own project."""
    found: set[tuple[str, str, int, str]] = set()
    per_rule: Counter[str] = Counter()
    files = lines = 0
    for name in REPOS:
        root = corpus / name
        if not root.is_dir():
            sys.exit(f"{root} is missing: check out {REPOS[name][0]} at {REPOS[name][1]} there")
        result = scan_paths([str(root)], ScanOptions(confidence=confidence))
        files += result.files_scanned
        lines += result.lines_scanned
        for f in result.findings:
            rel = Path(f.path).relative_to(root).as_posix()
            found.add((name, rel, f.line, f.rule))
            per_rule[f.rule] += 1
    return found, per_rule, files, lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("corpus", type=Path)
    ap.add_argument("--labels", type=Path, default=DEFAULT_LABELS)
    ap.add_argument("--confidence", choices=("high", "medium", "low"), default="medium")
    args = ap.parse_args()
    with open(args.labels, newline="", encoding="utf-8") as fh:
        labels = list(csv.DictReader(fh))
    found, per_rule, files, lines = scan_corpus(args.corpus, args.confidence)
    verdicts: dict[str, Counter[str]] = defaultdict(Counter)
    for row in labels:
        key = (row["repo"], row["path"], int(row["line"]), row["rule"])
        where = "" if key in found else "gone_"
        verdicts[row["rule"]][where + row["verdict"]] += 1
    print(f"corpus: {len(REPOS)} repositories, {files} files, {lines:,} lines (tests skipped)")
    print()
    print(
        "| rule | findings | labelled | true | false | precision | labelled, no longer reported |"
    )
    print("|---|---:|---:|---:|---:|---:|---|")
    for rule in RULES:
        v = verdicts[rule.id]
        labelled = v["tp"] + v["fp"]
        prec = f"{v['tp'] / labelled:.0%}" if labelled else "–"
        if 0 < labelled < ENOUGH:
            prec += " (too few)"
        gone = ", ".join(f"{v['gone_' + k]} {k}" for k in ("fp", "tp") if v["gone_" + k]) or "–"
        print(
            f"| {rule.id} {rule.name} | {per_rule[rule.id]} | {labelled} | {v['tp']} | "
            f"{v['fp']} | {prec} | {gone} |"
        )


if __name__ == "__main__":
    main()

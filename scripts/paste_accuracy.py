"""Score `torchdoctor check --facts` on the real collect_env pastes against their blind labels.

Usage: python scripts/paste_accuracy.py [tests/collect_env/LABELS.csv] [--show]

The labels (tests/collect_env/LABELS.csv) were written from each issue's thread before torchdoctor
read the paste. A paste reads right when torchdoctor reads it (no refusal, no traceback) and:
- labelled healthy (expected 'none'): no finding at level error;
- labelled with finding ids: every one is among the findings at level error or warning.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
DEFAULT = HERE / "tests" / "collect_env" / "LABELS.csv"


def judge(path: Path) -> tuple[str, dict[str, str]]:
    """('read'|'refused'|'traceback', {finding id: level}) for one paste."""
    cmd = [sys.executable, "-m", "torchdoctor", "check", "--facts", str(path), "--json"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if "Traceback (most recent call last)" in proc.stderr:
        return "traceback", {}
    try:
        report = json.loads(proc.stdout)
    except json.JSONDecodeError:
        return "refused", {}
    return "read", {f["id"]: f["level"] for f in report.get("findings", [])}


def score(row: dict[str, str], outcome: str, found: dict[str, str]) -> tuple[bool, list[str]]:
    errors = sorted(i for i, lvl in found.items() if lvl == "error")
    if outcome != "read":
        return False, errors
    expected = [e for e in row["expected_findings"].split(";") if e and e != "none"]
    if not expected:
        return not errors, errors
    flagged = {i for i, lvl in found.items() if lvl in ("error", "warning")}
    return all(e in flagged for e in expected), errors


def main(argv: list[str]) -> int:
    labels = Path(next((a for a in argv if not a.startswith("--")), DEFAULT))
    rows = list(csv.DictReader(labels.open(encoding="utf-8")))
    right = healthy_fail = 0
    for row in rows:
        outcome, found = judge(labels.parent / row["file"])
        ok, errors = score(row, outcome, found)
        right += ok
        healthy = row["expected_findings"] == "none" and row["truth"].startswith("healthy")
        healthy_fail += healthy and bool(errors)
        if "--show" in argv or not ok:
            flagged = sorted(i for i, lvl in found.items() if lvl in ("error", "warning"))
            mark = "ok " if ok else "BAD"
            print(f"{mark} {outcome:9} {row['file']}\n    want {row['expected_findings']}")
            print(f"    got  {';'.join(flagged) or 'none'}")
    print(f"right: {right}/{len(rows)}; healthy pastes with a failure: {healthy_fail}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

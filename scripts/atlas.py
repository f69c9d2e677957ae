"""The failure atlas (issue 24): public threads whose cause was settled, classed, counted, and
held against what torchdoctor detects.

    python scripts/atlas.py            # print the ranking and coverage tables (Markdown)
    python scripts/atlas.py --write    # rewrite them between the markers in docs/atlas.md
    python scripts/atlas.py --check    # exit 1 if docs/atlas.md is not what --write would write

Data: docs/atlas/threads.jsonl (one settled thread a line) and docs/atlas/coverage.json (per
class: which finding ids detect it, live and/or on a pasted report, the rebuilt cases, or why
not). tests/test_atlas.py runs every rebuilt case through `torchdoctor check --facts`.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from torchdoctor.safeio import atomic_write

ROOT = Path(__file__).resolve().parent.parent
THREADS = ROOT / "docs" / "atlas" / "threads.jsonl"
COVERAGE = ROOT / "docs" / "atlas" / "coverage.json"
PAGE = ROOT / "docs" / "atlas.md"
BEGIN, END = "<!-- atlas:begin (scripts/atlas.py --write) -->", "<!-- atlas:end -->"
FIELDS = ("url", "repo", "title", "area", "symptom", "cause", "fix", "settled_by")
FIELDS += ("facts_needed", "visible", "class", "query")
VISIBLE = ("machine", "paste", "not-visible")


def threads() -> list[dict]:
    return [json.loads(line) for line in THREADS.read_text().splitlines() if line.strip()]


def coverage() -> dict[str, dict]:
    return json.loads(COVERAGE.read_text())


def _step(node: Any, key: str) -> Any:
    return node[int(key)] if isinstance(node, list) else node.setdefault(key, {})


def case_facts(case: dict) -> str:
    """The rebuilt machine of a case as the text `check --facts` reads: a recorded file as it
    is (a facts JSON or a pasted report), or a base facts file with `set` applied: each key a
    dotted path into it (integer steps index lists, missing tables created), each value the
    value the thread's machine had there."""
    text = (ROOT / (case.get("facts") or case["base"])).read_text()
    if "set" not in case:
        return text
    facts = json.loads(text)
    for path, value in case["set"].items():
        *parents, last = path.split(".")
        node = facts
        for key in parents:
            node = _step(node, key)
        if isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value
    return json.dumps(facts, indent=1)


def detected(entry: dict) -> str:
    """'live + paste', 'live', 'paste' or 'no'."""
    ways = [w for w in ("live", "paste") if entry.get(w)]
    return " + ".join(ways) or "no"


def share_covered(rows: list[dict], cov: dict[str, dict]) -> tuple[int, int]:
    """(threads whose cause is visible from the machine and whose class torchdoctor detects
    live, all threads whose cause is visible from the machine)."""
    visible = [r for r in rows if r["visible"] == "machine"]
    covered = [r for r in visible if cov.get(r["class"], {}).get("live")]
    return len(covered), len(visible)


def tables(rows: list[dict], cov: dict[str, dict]) -> str:
    by_class = Counter(r["class"] for r in rows)
    seen = Counter((r["class"], r["visible"]) for r in rows)
    total = len(rows)
    out = [
        "| # | class | threads | share | visible from the machine | detected | finding ids / why not |",
        "|---|---|---|---|---|---|---|",
    ]
    for rank, (cls, n) in enumerate(sorted(by_class.items(), key=lambda kv: (-kv[1], kv[0])), 1):
        entry = cov.get(cls, {})
        how = ", ".join(f"`{f}`" for f in entry.get("findings", [])) or entry.get("why_not", "")
        machine = seen[(cls, "machine")]
        out.append(
            f"| {rank} | {cls} | {n} | {100 * n / total:.1f} % | {machine} of {n} "
            f"| {detected(entry)} | {how} |"
        )
    got, visible = share_covered(rows, cov)
    areas = Counter(r["area"] for r in rows)
    out += [
        "",
        f"{total} threads in {len(by_class)} classes from {len({r['repo'] for r in rows})} "
        f"repositories. Threads whose cause is visible from the machine: {visible}; of those, "
        f"{got} ({100 * got / max(visible, 1):.0f} %) are in a class torchdoctor detects live.",
        "",
        "| area | threads |",
        "|---|---|",
        *(f"| {a} | {n} |" for a, n in sorted(areas.items(), key=lambda kv: (-kv[1], kv[0]))),
    ]
    return "\n".join(out) + "\n"


def page_with(text: str, body: str) -> str:
    head, _, rest = text.partition(BEGIN)
    _, _, tail = rest.partition(END)
    return f"{head}{BEGIN}\n{body}{END}{tail}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args(argv)
    body = tables(threads(), coverage())
    if not (args.write or args.check):
        sys.stdout.write(body)
        return 0
    text = PAGE.read_text()
    new = page_with(text, body)
    if args.check:
        if new != text:
            print("docs/atlas.md is out of date: run python scripts/atlas.py --write")
            return 1
        return 0
    atomic_write(str(PAGE), new)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The human report: a mark, the id and the summary per check; remedies under problems."""

from __future__ import annotations

from typing import Any

from tabulate import tabulate

from ..evidence import because
from .common import MARKS, closing, examined, flatten, headline, smoke_rows

COLORS = {"pass": "32", "warn": "33", "fail": "31", "error": "35", "skip": "2"}


def _paint(text: str, status: str, color: bool) -> str:
    return f"\033[{COLORS[status]}m{text}\033[0m" if color else text


def render(doc: dict[str, Any], verbose: bool = False, color: bool = False) -> str:
    width = max((len(c["id"]) for c in doc["checks"]), default=10)
    lines = [headline(doc), *filter(None, [examined(doc)]), ""]
    for c in doc["checks"]:
        mark = _paint(MARKS[c["status"]], c["status"], color)
        lines.append(f" {mark} {c['id']:<{width}}  {c['summary']}")
        if verbose:
            for key, value in flatten(c["details"]):
                lines.append(f"      {key}: {value}")
        if c["status"] in ("warn", "fail", "error") or verbose:
            for r in c["remedies"]:
                lines.append(f"      fix: {r['text']}")
                lines += [f"        $ {cmd}" for cmd in r["commands"]]
                if verbose and r.get("evidence"):
                    lines.append(f"        ({because(r['evidence'])})")
    rows = smoke_rows(doc)
    if rows:
        lines += ["", "Smoke test:", tabulate(rows[1:], rows[0], tablefmt="simple")]
    lines += ["", _paint(closing(doc), doc["status"], color)]
    if not verbose and any(c["status"] != "pass" for c in doc["checks"]):
        lines.append("(details with -v; machine-readable with --json)")
    return "\n".join(lines) + "\n"

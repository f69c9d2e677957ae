"""Markdown for a bug report or a CI step summary: verdicts first, then the key facts."""

from __future__ import annotations

from typing import Any

from tabulate import tabulate

from ..evidence import because
from . import markdown_comment
from .common import MARKS, closing, examined, flatten, headline


def render(doc: dict[str, Any], verbose: bool = False, color: bool = False) -> str:
    # A pasted report is diagnosed for its reporter: a comment to post, not a machine's table.
    if doc.get("facts", {}).get("collected", {}).get("source") == "collect_env" and not verbose:
        return markdown_comment.render(doc)
    rows = [
        [MARKS[c["status"]], f"`{c['id']}`", c["status"], c["summary"].replace("|", "\\|")]
        for c in doc["checks"]
    ]
    out = [
        f"### {headline(doc)}",
        "",
        *[f"{line}\n" for line in filter(None, [examined(doc)])],
        tabulate(rows, ["", "check", "status", "summary"], tablefmt="github"),
        "",
    ]
    problems = [c for c in doc["checks"] if c["status"] in ("warn", "fail", "error")]
    if problems:
        out.append("#### Fixes")
        for c in problems:
            for r in c["remedies"]:
                why = f" _({because(r['evidence'])})_" if r.get("evidence") else ""
                out.append(f"- **{c['id']}**: {r['text']}{why}")
                if r["commands"]:
                    out += ["  ```sh", *[f"  {cmd}" for cmd in r["commands"]], "  ```"]
        out.append("")
    out += ["<details><summary>Details</summary>", ""]
    for c in doc["checks"]:
        rows = flatten(c["details"]) if verbose else flatten(c["details"])[:12]
        if rows:
            out += [f"**{c['id']}**", "", tabulate(rows, ["key", "value"], tablefmt="github"), ""]
    out += ["</details>", "", f"**{closing(doc)}**", ""]
    return "\n".join(out)

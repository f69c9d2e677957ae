"""fix's text report, from its JSON document (it decides nothing): the plan — steps with their
commands, evidence and version changes, then what is left as advice — and then the result."""

from __future__ import annotations

import shlex
from typing import Any

MARKS = {"note": "✓", "warning": "!", "error": "✗"}
RESULT_IDS = (
    "fix.not-applied",
    "fix.command-failed",
    "fix.interrupted",
    "fix.verified",
    "fix.verify-failed",
    "fix.restored",
    "fix.restore-incomplete",
)


def _change(c: dict[str, Any]) -> str:
    if c["after"] is None:
        return f"{c['name']} {c['before']} → removed"
    if c["before"] == c["after"]:
        return f"{c['name']} {c['after']} (reinstalled, same version)"
    return f"{c['name']} {c['before'] or '(not installed)'} → {c['after']}"


def _step(n: int, step: dict[str, Any], verbose: bool) -> list[str]:
    lines = [
        f" {n}. {' + '.join(step['findings'])}: {step['message']}",
        f"      fix: {step['remedy']}",
    ]
    if step["evidence"]:
        lines.append(f"      evidence: {', '.join(step['evidence'])}")
    lines += [f"      $ {shlex.join(argv)}" for argv in step["commands"]]
    lines += [f"        {_change(c)}" for c in step["changes"]] or ["        (no package changes)"]
    lines += [
        f"      note: {note}" for note in step["notes"] if verbose or "alternative" not in note
    ]
    return lines


def _advice(a: dict[str, Any]) -> list[str]:
    lines = [f" - {a['finding']}: {a['message']}", f"      not treated: {a['why']}"]
    if a["remedy"]:
        lines.append(f"      advice: {a['remedy']}")
    lines += [f"        $ {c}" for c in a["commands"]]
    return lines


def render_plan(doc: dict[str, Any], verbose: bool = False) -> str:
    plan = doc.get("plan")
    if not plan:
        return ""
    lines = [f"torchdoctor fix — {plan['python']} ({plan['manager']})", ""]
    if plan["refused"]:
        lines += [f"✗ Nothing will run here: {plan['refused']}.", ""]
    if plan["steps"]:
        lines.append("Plan:")
        for n, step in enumerate(plan["steps"], 1):
            lines += _step(n, step, verbose)
        lines.append("")
    elif not plan["refused"] and plan["advice"]:
        lines += ["Nothing fix can treat: no finding has a remedy it may run.", ""]
    elif not plan["refused"]:
        lines += ["Nothing to treat: the diagnosis reports no warning or error.", ""]
    if plan["advice"]:
        lines.append("Not touched (advice only):")
        for a in plan["advice"]:
            lines += _advice(a)
        lines.append("")
    return "\n".join(lines) + ("\n" if lines else "")


def render_result(doc: dict[str, Any], verbose: bool = False) -> str:
    lines = []
    for f in doc["findings"]:
        if f["id"] not in RESULT_IDS:
            continue
        lines.append(f" {MARKS[f['level']]} {f['id']}: {f['message']}")
        for r in f["remedies"]:
            lines += [f"      $ {c}" for c in r["commands"]]
        if verbose or f["id"] in ("fix.command-failed", "fix.restore-incomplete"):
            tail = (f["details"].get("output_tail") or "").strip().splitlines()[-8:]
            lines += [f"      | {t}" for t in tail]
    if doc.get("record"):
        lines.append(f"Undo record: {doc['record']}")
    lines.append(f"{doc['state'].upper()} (exit code {doc['summary']['exit_code']})")
    return "\n".join(lines) + "\n"


def render(doc: dict[str, Any], verbose: bool = False, color: bool = False) -> str:
    return render_plan(doc, verbose) + render_result(doc, verbose)

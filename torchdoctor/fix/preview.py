"""What each step would change, from the installer itself before anything runs: pip's
``install --dry-run --report -`` (the JSON installation report) or conda's ``--dry-run --json``.
A step the installer cannot resolve (no such build on the index) becomes advice with its error."""

from __future__ import annotations

import json
from typing import Any

from ..check.requirements import normalise
from . import proc
from .commands import PackageCommand, index_urls
from .plan import Change, Plan, Step

DRY_RUN_TIMEOUT_S = 300.0


def pip_changes(report: dict[str, Any], before: dict[str, str]) -> list[Change]:
    """The installs a pip installation report lists, each with the version it replaces."""
    out = []
    for item in report.get("install") or []:
        meta = item.get("metadata") or {}
        name = normalise(str(meta.get("name", "")))
        url = (item.get("download_info") or {}).get("url")
        out.append(Change(name, before.get(name), str(meta.get("version")), url))
    return out


def conda_changes(report: dict[str, Any]) -> list[Change]:
    """conda's dry-run JSON: UNLINK (what goes) and LINK (what comes), paired by name."""
    actions = report.get("actions") or {}
    gone = {p.get("name"): p for p in actions.get("UNLINK") or [] if isinstance(p, dict)}
    come = {p.get("name"): p for p in actions.get("LINK") or [] if isinstance(p, dict)}

    def label(p: dict[str, Any] | None) -> str | None:
        return f"{p.get('version')}={p.get('build_string') or p.get('build')}" if p else None

    return [
        Change(str(n), label(gone.get(n)), label(come.get(n)), (come.get(n) or {}).get("channel"))
        for n in sorted(set(gone) | set(come), key=str)
    ]


def changes_of(cmd: PackageCommand, before: dict[str, str]) -> list[Change] | str:
    """The changes ``cmd`` would make, or why its dry run failed."""
    if cmd.tool == "pip" and cmd.action == "uninstall":
        return [Change(n, before[n], None) for n in cmd.names if n in before]
    extra = (
        ["--dry-run", "--report", "-", "--quiet"] if cmd.tool == "pip" else ["--dry-run", "--json"]
    )
    ran = proc.run([*cmd.argv, *extra], DRY_RUN_TIMEOUT_S)
    if not ran.ok:
        return f"`{cmd.text()}` --dry-run {ran.why()}"
    try:
        report = json.loads(ran.stdout)
    except ValueError:
        return f"the dry run of `{cmd.text()}` printed no JSON report"
    if not isinstance(report, dict):
        return f"the dry run of `{cmd.text()}` printed no JSON report"
    if cmd.tool == "conda":
        return conda_changes(report)
    changes = pip_changes(report, before)
    return _elsewhere(cmd, changes) or changes


FAMILY = ("torch", "torchvision", "torchaudio", "torchtext")


def _elsewhere(cmd: PackageCommand, changes: list[Change]) -> str | None:
    """A torch-family build pip would take from outside the indexes the command names: the
    environment's pip configuration adds one (``extra-index-url``, ``find-links``), and there pip
    may find another variant (PyPI's Linux torchvision is a CUDA build)."""
    named = [u.rstrip("/") for u in index_urls(cmd)]
    if not named:
        return None
    for c in changes:
        if c.name in FAMILY and c.source and not any(c.source.startswith(u + "/") for u in named):
            return (
                f"pip would take {c.name} {c.after} from {c.source}, not from {' or '.join(named)}: "
                "this environment's pip configuration (pip config list: extra-index-url, "
                "find-links) adds an index, and the build there may be another variant"
            )
    return None


def preview(plan: Plan, before: dict[str, str]) -> None:
    """Fill each step's changes; a step whose dry run fails becomes advice."""
    kept: list[Step] = []
    for step in plan.steps:
        why = ""
        for cmd in step.commands:
            changes = changes_of(cmd, before)
            if isinstance(changes, str):
                why = changes
                break
            step.changes += changes
        if why:
            plan.advice.append(step.as_advice(f"the installer cannot do it: {why}"))
        else:
            kept.append(step)
    plan.steps = kept

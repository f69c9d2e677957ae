"""The plan: which findings fix can treat, with which commands, and what it leaves as advice.

A finding is treated with its first remedy whose every command fix may run (commands.classify):
a package install or removal in the examined environment, and the closing verify step. Its other
remedies are alternatives, named in the plan. A finding with no such remedy is advice, with the
reason. Nothing is treated when the environment forbids it: an externally managed Python (PEP
668), site-packages this user cannot write, pip that cannot be asked, torchdoctor's own tool
environment.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from typing import Any

from ..report.findings import Finding
from . import commands as cmds
from .inventory import Inventory

TORCH_FAMILY = ("torch", "torchvision", "torchaudio", "torchtext")


@dataclass
class Change:
    name: str
    before: str | None  # None: not installed
    after: str | None  # None: removed
    source: str | None = None  # where the new build comes from (pip's dry run)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "before": self.before,
            "after": self.after,
            "source": self.source,
        }


@dataclass
class Step:
    findings: list[str]
    message: str
    text: str
    evidence: list[str]
    commands: list[cmds.PackageCommand]
    notes: list[str] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "findings": self.findings,
            "message": self.message,
            "remedy": self.text,
            "evidence": self.evidence,
            "commands": [list(c.argv) for c in self.commands],
            "changes": [c.to_dict() for c in self.changes],
            "notes": self.notes,
        }

    def as_advice(self, why: str) -> Advice:
        """This step left to the user: its commands printed, with why fix does not run them."""
        return Advice(
            self.findings[0],
            self.message,
            self.text,
            [c.text() for c in self.commands],
            why,
            self.evidence,
        )


@dataclass
class Advice:
    finding: str
    message: str
    text: str
    commands: list[str]
    why: str
    evidence: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "finding": self.finding,
            "message": self.message,
            "remedy": self.text,
            "commands": self.commands,
            "why": self.why,
            "evidence": self.evidence,
        }


@dataclass
class Plan:
    python: str
    prefix: str
    manager: str  # pip | conda
    steps: list[Step] = field(default_factory=list)
    advice: list[Advice] = field(default_factory=list)
    refused: str = ""  # why nothing may run in this environment
    findings: list[Finding] = field(default_factory=list)  # the diagnosis's, after --only
    inventory: Inventory | None = None  # the environment before: what the undo record holds

    @property
    def targets(self) -> list[str]:
        return [f for s in self.steps for f in s.findings]

    def to_dict(self) -> dict[str, Any]:
        return {
            "python": self.python,
            "prefix": self.prefix,
            "manager": self.manager,
            "refused": self.refused or None,
            "steps": [s.to_dict() for s in self.steps],
            "advice": [a.to_dict() for a in self.advice],
        }


def refusal(facts: Any, inv: Inventory) -> str:
    """Why no command may run in the examined environment; empty when they may."""
    platform = facts.platform
    if os.name != "posix":
        return "fix runs commands on Linux and macOS only; the plan is advice here"
    if platform.externally_managed:
        return (
            f"this Python is externally managed (PEP 668, {platform.externally_managed}): pip "
            "refuses to install into it, and fix will not work around that. Make a virtual "
            "environment from it and install there (the commands below)"
        )
    own = os.path.abspath(sys.prefix)
    if os.path.abspath(inv.prefix) == own and _tool_env(own):
        return (
            f"{inv.prefix} is torchdoctor's own pipx/uv environment, not yours: name yours with "
            "--python"
        )
    if inv.error:
        return f"the environment's packages cannot be listed, so no undo record can be made: {inv.error}"
    if blocked := inv.unwritable():
        return (
            f"{blocked[0]} cannot be written by this user (read-only, or owned by another user): "
            "fix changes nothing it cannot also undo"
        )
    return ""


def _tool_env(prefix: str) -> bool:
    from ..check.interpreter import TOOL_ENV_MARKERS

    return any(os.path.exists(os.path.join(prefix, m)) for m in TOOL_ENV_MARKERS)


def evidence_of(remedy: dict[str, Any]) -> list[str]:
    return [str(e) for e in remedy.get("evidence") or ()]


def _classified(remedy: dict[str, Any], python: str, conda_prefix: str | None):
    """(the commands fix may run, the first reason one of them is advice)."""
    runnable, why = [], ""
    for command in remedy.get("commands") or ():
        c = cmds.classify(command, python, conda_prefix)
        if isinstance(c, cmds.PackageCommand):
            runnable.append(c)
        elif isinstance(c, cmds.NotRun) and not why:
            why = f"`{c.command}`: {c.why}"
    if not runnable and not why:
        why = "no command (prose only)"
    if not evidence_of(remedy) and not why:  # issue 25: a remedy rests on recorded facts
        why = "rests on no recorded fact (no evidence), so it is not applied"
    return runnable, why


def choose(finding: Finding, python: str, conda_prefix: str | None) -> Step | Advice:
    """A step with the finding's first runnable remedy, or advice saying why there is none."""
    first_why, alternatives = "", []
    for remedy in finding.remedies:
        runnable, why = _classified(remedy, python, conda_prefix)
        if runnable and not why:
            step = Step(
                [finding.id], finding.message, remedy.get("text", ""), evidence_of(remedy), runnable
            )
            step.notes += [f"alternative, not applied: {a}" for a in alternatives]
            return step
        first_why = first_why or why
        alternatives.append(remedy.get("text", ""))
    first = finding.remedies[0] if finding.remedies else {}
    return Advice(
        finding.id,
        finding.message,
        first.get("text", ""),
        list(first.get("commands") or ()),
        first_why or "torchdoctor knows no remedy for it",
        evidence_of(first),
    )

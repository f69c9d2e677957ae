"""What fix did, as findings in the one envelope (``fix.*`` ids, a page each under docs/fix/),
and its exit code (the README's table).

Exit codes: 0 treated and verified (or nothing to treat), 1 a finding at error level remains (a
plan not applied, advice, a refusal), 4 a command or the verification failed and the environment
was restored exactly, 5 the environment could not be restored exactly (``pip freeze`` differs
from the record: the difference is listed), 130/143 interrupted (and restored exactly).
"""

from __future__ import annotations

import shlex
import signal
from dataclasses import dataclass, field
from typing import Any

from ..report.docs import url
from ..report.findings import Finding, envelope, exit_code
from .apply import Applied
from .plan import Advice, Plan, Step
from .restore import Restored
from .verify import Verified

EXIT_RESTORED = 4
EXIT_NOT_RESTORED = 5
IDS = {
    "fix.step": "a step of the plan: the findings it treats, its commands and what they change",
    "fix.advice": "a finding fix leaves to you, and why",
    "fix.refused": "the environment forbids changes fix could undo (PEP 668, read-only, …)",
    "fix.not-applied": "a plan that was shown and not run (--dry-run, no --yes, declined)",
    "fix.verified": "the commands ran and a fresh probe no longer reports the findings",
    "fix.command-failed": "a command of the plan failed",
    "fix.verify-failed": "the commands ran but the findings remain or new ones fail",
    "fix.interrupted": "SIGINT or SIGTERM while the environment was being changed",
    "fix.restored": "the environment was put back as recorded (pip freeze equal)",
    "fix.restore-incomplete": "the environment differs from the record after a restore",
}


def doc(finding_id: str) -> str:
    return url(f"fix/{finding_id}.md")


def _finding(
    fid: str, level: str, message: str, remedies=(), details: dict[str, Any] | None = None
) -> Finding:
    return Finding(fid, level, message, "fix", list(remedies), details or {}, doc(fid))


@dataclass
class Outcome:
    plan: Plan | None = None
    state: str = "planned"  # planned | not-applied | verified | failed | interrupted | undone
    why_not_applied: str = ""
    record_path: str | None = None
    applied: Applied | None = None
    verified: Verified | None = None
    restored: Restored | None = None
    stopped_by: int | None = None
    source_levels: dict[str, str] = field(default_factory=dict)  # diagnosis finding id -> level
    undo_commands: list[list[str]] = field(default_factory=list)  # --undo: what it runs

    def _step(self, step: Step) -> Finding:
        done = self.state == "verified"
        level = (
            "note"
            if done
            else max((self.source_levels.get(f, "warning") for f in step.findings), key=_rank)
        )
        moves = ", ".join(_change(c) for c in step.changes) or "no package changes"
        return _finding(
            "fix.step", level, f"{' + '.join(step.findings)}: {moves}",
            _remedy(step.text, [c.text() for c in step.commands], step.evidence),
            step.to_dict(),
        )  # fmt: skip

    def _advice(self, a: Advice) -> Finding:
        level = self.source_levels.get(a.finding, "warning")
        remedy = _remedy(a.text, a.commands, a.evidence)
        return _finding(
            "fix.advice", level, f"{a.finding}: not treated: {a.why}", remedy, a.to_dict()
        )

    def findings(self) -> list[Finding]:
        out: list[Finding] = []
        if self.plan is not None:
            if self.plan.refused:
                out.append(_finding("fix.refused", "error", self.plan.refused))
            out += [self._step(s) for s in self.plan.steps]
            out += [self._advice(a) for a in self.plan.advice]
        out += self._result()
        return out

    def _result(self) -> list[Finding]:
        out = []
        if self.state == "not-applied" and self.plan and self.plan.steps:
            out.append(_finding("fix.not-applied", "warning", f"plan only: {self.why_not_applied}"))
        if self.state == "not-applied" and self.undo_commands:
            restore = {
                "text": "Restore the environment recorded before the last fix.",
                "commands": [shlex.join(a) for a in self.undo_commands],
            }
            out.append(
                _finding(
                    "fix.not-applied", "error", f"undo not run: {self.why_not_applied}", [restore]
                )
            )
        if self.applied and self.applied.failed:
            failed = self.applied.failed
            out.append(
                _finding("fix.command-failed", "error", f"`{' '.join(failed.argv)}` {failed.why()}",
                         details=failed.to_dict())
            )  # fmt: skip
        if self.stopped_by is not None:
            name = signal.Signals(self.stopped_by).name
            out.append(_finding("fix.interrupted", "error", f"{name} while the fix was running"))
        if self.verified is not None:
            out.append(self._verification())
        if self.restored is not None:
            out.append(self._restoration())
        return out

    def _verification(self) -> Finding:
        v = self.verified
        assert v is not None
        if v.ok:
            gone = ", ".join(self.plan.targets) if self.plan else ""
            undo = (
                f"; undo with `torchdoctor fix --undo --python {self.plan.python}`"
                if self.plan
                else ""
            )
            return _finding("fix.verified", "note", f"gone after the fix: {gone}; nothing new fails{undo}",
                            details=v.to_dict())  # fmt: skip
        parts = []
        if v.remaining:
            parts.append(f"still reported: {', '.join(v.remaining)}")
        if v.new:
            new = ", ".join(f"{i} ({v.messages.get(i, '')})" for i in v.new)
            parts.append(f"failing now, not before: {new}")
        return _finding("fix.verify-failed", "error", "; ".join(parts), details=v.to_dict())

    def _restoration(self) -> Finding:
        r = self.restored
        assert r is not None
        if r.exact and self.state == "undone" and not r.commands:
            return _finding(
                "fix.restored",
                "note",
                "nothing to undo: `pip freeze --all` already equals the record",
            )
        if r.exact:
            return _finding(
                "fix.restored", "warning" if self.state != "undone" else "note",
                "the environment is as recorded before the fix: `pip freeze --all` equals the record",
                details=r.to_dict(),
            )  # fmt: skip
        why = (
            r.error or "; ".join(r.diff[:12]) or next((c.why() for c in r.commands if not c.ok), "")
        )
        return _finding(
            "fix.restore-incomplete", "error",
            f"the environment differs from the record after restoring ({why}); "
            "`torchdoctor fix --undo` tries again",
            details=r.to_dict(),
        )  # fmt: skip

    def exit_code(self) -> int:
        if self.restored is not None and not self.restored.exact:
            return EXIT_NOT_RESTORED
        if self.stopped_by is not None:
            return 128 + self.stopped_by
        if self.state == "failed":
            return EXIT_RESTORED
        return exit_code(self.findings(), "error")

    def to_dict(self) -> dict[str, Any]:
        found = self.findings()
        doc_ = envelope(
            "fix",
            found,
            state=self.state,
            plan=self.plan.to_dict() if self.plan else None,
            record=self.record_path,
            applied=self.applied.to_dict() if self.applied else None,
        )
        doc_["summary"]["exit_code"] = self.exit_code()
        return doc_


def _remedy(text: str, commands: list[str], evidence: list[str]) -> list[dict[str, Any]]:
    """The finding's remedy in the envelope's shape; its evidence (issue 25) where it has some."""
    if not text and not commands:
        return []
    return [
        {
            "text": text or "Run:",
            "commands": commands,
            **({"evidence": evidence} if evidence else {}),
        }
    ]


def _rank(level: str) -> int:
    return ("note", "warning", "error").index(level)


def _change(c) -> str:
    if c.after is None:
        return f"{c.name} {c.before} → removed"
    if c.before == c.after:
        return f"{c.name} {c.after} reinstalled"
    return f"{c.name} {c.before or '(not installed)'} → {c.after}"

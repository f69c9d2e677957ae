"""The unit of work: a check result with remedies, and the report that collects them.

Everything here is plain data so that it serialises to the versioned JSON report unchanged.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from .docs import check_url
from .findings import Finding, Selection, envelope, exit_code, level_rank, split


class Status(str, enum.Enum):
    PASS = "pass"
    WARN = "warn"
    FAIL = "fail"
    SKIP = "skip"
    ERROR = "error"

    @property
    def rank(self) -> int:
        """Severity order for fail levels; `error` counts as `fail`."""
        return {"skip": 0, "pass": 0, "warn": 1, "fail": 2, "error": 2}[self.value]


@dataclass(frozen=True)
class Remedy:
    """A fix: prose for people, and separate shell commands a script can act on."""

    text: str
    commands: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "commands": list(self.commands)}


@dataclass
class Verdict:
    """What a check function returns: no id, no timing; the runner adds those."""

    status: Status
    summary: str
    details: dict[str, Any] = field(default_factory=dict)
    remedies: list[Remedy] = field(default_factory=list)


def verdict(
    status: Status | str,
    summary: str,
    details: dict[str, Any] | None = None,
    remedies: list[Remedy] | None = None,
) -> Verdict:
    return Verdict(Status(status), summary, details or {}, remedies or [])


@dataclass
class CheckResult:
    id: str
    title: str
    status: Status
    summary: str
    details: dict[str, Any] = field(default_factory=dict)
    remedies: list[Remedy] = field(default_factory=list)
    duration_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "status": self.status.value,
            "summary": self.summary,
            "details": self.details,
            "remedies": [r.to_dict() for r in self.remedies],
            "duration_s": round(self.duration_s, 6),
            "doc": check_url(self.id),
        }


LEVEL_OF_STATUS = {Status.WARN: "warning", Status.FAIL: "error", Status.ERROR: "error"}


@dataclass
class Report:
    tool_version: str
    expect: str
    checks: list[CheckResult]
    facts: dict[str, Any]
    fail_on: str = "error"
    selection: Selection = field(default_factory=Selection)
    # Fields of live or pasted facts that did not fit the typed record (read as absent).
    facts_problems: list[str] = field(default_factory=list)

    def all_findings(self) -> list[Finding]:
        """One finding per check that did not pass or skip (its id is the check's)."""
        return [
            Finding(
                id=c.id,
                level=LEVEL_OF_STATUS[c.status],
                message=c.summary,
                subject=c.id,
                remedies=[r.to_dict() for r in c.remedies],
                details={"status": c.status.value, "title": c.title},
                doc=check_url(c.id),
            )
            for c in self.checks
            if c.status in LEVEL_OF_STATUS
        ]

    def findings(self) -> tuple[list[Finding], int]:
        """The findings kept after --select/--ignore, and how many were silenced."""
        return split(self.all_findings(), self.selection)

    @property
    def status(self) -> Status:
        """Overall: the worst of pass/warn/fail over the findings kept (error counts as fail)."""
        kept, _ = self.findings()
        worst = max((level_rank(f.level) for f in kept), default=0)
        return {0: Status.PASS, 1: Status.WARN, 2: Status.FAIL}[worst]

    def summary(self) -> dict[str, int]:
        counts = {s.value: 0 for s in Status}
        for c in self.checks:
            counts[c.status.value] += 1
        return counts

    def exit_code(self) -> int:
        return exit_code(self.findings()[0], self.fail_on)

    def to_dict(self) -> dict[str, Any]:
        kept, silenced = self.findings()
        return envelope(
            "check",
            kept,
            silenced=silenced,
            fail_on=self.fail_on,
            summary_extra=self.summary(),
            status=self.status.value,
            expect=self.expect,
            checks=[c.to_dict() for c in self.checks],
            facts=self.facts,
            **({"facts_problems": self.facts_problems} if self.facts_problems else {}),
        )

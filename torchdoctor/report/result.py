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
    """A fix: prose for people, and separate shell commands a script can act on.

    ``evidence`` names the facts the fix rests on: dotted paths into the facts JSON (integer
    steps index lists), e.g. ``env.CUDA_HOME``, ``nvml.devices.1.name``. A check's remedy with
    no evidence, or evidence that names nothing in the facts, is not offered (docs/remedies.md).
    """

    text: str
    commands: tuple[str, ...] = ()
    evidence: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "commands": list(self.commands), "evidence": list(self.evidence)}


@dataclass
class Problem:
    """One thing a check found wrong. Its finding id is ``<check id>.<code>``, so it can be
    silenced alone (``--ignore container.shm-small``); the codes a check can emit are declared in
    its module's ``FINDINGS`` and documented on its page."""

    code: str
    status: Status
    message: str
    remedies: list[Remedy] = field(default_factory=list)

    def to_dict(self, check_id: str) -> dict[str, Any]:
        return {
            "id": f"{check_id}.{self.code}",
            "status": self.status.value,
            "message": self.message,
            "remedies": [r.to_dict() for r in self.remedies],
        }


@dataclass
class Verdict:
    """What a check function returns: no id, no timing; the runner adds those."""

    status: Status
    summary: str
    details: dict[str, Any] = field(default_factory=dict)
    remedies: list[Remedy] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)


def from_problems(
    problems: list[Problem], details: dict[str, Any], passed: str, prefix: str = ""
) -> Verdict:
    """The verdict of a check that collects problems: the worst status, one summary naming each
    problem, every distinct remedy in order; ``passed`` is the summary when there are none."""
    if not problems:
        return verdict(Status.PASS, passed, details)
    worst = max((p.status for p in problems), key=lambda s: s.rank)
    summary = prefix + "; ".join(p.message for p in problems)
    return Verdict(worst, summary, details, problem_remedies(problems), list(problems))


def problem_remedies(problems: list[Problem]) -> list[Remedy]:
    """A check's remedies are its problems': every distinct one, in order (problems of one kind
    on several devices share their fix, named once)."""
    return list(dict.fromkeys(r for p in problems for r in p.remedies))


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
    problems: list[Problem] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        out = {
            "id": self.id,
            "title": self.title,
            "status": self.status.value,
            "summary": self.summary,
            "details": self.details,
            "remedies": [r.to_dict() for r in self.remedies],
            "duration_s": round(self.duration_s, 6),
            "doc": check_url(self.id),
        }
        if self.problems:
            out["problems"] = [p.to_dict(self.id) for p in self.problems]
        return out

    def findings(self) -> list[Finding]:
        """A finding per problem (``<check id>.<code>``), or one for the check when it collected
        none; nothing for a pass or a skip."""
        if self.status not in LEVEL_OF_STATUS:
            return []
        parts = self.problems or [Problem("", self.status, self.summary, self.remedies)]
        return [
            Finding(
                id=f"{self.id}.{p.code}" if p.code else self.id,
                level=LEVEL_OF_STATUS.get(p.status, "note"),
                message=p.message,
                subject=self.id,
                remedies=[r.to_dict() for r in p.remedies],
                details={"status": p.status.value, "title": self.title},
                doc=check_url(self.id, p.code),
            )
            for p in parts
        ]


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
        """Every finding of every check, before --select/--ignore."""
        return [f for c in self.checks for f in c.findings()]

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

"""The unit of work: a check result with remedies, and the report that collects them.

Everything here is plain data so that it serialises to the versioned JSON report unchanged.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from .docs import check_url


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


SCHEMA_VERSION = 1


@dataclass
class Report:
    tool_version: str
    expect: str
    checks: list[CheckResult]
    facts: dict[str, Any]
    fail_on: str = "fail"

    @property
    def status(self) -> Status:
        """Overall: the worst of pass/warn/fail, with error counted as fail."""
        worst = max((c.status.rank for c in self.checks), default=0)
        return {0: Status.PASS, 1: Status.WARN, 2: Status.FAIL}[worst]

    def summary(self) -> dict[str, int]:
        counts = {s.value: 0 for s in Status}
        for c in self.checks:
            counts[c.status.value] += 1
        return counts

    def exit_code(self) -> int:
        threshold = Status(self.fail_on).rank
        return 1 if any(c.status.rank >= threshold for c in self.checks) else 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "tool": {"name": "torchdoctor", "version": self.tool_version},
            "status": self.status.value,
            "expect": self.expect,
            "summary": self.summary(),
            "checks": [c.to_dict() for c in self.checks],
            "facts": self.facts,
        }

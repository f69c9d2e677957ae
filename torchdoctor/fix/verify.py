"""Did the fix work? A fresh probe of the environment, judged by the same checks: the findings
the plan treated must be gone, and no finding may fail that did not fail before (torch.install
and torch.build are always among the checks run)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from ..check.pipeline import CheckOptions
from ..report.findings import Finding

BASIC = ("torch.install", "torch.build")


@dataclass
class Verified:
    remaining: list[str] = field(default_factory=list)  # treated findings still reported
    new: list[str] = field(default_factory=list)  # failing now, not before
    messages: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.remaining and not self.new

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "remaining": self.remaining,
            "new": self.new,
            "messages": self.messages,
        }


def failing(findings: list[Finding]) -> set[str]:
    return {f.id for f in findings if f.level == "error"}


def verify_options(opts: CheckOptions) -> CheckOptions:
    """The diagnosis's options, with the basic checks back in when --only/--skip left them out."""
    only = [*opts.only, *(b for b in BASIC if opts.only and b not in opts.only)]
    return replace(opts, only=only, skip=[s for s in opts.skip if s not in BASIC])


def judge(after: list[Finding], targets: list[str], failing_before: set[str]) -> Verified:
    ids = {f.id for f in after}
    remaining = [t for t in targets if t in ids]
    new = sorted(failing(after) - failing_before)
    messages = {f.id: f.message for f in after if f.id in set(remaining) | set(new)}
    return Verified(remaining, new, messages)


def verify(
    opts: CheckOptions, python: str, targets: list[str], failing_before: set[str]
) -> Verified:
    from ..check import pipeline

    opts = verify_options(opts)
    report = pipeline.judge(pipeline.gather(opts, python), opts)
    return judge(report.findings()[0], targets, failing_before)

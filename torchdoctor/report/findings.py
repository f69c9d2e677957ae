"""The one findings contract every command reports in.

``check``, ``scan``, ``inspect``, ``audit``, ``audit-export`` and ``dist`` gather different things,
but what they report is the same: findings about a subject. Each JSON report is an envelope
(``schema_version``, ``tool``, ``command``, ``summary``, ``findings``) plus fields of its own,
and every finding has the same core fields, so a CI author learns one contract:

    {"id": "cuda.driver", "level": "error", "message": "...", "subject": "cuda.driver",
     "remedies": [{"text": "...", "commands": ["..."]}], "details": {...}, "doc": "https://..."}

Levels follow SARIF (``error`` > ``warning`` > ``note``); ``--fail-on`` takes a level or
``never`` on every command. Silenced findings are counted, never hidden silently.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..version import __version__

SCHEMA_VERSION = 2
LEVELS = ("note", "warning", "error")
FAIL_ON = ("error", "warning", "note", "never")
# check's vocabulary before schema 2: still accepted on the command line.
FAIL_ON_ALIASES = {"fail": "error", "warn": "warning"}


def level_rank(level: str) -> int:
    return LEVELS.index(level)


def normalise_fail_on(value: str) -> str:
    return FAIL_ON_ALIASES.get(value, value)


@dataclass(frozen=True)
class Finding:
    id: str
    level: str
    message: str
    subject: str
    remedies: Sequence[dict[str, Any]] = ()
    details: dict[str, Any] = field(default_factory=dict)
    doc: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "level": self.level,
            "message": self.message,
            "subject": self.subject,
            "remedies": [dict(r) for r in self.remedies],
            "details": self.details,
        }
        if self.doc:
            out["doc"] = self.doc
        return out


def id_matches(pattern: str, finding_id: str) -> bool:
    """``cuda`` selects ``cuda.driver`` (dotted prefix); ``TD1`` selects ``TD101`` (code prefix)."""
    p, i = pattern.strip(), finding_id
    if not p:
        return False
    if p.upper() == i.upper():
        return True
    if i.startswith(p + "."):
        return True
    return p[-1].isdigit() and i.upper().startswith(p.upper())


@dataclass(frozen=True)
class Selection:
    """``--select``/``--ignore`` and ``[tool.torchdoctor]``: which finding ids are reported."""

    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()

    def keeps(self, finding_id: str) -> bool:
        if self.select and not any(id_matches(p, finding_id) for p in self.select):
            return False
        return not any(id_matches(p, finding_id) for p in self.ignore)

    def merged(self, other: Selection) -> Selection:
        return Selection(self.select + other.select, self.ignore + other.ignore)


def _field(f: Finding | dict[str, Any], name: str) -> Any:
    """Findings arrive as objects or, from a probe child, as their ``to_dict()``."""
    return f[name] if isinstance(f, dict) else getattr(f, name)


def split(findings: Iterable[Any], selection: Selection) -> tuple[list[Any], int]:
    """The findings kept, and how many were silenced."""
    kept, silenced = [], 0
    for f in findings:
        if selection.keeps(_field(f, "id")):
            kept.append(f)
        else:
            silenced += 1
    return kept, silenced


def exit_code(findings: Iterable[Any], fail_on: str) -> int:
    fail_on = normalise_fail_on(fail_on)
    if fail_on == "never":
        return 0
    threshold = level_rank(fail_on)
    return 1 if any(level_rank(_field(f, "level")) >= threshold for f in findings) else 0


def summary(findings: Sequence[Any], silenced: int, fail_on: str) -> dict[str, Any]:
    counts = {level: 0 for level in reversed(LEVELS)}
    for f in findings:
        counts[_field(f, "level")] += 1
    fail_on = normalise_fail_on(fail_on)
    return {
        "findings": counts,
        "silenced": silenced,
        "fail_on": fail_on,
        "exit_code": exit_code(findings, fail_on),
    }


def envelope(
    command: str,
    findings: Sequence[Any],
    *,
    silenced: int = 0,
    fail_on: str = "error",
    summary_extra: dict[str, Any] | None = None,
    **fields: Any,
) -> dict[str, Any]:
    """A report in the shared shape; ``fields`` are the command's own (``checks``, ``facts``…)."""
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "torchdoctor", "version": __version__},
        "command": command,
        "summary": {**(summary_extra or {}), **summary(findings, silenced, fail_on)},
        "findings": [f if isinstance(f, dict) else f.to_dict() for f in findings],
        **fields,
    }

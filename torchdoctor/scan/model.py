"""What a scan produces: findings (rule, place, code, advice) and per-file errors."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..report.docs import scan_rule_url
from .rules import BY_ID


@dataclass(frozen=True)
class Edit:
    """A text replacement for --fix: character offsets into the file's text (end exclusive)."""

    start: int
    end: int
    text: str


@dataclass
class Finding:
    rule: str
    path: str
    line: int  # 1-based
    col: int  # 1-based, in characters
    end_line: int
    end_col: int  # 1-based, exclusive
    code: str  # the offending source line, stripped
    message: str
    fix: str  # advice in words; `edit` is the mechanical rewrite, when there is a safe one
    edit: Edit | None = None
    fix_note: str | None = None  # set by --fix/--diff: why its edit was not made
    confidence: str = "high"  # confidence.CONFIDENCES
    grounds: str | None = None  # what the confidence rests on, when not the rule alone
    # a fact about the rest of the project that decides the finding (project.py); resolved
    # after every file is analysed, never cached as decided
    needs: tuple[str, ...] | None = None
    # set where the code or the tree itself proves the finding (a committed file's storages, a
    # CUDA call given the file's own CPU fallback): the confidence of its class, measured where
    # no such proof was at hand, does not apply
    proven: bool = False

    @property
    def level(self) -> str:
        return BY_ID[self.rule].level

    @property
    def name(self) -> str:
        return BY_ID[self.rule].name

    def to_dict(self) -> dict[str, Any]:
        """The shared finding (torchdoctor.report.findings): location and code live in ``details``."""
        return {
            "id": self.rule,
            "level": self.level,
            "message": self.message,
            "subject": f"{self.path}:{self.line}:{self.col}",
            "confidence": self.confidence,
            "remedies": [{"text": self.fix, "commands": []}],
            "details": {
                "confidence_grounds": self.grounds,
                "name": self.name,
                "path": self.path,
                "line": self.line,
                "col": self.col,
                "end_line": self.end_line,
                "end_col": self.end_col,
                "code": self.code,
                "autofix": self.edit is not None,
                "fix_note": self.fix_note,
            },
            "doc": scan_rule_url(self.rule),
        }


@dataclass
class FileError:
    path: str
    message: str
    line: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "message": self.message, "line": self.line}


@dataclass
class ScanResult:
    findings: list[Finding] = field(default_factory=list)
    errors: list[FileError] = field(default_factory=list)
    files_scanned: int = 0
    files_skipped: int = 0  # test files left out by default
    lines_scanned: int = 0
    suppressed: int = 0
    below_confidence: int = 0  # findings under the confidence asked for, not shown
    below_confidence_portable: int = 0  # of those, the ones --portable would show
    confidence: str = "medium"  # the lowest confidence shown
    cache_hits: int = 0  # files whose record came from the cache
    fixed: list[Finding] = field(default_factory=list)
    vendored: dict[str, str] = field(default_factory=dict)  # scanned file: its vendored folder
    fail_on_errors: bool = False  # --fail-on-errors: a file that could not be scanned fails

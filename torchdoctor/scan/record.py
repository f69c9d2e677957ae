"""What the scan knows of one file once it is analysed: its findings (suppressions applied,
before the project's facts and the confidence floor), what it tells the rest of the project
(project.py), or why it could not be scanned. A record depends on the file's bytes, the scan's
options, its project's configuration and torchdoctor's code only: that is what the cache keys
it by, and why it can be stored (as plain JSON, never pickled)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

from .model import Edit, FileError, Finding
from .project import FileSummary


@dataclass
class FileRecord:
    path: str
    digest: str = ""  # of the bytes analysed (cache.py), "" when they could not be read
    findings: list[Finding] = field(default_factory=list)
    suppressed: int = 0
    lines: int = 0
    summary: FileSummary = field(default_factory=FileSummary)
    error: FileError | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "digest": self.digest,
            "findings": [_finding_json(f) for f in self.findings],
            "suppressed": self.suppressed,
            "lines": self.lines,
            "summary": self.summary.to_json(),
            "error": None if self.error is None else asdict(self.error),
        }

    @classmethod
    def from_json(cls, path: str, doc: dict[str, Any]) -> FileRecord:
        """Raises KeyError/TypeError/ValueError on a document it did not write."""
        error = doc["error"]
        return cls(
            path=path,
            digest=str(doc["digest"]),
            findings=[_finding(path, f) for f in doc["findings"]],
            suppressed=int(doc["suppressed"]),
            lines=int(doc["lines"]),
            summary=FileSummary.from_json(doc["summary"]),
            error=None if error is None else FileError(path, str(error["message"]), error["line"]),
        )


_STORED = [f.name for f in fields(Finding) if f.name not in ("path", "edit", "needs")]


def _finding_json(f: Finding) -> dict[str, Any]:
    doc = {name: getattr(f, name) for name in _STORED}
    doc["edit"] = None if f.edit is None else [f.edit.start, f.edit.end, f.edit.text]
    doc["needs"] = None if f.needs is None else list(f.needs)
    return doc


def _finding(path: str, doc: dict[str, Any]) -> Finding:
    edit, needs = doc["edit"], doc["needs"]
    values = {name: doc[name] for name in _STORED}
    return Finding(
        path=path,
        edit=None if edit is None else Edit(int(edit[0]), int(edit[1]), str(edit[2])),
        needs=None if needs is None else tuple(str(n) for n in needs),
        **values,
    )

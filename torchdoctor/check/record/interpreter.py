"""Which Python was examined, and the other candidates found."""

from __future__ import annotations

from torchdoctor.typed_json import Record

from .base import Str, record


@record
class Candidate(Record):
    source: Str
    python: Str
    torch: Str
    error: Str  # it did not answer (why)


@record
class Interpreter(Record):
    """Which Python was examined, and why that one."""

    python: Str
    source: Str
    reason: Str
    own: Str
    note: Str
    candidates: list[Candidate]

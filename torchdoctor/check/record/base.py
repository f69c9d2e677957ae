"""Shared field types of the facts record, and the parts every other part uses."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from torchdoctor.typed_json import Count, Record, Version

record = dataclass(frozen=True, kw_only=True)

Str = str | None
Int = int | None
Num = float | None  # JSON has one number type: an int is a number too
Bool = bool | None
MajorMinor = Annotated[str | None, Version(r"\d+\.\d+", "12.4")]  # CUDA versions checks compare
Capability = Annotated[list[int], Count(2)]  # [major, minor]


@record
class Collected(Record):
    """Who collected these facts, when, and from what."""

    at: Str
    torchdoctor_version: Str
    python: Str
    duration_s: Num
    constructed_by: Str
    source: Str  # "collect_env" when parsed from a pasted report
    carries: list[str] | None  # the fact paths a pasted report carries (None: a full gather)


@record
class ProbeError(Record):
    type: Str
    message: Str
    traceback: Str

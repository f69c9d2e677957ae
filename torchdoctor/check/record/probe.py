"""How the torch probe ran: status, stage, exit, timing."""

from __future__ import annotations

from torchdoctor.typed_json import Record

from .base import Int, Num, Str, record


@record
class TorchProbe(Record):
    status: Str
    message: Str
    unfinished_stage: Str
    phase: Str
    returncode: Int
    signal: Str
    stderr_tail: Str
    garbage_lines: Int
    duration_s: Num
    stage_durations: dict[str, float]


@record
class Probe(Record):
    torch: TorchProbe

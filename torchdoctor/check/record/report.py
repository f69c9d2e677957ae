"""What a pasted report says beyond collect_env's fields: torch's own words around it."""

from __future__ import annotations

from typing import Annotated

from torchdoctor.typed_json import Record, Required

from .base import Int, Str, record


@record
class ReportEvidence(Record):
    """One line of torch's own words pasted with a report (paste_evidence), and what it says."""

    kind: Annotated[str, Required]
    line: Str
    at: Int  # line number in the pasted text
    source: Str  # on a live check: the fact the line was read from (torch.cuda.warnings.0)
    device: Str
    capability: list[int]
    arch_list: list[str]
    driver_cuda: Str  # the CUDA version the driver supports, from "found version 10010"
    library: Str  # the library a loader error names (its path as pasted)
    symbol: Str  # the symbol or symbol version the loader could not find
    operator: Str
    error: Str
    code: Int
    macos_floor: Str
    torch_cuda: Str
    companion_cuda: Str


@record
class PastedReport(Record):
    """What a pasted report says beyond collect_env's fields."""

    evidence: list[ReportEvidence]

"""Compiled extensions read from their files (probes/extension_links.py): which of them link
against torch functions the installed torch does not define."""

from __future__ import annotations

from torchdoctor.typed_json import Record

from .base import Bool, Int, Str, record


@record
class LinkedExtension(Record):
    """One extension library whose links torch's libraries do not satisfy."""

    path: Str
    needs_missing: list[str]  # torch libraries it needs that torch/lib does not have
    missing: list[str]  # the first few torch symbols it needs that torch does not define
    missing_count: Int


@record
class CompiledExtensions(Record):
    """Every ``*.so`` under the import path and the working directory that links to torch."""

    status: Str  # ok, skipped (torch's lib directory not found), error, timeout
    error: Str
    torch_lib: Str
    scanned: Int  # extensions that link to torch, all judged
    truncated: Bool  # the search stopped at its budget (entries, files or time)
    mismatched: list[LinkedExtension]

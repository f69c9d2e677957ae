"""Render a scan: human text grouped by file, and the shared JSON envelope (torchdoctor.report.findings)."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from ..report.docs import scan_rule_url
from ..report.findings import SCHEMA_VERSION
from ..version import __version__
from .model import ScanResult
from .rules import LEVELS, RULES, level_rank


def counts(result: ScanResult) -> dict[str, int]:
    c = Counter(f.level for f in result.findings)
    return {level: c.get(level, 0) for level in reversed(LEVELS)}


def exit_code(result: ScanResult, fail_on: str) -> int:
    if result.fail_on_errors and result.errors:
        return 1
    if fail_on == "never":
        return 0
    floor = level_rank(fail_on)
    return int(any(level_rank(f.level) >= floor for f in result.findings))


def to_dict(result: ScanResult, fail_on: str) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "torchdoctor", "version": __version__},
        "command": "scan",
        "summary": {
            "files_scanned": result.files_scanned,
            "files_skipped_as_tests": result.files_skipped,
            "lines_scanned": result.lines_scanned,
            "findings": counts(result),
            "silenced": result.suppressed,
            "confidence": result.confidence,
            "below_confidence": result.below_confidence,
            "below_confidence_portable": result.below_confidence_portable,
            "fixed": len(result.fixed),
            "file_errors": len(result.errors),
            "fail_on": fail_on,
            "exit_code": exit_code(result, fail_on),
        },
        "findings": [f.to_dict() for f in result.findings],
        "fixed": [f.to_dict() for f in result.fixed],
        "errors": [e.to_dict() for e in result.errors],
        "rules": [
            {
                "id": r.id,
                "name": r.name,
                "level": r.level,
                "title": r.title,
                "help": r.help,
                "precision": r.precision,
                "doc": scan_rule_url(r.id),
            }
            for r in RULES
        ],
    }


def render_json(result: ScanResult, fail_on: str) -> str:
    return json.dumps(to_dict(result, fail_on), indent=2) + "\n"


_MARK = {"error": "✗", "warning": "!", "note": "·"}


def render_text(result: ScanResult, fail_on: str) -> str:
    out: list[str] = []
    by_file: dict[str, list] = {}
    for f in result.findings:
        by_file.setdefault(f.path, []).append(f)
    for path, findings in by_file.items():
        out.append(path)
        for f in findings:
            head = f"{_MARK[f.level]} {f.rule} {f.level} ({f.confidence} confidence)"
            out.append(f"  {f.line}:{f.col}  {head}: {f.message}")
            out.append(f"      {f.code}")
            if f.grounds:
                out.append(f"      confidence: {f.grounds}")
            auto = "  (--fix can apply this)" if f.edit else ""
            out.append(f"      fix: {f.fix}{auto}")
            if f.fix_note:
                out.append(f"      not fixed: {f.fix_note}")
        out.append("")
    for f in result.fixed:
        out.append(f"fixed {f.path}:{f.line}:{f.col} {f.rule} ({f.name})")
    for e in result.errors:
        where = f":{e.line}" if e.line else ""
        out.append(f"could not scan {e.path}{where}: {e.message}")
    c = counts(result)
    parts = [f"{n} {lvl}{'s' if n != 1 else ''}" for lvl, n in c.items()]
    tail = [f"{result.files_scanned} files scanned"]
    if result.files_skipped:
        tail.append(f"{result.files_skipped} test files skipped (--include-tests)")
    if result.suppressed:
        tail.append(f"{result.suppressed} suppressed")
    if result.below_confidence:
        how = "--confidence low"
        if result.below_confidence_portable:
            how += (
                f"; --portable shows {result.below_confidence_portable} of them, for code that"
                " must run without CUDA"
            )
        tail.append(
            f"{result.below_confidence} of lower confidence than {result.confidence} not shown "
            f"({how})"
        )
    if result.fixed:
        tail.append(f"{len(result.fixed)} fixed")
    if result.errors:
        tail.append(f"{len(result.errors)} could not be scanned")
    out.append(f"{', '.join(parts)} ({'; '.join(tail)})")
    return "\n".join(out) + "\n"

"""SARIF 2.1.0 output, the format GitHub code scanning reads to show findings inline.

Locations are relative to the current directory (`%SRCROOT%`) when the file is under it,
which is what a CI job running at the repository root needs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..report.docs import scan_rule_url
from ..version import __version__
from .confidence import SARIF_RANK
from .model import FileError, Finding, ScanResult
from .rules import RULES, Rule

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def _uri(path: str) -> tuple[str, bool]:
    """(uri, relative to %SRCROOT%?)"""
    p = Path(path).resolve()
    try:
        return p.relative_to(Path.cwd().resolve()).as_posix(), True
    except ValueError:
        return p.as_uri(), False


def _location(path: str, region: dict[str, Any] | None) -> dict[str, Any]:
    uri, relative = _uri(path)
    artifact: dict[str, Any] = {"uri": uri}
    if relative:
        artifact["uriBaseId"] = "%SRCROOT%"
    physical: dict[str, Any] = {"artifactLocation": artifact}
    if region:
        physical["region"] = region
    return {"physicalLocation": physical}


def _rule(r: Rule) -> dict[str, Any]:
    return {
        "id": r.id,
        "name": r.name,
        "shortDescription": {"text": r.title},
        "fullDescription": {"text": r.help},
        "help": {"text": r.help},
        "helpUri": scan_rule_url(r.id),
        "defaultConfiguration": {"level": r.level},
        "properties": {"tags": list(r.tags), "precision": r.precision},
    }


def _result(f: Finding, index: dict[str, int]) -> dict[str, Any]:
    region = {
        "startLine": f.line,
        "startColumn": f.col,
        "endLine": f.end_line,
        "endColumn": f.end_col,
        "snippet": {"text": f.code},
    }
    return {
        "ruleId": f.rule,
        "ruleIndex": index[f.rule],
        "level": f.level,
        "rank": SARIF_RANK[f.confidence],
        "message": {"text": f"{f.message}. Fix: {f.fix}"},
        "locations": [_location(f.path, region)],
    }


def _notification(e: FileError) -> dict[str, Any]:
    """A file that could not be scanned: the run still succeeded, and says so."""
    return {
        "level": "error",
        "message": {"text": e.message},
        "locations": [_location(e.path, {"startLine": e.line} if e.line else None)],
    }


def to_sarif(result: ScanResult) -> dict[str, Any]:
    index = {r.id: i for i, r in enumerate(RULES)}
    cwd = Path.cwd().resolve().as_uri()
    run = {
        "tool": {
            "driver": {
                "name": "torchdoctor",
                "version": __version__,
                "rules": [_rule(r) for r in RULES],
            }
        },
        "columnKind": "unicodeCodePoints",  # our columns count characters
        "originalUriBaseIds": {"%SRCROOT%": {"uri": cwd + "/"}},
        "invocations": [
            {
                "executionSuccessful": True,
                "toolExecutionNotifications": [_notification(e) for e in result.errors],
                "workingDirectory": {"uri": cwd},
            }
        ],
        "results": [_result(f, index) for f in result.findings],
    }
    return {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}


def render_sarif(result: ScanResult, fail_on: str) -> str:
    return json.dumps(to_sarif(result), indent=2) + "\n"

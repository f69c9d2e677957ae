"""Markdown, JUnit XML and SARIF for any command's report in the shared findings envelope.

Every command's JSON is one envelope (``findings``: id, level, message, subject, remedies, doc),
so these three work for all of them; a command's text and JSON stay its own. A subject of the
form ``path:line[:col]`` (scan) or the path of an existing file (inspect) becomes a location.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import json_

Renderer = Callable[[dict[str, Any], bool, bool], str]

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
MARK = {"error": "✗", "warning": "!", "note": "·"}
PLACE = re.compile(r"^(?P<path>.+?):(?P<line>\d+)(?::(?P<col>\d+))?$")


def _remedy_lines(finding: dict[str, Any]) -> list[str]:
    lines = []
    for r in finding.get("remedies") or []:
        lines.append(r.get("text", ""))
        lines += [f"  $ {cmd}" for cmd in r.get("commands") or []]
    return lines


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _count(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _title(doc: dict[str, Any]) -> str:
    s = doc.get("summary", {})
    counts = s.get("findings", {})
    parts = [_count(counts.get(level, 0), level) for level in ("error", "warning", "note")]
    return (
        f"torchdoctor {doc.get('command', '')}: {', '.join(parts)}, {s.get('silenced', 0)} silenced"
    )


def render_markdown(doc: dict[str, Any], verbose: bool = False, color: bool = False) -> str:
    lines = [f"## {_title(doc)}", ""]
    findings = doc.get("findings", [])
    if not findings:
        return "\n".join([*lines, "No findings.", ""])
    lines += ["| | id | subject | message |", "|---|---|---|---|"]
    for f in findings:
        ident = f"[`{f['id']}`]({f['doc']})" if f.get("doc") else f"`{f['id']}`"
        lines.append(
            f"| {MARK.get(f['level'], '?')} | {ident} | {_cell(f.get('subject', ''))} | "
            f"{_cell(f['message'])} |"
        )
    fixes = [(f, _remedy_lines(f)) for f in findings]
    if any(lines_ for _, lines_ in fixes):
        lines += ["", "### Remedies", ""]
        for f, remedy in fixes:
            if remedy:
                lines += [
                    f"**`{f['id']}`** ({_cell(f.get('subject', ''))})",
                    "",
                    "```",
                    *remedy,
                    "```",
                    "",
                ]
    return "\n".join(lines).rstrip("\n") + "\n"


def render_junit(doc: dict[str, Any], verbose: bool = False, color: bool = False) -> str:
    """One test case per finding (an error fails, a warning or note is system-out); a report
    without findings is one passing case, so CI shows that the command ran."""
    findings = doc.get("findings", [])
    name = f"torchdoctor {doc.get('command', '')}".strip()
    suite = ET.Element(
        "testsuite",
        name=name,
        tests=str(max(len(findings), 1)),
        failures=str(sum(f["level"] == "error" for f in findings)),
        errors="0",
        skipped="0",
    )
    for f in findings:
        case = ET.SubElement(
            suite, "testcase", classname=name, name=f"{f['id']} {f.get('subject', '')}".strip()
        )
        body = "\n".join([f["message"], *_remedy_lines(f)])
        if f["level"] == "error":
            ET.SubElement(case, "failure", message=f["message"], type=f["id"]).text = body
        else:
            ET.SubElement(case, "system-out").text = f"{f['level'].upper()}: {body}"
    if not findings:
        ET.SubElement(suite, "testcase", classname=name, name="no findings")
    tree = ET.ElementTree(ET.Element("testsuites"))
    tree.getroot().append(suite)
    ET.indent(tree)
    return ET.tostring(tree.getroot(), encoding="unicode", xml_declaration=True) + "\n"


def _location(subject: str) -> dict[str, Any] | None:
    """A SARIF location for `path:line[:col]` or an existing file's path; None otherwise."""
    match = PLACE.match(subject)
    path = match["path"] if match else subject
    if not path or not (match or Path(path).is_file()):
        return None
    p = Path(path).resolve()
    try:
        artifact = {"uri": p.relative_to(Path.cwd().resolve()).as_posix(), "uriBaseId": "%SRCROOT%"}
    except ValueError:
        artifact = {"uri": p.as_uri()}
    physical: dict[str, Any] = {"artifactLocation": artifact}
    if match:
        region = {"startLine": int(match["line"])}
        if match["col"]:
            region["startColumn"] = int(match["col"])
        physical["region"] = region
    return {"physicalLocation": physical}


def to_sarif(doc: dict[str, Any]) -> dict[str, Any]:
    findings = doc.get("findings", [])
    ids = sorted({f["id"] for f in findings})
    rules = []
    for rule_id in ids:
        first = next(f for f in findings if f["id"] == rule_id)
        rule: dict[str, Any] = {"id": rule_id, "shortDescription": {"text": rule_id}}
        if first.get("doc"):
            rule["helpUri"] = first["doc"]
        rules.append(rule)
    results = []
    for f in findings:
        text = " ".join([f["message"], *(r.get("text", "") for r in f.get("remedies") or [])])
        result: dict[str, Any] = {
            "ruleId": f["id"],
            "ruleIndex": ids.index(f["id"]),
            "level": f["level"],
            "message": {"text": text.strip()},
        }
        if where := _location(str(f.get("subject", ""))):
            result["locations"] = [where]
        results.append(result)
    tool = doc.get("tool", {})
    cwd = Path.cwd().resolve().as_uri()
    run = {
        "tool": {
            "driver": {
                "name": tool.get("name", "torchdoctor"),
                "version": tool.get("version", ""),
                "rules": rules,
            }
        },
        "originalUriBaseIds": {"%SRCROOT%": {"uri": cwd + "/"}},
        "invocations": [{"executionSuccessful": True, "workingDirectory": {"uri": cwd}}],
        "results": results,
    }
    return {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}


def render_sarif(doc: dict[str, Any], verbose: bool = False, color: bool = False) -> str:
    return json.dumps(to_sarif(doc), indent=2) + "\n"


ENVELOPE_RENDERERS: dict[str, Renderer] = {
    "json": json_.render,
    "markdown": render_markdown,
    "junit": render_junit,
    "sarif": render_sarif,
}

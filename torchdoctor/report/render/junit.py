"""JUnit XML: one test case per check, so CI systems show checks natively."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any


def _remedies(c: dict[str, Any]) -> str:
    lines = []
    for r in c["remedies"]:
        lines.append(r["text"])
        lines += [f"  $ {cmd}" for cmd in r["commands"]]
    return "\n".join(lines)


def render(doc: dict[str, Any], verbose: bool = False, color: bool = False) -> str:
    checks = doc["checks"]
    suite = ET.Element(
        "testsuite",
        name="torchdoctor",
        tests=str(len(checks)),
        failures=str(sum(c["status"] == "fail" for c in checks)),
        errors=str(sum(c["status"] == "error" for c in checks)),
        skipped=str(sum(c["status"] == "skip" for c in checks)),
        time=f"{sum(c['duration_s'] for c in checks):.6f}",
    )
    for c in checks:
        case = ET.SubElement(
            suite, "testcase", classname="torchdoctor", name=c["id"], time=f"{c['duration_s']:.6f}"
        )
        status = c["status"]
        if status in ("fail", "error"):
            tag = "failure" if status == "fail" else "error"
            ET.SubElement(case, tag, message=c["summary"], type=status).text = _remedies(c)
        elif status == "skip":
            ET.SubElement(case, "skipped", message=c["summary"])
        else:
            out = c["summary"] if status == "pass" else f"WARNING: {c['summary']}\n{_remedies(c)}"
            ET.SubElement(case, "system-out").text = out
    tree = ET.ElementTree(ET.Element("testsuites"))
    tree.getroot().append(suite)
    ET.indent(tree)
    return ET.tostring(tree.getroot(), encoding="unicode", xml_declaration=True) + "\n"

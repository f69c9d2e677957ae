"""A diagnosis of a pasted bug report, short enough to post as an issue comment as it is.

What was read (the torch, OS, Python, GPUs and driver the report names, and torch's own lines
quoted from the paste), what is wrong (each failing or warning finding, with its fix for the
reporter's OS), and what the report did not carry. Rendering decides nothing: every word comes
from the report's findings and facts.
"""

from __future__ import annotations

from typing import Any

from torchdoctor.report.evidence import words

from .common import closing, headline

MARK = {"error": "✗", "warning": "!", "note": "·"}
OS_WORDS = {"Windows": "Windows", "Darwin": "macOS", "Linux": "Linux"}
# Evidence quoted in the comment: enough to show what was read, not the whole traceback.
MAX_QUOTES = 4
MAX_QUOTE = 220


def _read(facts: dict[str, Any]) -> list[str]:
    """One line of what the report says beyond the headline: build, GPUs, driver."""
    torch = facts.get("torch", {})
    build = torch.get("build", {}) or {}
    parts = []
    if build.get("cuda"):
        parts.append(f"CUDA {build['cuda']} build")
    elif build.get("variant"):
        parts.append(f"{build['variant']} build")
    nvml = facts.get("nvml", {}) or {}
    names = [d.get("name") for d in nvml.get("devices", []) if d.get("name")]
    if names:
        counted = {n: names.count(n) for n in names}
        parts.append(", ".join(f"{c}× {n}" if c > 1 else n for n, c in counted.items()))
    if nvml.get("driver_version"):
        parts.append(f"driver {nvml['driver_version']}")
    return [f"**Read:** {' · '.join(parts)}"] if parts else []


def _quotes(facts: dict[str, Any]) -> list[str]:
    evidence = (facts.get("report") or {}).get("evidence") or []
    if not evidence:
        return []
    shown: dict[str, Any] = {}
    for e in evidence:  # one quote per line, however many kinds it carries
        # A paste's line number; on a live check, the fact the line was read from.
        where = f"line {e['at']}" if e.get("at") else f"`{e.get('source') or '?'}`"
        shown.setdefault(words(e.get("line")), where)
    out = ["**torch's own words in the paste (read as evidence):**"]
    for line, where in list(shown.items())[:MAX_QUOTES]:
        out.append(f"> `{line[:MAX_QUOTE]}` ({where})")
    if len(shown) > MAX_QUOTES:
        out.append(f"> … and {len(shown) - MAX_QUOTES} more")
    return out


def _finding(f: dict[str, Any], system: str) -> list[str]:
    out = [f"- {MARK.get(f['level'], '·')} `{f['id']}`: {f['message']}"]
    for r in f.get("remedies", []):
        out.append(f"  - **Fix{f' ({system})' if system else ''}:** {r['text']}")
        commands = [c for c in r.get("commands", []) if not c.startswith("torchdoctor ")]
        if commands:
            out += ["    ```sh", *[f"    {c}" for c in commands], "    ```"]
    return out


def render(doc: dict[str, Any]) -> str:
    facts = doc.get("facts", {})
    system = OS_WORDS.get((facts.get("platform") or {}).get("system") or "", "")
    out = [f"### {headline(doc)}", "", *_read(facts)]
    quotes = _quotes(facts)
    out += ["", *quotes] if quotes else []
    findings = [f for f in doc.get("findings", []) if f.get("level") in ("error", "warning")]
    findings.sort(key=lambda f: f["level"] != "error")
    out += ["", "**What is wrong:**" if findings else "**Nothing wrong in what the report shows.**"]
    for f in findings:
        out += _finding(f, system)
    unread = [
        c["id"] for c in doc.get("checks", []) if c["summary"].startswith("not in the report")
    ]
    if unread:
        out += ["", f"<sub>Not in the report, so not judged: {', '.join(unread)}.</sub>"]
    out += ["", f"<sub>{closing(doc)} — `torchdoctor check --facts -`</sub>", ""]
    return "\n".join(out)

"""Small helpers the human-facing renderers share."""

from __future__ import annotations

from typing import Any

MARKS = {"pass": "✓", "warn": "!", "fail": "✗", "skip": "-", "error": "E"}
WORDS = {
    "pass": "passed",
    "warn": "warnings",
    "fail": "failed",
    "skip": "skipped",
    "error": "errors",
}


def headline(doc: dict[str, Any]) -> str:
    f = doc.get("facts", {})
    report = f.get("collected", {}).get("report")
    if f.get("collected", {}).get("source") == "collect_env" and report:
        return (
            f"torchdoctor {doc['tool']['version']} — from a collect_env report: torch "
            f"{report.get('torch')}, Python {report.get('python') or '?'}, {report.get('os') or '?'} "
            f"(expect: {doc['expect']})"
        )
    p = f.get("platform", {})
    t = f.get("torch", {})
    torch = f"torch {t['version']}" if t.get("version") else f"torch: {t.get('status', 'unknown')}"
    where = f"{p.get('system', '?')} {p.get('machine', '')}".strip()
    py = p.get("python_version", "?")
    return f"torchdoctor {doc['tool']['version']} — {torch}, Python {py}, {where} (expect: {doc['expect']})"


def examined(doc: dict[str, Any]) -> str | None:
    """Which Python the report is about, when it is not simply torchdoctor's own."""
    i = doc.get("facts", {}).get("interpreter") or {}
    if not isinstance(i, dict):
        return None
    if i.get("source") in (None, "self") and not i.get("candidates"):
        return f"Python examined: {i.get('python')}: {i.get('note')}" if i.get("note") else None
    if i.get("source") == "--python":
        return f"Python examined: {i.get('python')} (named with --python)"
    source = "torchdoctor's own" if i.get("source") == "self" else i.get("source")
    line = f"Python examined: {i.get('python')} ({source}): {i.get('reason')}"
    asked = i.get("candidates") if isinstance(i.get("candidates"), list) else []
    others = [c for c in asked if isinstance(c, dict) and c.get("python") != i.get("python")]
    if others:
        line += "; also looked at " + ", ".join(
            f"{c.get('source')} {c.get('python')}" for c in others
        )
    return line


def closing(doc: dict[str, Any]) -> str:
    s = doc["summary"]
    parts = [
        f"{s[k]} {WORDS[k].rstrip('s') if s[k] == 1 and k in ('warn', 'error') else WORDS[k]}"
        for k in ("pass", "warn", "fail", "error", "skip")
        if s.get(k)
    ]
    took = doc.get("facts", {}).get("collected", {}).get("duration_s")
    timing = f" in {took:.1f} s" if isinstance(took, (int, float)) else ""
    return f"{doc['status'].upper()}: {', '.join(parts)}{timing}"


def flatten(details: Any, prefix: str = "") -> list[tuple[str, str]]:
    """Nested details as (dotted.key, value) rows for -v output."""
    rows: list[tuple[str, str]] = []
    if isinstance(details, dict):
        for k, v in details.items():
            rows += flatten(v, f"{prefix}{k}.")
    elif isinstance(details, list) and details and all(isinstance(x, dict) for x in details):
        for i, v in enumerate(details):
            rows += flatten(v, f"{prefix}{i}.")
    else:
        value = ", ".join(map(str, details)) if isinstance(details, list) else str(details)
        rows.append((prefix.rstrip("."), value))
    return rows


def _fmt(value: Any, spec: str = ".1f") -> str:
    return "-" if value is None else format(value, spec)


def smoke_rows(doc: dict[str, Any]) -> list[list[str]]:
    """The compact smoke table (header first), or [] when the smoke test did not run."""
    if not any(c["id"].startswith("smoke.") for c in doc["checks"]):
        return []
    smoke = doc.get("facts", {}).get("smoke") or {}
    devices = smoke.get("devices") or {}
    failures = smoke.get("failures") or {}
    if not devices and not failures:
        return []
    header = [
        "device",
        "compute",
        "H2D GB/s pin/page",
        "D2H GB/s pin/page",
        "sync µs",
        "empty_cache µs",
        "MiB returned",
    ]
    rows = [header]
    for name in smoke.get("planned") or list(devices):
        d = devices.get(name) or {}
        dtypes = (d.get("compute") or {}).get("dtypes") or {}
        compute = " ".join(
            f"{k.replace('float', 'f')}:{'ok' if v.get('ok') else 'BAD'}" for k, v in dtypes.items()
        )
        if name in failures:
            compute = f"FAILED ({failures[name].get('kind')})"
        t = d.get("transfer") or {}
        m = d.get("memory") or {}
        rows.append(
            [
                name,
                compute or "-",
                f"{_fmt(t.get('h2d_pinned_gbps'))}/{_fmt(t.get('h2d_pageable_gbps'))}"
                if t
                else "-",
                f"{_fmt(t.get('d2h_pinned_gbps'))}/{_fmt(t.get('d2h_pageable_gbps'))}"
                if t
                else "-",
                _fmt(m.get("sync_us"), ".0f") if m else "-",
                _fmt(m.get("empty_cache_us"), ".0f") if m else "-",
                _fmt(m.get("returned_mib"), ".0f") if m else "-",
            ]
        )
    return rows

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
    p = f.get("platform", {})
    t = f.get("torch", {})
    torch = f"torch {t['version']}" if t.get("version") else f"torch: {t.get('status', 'unknown')}"
    where = f"{p.get('system', '?')} {p.get('machine', '')}".strip()
    py = p.get("python_version", "?")
    return f"torchdoctor {doc['tool']['version']} — {torch}, Python {py}, {where} (expect: {doc['expect']})"


def closing(doc: dict[str, Any]) -> str:
    s = doc["summary"]
    parts = [f"{s[k]} {WORDS[k]}" for k in ("pass", "warn", "fail", "error", "skip") if s.get(k)]
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

"""Renderers of the fleet report: a table by host and rank, then the findings. They decide nothing."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from tabulate import tabulate

from ..report.render import envelope
from ..report.render.common import MARKS, WORDS, flatten
from ..report.render.text import _paint
from .fleet import flagged_ranks, rank_status


def _bw(rec: dict[str, Any], op: str) -> str:
    rows = [m for m in rec.get("bandwidth") or [] if m["op"] == op]
    return f"{max(rows, key=lambda m: m['bytes'])['busbw_gbps']:.3g}" if rows else "-"


def _row(rec: dict[str, Any], doc: dict[str, Any], flagged: dict[int, list[str]]) -> list[Any]:
    dev = rec.get("device") or {}
    device = dev.get("name") or dev.get("type") or "?"
    if dev.get("type") == "cuda" and dev.get("index") is not None:
        device = f"cuda:{dev['index']} {device}"
    host_report = next(
        (r.get("report") for r in doc["ranks"] if r["host"] == rec["host"] and r.get("report")),
        None,
    )
    driver = ((host_report or {}).get("facts") or {}).get("nvml", {}).get("driver_version") or "-"
    return [
        rec["host"],
        rec["rank"],
        rec.get("local_rank", "?"),
        device,
        (rec.get("versions") or {}).get("torch") or "?",
        driver,
        _bw(rec, "all_reduce"),
        _bw(rec, "sendrecv"),
        rank_status(rec, flagged),
    ]


def table(doc: dict[str, Any]) -> str:
    flagged = flagged_ranks(doc)
    rows = [_row(r, doc, flagged) for r in doc["ranks"]]
    rows += [
        [m.get("host") or "?", m["rank"], "?", "?", "?", "?", "-", "-", "missing"]
        for m in doc["missing"]
    ]
    rows.sort(key=lambda row: (row[0], row[1]))
    head = [
        "host",
        "rank",
        "local",
        "device",
        "torch",
        "driver",
        "all_reduce GB/s",
        "sendrecv GB/s",
        "status",
    ]
    return tabulate(rows, head, tablefmt="simple", disable_numparse=True)


def headline(doc: dict[str, Any]) -> str:
    answered = len(doc["ranks"])
    launcher = (doc.get("meta") or {}).get("launcher")
    via = f", {launcher}" if launcher else ""
    return (
        f"torchdoctor {doc['tool']['version']} dist — {answered} of {doc['world_size']} rank(s) on "
        f"{len(doc['hosts'])} host(s), backend {doc.get('backend') or '?'}{via}"
    )


def closing(doc: dict[str, Any]) -> str:
    s = doc["summary"]
    parts = [f"{s[k]} {WORDS[k]}" for k in ("pass", "warn", "fail", "error", "skip") if s.get(k)]
    took = (doc.get("meta") or {}).get("duration_s")
    timing = f" in {took:.1f} s" if isinstance(took, (int, float)) else ""
    return f"FLEET {doc['status'].upper()}: {', '.join(parts)}{timing}"


def render_text(doc: dict[str, Any], verbose: bool = False, color: bool = False) -> str:
    lines = [headline(doc), "", table(doc), ""]
    width = max(len(f["id"]) for f in doc["results"])
    for f in doc["results"]:
        mark = _paint(MARKS[f["status"]], f["status"], color)
        lines.append(f" {mark} {f['id']:<{width}}  {f['summary']}")
        if verbose:
            lines += [f"      {k}: {v}" for k, v in flatten(f["details"])]
        if f["status"] in ("warn", "fail", "error") or verbose:
            for r in f["remedies"]:
                lines.append(f"      fix: {r['text']}")
                lines += [f"        $ {cmd}" for cmd in r["commands"]]
    lines += ["", _paint(closing(doc), doc["status"], color)]
    return "\n".join(lines) + "\n"


def render_json(doc: dict[str, Any], verbose: bool = False, color: bool = False) -> str:
    return json.dumps(doc, indent=2, default=str) + "\n"


RENDERERS: dict[str, Callable[[dict[str, Any], bool, bool], str]] = {
    "text": render_text,
    "json": render_json,
    "markdown": envelope.render_markdown,
    "junit": envelope.render_junit,
    "sarif": envelope.render_sarif,
}

"""What every fleet finding is built from: rank ranges, hosts, a finding and a remedy as JSON."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..report.result import Status

SHARED = "share one GPU"  # in a fallback reason: ranks on one GPU (rendezvous.agree_backend)

COLLECTIVES = ("all_reduce", "all_gather", "broadcast", "barrier")


Record = dict[str, Any]


Finding = dict[str, Any]


def worst(statuses: Iterable[str]) -> str:
    """pass/warn/fail/skip/error -> the worst, with error counted as fail; pass when empty."""
    ranked = [Status(s) for s in statuses]
    worst = max((s.rank for s in ranked), default=0)
    if worst == 2:
        return "error" if all(s == Status.ERROR for s in ranked if s.rank == 2) else "fail"
    if worst == 1:
        return "warn"
    return "pass" if any(s == Status.PASS for s in ranked) or not ranked else "skip"


def rank_ranges(ranks: Iterable[int]) -> str:
    """[0, 1, 2, 5, 7, 8] -> '0-2,5,7-8': 64 rank numbers stay one short line."""
    out: list[str] = []
    run: list[int] = []
    for r in sorted(set(ranks)):
        if run and r == run[-1] + 1:
            run.append(r)
            continue
        if run:
            out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
        run = [r]
    if run:
        out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
    return ",".join(out)


def hosts_text(hosts: list[str], limit: int = 3) -> str:
    shown = ", ".join(hosts[:limit])
    return shown + (f" and {len(hosts) - limit} more" if len(hosts) > limit else "")


def where(ranks: list[int], host_of: dict[int, str]) -> str:
    """'rank 3 (node0)' / 'ranks 8-15 (node1)' / 'ranks 0-7,16-23 (node0, node2)'."""
    hosts = sorted(
        {host_of.get(r, "?") for r in ranks},
        key=lambda h: min(r for r in ranks if host_of.get(r, "?") == h),
    )
    noun = "rank" if len(ranks) == 1 else "ranks"
    return f"{noun} {rank_ranges(ranks)} ({hosts_text(hosts)})"


def finding(
    id_: str,
    title: str,
    status: str,
    summary: str,
    details: dict[str, Any] | None = None,
    remedies: list[dict[str, Any]] | None = None,
) -> Finding:
    return {
        "id": id_,
        "title": title,
        "status": status,
        "summary": summary,
        "details": details or {},
        "remedies": remedies or [],
    }


def remedy(text: str, *commands: str) -> dict[str, Any]:
    return {"text": text, "commands": list(commands)}


def node_facts(record: Record, reports: dict[str, Record]) -> dict[str, Any]:
    """The facts of the host this rank runs on (gathered once per host, by its local rank 0)."""
    report = reports.get(record.get("host", ""))
    return (report or {}).get("facts") or {}

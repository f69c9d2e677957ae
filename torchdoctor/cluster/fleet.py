"""The fleet report: every rank's record in, one judgement of the whole job out.

Pure functions over plain dicts — no torch, no I/O — so they are tested on recorded and
constructed records (a 64-rank fleet in the tests) exactly as they run on rank 0.

A rank record (built by ``worker.py``; fields documented in schema/fleet.schema.json) holds the
rank's place (rank, host, local rank), its in-process torch versions and device, its collective
results and bandwidth, and — on local rank 0 of each host only — the host's single-machine report.
Findings group what differs across the fleet, naming the minority by host and rank.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from ..report.docs import finding_url
from ..report.findings import Finding as SharedFinding
from ..report.findings import Selection, envelope, level_rank, normalise_fail_on, split
from ..report.result import Status
from .fleet_bandwidth import SLOW_RATIO, bandwidth_finding
from .fleet_checks import check_findings
from .fleet_common import Finding, Record, worst
from .fleet_ranks import collectives_finding, ranks_finding
from .fleet_versions import devices_finding, versions_finding

FLEET_SCHEMA_VERSION = 2  # 2: the shared findings envelope (CHANGELOG.md)
READABLE_FLEET_VERSIONS = (1, 2)  # --replay re-judges the ranks' records of either


def _hosts(records: list[Record], missing: list[Record]) -> dict[str, list[int]]:
    """host -> its ranks, answered or missing, in rank order."""
    hosts: dict[str, list[int]] = {}
    for r in sorted([*records, *missing], key=lambda r: r["rank"]):
        hosts.setdefault(r.get("host") or "?", []).append(r["rank"])
    return hosts


def _judge(
    records: list[Record],
    missing: list[Record],
    hosts: dict[str, list[int]],
    world_size: int,
    slow_ratio: float,
) -> list[Finding]:
    """Every fleet judgement, passes included (the text report's lines)."""
    host_of = {r["rank"]: r["host"] for r in records}
    host_of.update({m["rank"]: m.get("host") or "?" for m in missing})
    reports = {r["host"]: r["report"] for r in records if r.get("report")}
    return [
        ranks_finding(records, missing, world_size),
        collectives_finding(records, host_of),
        versions_finding(records, reports, host_of),
        devices_finding(records, host_of),
        bandwidth_finding(records, host_of, slow_ratio),
        *check_findings(reports, hosts),
    ]


def aggregate(
    records: list[Record],
    world_size: int,
    missing: list[Record] | None = None,
    *,
    slow_ratio: float = SLOW_RATIO,
    fail_on: str = "error",
    meta: dict[str, Any] | None = None,
    selection: Selection | None = None,
) -> dict[str, Any]:
    """Every rank's record (and the ranks that did not answer) -> the fleet report document."""
    records = sorted(records, key=lambda r: r["rank"])
    missing = sorted(missing or [], key=lambda m: m["rank"])
    hosts = _hosts(records, missing)
    results = _judge(records, missing, hosts, world_size, slow_ratio)
    counts = Counter(r["status"] for r in results)
    # --fail-on speaks finding levels (error/warning/note/never) on every command.
    fail_on = normalise_fail_on(fail_on)
    kept, silenced = split(map(_shared_finding, _not_passing(results)), selection or Selection())
    levels = [f.level for f in kept]
    doc = envelope(
        "dist",
        kept,
        silenced=silenced,
        fail_on=fail_on,
        summary_extra={s.value: counts.get(s.value, 0) for s in Status},
        kind="torchdoctor.fleet",
        status=("pass", "pass", "warn", "fail")[1 + max(map(level_rank, levels), default=-1)],
    )
    doc["schema_version"] = FLEET_SCHEMA_VERSION
    return {
        **doc,
        "exit_code": doc["summary"]["exit_code"],
        "fail_on": fail_on,
        "world_size": world_size,
        "backend": ",".join(sorted({r.get("backend") or "?" for r in records})) or None,
        "hosts": [
            {"host": h, "ranks": rs, "report_rank": _report_rank(records, h)}
            for h, rs in hosts.items()
        ],
        "results": results,
        "ranks": records,
        "missing": missing,
        "meta": meta or {},
    }


def _report_rank(records: list[Record], host: str) -> int | None:
    """The rank that carries the host's node report (its local rank 0), if it answered."""
    return next((r["rank"] for r in records if r["host"] == host and r.get("report")), None)


LEVEL_OF_STATUS = {"warn": "warning", "fail": "error", "error": "error"}


def _not_passing(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in results if r["status"] in LEVEL_OF_STATUS]


def _shared_finding(r: dict[str, Any]) -> SharedFinding:
    """A fleet result that warns or fails, as the finding every command reports."""
    ranks = (r.get("details") or {}).get("ranks") or []
    subject = "ranks " + ",".join(map(str, ranks[:16])) if ranks else "fleet"
    return SharedFinding(
        id=r["id"],
        level=LEVEL_OF_STATUS[r["status"]],
        message=r["summary"],
        subject=subject,
        remedies=r.get("remedies", []),
        details=r.get("details") or {},
        doc=finding_url(r["id"]),
    )


def reaggregate(doc: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    """Judge a recorded fleet document again (``torchdoctor dist --replay FILE``)."""
    if not isinstance(doc, dict) or doc.get("kind") != "torchdoctor.fleet":
        raise ValueError("not a torchdoctor fleet report (no kind 'torchdoctor.fleet')")
    if doc.get("schema_version") not in READABLE_FLEET_VERSIONS:
        raise ValueError(
            f"fleet schema_version {doc.get('schema_version')}; this torchdoctor reads "
            f"{FLEET_SCHEMA_VERSION}"
        )
    if (
        not isinstance(doc.get("ranks"), list)
        or not doc["ranks"]
        or int(doc.get("world_size", 0)) < 1
    ):
        raise ValueError("the fleet report holds no ranks")
    return aggregate(
        doc["ranks"], doc["world_size"], doc.get("missing"), meta=doc.get("meta"), **kwargs
    )


def rank_status(rec: Record, flagged: dict[int, list[str]]) -> str:
    """One rank's row status: its host report (if it carries it), collectives, and findings."""
    statuses = [c.get("status", "pass") for c in (rec.get("collectives") or {}).values()]
    if rec.get("report"):
        statuses.append(rec["report"].get("status", "pass"))
    if rec.get("errors"):
        statuses.append("fail")
    statuses += flagged.get(rec["rank"], [])
    return worst(statuses or ["pass"])


def flagged_ranks(doc: dict[str, Any]) -> dict[int, list[str]]:
    """rank -> statuses of the findings that name it (details.ranks)."""
    out: dict[int, list[str]] = {}
    for f in doc["results"]:
        for r in (f.get("details") or {}).get("ranks") or []:
            out.setdefault(r, []).append(f["status"])
    return out

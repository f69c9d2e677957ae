"""The node checks each host ran (as `torchdoctor check`), summed up across the fleet."""

from __future__ import annotations

from typing import Any

from .fleet_common import Finding, Record, finding, hosts_text, remedy, worst


def _by_check(reports: dict[str, Record]) -> tuple[dict[str, dict[str, Record]], dict[str, str]]:
    """(check id -> host -> that host's result, check id -> title)."""
    by_check: dict[str, dict[str, Record]] = {}
    titles: dict[str, str] = {}
    for host, report in reports.items():
        for c in report.get("checks") or []:
            by_check.setdefault(c["id"], {})[host] = c
            titles.setdefault(c["id"], c.get("title", c["id"]))
    return by_check, titles


def _check_problem(
    cid: str, title: str, per_host: dict[str, Record], ranks_on: dict[str, list[int]]
) -> Finding | None:
    """One node check across the hosts: which are not passing it, and their fixes (once each).
    A host's finding flags every rank on that host: they all run on the broken node."""
    bad = {h: c for h, c in per_host.items() if c["status"] in ("warn", "fail", "error")}
    if not bad:
        return None
    status = worst(c["status"] for c in bad.values())
    hosts = sorted(bad)
    remedies: list[dict[str, Any]] = []
    for c in bad.values():
        for r in c.get("remedies") or []:
            if r not in remedies:
                remedies.append(r)
    return finding(
        cid,
        title,
        status,
        f"{status} on {len(hosts)} of {len(per_host)} host(s) ({hosts_text(hosts)}): "
        f"{bad[hosts[0]]['summary']}",
        {
            "by_host": {
                h: {"status": c["status"], "summary": c["summary"]}
                for h, c in sorted(per_host.items())
            },
            "hosts": hosts,
            "ranks": sorted(r for h in hosts for r in ranks_on.get(h, [])),
        },
        remedies,
    )


def _checks_summary(hosts: int, checks: int, problems: list[Finding]) -> Finding:
    title = "node checks pass on every host"
    if not hosts:
        return finding("fleet.checks", title, "skip", "no host report was gathered")
    if not problems:
        return finding(
            "fleet.checks",
            title,
            "pass",
            f"{checks} check(s) pass or do not apply on every one of {hosts} host(s)",
        )
    return finding(
        "fleet.checks",
        title,
        worst(p["status"] for p in problems),
        f"{len(problems)} check(s) not passing on some hosts: "
        + ", ".join(p["id"] for p in problems),
        {"checks": [p["id"] for p in problems]},
        [
            remedy(
                "Each check below names its hosts and fixes; on one of those hosts the full "
                "single-machine report has the details.",
                "torchdoctor check -v",
            )
        ],
    )


def check_findings(reports: dict[str, Record], ranks_on: dict[str, list[int]]) -> list[Finding]:
    """Node checks, grouped per check id: the summary, then each check some host is not passing."""
    by_check, titles = _by_check(reports)
    problems = [
        p
        for cid, per_host in by_check.items()
        if (p := _check_problem(cid, titles[cid], per_host, ranks_on)) is not None
    ]
    return [_checks_summary(len(reports), len(by_check), problems), *problems]

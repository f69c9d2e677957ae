"""The fleet report: every rank's record in, one judgement of the whole job out.

Pure functions over plain dicts — no torch, no I/O — so they are tested on recorded and
constructed records (a 64-rank fleet in the tests) exactly as they run on rank 0.

A rank record (built by ``worker.py``; fields documented in schema/fleet.schema.json) holds the
rank's place (rank, host, local rank), its in-process torch versions and device, its collective
results and bandwidth, and — on local rank 0 of each host only — the host's single-machine report.
Findings group what differs across the fleet, naming the minority by host and rank.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from ..data import compat
from ..docs import finding_url
from ..facts import dig
from ..findings import Finding as SharedFinding
from ..findings import Selection, envelope, level_rank, normalise_fail_on, split
from ..model import Status
from .bandwidth import human_bytes

FLEET_SCHEMA_VERSION = 2  # 2: the shared findings envelope (CHANGELOG.md)
READABLE_FLEET_VERSIONS = (1, 2)  # --replay re-judges the ranks' records of either
SLOW_RATIO = 0.5  # a rank below this fraction of the fleet median bandwidth is flagged
COLLECTIVES = ("all_reduce", "all_gather", "broadcast", "barrier")

Record = dict[str, Any]
Finding = dict[str, Any]


# ------------------------------------------------------------------------------------ helpers


def _worst(statuses: Iterable[str]) -> str:
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


def _hosts_text(hosts: list[str], limit: int = 3) -> str:
    shown = ", ".join(hosts[:limit])
    return shown + (f" and {len(hosts) - limit} more" if len(hosts) > limit else "")


def where(ranks: list[int], host_of: dict[int, str]) -> str:
    """'rank 3 (node0)' / 'ranks 8-15 (node1)' / 'ranks 0-7,16-23 (node0, node2)'."""
    hosts = sorted(
        {host_of.get(r, "?") for r in ranks},
        key=lambda h: min(r for r in ranks if host_of.get(r, "?") == h),
    )
    noun = "rank" if len(ranks) == 1 else "ranks"
    return f"{noun} {rank_ranges(ranks)} ({_hosts_text(hosts)})"


def _finding(
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


def _remedy(text: str, *commands: str) -> dict[str, Any]:
    return {"text": text, "commands": list(commands)}


def node_facts(record: Record, reports: dict[str, Record]) -> dict[str, Any]:
    """The facts of the host this rank runs on (gathered once per host, by its local rank 0)."""
    report = reports.get(record.get("host", ""))
    return (report or {}).get("facts") or {}


# ------------------------------------------------------------------------------------ findings


def _rank_accounting(records: list[Record], missing: list[Record], world: int) -> str | None:
    """Every rank 0..world-1 exactly once, answered or missing; else what is wrong."""
    ranks = [r["rank"] for r in records] + [m["rank"] for m in missing]
    seen = set(ranks)
    problems = []
    if dupes := sorted(r for r, n in Counter(ranks).items() if n > 1):  # linear: 100k ranks
        problems.append(f"rank(s) {dupes} reported more than once")
    if outside := sorted(r for r in seen if not (isinstance(r, int) and 0 <= r < world)):
        problems.append(f"rank(s) {outside} outside 0..{world - 1}")
    if absent := sorted(set(range(world)) - seen):
        problems.append(
            f"rank(s) {absent[:8]}{' …' if len(absent) > 8 else ''} absent from the report"
        )
    return "; ".join(problems) or None


def _ranks_finding(records: list[Record], missing: list[Record], world: int) -> Finding:
    hosts = sorted({r["host"] for r in records})
    accounting = _rank_accounting(records, missing, world)
    if accounting:
        return _finding(
            "fleet.ranks",
            "every rank answered",
            "fail",
            f"the fleet does not add up to world size {world}: {accounting}",
            {"answered": len(records), "missing": missing},
            [
                _remedy(
                    "A report must hold each rank once. Re-run the job, or check that the file "
                    "is one run's fleet report and was not edited or merged."
                )
            ],
        )
    if not missing:
        return _finding(
            "fleet.ranks",
            "every rank answered",
            "pass",
            f"{len(records)} of {world} ranks answered from {len(hosts)} host(s)",
            {"hosts": hosts},
        )
    lines = []
    for m in sorted(missing, key=lambda m: m["rank"]):
        seen = f", last seen in phase '{m['phase']}'" if m.get("phase") else ", never seen"
        lines.append(f"rank {m['rank']} ({m.get('host') or 'host unknown'}{seen})")
    return _finding(
        "fleet.ranks",
        "every rank answered",
        "fail",
        f"{len(missing)} of {world} rank(s) did not answer: {'; '.join(lines[:4])}"
        + (f"; and {len(lines) - 4} more" if len(lines) > 4 else ""),
        {"missing": missing, "ranks": [m["rank"] for m in missing], "answered": len(records)},
        [
            _remedy(
                "Look at the named rank's own output and host: a hung or crashed process, an "
                "unreachable host (firewall, wrong network interface), or a wedged GPU. Re-run "
                "with collective debugging on to see where it stops.",
                "NCCL_DEBUG=INFO TORCH_DISTRIBUTED_DEBUG=DETAIL torchrun ... -m torchdoctor dist",
                "nvidia-smi",
            )
        ],
    )


def _collective_failures(records: list[Record]) -> tuple[dict[str, list[int]], dict[str, str]]:
    """(what failed -> ranks, what failed -> first message): failed collectives, and phases
    that failed for another reason."""
    bad: dict[str, list[int]] = {}
    messages: dict[str, str] = {}
    for rec in records:
        for op, res in (rec.get("collectives") or {}).items():
            if res.get("status") in ("fail", "error"):
                bad.setdefault(op, []).append(rec["rank"])
                messages.setdefault(op, res.get("summary", ""))
        for err in rec.get("errors") or []:
            if err.get("phase") == "collectives" and any(rec["rank"] in rs for rs in bad.values()):
                continue  # the failed collective above already says it
            key = f"phase {err.get('phase', '?')}"
            bad.setdefault(key, []).append(rec["rank"])
            messages.setdefault(key, err.get("message", ""))
    return bad, messages


COLLECTIVES_TITLE = "collectives are correct"


def _collectives_failed(
    bad: dict[str, list[int]], messages: dict[str, str], host_of: dict[int, str]
) -> Finding:
    parts = [f"{op} on {where(rs, host_of)}: {messages[op]}" for op, rs in bad.items()]
    return _finding(
        "fleet.collectives",
        COLLECTIVES_TITLE,
        "fail",
        "; ".join(parts),
        {
            "failed": {op: sorted(rs) for op, rs in bad.items()},
            "messages": messages,
            "ranks": sorted({r for rs in bad.values() for r in rs}),
        },
        [
            _remedy(
                "A collective that gives wrong values or times out breaks training. Re-run "
                "with NCCL's log on the failing ranks; check the network interface NCCL picks "
                "(NCCL_SOCKET_IFNAME) and, on PCIe machines, try without peer-to-peer.",
                "NCCL_DEBUG=INFO TORCH_DISTRIBUTED_DEBUG=DETAIL torchrun ... -m torchdoctor dist",
                "NCCL_P2P_DISABLE=1 torchrun ... -m torchdoctor dist",
            )
        ],
    )


def _collectives_passed(records: list[Record]) -> Finding:
    backends = sorted({r.get("backend") or "?" for r in records})
    fallbacks = {r["rank"]: r["backend_fallback"] for r in records if r.get("backend_fallback")}
    ops = [op for op in COLLECTIVES if any(op in (r.get("collectives") or {}) for r in records)]
    summary = f"{', '.join(ops)} correct on {len(records)} rank(s) ({', '.join(backends)})"
    if not fallbacks:
        return _finding("fleet.collectives", COLLECTIVES_TITLE, "pass", summary)
    ranks = sorted(fallbacks)
    return _finding(
        "fleet.collectives",
        COLLECTIVES_TITLE,
        "warn",
        f"{summary}, but gloo ran as a fallback: {fallbacks[ranks[0]]}",
        {"fallback": fallbacks, "ranks": ranks},
        [
            _remedy(
                "NCCL was not usable on every rank, so GPU training would not get NCCL's speed. "
                "Run `torchdoctor check --expect cuda` on the named ranks' hosts.",
                "torchdoctor check --expect cuda",
            )
        ],
    )


def _collectives_finding(records: list[Record], host_of: dict[int, str]) -> Finding:
    bad, messages = _collective_failures(records)
    if bad:
        return _collectives_failed(bad, messages, host_of)
    if not any(rec.get("collectives") for rec in records):
        return _finding("fleet.collectives", COLLECTIVES_TITLE, "skip", "no collective ran")
    return _collectives_passed(records)


# label -> (how to read it for a rank, status when it differs)
VERSION_FACTS: dict[str, tuple[Callable[[Record, dict[str, Any]], Any], str]] = {
    "torch": (lambda r, f: dig(r, "versions.torch") or dig(f, "torch.version"), "fail"),
    "CUDA": (lambda r, f: dig(r, "versions.cuda") or dig(f, "torch.build.cuda"), "fail"),
    "NCCL": (lambda r, f: dig(r, "versions.nccl") or dig(f, "torch.build.nccl"), "fail"),
    "Python": (
        lambda r, f: dig(r, "versions.python") or dig(f, "platform.python_version"),
        "fail",
    ),
    "driver": (lambda r, f: dig(f, "nvml.driver_version"), "warn"),
}


def _groups(records: list[Record], read: Callable[[Record], Any]) -> dict[str, list[int]]:
    """value -> ranks having it, most common first; ranks where it is unknown are left out."""
    by_value: dict[str, list[int]] = {}
    for rec in records:
        value = read(rec)
        if value not in (None, ""):
            by_value.setdefault(str(value), []).append(rec["rank"])
    # Ties go to the value of the lowest rank: with 1 against 1, rank 0 is the reference.
    return dict(sorted(by_value.items(), key=lambda kv: (-len(kv[1]), min(kv[1]))))


def _differs_text(label: str, groups: dict[str, list[int]], host_of: dict[int, str]) -> str:
    parts = [f"{value} on {where(ranks, host_of)}" for value, ranks in groups.items()]
    return f"{label} differs: " + "; ".join(parts)


def _version_remedy(label: str, majority: str, minority_hosts: list[str]) -> dict[str, Any]:
    hosts = _hosts_text(minority_hosts)
    if label == "driver":
        return _remedy(
            f"Bring the NVIDIA driver on {hosts} to {majority}, the version the rest of the "
            "fleet runs (then reboot or reload the nvidia modules).",
            "nvidia-smi --query-gpu=driver_version --format=csv,noheader",
            "sudo ubuntu-drivers install  # or your distribution's driver package",
        )
    if label == "Python":
        return _remedy(f"Run every rank with the same Python ({majority}): one image or one env.")
    local = majority.split("+", 1)[1] if label == "torch" and "+" in majority else None
    commands = []
    if label == "torch":
        index = f" --index-url {compat.INDEX_URL.format(variant=local)}" if local else ""
        commands.append(f"python -m pip install torch=={majority.split('+')[0]}{index}")
    return _remedy(
        f"Install one torch build on every node (the same wheel from the same index, ideally "
        f"one container image): mixed {label} versions in one job hang or fail in collectives. "
        f"Most of the fleet runs {label} {majority}; it differs on {hosts}.",
        *commands,
    )


def _versions_finding(
    records: list[Record], reports: dict[str, Record], host_of: dict[int, str]
) -> Finding:
    differing: dict[str, dict[str, list[int]]] = {}
    agreed: list[str] = []
    status = "pass"
    remedies = []
    for label, (read, severity) in VERSION_FACTS.items():
        groups = _groups(records, lambda r, read=read: read(r, node_facts(r, reports)))
        if len(groups) > 1:
            differing[label] = groups
            status = _worst([status, severity])
            values = list(groups)
            minority = [r for v in values[1:] for r in groups[v]]
            remedies.append(
                _version_remedy(label, values[0], sorted({host_of[r] for r in minority}, key=str))
            )
        elif groups:
            agreed.append(f"{label} {next(iter(groups))}")
    title = "versions agree across the fleet"
    details: dict[str, Any] = {"differing": differing, "agreed": agreed}
    if not differing:
        return _finding(
            "fleet.versions", title, "pass", f"{', '.join(agreed)} on every rank", details
        )
    details["ranks"] = sorted(
        {r for groups in differing.values() for v in list(groups)[1:] for r in groups[v]}
    )
    summary = "; ".join(_differs_text(label, g, host_of) for label, g in differing.items())
    return _finding("fleet.versions", title, status, summary, details, remedies)


def _gib(n: Any) -> str | None:
    return f"{n / (1 << 30):.1f} GiB" if isinstance(n, (int, float)) and n > 0 else None


def _devices_finding(records: list[Record], host_of: dict[int, str]) -> Finding:
    gpus = [r for r in records if dig(r, "device.type") == "cuda"]
    title = "GPUs agree across the fleet"
    if not gpus:
        return _finding("fleet.devices", title, "skip", "no rank uses a GPU: nothing to compare")
    names = _groups(gpus, lambda r: dig(r, "device.name"))
    memory = _groups(gpus, lambda r: _gib(dig(r, "device.memory_total_bytes")))
    differing = {k: g for k, g in (("GPU model", names), ("GPU memory", memory)) if len(g) > 1}
    details: dict[str, Any] = {"models": names, "memory": memory}
    if not differing:
        mem = f", {next(iter(memory))} each" if memory else ""
        return _finding(
            "fleet.devices", title, "pass", f"{len(gpus)} × {next(iter(names), '?')}{mem}", details
        )
    details["ranks"] = sorted({r for g in differing.values() for v in list(g)[1:] for r in g[v]})
    return _finding(
        "fleet.devices",
        title,
        "warn",
        "; ".join(_differs_text(k, g, host_of) for k, g in differing.items()),
        details,
        [
            _remedy(
                "Mixed GPU models or memory sizes make every step wait for the slowest, smallest "
                "GPU. Schedule the job on identical nodes (a node selector or Slurm constraint), "
                "or check that the odd GPU is not partitioned (MIG) or partly used.",
                "nvidia-smi --query-gpu=name,memory.total,memory.used,mig.mode.current --format=csv",
            )
        ],
    )


BANDWIDTH_TITLE = "no rank is far below the fleet's bandwidth"
BusBw = dict[str, dict[int, dict[int, float]]]  # op -> message size -> rank -> busbw


def _busbw_table(records: list[Record]) -> BusBw:
    table: BusBw = {}
    for rec in records:
        for m in rec.get("bandwidth") or []:
            table.setdefault(m["op"], {}).setdefault(m["bytes"], {})[rec["rank"]] = m["busbw_gbps"]
    return table


def _slow_ranks(
    table: BusBw, medians: dict[str, dict[int, float]], slow_ratio: float
) -> dict[int, list[str]]:
    """rank -> why it is slow: below slow_ratio × the median at the op's largest message, the
    least noisy, bandwidth-bound one."""
    slow: dict[int, list[str]] = {}
    for op, sizes in table.items():
        size = max(sizes)
        median = medians[op][size]
        for rank, value in sorted(sizes[size].items()):
            if median > 0 and value < slow_ratio * median:
                slow.setdefault(rank, []).append(
                    f"{op} {human_bytes(size)} at {value:.3g} GB/s, "
                    f"{value / median:.2f}× the median {median:.3g} GB/s"
                )
    return slow


def _bandwidth_slow(
    slow: dict[int, list[str]], host_of: dict[int, str], details: dict[str, Any]
) -> Finding:
    details["slow"] = {str(r): why for r, why in slow.items()}
    details["ranks"] = sorted(slow)
    parts = [
        f"rank {r} ({host_of.get(r, '?')}): {'; '.join(why)}" for r, why in sorted(slow.items())
    ]
    hosts = sorted({host_of.get(r, "?") for r in slow})
    return _finding(
        "fleet.bandwidth",
        BANDWIDTH_TITLE,
        "warn",
        "; ".join(parts[:3]) + (f"; and {len(parts) - 3} more rank(s)" if len(parts) > 3 else ""),
        details,
        [
            _remedy(
                f"Look at the GPU and its links on {_hosts_text(hosts)}: clocks and throttling, "
                "PCIe width and generation, NVLink state, and other processes on the GPU. A slow "
                "link shows on the ranks at both of its ends.",
                "nvidia-smi -q -d PERFORMANCE,CLOCK",
                "nvidia-smi topo -m",
                "nvidia-smi nvlink --status",
            )
        ],
    )


def _bandwidth_finding(
    records: list[Record], host_of: dict[int, str], slow_ratio: float
) -> Finding:
    table = _busbw_table(records)
    if not table:
        return _finding("fleet.bandwidth", BANDWIDTH_TITLE, "skip", "no bandwidth was measured")
    medians = {
        op: {size: round(statistics.median(v.values()), 4) for size, v in sorted(sizes.items())}
        for op, sizes in table.items()
    }
    slow = _slow_ranks(table, medians, slow_ratio)
    details: dict[str, Any] = {
        "median_busbw_gbps": {op: {str(s): v for s, v in sz.items()} for op, sz in medians.items()},
        "slow_ratio": slow_ratio,
    }
    if slow:
        return _bandwidth_slow(slow, host_of, details)
    headline = [f"{op} {human_bytes(max(sz))} {sz[max(sz)]:.3g} GB/s" for op, sz in medians.items()]
    return _finding(
        "fleet.bandwidth",
        BANDWIDTH_TITLE,
        "pass",
        f"median busbw {', '.join(headline)}; no rank below {slow_ratio}× the median",
        details,
    )


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
    status = _worst(c["status"] for c in bad.values())
    hosts = sorted(bad)
    remedies: list[dict[str, Any]] = []
    for c in bad.values():
        for r in c.get("remedies") or []:
            if r not in remedies:
                remedies.append(r)
    return _finding(
        cid,
        title,
        status,
        f"{status} on {len(hosts)} of {len(per_host)} host(s) ({_hosts_text(hosts)}): "
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
        return _finding("fleet.checks", title, "skip", "no host report was gathered")
    if not problems:
        return _finding(
            "fleet.checks",
            title,
            "pass",
            f"{checks} check(s) pass or do not apply on every one of {hosts} host(s)",
        )
    return _finding(
        "fleet.checks",
        title,
        _worst(p["status"] for p in problems),
        f"{len(problems)} check(s) not passing on some hosts: "
        + ", ".join(p["id"] for p in problems),
        {"checks": [p["id"] for p in problems]},
        [
            _remedy(
                "Each check below names its hosts and fixes; on one of those hosts the full "
                "single-machine report has the details.",
                "torchdoctor check -v",
            )
        ],
    )


def _check_findings(reports: dict[str, Record], ranks_on: dict[str, list[int]]) -> list[Finding]:
    """Node checks, grouped per check id: the summary, then each check some host is not passing."""
    by_check, titles = _by_check(reports)
    problems = [
        p
        for cid, per_host in by_check.items()
        if (p := _check_problem(cid, titles[cid], per_host, ranks_on)) is not None
    ]
    return [_checks_summary(len(reports), len(by_check), problems), *problems]


# ------------------------------------------------------------------------------------ the report


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
        _ranks_finding(records, missing, world_size),
        _collectives_finding(records, host_of),
        _versions_finding(records, reports, host_of),
        _devices_finding(records, host_of),
        _bandwidth_finding(records, host_of, slow_ratio),
        *_check_findings(reports, hosts),
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
    return _worst(statuses or ["pass"])


def flagged_ranks(doc: dict[str, Any]) -> dict[int, list[str]]:
    """rank -> statuses of the findings that name it (details.ranks)."""
    out: dict[int, list[str]] = {}
    for f in doc["results"]:
        for r in (f.get("details") or {}).get("ranks") or []:
            out.setdefault(r, []).append(f["status"])
    return out

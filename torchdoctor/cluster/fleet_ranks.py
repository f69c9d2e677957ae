"""Did every rank report, and did every collective return the right answer?"""

from __future__ import annotations

from collections import Counter

from .fleet_common import COLLECTIVES, SHARED, Finding, Record, finding, remedy, where


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


def ranks_finding(records: list[Record], missing: list[Record], world: int) -> Finding:
    hosts = sorted({r["host"] for r in records})
    accounting = _rank_accounting(records, missing, world)
    if accounting:
        return finding(
            "fleet.ranks",
            "every rank answered",
            "fail",
            f"the fleet does not add up to world size {world}: {accounting}",
            {"answered": len(records), "missing": missing},
            [
                remedy(
                    "A report must hold each rank once. Re-run the job, or check that the file "
                    "is one run's fleet report and was not edited or merged."
                )
            ],
        )
    if not missing:
        return finding(
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
    return finding(
        "fleet.ranks",
        "every rank answered",
        "fail",
        f"{len(missing)} of {world} rank(s) did not answer: {'; '.join(lines[:4])}"
        + (f"; and {len(lines) - 4} more" if len(lines) > 4 else ""),
        {"missing": missing, "ranks": [m["rank"] for m in missing], "answered": len(records)},
        [
            remedy(
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
    return finding(
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
            _backend_remedy(messages["phase backend"])
            if set(bad) == {"phase backend"}
            else remedy(
                "A collective that gives wrong values or times out breaks training. Re-run "
                "with NCCL's log on the failing ranks; check the network interface NCCL picks "
                "(NCCL_SOCKET_IFNAME) and, on PCIe machines, try without peer-to-peer.",
                "NCCL_DEBUG=INFO TORCH_DISTRIBUTED_DEBUG=DETAIL torchrun ... -m torchdoctor dist",
                "NCCL_P2P_DISABLE=1 torchrun ... -m torchdoctor dist",
            )
        ],
    )


def _backend_remedy(message: str) -> dict:
    """--backend nccl refused before any collective: the ranks share GPUs, or lack NCCL."""
    return _shared_gpu_remedy() if SHARED in message else _nccl_remedy()


def _collectives_passed(records: list[Record]) -> Finding:
    backends = sorted({r.get("backend") or "?" for r in records})
    fallbacks = {r["rank"]: r["backend_fallback"] for r in records if r.get("backend_fallback")}
    ops = [op for op in COLLECTIVES if any(op in (r.get("collectives") or {}) for r in records)]
    summary = f"{', '.join(ops)} correct on {len(records)} rank(s) ({', '.join(backends)})"
    if not fallbacks:
        return finding("fleet.collectives", COLLECTIVES_TITLE, "pass", summary)
    ranks = sorted(fallbacks)
    return finding(
        "fleet.collectives",
        COLLECTIVES_TITLE,
        "warn",
        f"{summary}, but gloo ran as a fallback: {fallbacks[ranks[0]]}",
        {"fallback": fallbacks, "ranks": ranks},
        [_shared_gpu_remedy() if SHARED in fallbacks[ranks[0]] else _nccl_remedy()],
    )


def _nccl_remedy() -> dict:
    return remedy(
        "NCCL was not usable on every rank, so GPU training would not get NCCL's speed. "
        "Run `torchdoctor check --expect cuda` on the named ranks' hosts.",
        "torchdoctor check --expect cuda",
    )


def _shared_gpu_remedy() -> dict:
    return remedy(
        "Training with NCCL fails the same way ('Duplicate GPU detected'). Start one rank per "
        "GPU: --nproc-per-node no larger than the host's GPU count (nvidia-smi -L lists them), "
        "or give each rank its own GPU with CUDA_VISIBLE_DEVICES.",
        "torchrun --standalone --nproc-per-node=$(nvidia-smi -L | wc -l) -m torchdoctor dist",
    )


def collectives_finding(records: list[Record], host_of: dict[int, str]) -> Finding:
    bad, messages = _collective_failures(records)
    if bad:
        return _collectives_failed(bad, messages, host_of)
    if not any(rec.get("collectives") for rec in records):
        return finding("fleet.collectives", COLLECTIVES_TITLE, "skip", "no collective ran")
    return _collectives_passed(records)

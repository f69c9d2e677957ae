"""Is any rank far below the fleet's median bus bandwidth?"""

from __future__ import annotations

import statistics
from typing import Any

from .bandwidth import human_bytes
from .fleet_common import Finding, Record, finding, hosts_text, remedy

SLOW_RATIO = 0.5  # a rank below this fraction of the fleet median bandwidth is flagged


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
    return finding(
        "fleet.bandwidth",
        BANDWIDTH_TITLE,
        "warn",
        "; ".join(parts[:3]) + (f"; and {len(parts) - 3} more rank(s)" if len(parts) > 3 else ""),
        details,
        [
            remedy(
                f"Look at the GPU and its links on {hosts_text(hosts)}: clocks and throttling, "
                "PCIe width and generation, NVLink state, and other processes on the GPU. A slow "
                "link shows on the ranks at both of its ends.",
                "nvidia-smi -q -d PERFORMANCE,CLOCK",
                "nvidia-smi topo -m",
                "nvidia-smi nvlink --status",
            )
        ],
    )


def bandwidth_finding(records: list[Record], host_of: dict[int, str], slow_ratio: float) -> Finding:
    table = _busbw_table(records)
    if not table:
        return finding("fleet.bandwidth", BANDWIDTH_TITLE, "skip", "no bandwidth was measured")
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
    return finding(
        "fleet.bandwidth",
        BANDWIDTH_TITLE,
        "pass",
        f"median busbw {', '.join(headline)}; no rank below {slow_ratio}× the median",
        details,
    )

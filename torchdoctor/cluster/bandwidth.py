"""Collective bandwidth arithmetic, as nccl-tests defines it (no torch here).

From NVIDIA/nccl-tests doc/PERFORMANCE.md: algorithm bandwidth is ``algbw = S / t`` with S the
message size in bytes (for all_gather: the size of the gathered output) and t the time of one
operation; bus bandwidth rescales it to what each link carries, so it is comparable across rank
counts and with the hardware's peak: all_reduce ``busbw = algbw * 2(n-1)/n``, all_gather
``busbw = algbw * (n-1)/n``, broadcast and send/recv ``busbw = algbw``.
"""

from __future__ import annotations

import re

_FACTORS = {
    "all_reduce": lambda n: 2 * (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
    "sendrecv": lambda n: 1.0,
}
OPS = tuple(_FACTORS)
_UNITS = {"": 1, "B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def bus_factor(op: str, world_size: int) -> float:
    return _FACTORS[op](world_size)


def measure(op: str, nbytes: int, seconds: float, world_size: int) -> dict[str, float | int | str]:
    """One bandwidth record: bytes, time per operation, algbw and busbw in GB/s (10^9 B/s)."""
    algbw = nbytes / seconds / 1e9 if seconds > 0 else 0.0
    return {
        "op": op,
        "bytes": nbytes,
        "time_s": round(seconds, 9),
        "algbw_gbps": round(algbw, 4),
        "busbw_gbps": round(algbw * bus_factor(op, world_size), 4),
    }


def parse_sizes(text: str) -> list[int]:
    """``"64K,1M,1G"`` -> bytes (binary units). ValueError with a readable message otherwise."""
    sizes = []
    for part in (p.strip() for p in text.split(",")):
        m = re.fullmatch(r"(\d+)\s*([KMG]?)(?:i?B)?", part, re.IGNORECASE)
        if not m or int(m.group(1)) == 0:
            raise ValueError(f"{part!r} is not a size like 64K, 4M or 1G")
        sizes.append(int(m.group(1)) * _UNITS[m.group(2).upper()])
    return sizes


def human_bytes(n: int) -> str:
    for unit, size in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= size and n % size == 0:
            return f"{n // size} {unit}iB"
    return f"{n} B"

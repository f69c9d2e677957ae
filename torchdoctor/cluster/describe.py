"""This rank's own torch versions and device, read in-process (cheap: torch is loaded)."""

from __future__ import annotations

import platform
from typing import Any


def versions(torch: Any, dist: Any) -> dict[str, Any]:
    nccl = None
    if torch.version.cuda and dist.is_nccl_available():
        try:
            nccl = ".".join(map(str, torch.cuda.nccl.version()))
        except Exception:  # noqa: BLE001 - a missing NCCL is recorded as None
            nccl = None
    return {
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "hip": getattr(torch.version, "hip", None),
        "nccl": nccl,
        "python": platform.python_version(),
    }


def device(torch: Any, used: Any, local_rank: int) -> dict[str, Any]:
    """The rank's GPU — described even when gloo runs on CPU tensors (a fallback) — or the CPU."""
    if not (torch.cuda.is_available() and torch.cuda.device_count() > 0):
        return {"type": "cpu", "index": None, "name": "cpu"}
    i = used.index if used.type == "cuda" else local_rank % torch.cuda.device_count()
    p = torch.cuda.get_device_properties(i)
    free, total = torch.cuda.mem_get_info(i)
    return {
        "type": "cuda",
        "index": i,
        "name": p.name,
        "capability": [p.major, p.minor],
        "multi_processor_count": p.multi_processor_count,
        "memory_total_bytes": total,
        "memory_free_bytes": free,
        "uuid": str(getattr(p, "uuid", "")) or None,
    }

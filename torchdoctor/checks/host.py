"""host: usable CPUs (affinity, cgroup quota) vs torch's threads; RAM vs the cgroup memory limit."""

from __future__ import annotations

import math

from ..facts import Facts, dig
from ..model import Remedy, Status, Verdict, verdict
from .common import Context

ID = "host"
TITLE = "CPUs, threads and memory"
ORDER = 110  # position in the report: basic facts first, the smoke test last

GIB = 1024**3
LOW_MEMORY_BYTES = 1 * GIB


def usable_cpus(host: dict) -> int | None:
    """min(logical, affinity, ceil(cgroup quota)) — what the process can really run on."""
    candidates = [host.get("cpu_count_logical"), host.get("cpu_affinity_count")]
    quota = dig(host, "cgroup.cpu_quota")
    if quota:
        candidates.append(max(1, math.ceil(quota)))
    known = [c for c in candidates if c]
    return min(known) if known else None


def check(facts: Facts, ctx: Context) -> Verdict:
    host = dig(facts, "host", {})
    if not host or "cpu_count_logical" not in host:
        return verdict(
            Status.ERROR, f"no host facts ({host.get('error', 'not gathered')})", {"host": host}
        )
    usable = usable_cpus(host)
    threads = dig(facts, "torch.build.num_threads")
    total = host.get("memory_total_bytes") or 0
    limit = dig(host, "cgroup.memory_limit_bytes")
    effective = min(total, limit) if limit else total
    available = host.get("memory_available_bytes") or 0
    if limit:
        available = min(available, limit)
    details = {
        "cpu_count_logical": host.get("cpu_count_logical"),
        "cpu_affinity_count": host.get("cpu_affinity_count"),
        "cgroup": host.get("cgroup"),
        "usable_cpus": usable,
        "torch_num_threads": threads,
        "memory_total_bytes": total,
        "memory_limit_bytes": limit,
        "memory_effective_bytes": effective,
    }
    # DataLoader workers each run on a CPU too: leave one for the main process.
    workers = max(1, usable - 1) if usable else None
    details["dataloader_workers_max"] = workers
    quota = dig(host, "cgroup.cpu_quota")
    limited = (
        f" (cgroup quota {quota:g} CPUs)" if quota and usable == max(1, math.ceil(quota)) else ""
    )
    parts = [f"{usable} usable CPU(s){limited}"]
    if threads:
        parts.append(f"torch uses {threads} threads")
    if limited and workers:
        parts.append(f"DataLoader num_workers ≤ {workers}")
    parts.append(
        f"{effective / GIB:.1f} GiB RAM" + (" (cgroup limit)" if limit and limit < total else "")
    )
    summary = ", ".join(parts)
    remedies: list[Remedy] = []
    problems: list[str] = []
    if threads and usable and threads > usable:
        problems.append(
            f"torch runs {threads} intra-op threads on {usable} usable CPU(s): oversubscribed"
        )
        remedies.append(
            Remedy(
                f"Match threads to the CPUs this process may use (cgroup quota/affinity): set "
                f"OMP_NUM_THREADS before Python starts, or call torch.set_num_threads({usable}) "
                f"in the program; cap DataLoader num_workers at {workers}: each worker is a "
                f"process with its own threads, all sharing the same quota.",
                (f"export OMP_NUM_THREADS={usable}",),
            )
        )
    if limit and limit < total and available < LOW_MEMORY_BYTES:
        problems.append(f"only {available / GIB:.2f} GiB left under the cgroup memory limit")
        remedies.append(
            Remedy(
                "Size batches and caches to the container's limit, not the host's RAM; "
                "exceeding it kills the process (exit 137)."
            )
        )
    elif available < LOW_MEMORY_BYTES:
        problems.append(f"only {available / GIB:.2f} GiB RAM available")
        remedies.append(Remedy("Free memory or use smaller batches."))
    if problems:
        return verdict(Status.WARN, "; ".join(problems), details, remedies)
    return verdict(Status.PASS, summary, details)

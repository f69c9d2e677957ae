"""host: usable CPUs (affinity, cgroup quota) vs torch's threads; RAM vs the cgroup memory limit."""

from __future__ import annotations

import math

from torchdoctor.report.result import Problem, Remedy, Status, Verdict, from_problems, verdict

from ..record import Facts
from ..record.host import Host
from .common import Context

ID = "host"
TITLE = "CPUs, threads and memory"
ORDER = 110  # position in the report: basic facts first, the smoke test last
FINDINGS = {
    "threads-oversubscribed": "torch runs more intra-op threads than the CPUs it may use",
    "memory-limit-low": "little memory left under the cgroup memory limit",
    "memory-low": "little RAM available",
    "open-files-low": "an open-files limit (ulimit -n) too low for DataLoader workers' tensor sharing",
}

GIB = 1024**3
LOW_MEMORY_BYTES = 1 * GIB

# RLIMIT_NOFILE. On Linux torch shares CPU tensors between processes by passing one file
# descriptor per storage (the default "file_descriptor" strategy; macOS only has "file_system"),
# and both sides keep it open while the storage lives: DataLoader workers' batches then exhaust a
# small limit ("received 0 items of ancdata", "Too many open files"). The threads that hit it ran
# under 1024, the usual default soft limit (DonsetPG/graph-physics#22: fixed at >= 2048;
# Project-MONAI/MONAI#701: 4096; pytorch/pytorch#973, #14768). Below 2048 is warned about; a limit
# that can be raised only to under 4096 cannot hold the headroom, so file_system is the fix then.
LOW_OPEN_FILES = 2048
ENOUGH_OPEN_FILES = 4096
RAISE_OPEN_FILES_TO = 65536


def usable_cpus(host: Host) -> int | None:
    """min(logical, affinity, ceil(cgroup quota)) — what the process can really run on."""
    candidates = [host.cpu_count_logical, host.cpu_affinity_count]
    quota = host.cgroup.cpu_quota
    if quota:
        candidates.append(max(1, math.ceil(quota)))
    known = [c for c in candidates if c]
    return min(known) if known else None


def _oversubscribed(threads: int, usable: int, workers: int | None) -> Problem:
    return Problem(
        "threads-oversubscribed",
        Status.WARN,
        f"torch runs {threads} intra-op threads on {usable} usable CPU(s): oversubscribed",
        [
            Remedy(
                f"Match threads to the CPUs this process may use (cgroup quota/affinity): set "
                f"OMP_NUM_THREADS before Python starts, or call torch.set_num_threads({usable}) "
                f"in the program; cap DataLoader num_workers at {workers}: each worker is a "
                f"process with its own threads, all sharing the same quota.",
                (f"export OMP_NUM_THREADS={usable}",),
                evidence=("torch.build.num_threads", "host.cpu_count_logical"),
            )
        ],
    )


def _memory(host: Host, wsl: bool) -> Problem | None:
    total = host.memory_total_bytes or 0
    limit = host.cgroup.memory_limit_bytes
    available = host.memory_available_bytes or 0
    if limit:
        available = min(available, limit)
    if available >= LOW_MEMORY_BYTES:
        return None
    if limit and limit < total:
        return Problem(
            "memory-limit-low",
            Status.WARN,
            f"only {available / GIB:.2f} GiB left under the cgroup memory limit",
            [
                Remedy(
                    "Size batches and caches to the container's limit, not the host's RAM; "
                    "exceeding it kills the process (exit 137).",
                    evidence=("host.cgroup.memory_limit_bytes",),
                )
            ],
        )
    if wsl:
        # WSL2 gives its VM half the Windows RAM by default (OpenMOSS/MOSS#328).
        return Problem(
            "memory-low",
            Status.WARN,
            f"only {available / GIB:.2f} GiB RAM available to the WSL2 VM "
            f"({total / GIB:.1f} GiB in all)",
            [
                Remedy(
                    "WSL2 caps its VM's memory: raise it in %USERPROFILE%\\.wslconfig "
                    "(`[wsl2]` then `memory=…` and `swap=…`), then run `wsl --shutdown` and start "
                    "WSL again.",
                    evidence=("platform.wsl", "host.memory_total_bytes"),
                )
            ],
        )
    why = f"only {available / GIB:.2f} GiB RAM available"
    return Problem(
        "memory-low",
        Status.WARN,
        why,
        [Remedy("Free memory or use smaller batches.", evidence=("host.memory_available_bytes",))],
    )


def _open_files(host: Host, system: str | None) -> Problem | None:
    soft, hard = host.open_files.soft, host.open_files.hard
    if system != "Linux" or soft is None or soft < 0 or soft >= LOW_OPEN_FILES:
        return None
    because = ("host.open_files.soft", "host.open_files.hard") if hard is not None else ()
    because = because or ("host.open_files.soft",)
    strategy = Remedy(
        "Without touching limits: have torch share tensors through named files in /dev/shm instead "
        "of descriptors, by calling "
        "torch.multiprocessing.set_sharing_strategy('file_system') right after importing torch.",
        evidence=because,
    )
    why = (
        f"the open-files limit is {soft} (ulimit -n): DataLoader workers pass each shared tensor "
        "as a file descriptor and fail with 'received 0 items of ancdata' or 'Too many open files'"
    )
    if hard is not None and (hard < 0 or hard >= ENOUGH_OPEN_FILES):
        target = RAISE_OPEN_FILES_TO if hard < 0 else min(hard, RAISE_OPEN_FILES_TO)
        raise_soft = Remedy(
            f"Raise the soft limit (the hard limit allows {'any' if hard < 0 else hard}) in the "
            "shell that starts training, or in the program with resource.setrlimit.",
            (f"ulimit -n {target}",),
            because,
        )
        return Problem("open-files-low", Status.WARN, why, [raise_soft, strategy])
    raise_hard = Remedy(
        f"The hard limit ({hard if hard is not None else 'unknown'}) is low too: use the "
        "file_system sharing strategy, or have an administrator raise it: `* hard nofile "
        f"{RAISE_OPEN_FILES_TO}` in /etc/security/limits.conf (log in again), or "
        f"`docker run --ulimit nofile={RAISE_OPEN_FILES_TO}:{RAISE_OPEN_FILES_TO}` for a container.",
        evidence=because,
    )
    return Problem("open-files-low", Status.WARN, why, [strategy, raise_hard])


def _summary(host: Host, usable: int | None, threads: int | None, workers: int | None) -> str:
    total = host.memory_total_bytes or 0
    limit = host.cgroup.memory_limit_bytes
    effective = min(total, limit) if limit else total
    quota = host.cgroup.cpu_quota
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
    return ", ".join(parts)


def check(facts: Facts, ctx: Context) -> Verdict:
    host = facts.host
    if host.cpu_count_logical is None:
        error = host.raw.get("error", "not gathered")
        return verdict(Status.ERROR, f"no host facts ({error})", {"host": host.raw})
    usable = usable_cpus(host)
    threads = facts.torch.build.num_threads
    total = host.memory_total_bytes or 0
    limit = host.cgroup.memory_limit_bytes
    # DataLoader workers each run on a CPU too: leave one for the main process.
    workers = max(1, usable - 1) if usable else None
    details = {
        "cpu_count_logical": host.cpu_count_logical,
        "cpu_affinity_count": host.cpu_affinity_count,
        "cgroup": host.raw.get("cgroup"),
        "usable_cpus": usable,
        "torch_num_threads": threads,
        "memory_total_bytes": total,
        "memory_limit_bytes": limit,
        "memory_effective_bytes": min(total, limit) if limit else total,
        "dataloader_workers_max": workers,
        "open_files": host.raw.get("open_files"),
    }
    over = (
        _oversubscribed(threads, usable, workers)
        if threads and usable and threads > usable
        else None
    )
    files = _open_files(host, facts.platform.system)
    problems = [p for p in (over, _memory(host, bool(facts.platform.wsl)), files) if p]
    return from_problems(problems, details, _summary(host, usable, threads, workers))

"""smoke.cuda_memory: synchronize latency, empty_cache timing, and memory given back to the driver."""

from __future__ import annotations

from torchdoctor.data import alloc_keys
from torchdoctor.report.result import Problem, Remedy, Status, Verdict, from_problems, verdict

from ..record import Facts
from ..record.smoke import Memory
from .common import Context
from .smoke_common import accelerators, device_part, device_remedy, not_run

ID = "smoke.cuda_memory"
TITLE = "Accelerator memory and synchronisation"
ORDER = 180  # position in the report: basic facts first, the smoke test last
# An accelerator-specific check: with --expect naming another target, its failures only warn.
ACCELERATOR = "cuda"
# The problems it reports, per device, each its own finding id (smoke.cuda_memory.<code>).
FINDINGS = {
    "device-failed": "the memory test raised, hung or crashed on a device, or gave no result",
    "memory-kept": "empty_cache returned under half of a freed block to the driver",
}

MIB = 1024 * 1024
# the allocator variables, newest name first (checks/env.py judges their values)
ALLOC_VARS = ("PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF")

_KEPT = "Cached memory that empty_cache cannot return is still referenced"


def _kept_fix(facts: Facts, device: str) -> Remedy:
    """Expandable segments ease fragmentation, given through the variable this release's CUDA
    allocator reads, and only where the release knows the key (2.1+, data/alloc_keys.py)."""
    version = facts.torch.version
    var = next(
        (v for v in ALLOC_VARS if alloc_keys.cuda_allocator_reads(v, version) is not False), None
    )
    if (
        device == "mps"
        or var is None
        or alloc_keys.accepts("expandable_segments", version) is False
    ):
        return Remedy(
            f"{_KEPT}: free the tensors that hold it (del, or let them leave scope) first.",
            evidence=("smoke.devices",),
        )
    return Remedy(
        f"{_KEPT}. Fragmentation is eased by expandable segments.",
        (f"export {var}=expandable_segments:True",),
        evidence=("smoke.devices", "torch.version"),
    )


def _kept(facts: Facts, device: str, mem: Memory) -> Problem | None:
    returned, block = mem.returned_mib or 0.0, mem.block_mib or 0.0
    if returned >= 0.5 * block:
        return None
    why = (
        f"{device}: empty_cache returned only {returned:.0f} of {mem.block_mib} MiB "
        "to the driver (another allocation kept the cached block alive?)"
    )
    return Problem("memory-kept", Status.WARN, why, [_kept_fix(facts, device)])


def check(facts: Facts, ctx: Context) -> Verdict:
    skipped = not_run(facts, ctx)
    if skipped:
        return skipped
    accels = [d for d in accelerators(facts) if d.startswith("cuda") or d == "mps"]
    if not accels:
        return verdict(Status.SKIP, "no CUDA or MPS device: nothing to synchronise or free")
    contexts = {m.index: m.context_s for m in facts.torch.cuda_init.memory}
    problems: list[Problem | None] = []
    parts, rows = [], {}
    for device in accels:
        mem, failed = device_part(facts, device, lambda d: d.memory)
        if not mem:
            fix = device_remedy(device, facts)
            problems.append(Problem("device-failed", Status.FAIL, failed or device, [fix]))
            continue
        row = {
            "sync_us": mem.sync_us,
            "empty_cache_us": mem.empty_cache_us,
            "block_mib": mem.block_mib,
            "returned_mib": mem.returned_mib,
        }
        if device.startswith("cuda"):
            row["context_s"] = contexts.get(int(device.split(":")[1]))
        rows[device] = row
        parts.append(
            f"{device} sync {mem.sync_us or 0:.0f} µs, empty_cache {mem.empty_cache_us or 0:.0f} µs, "
            # it frees every cached block, the compute test's too: more than the test block
            # on a real H200 (118 MiB for a 64 MiB block), so the two are named apart
            f"returned {mem.returned_mib or 0:.0f} MiB to the driver ({mem.block_mib} MiB test "
            "block)"
        )
        problems.append(_kept(facts, device, mem))
    # Failures first, as the summary always led with them.
    found = sorted((p for p in problems if p), key=lambda p: -p.status.rank)
    return from_problems(found, {"devices": rows}, "; ".join(parts))

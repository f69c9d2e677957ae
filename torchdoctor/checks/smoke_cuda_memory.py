"""smoke.cuda_memory: synchronize latency, empty_cache timing, and memory given back to the driver."""

from __future__ import annotations

from ..facts import Facts, dig
from ..model import Remedy, Status, Verdict, verdict
from .common import Context
from .smoke_common import accelerators, device_part, device_remedy, not_run

ID = "smoke.cuda_memory"
TITLE = "Accelerator memory and synchronisation"
ORDER = 180  # position in the report: basic facts first, the smoke test last
# An accelerator-specific check: with --expect naming another target, its failures only warn.
ACCELERATOR = "cuda"

MIB = 1024 * 1024


def check(facts: Facts, ctx: Context) -> Verdict:
    skipped = not_run(facts, ctx)
    if skipped:
        return skipped
    accels = [d for d in accelerators(facts) if d.startswith("cuda") or d == "mps"]
    if not accels:
        return verdict(Status.SKIP, "no CUDA or MPS device: nothing to synchronise or free")
    contexts = {m["index"]: m.get("context_s") for m in dig(facts, "torch.cuda_init.memory", [])}
    fails, remedies, parts, rows = [], [], [], {}
    warns: list[str] = []
    for device in accels:
        mem, problem = device_part(facts, device, "memory")
        if problem:
            fails.append(problem)
            remedies.append(device_remedy(device, facts))
            continue
        row = {k: mem.get(k) for k in ("sync_us", "empty_cache_us", "block_mib", "returned_mib")}
        if device.startswith("cuda"):
            row["context_s"] = contexts.get(int(device.split(":")[1]))
        rows[device] = row
        parts.append(
            f"{device} sync {mem['sync_us']:.0f} µs, empty_cache {mem['empty_cache_us']:.0f} µs, "
            f"returned {mem['returned_mib']:.0f} of {mem['block_mib']} MiB"
        )
        if mem["returned_mib"] < 0.5 * mem["block_mib"]:
            warns.append(
                f"{device}: empty_cache returned only {mem['returned_mib']:.0f} of {mem['block_mib']} MiB "
                "to the driver (another allocation kept the cached block alive?)"
            )
            remedies.append(
                Remedy(
                    "Cached memory that empty_cache cannot return is still referenced. Fragmentation "
                    "is eased by expandable segments.",
                    ("export PYTORCH_ALLOC_CONF=expandable_segments:True",),
                )
            )
    details = {"devices": rows}
    if fails:
        return verdict(Status.FAIL, "; ".join(fails), details, remedies)
    if warns:
        return verdict(Status.WARN, "; ".join(warns), details, remedies)
    return verdict(Status.PASS, "; ".join(parts), details)

"""gpu.health: what the driver reports about each GPU's hardware: uncorrectable memory (ECC)
errors, memory rows it could not remap, and GPUs that stopped answering on the bus.

No CUDA involved: these are NVML counters, read even where torch cannot start. A counter the GPU
does not have (consumer cards, ECC off) is unknown and judged as nothing.
"""

from __future__ import annotations

from torchdoctor.report import evidence
from torchdoctor.report.result import Problem, Remedy, Status, Verdict, from_problems, verdict

from ..record import Facts
from ..record.nvml import NvmlDevice
from .common import Context

ID = "gpu.health"
TITLE = "GPU hardware health (ECC, remapping, bus)"
ORDER = 72  # after cuda.devices: the GPUs first, then their state
ACCELERATOR = "cuda"
NEEDS = ("nvml",)
FINDINGS = {
    "fell-off-bus": "a GPU stopped answering on the PCIe bus (NVML: GPU is lost, Xid 79)",
    "ecc-uncorrectable": "uncorrectable ECC memory errors since the driver loaded",
    "remap-failed": "the GPU ran out of spare memory rows: it needs replacing",
    "reset-pending": "a memory row remap or page retirement waits for a GPU reset",
}


def _label(d: NvmlDevice) -> str:
    return f"GPU {d.index} ({d.name or d.pci_bus_id or 'name unknown'})"


def _lost(facts: Facts) -> list[Problem]:
    """Each GPU NVML calls lost, or NVML itself failing with 'GPU is lost'."""
    nv = facts.nvml
    lost = [(i, d) for i, d in enumerate(nv.devices) if d.lost]
    if not lost and "GPU is lost" not in (nv.error or ""):
        return []
    where = [f"nvml.devices.{i}.error" for i, _ in lost] or ["nvml.error"]
    who = ", ".join(f"GPU {d.index}" for _, d in lost) or "a GPU"
    fix = Remedy(
        "The GPU stopped answering on the PCIe bus (the kernel log has 'Xid 79, GPU has fallen "
        "off the bus'). Reboot to get it back. If it happens again, it is the hardware: watch "
        "its temperature under load, check the power supply and cables, reseat the card, and "
        "update the system BIOS.",
        ("sudo dmesg | grep -i xid", "nvidia-smi -q -d TEMPERATURE,POWER"),
        evidence.present(facts.raw, *where),
    )
    why = f"{who} fell off the bus: NVML reports it as lost, and CUDA cannot use it until a reboot"
    return [Problem("fell-off-bus", Status.FAIL, why, [fix])]


def _ecc(facts: Facts, pos: int, d: NvmlDevice) -> list[Problem]:
    """One GPU's uncorrectable errors, failed remaps and pending resets."""
    ecc, at = d.ecc, f"nvml.devices.{pos}"
    rows = ecc.remapped_rows
    name = evidence.present(facts.raw, f"{at}.name")
    found = []
    if ecc.volatile_uncorrected:
        fix = Remedy(
            f"{_label(d)} returned corrupt memory: CUDA jobs on it fail with 'uncorrectable ECC "
            "error encountered'. Reset it (nothing may be using it) or reboot; if the errors come "
            "back, the GPU is failing: drain the node and have the GPU replaced.",
            (f"sudo nvidia-smi -r -i {d.index}", f"nvidia-smi -q -d ECC,ROW_REMAPPER -i {d.index}"),
            (f"{at}.ecc.volatile_uncorrected", *name),
        )
        why = (
            f"{_label(d)} has {ecc.volatile_uncorrected} uncorrectable ECC error(s) since the "
            f"driver loaded ({ecc.aggregate_uncorrected or '?'} over its life)"
        )
        found.append(Problem("ecc-uncorrectable", Status.FAIL, why, [fix]))
    if rows.failure:
        fix = Remedy(
            f"{_label(d)} has no spare memory rows left to remap bad ones: it will keep "
            "corrupting jobs. Drain the node and have the GPU replaced.",
            (f"nvidia-smi -q -d ROW_REMAPPER -i {d.index}",),
            (f"{at}.ecc.remapped_rows.failure", *name),
        )
        why = f"{_label(d)}: row remapping failed (no spare rows left)"
        found.append(Problem("remap-failed", Status.FAIL, why, [fix]))
    pending = [
        f"{at}.ecc.{p}"
        for p, v in (("remapped_rows.pending", rows.pending), ("retired_pages_pending", ecc.retired_pages_pending))
        if v
    ]  # fmt: skip
    if pending:
        fix = Remedy(
            f"{_label(d)} has retired bad memory, but the change applies only after a GPU reset: "
            "reset it (nothing may be using it) or reboot.",
            (f"sudo nvidia-smi -r -i {d.index}",),
            (*pending, *name),
        )
        why = f"{_label(d)}: a memory row remap or page retirement waits for a GPU reset"
        found.append(Problem("reset-pending", Status.WARN, why, [fix]))
    return found


def check(facts: Facts, ctx: Context) -> Verdict:
    nv = facts.nvml
    problems = _lost(facts)
    if nv.status != "ok" and not problems:
        return verdict(Status.SKIP, f"NVML did not answer ({nv.error or nv.status or 'no NVML'})")
    for pos, d in enumerate(nv.devices):
        problems += _ecc(facts, pos, d)
    known = sum(1 for d in nv.devices if d.ecc.volatile_uncorrected is not None)
    details = {
        "devices": [
            {"index": d.index, "lost": d.lost, "ecc": d.ecc.raw or None} for d in nv.devices
        ]
    }
    summary = (
        f"{len(nv.devices)} GPU(s) answer; ECC counters on {known}, no uncorrectable errors"
        if known
        else f"{len(nv.devices)} GPU(s) answer; no ECC counters to read"
    )
    return from_problems(problems, details, summary)

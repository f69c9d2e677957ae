"""gpu.p2p: will NCCL's peer-to-peer path between this machine's GPUs work, or hang?

Two causes the public record settles, both with the same fix for the job at hand
(`NCCL_P2P_DISABLE=1`, slower but correct): an IOMMU that translates the GPUs' peer traffic
(VT-d / AMD-Vi without passthrough, ACS on the PCIe bridges: NVIDIA/nccl#257, #631, #667,
#2079), and GeForce cards of the Ada and later generations, which have no PCIe peer-to-peer
(deepspeedai/DeepSpeed#4433). GPUs joined by NVLink do not take the PCIe path. Data a peer copy
changed is smoke.transfer's peer-changed finding.
"""

from __future__ import annotations

from torchdoctor.report import evidence
from torchdoctor.report.result import Problem, Remedy, Status, Verdict, from_problems, verdict

from ..record import Facts
from ..record.nvml import NvmlDevice
from .common import Context, device_capability, nvml_gpus

ID = "gpu.p2p"
TITLE = "GPU peer-to-peer for NCCL"
ORDER = 48  # beside distributed and network: all three are about multi-GPU jobs
ACCELERATOR = "cuda"
NEEDS = ("nvml",)
FINDINGS = {
    "iommu-translates": "the IOMMU translates GPU peer-to-peer traffic: NCCL hangs or corrupts",
    "consumer-no-p2p": "several GeForce GPUs without peer-to-peer support: NCCL may hang",
}

# Kernel options that leave DMA untranslated: passthrough, or the IOMMU off.
PASSTHROUGH = ("iommu=pt", "iommu.passthrough=1", "iommu=off", "intel_iommu=off", "amd_iommu=off")
TURNED_ON = ("intel_iommu=on", "amd_iommu=on", "amd_iommu=force_isolation")
# GeForce of compute capability 8.9 and later (RTX 40 and 50 series): no PCIe peer-to-peer.
NO_P2P_FROM = (8, 9)


def _p2p_disabled(facts: Facts) -> bool:
    return facts.env.get("NCCL_P2P_DISABLE", "").strip().lower() in ("1", "true", "yes")


def _pcie_gpus(facts: Facts) -> list[tuple[int, NvmlDevice]]:
    """GPUs (with their position in nvml.devices) not joined by NVLink."""
    return [(i, d) for i, d in enumerate(nvml_gpus(facts)) if not d.nvlink_active and not d.lost]


def _driver_refuses_all(facts: Facts) -> bool:
    """The driver already reports no peer-to-peer for every pair: NCCL will not try it."""
    pairs = facts.nvml.p2p
    return bool(pairs) and all(p.read not in (None, "ok") for p in pairs)


def _job_fix(because: tuple[str, ...]) -> Remedy:
    return Remedy(
        "For the job now: turn NCCL's peer-to-peer path off; it copies through host memory "
        "instead (slower, not wrong).",
        ("export NCCL_P2P_DISABLE=1",),
        because,
    )


def _iommu_translates(facts: Facts) -> tuple[str, ...]:
    """The facts that show the IOMMU translating DMA (none: it is off, in passthrough, or
    unknown)."""
    io = facts.host.iommu
    options = io.cmdline or []
    if any(o in PASSTHROUGH for o in options):
        return ()
    found = []
    if io.units:
        found.append("host.iommu.units")
    if any(o in TURNED_ON for o in options):
        found.append("host.iommu.cmdline")
    return tuple(found)


def _iommu(facts: Facts, gpus: list[tuple[int, NvmlDevice]]) -> Problem | None:
    shown = _iommu_translates(facts)
    if not shown:
        return None
    because = (*shown, *evidence.present(facts.raw, *(f"nvml.devices.{i}.name" for i, _ in gpus)))
    host_fix = Remedy(
        "On the host: let GPU traffic bypass the IOMMU. Add iommu=pt to the kernel command line "
        "(GRUB_CMDLINE_LINUX in /etc/default/grub, then update-grub and reboot), or turn VT-d / "
        "IOMMU or PCIe ACS off in the BIOS. `nvidia-smi topo -p2p r` then shows the pairs.",
        ("nvidia-smi topo -p2p r",),
        because,
    )
    units = ", ".join(facts.host.iommu.units or []) or "enabled on the kernel command line"
    why = (
        f"the IOMMU ({units}) translates DMA between {len(gpus)} GPUs joined only by PCIe: "
        "NCCL's peer-to-peer transfers hang or deliver wrong data"
    )
    return Problem("iommu-translates", Status.WARN, why, [_job_fix(because), host_fix])


def _consumer(facts: Facts, gpus: list[tuple[int, NvmlDevice]]) -> Problem | None:
    geforce = [
        (i, d)
        for i, d in gpus
        if "geforce" in (d.name or "").lower()
        and device_capability(d.name, d.capability) >= NO_P2P_FROM
    ]
    if len(geforce) < 2 or _driver_refuses_all(facts):
        return None
    because = evidence.present(facts.raw, *(f"nvml.devices.{i}.name" for i, _ in geforce))
    names = ", ".join(sorted({d.name or "GeForce" for _, d in geforce}))
    why = (
        f"{len(geforce)} GeForce GPUs ({names}) have no PCIe peer-to-peer: multi-GPU NCCL jobs "
        "(DDP, DeepSpeed, tensor parallel) can deadlock unless peer-to-peer is off"
    )
    return Problem("consumer-no-p2p", Status.WARN, why, [_job_fix(because)])


def check(facts: Facts, ctx: Context) -> Verdict:
    gpus = _pcie_gpus(facts)
    if len(nvml_gpus(facts)) < 2:
        return verdict(Status.SKIP, "fewer than two GPUs: no peer-to-peer")
    details = {
        "pcie_only_gpus": [d.index for _, d in gpus],
        "iommu": facts.host.iommu.raw or None,
        "p2p": [p.raw for p in facts.nvml.p2p],
        "nccl_p2p_disable": facts.env.get("NCCL_P2P_DISABLE"),
    }
    if _p2p_disabled(facts):
        return verdict(
            Status.PASS, "NCCL_P2P_DISABLE is set: NCCL does not use peer-to-peer", details
        )
    if len(gpus) < 2:
        return verdict(Status.PASS, "the GPUs are joined by NVLink", details)
    problems = [p for p in (_iommu(facts, gpus), _consumer(facts, gpus)) if p]
    return from_problems(problems, details, f"{len(gpus)} GPUs; nothing blocks peer-to-peer")

"""smoke.transfer: bit-exact round trips and copy bandwidth, judged against the PCIe link."""

from __future__ import annotations

from typing import Any

from torchdoctor.data import compat
from torchdoctor.report.result import Problem, Remedy, Status, Verdict, from_problems, verdict

from ..record import Facts
from ..record.nvml import NvmlDevice, Pcie
from ..record.smoke import Transfer
from .common import Context, nvml_gpus
from .smoke_common import accelerators, device_part, device_remedy, not_run

ID = "smoke.transfer"
TITLE = "Host-device transfers"
ORDER = 170  # position in the report: basic facts first, the smoke test last
# An accelerator-specific check: with --expect naming another target, its failures only warn.
ACCELERATOR = "cuda"
# The problems it reports, per device (or GPU pair), each its own finding id (smoke.transfer.<code>).
FINDINGS = {
    "device-failed": "the transfer test raised, hung or crashed on a device, or gave no result",
    "roundtrip-changed": "a host-device round trip changed the data",
    "peer-changed": "a GPU-to-GPU copy changed the data",
    "link-slow": "pinned host-to-device copies below a quarter of the PCIe link's peak",
    "link-narrow": "the PCIe link runs narrower than its maximum width",
}

# A healthy pinned host-to-device copy reaches ~75-85% of the link's peak; below this share the
# link is degraded (x8, Gen3 fallback) or the bus is busy (compat-tables.md, section 4).
LOW_FRACTION = 0.25

LINK_FIX = Remedy(
    "Check the slot and link: the GPU should sit in an x16 slot at its full generation; "
    "compare `nvidia-smi -q -d PCIE` under load with the card's maximum.",
    ("nvidia-smi -q -d PCIE", "nvidia-smi topo -m"),
    evidence=("smoke.devices",),
)
P2P_FIX = Remedy(
    "Disable peer-to-peer and re-test.", ("export NCCL_P2P_DISABLE=1",), evidence=("smoke.devices",)
)


def _nvml_for(facts: Facts, device: str) -> NvmlDevice | None:
    """The NVML record of a torch CUDA device: by UUID when known, else by index."""
    idx = int(device.split(":")[1])
    torch_dev = next((d for d in facts.torch.cuda.devices if d.index == idx), None)
    uuid = ((torch_dev.uuid if torch_dev else None) or "").removeprefix("GPU-")
    gpus = nvml_gpus(facts)
    for g in gpus:
        if uuid and (g.uuid or "").removeprefix("GPU-") == uuid:
            return g
    hidden = facts.env.get("CUDA_VISIBLE_DEVICES")  # torch's index 0 is then not NVML's
    return gpus[idx] if idx < len(gpus) and not hidden else None


def link_peak_gbps(pcie: Pcie) -> float | None:
    gen, width = pcie.gen_max, pcie.width_max
    if not gen or not width or gen not in compat.PCIE_GBPS_PER_LANE:
        return None
    return compat.PCIE_GBPS_PER_LANE[gen] * width


def _judge_link(device: str, t: Transfer, gpu: NvmlDevice | None) -> list[Problem]:
    if not gpu:
        return []
    pcie = gpu.pcie
    peak = link_peak_gbps(pcie)
    out = []
    pinned = t.h2d_pinned_gbps
    if peak and pinned and pinned < LOW_FRACTION * peak:
        why = (
            f"{device} pinned H2D {pinned:.1f} GB/s is {pinned / peak:.0%} of its PCIe "
            f"Gen{pcie.gen_max} x{pcie.width_max} peak ({peak:.0f} GB/s)"
        )
        out.append(Problem("link-slow", Status.WARN, why, [LINK_FIX]))
    if pcie.width_current and pcie.width_max and pcie.width_current < pcie.width_max:
        # Link generation drops at idle to save power, so only a narrower width is a finding.
        why = f"{device} PCIe link runs at x{pcie.width_current} of x{pcie.width_max}"
        out.append(Problem("link-narrow", Status.WARN, why, [LINK_FIX]))
    return out


def _bandwidth_row(t: Transfer) -> dict[str, float]:
    row = {
        "h2d_pinned_gbps": t.h2d_pinned_gbps,
        "h2d_pageable_gbps": t.h2d_pageable_gbps,
        "d2h_pinned_gbps": t.d2h_pinned_gbps,
        "d2h_pageable_gbps": t.d2h_pageable_gbps,
    }
    return {k: v for k, v in row.items() if v is not None}


def _device_problems(facts: Facts, device: str, t: Transfer) -> list[Problem]:
    inexact = [
        name
        for name, exact in (
            ("roundtrip_pageable_exact", t.roundtrip_pageable_exact),
            ("roundtrip_pinned_exact", t.roundtrip_pinned_exact),
        )
        if exact is False
    ]
    out = []
    if inexact:
        why = f"{device}: round trip changed the data ({', '.join(inexact)})"
        out.append(Problem("roundtrip-changed", Status.FAIL, why, [device_remedy(device, facts)]))
    gpu = _nvml_for(facts, device) if device.startswith("cuda") else None
    return out + _judge_link(device, t, gpu)


def _passed(transfers: dict[str, Transfer]) -> str:
    parts = []
    for device, t in transfers.items():
        if t.h2d_pageable_gbps is not None:
            pinned = f"{t.h2d_pinned_gbps:.1f} pinned / " if t.h2d_pinned_gbps is not None else ""
            parts.append(f"{device} H2D {pinned}{t.h2d_pageable_gbps:.1f} pageable GB/s")
    return "round trips exact; " + "; ".join(parts)


def check(facts: Facts, ctx: Context) -> Verdict:
    skipped = not_run(facts, ctx)
    if skipped:
        return skipped
    accels = accelerators(facts)
    if not accels:
        return verdict(Status.SKIP, "no accelerator: nothing to transfer to")
    problems: list[Problem] = []
    rows: dict[str, Any] = {}
    transfers: dict[str, Transfer] = {}
    for device in accels:
        t, failed = device_part(facts, device, lambda d: d.transfer)
        if not t:
            fix = device_remedy(device, facts)
            problems.append(Problem("device-failed", Status.FAIL, failed or device, [fix]))
            continue
        transfers[device] = t
        rows[device] = _bandwidth_row(t)
        problems += _device_problems(facts, device, t)
    for pair, p in facts.smoke.peers.items():
        rows[pair] = {"gbps": p.gbps, "p2p_access": p.p2p_access}
        if p.exact is False:
            why = f"{pair}: GPU-to-GPU copy changed the data"
            problems.append(Problem("peer-changed", Status.FAIL, why, [P2P_FIX]))
    # Failures first, as the summary always led with them.
    problems.sort(key=lambda p: -p.status.rank)
    return from_problems(problems, {"bandwidth": rows}, _passed(transfers))

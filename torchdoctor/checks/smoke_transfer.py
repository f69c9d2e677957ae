"""smoke.transfer: bit-exact round trips and copy bandwidth, judged against the PCIe link."""

from __future__ import annotations

from typing import Any

from ..data import compat
from ..facts import Facts, dig
from ..model import Remedy, Status, Verdict, verdict
from .common import Context, nvml_gpus
from .smoke_common import accelerators, device_part, device_remedy, not_run

ID = "smoke.transfer"
TITLE = "Host-device transfers"
ORDER = 170  # position in the report: basic facts first, the smoke test last
# An accelerator-specific check: with --expect naming another target, its failures only warn.
ACCELERATOR = "cuda"

# A healthy pinned host-to-device copy reaches ~75-85% of the link's peak; below this share the
# link is degraded (x8, Gen3 fallback) or the bus is busy (compat-tables.md, section 4).
LOW_FRACTION = 0.25


def _nvml_for(facts: Facts, device: str) -> dict[str, Any] | None:
    """The NVML record of a torch CUDA device: by UUID when known, else by index."""
    idx = int(device.split(":")[1])
    torch_dev = next((d for d in dig(facts, "torch.cuda.devices", []) if d.get("index") == idx), {})
    uuid = (torch_dev.get("uuid") or "").removeprefix("GPU-")
    gpus = nvml_gpus(facts)
    for g in gpus:
        if uuid and (g.uuid or "").removeprefix("GPU-") == uuid:
            return g
    return gpus[idx] if idx < len(gpus) and not dig(facts, "env.CUDA_VISIBLE_DEVICES") else None


def link_peak_gbps(pcie: dict[str, Any]) -> float | None:
    gen, width = pcie.get("gen_max"), pcie.get("width_max")
    if not gen or not width or gen not in compat.PCIE_GBPS_PER_LANE:
        return None
    return compat.PCIE_GBPS_PER_LANE[gen] * width


def _judge_link(device: str, t: dict[str, Any], gpu: dict[str, Any] | None) -> list[str]:
    if not gpu:
        return []
    pcie = gpu.pcie.raw
    peak = link_peak_gbps(pcie)
    out = []
    pinned = t.get("h2d_pinned_gbps")
    if peak and pinned and pinned < LOW_FRACTION * peak:
        out.append(
            f"{device} pinned H2D {pinned:.1f} GB/s is {pinned / peak:.0%} of its PCIe Gen{pcie['gen_max']} "
            f"x{pcie['width_max']} peak ({peak:.0f} GB/s)"
        )
    if (
        pcie.get("width_current")
        and pcie.get("width_max")
        and pcie["width_current"] < pcie["width_max"]
    ):
        # Link generation drops at idle to save power, so only a narrower width is a finding.
        out.append(f"{device} PCIe link runs at x{pcie['width_current']} of x{pcie['width_max']}")
    return out


def check(facts: Facts, ctx: Context) -> Verdict:
    skipped = not_run(facts, ctx)
    if skipped:
        return skipped
    accels = accelerators(facts)
    if not accels:
        return verdict(Status.SKIP, "no accelerator: nothing to transfer to")
    fails: list[str] = []
    warns: list[str] = []
    remedies: list[Remedy] = []
    rows: dict[str, Any] = {}
    for device in accels:
        t, problem = device_part(facts, device, "transfer")
        if problem:
            fails.append(problem)
            remedies.append(device_remedy(device, facts))
            continue
        rows[device] = {k: v for k, v in t.items() if k.endswith("_gbps")}
        inexact = [
            k for k in ("roundtrip_pageable_exact", "roundtrip_pinned_exact") if t.get(k) is False
        ]
        if inexact:
            fails.append(f"{device}: round trip changed the data ({', '.join(inexact)})")
            remedies.append(device_remedy(device, facts))
        link = _judge_link(
            device, t, _nvml_for(facts, device) if device.startswith("cuda") else None
        )
        if link:
            warns += link
            remedies.append(
                Remedy(
                    "Check the slot and link: the GPU should sit in an x16 slot at its full generation; "
                    "compare `nvidia-smi -q -d PCIE` under load with the card's maximum.",
                    ("nvidia-smi -q -d PCIE", "nvidia-smi topo -m"),
                )
            )
    for pair, p in dig(facts, "smoke.peers", {}).items():
        rows[pair] = {"gbps": p.get("gbps"), "p2p_access": p.get("p2p_access")}
        if p.get("exact") is False:
            fails.append(f"{pair}: GPU-to-GPU copy changed the data")
            remedies.append(
                Remedy("Disable peer-to-peer and re-test.", ("export NCCL_P2P_DISABLE=1",))
            )
    details = {"bandwidth": rows}
    if fails:
        return verdict(Status.FAIL, "; ".join(fails + warns), details, remedies)
    if warns:
        return verdict(Status.WARN, "; ".join(warns), details, remedies)
    parts = []
    for device, r in rows.items():
        if "h2d_pageable_gbps" in r:
            pinned = f"{r['h2d_pinned_gbps']:.1f} pinned / " if "h2d_pinned_gbps" in r else ""
            parts.append(f"{device} H2D {pinned}{r['h2d_pageable_gbps']:.1f} pageable GB/s")
    return verdict(Status.PASS, "round trips exact; " + "; ".join(parts), details)

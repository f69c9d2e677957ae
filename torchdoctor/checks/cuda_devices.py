"""cuda.devices: each GPU's name, capability, SMs and memory, against the wheel's arch list."""

from __future__ import annotations

from typing import Any

from .. import archs
from ..data import compat
from ..facts import Facts, dig
from ..model import Remedy, Status, Verdict, verdict
from .common import Context, nvml_gpus, probe_stuck, reinstall_torch

ID = "cuda.devices"
TITLE = "CUDA devices and the wheel's arch list"

MIB = 1024 * 1024
# Below this share of free memory, something else is holding the GPU.
LOW_FREE_FRACTION = 0.10


def _devices(facts: Facts) -> tuple[list[dict[str, Any]], str]:
    """Torch's view of the devices when it has one, else NVML's (e.g. CPU wheel on a GPU box)."""
    torch_devs = dig(facts, "torch.cuda.devices", [])
    if torch_devs:
        free = {m["index"]: m for m in dig(facts, "torch.cuda_init.memory", [])}
        out = []
        for d in torch_devs:
            m = free.get(d["index"], {})
            out.append({**d, "free_bytes": m.get("free_bytes")})
        return out, "torch"
    return [
        {
            "index": g["index"],
            "name": g.get("name"),
            "capability": g.get("capability"),
            "total_memory_bytes": g.get("memory_total_bytes"),
            "free_bytes": (g["memory_total_bytes"] - g["memory_used_bytes"])
            if g.get("memory_total_bytes") and g.get("memory_used_bytes") is not None
            else None,
        }
        for g in nvml_gpus(facts)
    ], "nvml"


def _row(d: dict[str, Any]) -> str:
    cap = archs.fmt(d["capability"]) if d.get("capability") else "?"
    mem = f"{(d.get('total_memory_bytes') or 0) // MIB} MiB"
    if d.get("free_bytes") is not None:
        mem = f"{d['free_bytes'] // MIB}/{mem} free"
    sms = f", {d['multi_processor_count']} SMs" if d.get("multi_processor_count") else ""
    return f"cuda:{d['index']} {d.get('name')} (sm {cap}{sms}, {mem})"


def check(facts: Facts, ctx: Context) -> Verdict:
    stuck = probe_stuck(facts, ("cuda", "cuda.init"))
    if stuck:
        return stuck
    devices, source = _devices(facts)
    if not devices:
        status = Status.FAIL if ctx.expect == "cuda" else Status.SKIP
        return verdict(
            status,
            "no CUDA devices",
            {"source": source},
            [Remedy("Run where an NVIDIA GPU is visible (containers: `--gpus all`).")]
            if status == Status.FAIL
            else [],
        )
    arch_list = dig(facts, "torch.build.arch_list", [])
    variant = dig(facts, "torch.build.variant")
    problems: list[str] = []
    warnings: list[str] = []
    remedies: list[Remedy] = []
    rows = []
    for d in devices:
        rows.append(_row(d))
        cap = tuple(d.get("capability") or ())
        d["arch_coverage"] = None
        if variant == "cuda" and arch_list and len(cap) == 2:
            cov = archs.coverage(cap, arch_list)
            d["arch_coverage"] = cov
            lowest = archs.min_capability(arch_list)
            if cov == "none" and lowest and cap < lowest:
                problems.append(
                    f"cuda:{d['index']} {d.get('name')} (sm {archs.fmt(cap)}, {compat.family(cap)}) is older "
                    f"than this wheel supports (minimum sm {archs.fmt(lowest)})"
                )
                remedies.append(
                    reinstall_torch(
                        facts,
                        "cu126",
                        "The cu126 wheels still include Maxwell/Pascal/Volta (sm 5.0-7.0).",
                    )
                )
            elif cov == "none":
                problems.append(
                    f"cuda:{d['index']} {d.get('name')} (sm {archs.fmt(cap)}) is not in the wheel's arch list "
                    f"({' '.join(arch_list)}): 'no kernel image is available'"
                )
                remedies.append(
                    reinstall_torch(
                        facts,
                        "cu128" if cap[0] < 13 else "cu130",
                        "Blackwell (sm 10.x/12.x) needs a cu128 or newer wheel (torch ≥ 2.7).",
                    )
                )
            elif cov == "ptx":
                warnings.append(
                    f"cuda:{d['index']} sm {archs.fmt(cap)} runs only through PTX JIT "
                    "(slow first launch; fails if the driver is older than the toolkit)"
                )
        total, free = d.get("total_memory_bytes"), d.get("free_bytes")
        if total and free is not None and free < LOW_FREE_FRACTION * total:
            warnings.append(
                f"cuda:{d['index']} has only {free // MIB} of {total // MIB} MiB free: "
                "another process holds the GPU"
            )
            remedies.append(
                Remedy(
                    "See which processes hold GPU memory.",
                    ("nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv",),
                )
            )
    details = {"source": source, "arch_list": arch_list, "devices": devices}
    nvml_count = len(nvml_gpus(facts))
    cvd = dig(facts, "env.CUDA_VISIBLE_DEVICES")
    if source == "torch" and nvml_count > len(devices) and cvd is None:
        warnings.append(f"NVML sees {nvml_count} GPUs but torch sees {len(devices)}")
    if (
        cvd is not None
        and nvml_count > 1
        and dig(facts, "env.CUDA_DEVICE_ORDER") != "PCI_BUS_ID"
        and len({g.get("name") for g in nvml_gpus(facts)}) > 1
    ):
        warnings.append(
            "mixed GPU models with CUDA_VISIBLE_DEVICES but no CUDA_DEVICE_ORDER=PCI_BUS_ID: "
            "indices may not match nvidia-smi"
        )
        remedies.append(
            Remedy(
                "Make CUDA number GPUs as nvidia-smi does.",
                ("export CUDA_DEVICE_ORDER=PCI_BUS_ID",),
            )
        )
    summary = "; ".join(rows)
    if problems:
        return verdict(Status.FAIL, "; ".join(problems), details, remedies)
    if warnings:
        return verdict(Status.WARN, "; ".join(warnings), details, remedies)
    return verdict(Status.PASS, summary, details)

"""cuda.devices: each GPU's name, capability, SMs and memory, against the wheel's arch list."""

from __future__ import annotations

from typing import Any

from .. import archs
from ..data import compat
from ..facts import Facts, dig
from ..model import Remedy, Status, Verdict, verdict
from .common import Context, nvml_gpus, probe_stuck, wheel_fixes

ID = "cuda.devices"
TITLE = "CUDA devices and the wheel's arch list"
ORDER = 70  # position in the report: basic facts first, the smoke test last
# An accelerator-specific check: with --expect naming another target, its failures only warn.
ACCELERATOR = "cuda"

MIB = 1024 * 1024
# Below this share of free memory, something else is holding the GPU.
LOW_FREE_FRACTION = 0.10


def _devices(facts: Facts) -> tuple[list[dict[str, Any]], str]:
    """Torch's view of the devices for an examined CUDA build (even when it sees none);
    NVML's otherwise (a CPU wheel on a GPU box, torch missing), so the GPUs are still judged."""
    if dig(facts, "torch.status") == "ok" and dig(facts, "torch.build.variant") in ("cuda", "rocm"):
        free = {m["index"]: m for m in dig(facts, "torch.cuda_init.memory", [])}
        return [
            {**d, "free_bytes": free.get(d["index"], {}).get("free_bytes")}
            for d in dig(facts, "torch.cuda.devices", [])
        ], "torch"
    return [
        {
            "index": g.index,
            "name": g.name,
            "capability": g.capability or None,
            "total_memory_bytes": g.memory_total_bytes,
            "free_bytes": (g.memory_total_bytes - g.memory_used_bytes)
            if g.memory_total_bytes and g.memory_used_bytes is not None
            else None,
        }
        for g in nvml_gpus(facts)
    ], "nvml"


def _arch_fix(facts: Facts, cap: tuple[int, int], why: str) -> list[Remedy]:
    return wheel_fixes(facts, [cap], why)


def _dropped(cap: tuple[int, int]) -> str:
    """'the newest wheels for it are torch 2.14 from …/cu126' for a GPU new wheels left behind."""
    last = compat.newest_supporting(cap)
    if not last:
        return "no published wheel supports it"
    url = compat.INDEX_URL.format(variant=last.variant)
    return f"the newest wheels for it are torch {compat.latest_patch(last.release)} from {url}"


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
        nvml_count = len(nvml_gpus(facts))
        seen = (
            f"torch sees none of the {nvml_count} GPU(s) NVML lists"
            if nvml_count
            else "no CUDA devices"
        )
        if ctx.expect != "cuda":
            return verdict(Status.SKIP, f"{seen} (cuda.available says why)" if nvml_count else seen)
        return verdict(
            Status.FAIL,
            seen,
            {"source": source, "nvml_gpus": nvml_count},
            [
                Remedy(
                    "Run where an NVIDIA GPU is visible (containers: `--gpus all`); cuda.available says why not."
                )
            ],
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
                    f"than this wheel supports (minimum sm {archs.fmt(lowest)}); {_dropped(cap)}"
                )
                remedies += _arch_fix(
                    facts, cap, f"{compat.family(cap)} GPUs need a wheel that still lists them."
                )
            elif cov == "none":
                problems.append(
                    f"cuda:{d['index']} {d.get('name')} (sm {archs.fmt(cap)}) is not in the wheel's arch list "
                    f"({' '.join(arch_list)}): 'no kernel image is available'"
                )
                remedies += _arch_fix(
                    facts,
                    cap,
                    f"sm {archs.fmt(cap)} ({compat.family(cap)}) needs a wheel built for it.",
                )
            elif cov == "ptx":
                warnings.append(
                    f"cuda:{d['index']} sm {archs.fmt(cap)} runs only through PTX JIT "
                    "(slow first launch; fails if the driver is older than the toolkit)"
                )
                remedies += _arch_fix(
                    facts, cap, "A wheel with native code for this GPU avoids the JIT."
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
        remedies.append(
            Remedy(
                "Compare nvidia-smi with torch: a GPU in a bad state is left out by CUDA.",
                ("nvidia-smi -L",),
            )
        )
    # CUDA_DEVICE_ORDER on mixed-GPU hosts is judged by the env check, once.
    summary = "; ".join(rows)
    if problems:
        return verdict(Status.FAIL, "; ".join(problems), details, remedies)
    if warnings:
        return verdict(Status.WARN, "; ".join(warnings), details, remedies)
    return verdict(Status.PASS, summary, details)

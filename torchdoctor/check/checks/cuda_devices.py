"""cuda.devices: each GPU's name, capability, SMs and memory, against the wheel's arch list."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from torchdoctor.data import archs, compat
from torchdoctor.report.result import Problem, Remedy, Status, Verdict, from_problems, verdict

from ..record import Facts
from .common import Context, nvml_gpus, probe_stuck, wheel_fixes

ID = "cuda.devices"
TITLE = "CUDA devices and the wheel's arch list"
ORDER = 70  # position in the report: basic facts first, the smoke test last
# An accelerator-specific check: with --expect naming another target, its failures only warn.
ACCELERATOR = "cuda"
# The problems it reports, one per GPU and kind, each its own finding id (cuda.devices.<code>).
FINDINGS = {
    "none-visible": "CUDA expected, but torch sees no CUDA device",
    "gpu-too-old": "a GPU older than the wheel's lowest architecture",
    "arch-missing": "a GPU missing from the wheel's arch list: 'no kernel image is available'",
    "ptx-only": "a GPU the wheel runs only through PTX JIT",
    "memory-held": "another process holds most of a GPU's memory",
    "gpus-missing": "NVML sees more GPUs than torch",
}

MIB = 1024 * 1024
# Below this share of free memory, something else is holding the GPU.
LOW_FREE_FRACTION = 0.10


@dataclass
class Gpu:
    """One GPU as judged here, from torch's view or NVML's; ``row`` is what details show."""

    index: int
    name: str | None
    capability: tuple[int, ...]
    total: int | None
    free: int | None
    sms: int | None
    row: dict[str, Any]


def _torch_gpus(facts: Facts) -> list[Gpu]:
    free = {m.index: m.free_bytes for m in facts.torch.cuda_init.memory}
    return [
        Gpu(
            d.index,
            d.name,
            tuple(d.capability),
            d.total_memory_bytes,
            free.get(d.index),
            d.multi_processor_count,
            {**d.raw, "free_bytes": free.get(d.index)},
        )
        for d in facts.torch.cuda.devices
    ]


def _nvml_gpus(facts: Facts) -> list[Gpu]:
    out = []
    for g in nvml_gpus(facts):
        total, used = g.memory_total_bytes, g.memory_used_bytes
        free = total - used if total and used is not None else None
        row = {
            "index": g.index,
            "name": g.name,
            "capability": g.capability or None,
            "total_memory_bytes": total,
            "free_bytes": free,
        }
        out.append(Gpu(g.index, g.name, tuple(g.capability), total, free, None, row))
    return out


def _devices(facts: Facts) -> tuple[list[Gpu], str]:
    """Torch's view of the devices for an examined CUDA build (even when it sees none);
    NVML's otherwise (a CPU wheel on a GPU box, torch missing), so the GPUs are still judged."""
    if facts.torch.status == "ok" and facts.torch.build.variant in ("cuda", "rocm"):
        return _torch_gpus(facts), "torch"
    return _nvml_gpus(facts), "nvml"


def _arch_fix(facts: Facts, cap: tuple[int, int], why: str) -> list[Remedy]:
    return wheel_fixes(facts, [cap], why)


def _dropped(cap: tuple[int, int]) -> str:
    """'the newest wheels for it are torch 2.14 from …/cu126' for a GPU new wheels left behind."""
    last = compat.newest_supporting(cap)
    if not last:
        return "no published wheel supports it"
    url = compat.INDEX_URL.format(variant=last.variant)
    return f"the newest wheels for it are torch {compat.latest_patch(last.release)} from {url}"


def _row(d: Gpu) -> str:
    cap = archs.fmt(d.capability) if d.capability else "?"
    mem = f"{(d.total or 0) // MIB} MiB"
    if d.free is not None:
        mem = f"{d.free // MIB}/{mem} free"
    sms = f", {d.sms} SMs" if d.sms else ""
    return f"cuda:{d.index} {d.name} (sm {cap}{sms}, {mem})"


def _none_visible(facts: Facts, ctx: Context, source: str) -> Verdict:
    nvml_count = len(nvml_gpus(facts))
    seen = (
        f"torch sees none of the {nvml_count} GPU(s) NVML lists"
        if nvml_count
        else "no CUDA devices"
    )
    if ctx.expect != "cuda":
        return verdict(Status.SKIP, f"{seen} (cuda.available says why)" if nvml_count else seen)
    fix = Remedy(
        "Run where an NVIDIA GPU is visible (containers: `--gpus all`); cuda.available says why not."
    )
    details = {"source": source, "nvml_gpus": nvml_count}
    return from_problems([Problem("none-visible", Status.FAIL, seen, [fix])], details, "")


def _arch_problem(facts: Facts, d: Gpu, arch_list: list[str]) -> Problem | None:
    """The GPU against the wheel's arch list (native code, PTX only, or nothing)."""
    cap = d.capability
    cov = archs.coverage(cap, arch_list)
    d.row["arch_coverage"] = cov
    lowest = archs.min_capability(arch_list)
    family = compat.family(cap)
    name, sm = f"cuda:{d.index} {d.name}", archs.fmt(cap)
    if cov == "none" and lowest and cap < lowest:
        code, fix = "gpu-too-old", f"{family} GPUs need a wheel that still lists them."
        why = (
            f"{name} (sm {sm}, {family}) is older than this wheel supports "
            f"(minimum sm {archs.fmt(lowest)}); {_dropped(cap)}"
        )
    elif cov == "none":
        code, fix = "arch-missing", f"sm {sm} ({family}) needs a wheel built for it."
        why = (
            f"{name} (sm {sm}) is not in the wheel's arch list ({' '.join(arch_list)}): "
            "'no kernel image is available'"
        )
    elif cov == "ptx":
        code, fix = "ptx-only", "A wheel with native code for this GPU avoids the JIT."
        why = (
            f"cuda:{d.index} sm {sm} runs only through PTX JIT "
            "(slow first launch; fails if the driver is older than the toolkit)"
        )
    else:
        return None
    status = Status.WARN if code == "ptx-only" else Status.FAIL
    return Problem(code, status, why, _arch_fix(facts, cap, fix))


def _memory_problem(d: Gpu) -> Problem | None:
    if not d.total or d.free is None or d.free >= LOW_FREE_FRACTION * d.total:
        return None
    why = (
        f"cuda:{d.index} has only {d.free // MIB} of {d.total // MIB} MiB free: "
        "another process holds the GPU"
    )
    fix = Remedy(
        "See which processes hold GPU memory.",
        ("nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv",),
    )
    return Problem("memory-held", Status.WARN, why, [fix])


def _missing_gpus(facts: Facts, source: str, seen: int) -> Problem | None:
    nvml_count = len(nvml_gpus(facts))
    cvd = facts.env.get("CUDA_VISIBLE_DEVICES")
    if source != "torch" or nvml_count <= seen or cvd is not None:
        return None
    fix = Remedy(
        "Compare nvidia-smi with torch: a GPU in a bad state is left out by CUDA.",
        ("nvidia-smi -L",),
    )
    why = f"NVML sees {nvml_count} GPUs but torch sees {seen}"
    return Problem("gpus-missing", Status.WARN, why, [fix])


def check(facts: Facts, ctx: Context) -> Verdict:
    stuck = probe_stuck(facts, ("cuda", "cuda.init"))
    if stuck:
        return stuck
    devices, source = _devices(facts)
    if not devices:
        return _none_visible(facts, ctx, source)
    arch_list = facts.torch.build.arch_list
    judge_arch = facts.torch.build.variant == "cuda" and arch_list
    found: list[Problem | None] = []
    for d in devices:
        d.row["arch_coverage"] = None
        if judge_arch and len(d.capability) == 2:
            found.append(_arch_problem(facts, d, arch_list))
        found.append(_memory_problem(d))
    found.append(_missing_gpus(facts, source, len(devices)))
    # CUDA_DEVICE_ORDER on mixed-GPU hosts is judged by the env check, once.
    details = {"source": source, "arch_list": arch_list, "devices": [d.row for d in devices]}
    summary = "; ".join(_row(d) for d in devices)
    # Failures first, so the summary leads with what breaks.
    problems = sorted((p for p in found if p), key=lambda p: -p.status.rank)
    return from_problems(problems, details, summary)
